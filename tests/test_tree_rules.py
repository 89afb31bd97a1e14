"""Rules (GLOB = SPEC) against jax.device_put: each leaf ends on the sharding JAX builds
from the same spec, the user's arrays stay as they were, and every bad rule names its line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError
from shardviz.tree.code import rules_code
from shardviz.tree.rules import Rule, apply_rules, parse_rules
from tree_truth import values_equal


@pytest.fixture
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])


@pytest.fixture
def tree(mesh):
    def put(shape, *spec, kind=None, dtype=jnp.float32):
        value = jnp.arange(np.prod(shape), dtype=dtype).reshape(shape)
        return jax.device_put(value, NamedSharding(mesh, P(*spec), memory_kind=kind))

    return {
        "embed": put((64, 16), "data"),
        "layers": [{"w": put((16, 16)), "b": put((16,), kind="pinned_host")} for _ in range(2)],
        "head": put((16, 8), None, "model", dtype=jnp.bfloat16),
        "count": jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[3])),
        "lr": 0.1,
        "odd": put((6,)),
        "none": None,
    }


RULES = """
# tensor parallel, with the embedding split over model
embed = None, model
layers.*.w = data, model
layers.*.b = model
count =
"""


def test_rules_give_the_shardings_jax_builds_from_the_same_specs(tree, mesh):
    before = {k: (v.sharding, np.asarray(v)) for k, v in jax.tree_util.tree_leaves_with_path(tree)
              for k in [jax.tree_util.keystr(k)] if isinstance(v, jax.Array)}  # fmt: skip
    applied = apply_rules(tree, RULES)
    new = applied.tree
    expected = {
        "embed": NamedSharding(mesh, P(None, "model")),
        "w": NamedSharding(mesh, P("data", "model")),
        "b": NamedSharding(mesh, P("model"), memory_kind="pinned_host"),  # the memory kind stays
        "count": NamedSharding(mesh, P()),  # no mesh of its own: the tree's
    }
    assert new["embed"].sharding == expected["embed"]
    for layer in new["layers"]:
        assert layer["w"].sharding == expected["w"]
        assert layer["b"].sharding == expected["b"]
    assert new["count"].sharding == expected["count"]
    # Unmatched leaves are the very same objects; values travel unchanged.
    assert new["head"] is tree["head"] and new["odd"] is tree["odd"] and new["lr"] == 0.1 and new["none"] is None
    for old_leaf, new_leaf in zip(jax.tree.leaves(tree), jax.tree.leaves(new)):
        if isinstance(old_leaf, jax.Array):
            assert values_equal(old_leaf, new_leaf)
    # The user's arrays are neither moved nor deleted.
    for k, v in jax.tree_util.tree_leaves_with_path(tree):
        if isinstance(v, jax.Array):
            sharding, values = before[jax.tree_util.keystr(k)]
            assert not v.is_deleted() and v.sharding == sharding and values_equal(v, values)
    assert applied.matched == (("embed",), ("layers.0.w", "layers.1.w"), ("layers.0.b", "layers.1.b"), ("count",))
    assert applied.fallback_mesh == mesh
    assert [r.line for r in applied.rules] == [3, 4, 5, 6]
    # The picture of the new tree is JAX's picture of the new arrays.
    tl = shardviz.describe_tree(new)
    for leaf, x in zip(tl.leaves, jax.tree.leaves(new, is_leaf=lambda x: x is None)):
        if isinstance(x, jax.Array):
            assert leaf.type_str == str(jax.typeof(x))
            assert leaf.shard_shape == x.sharding.shard_shape(x.shape)
    assert set(tl.device_bytes) == set(range(8))  # count moved from device 3 onto the mesh
    assert tl.audit.imbalance is None


def test_globs_are_fnmatch_on_dotted_paths(tree, mesh):
    applied = apply_rules(tree, "layers.[1].? = model\nlayers.* = data\n*a* = None\n")
    new = applied.tree
    assert new["layers"][1]["w"].sharding.spec == P("model") and new["layers"][1]["b"].sharding.spec == P("model")
    assert new["layers"][0]["w"].sharding.spec == P("data")  # "*" crosses dots
    assert new["head"].sharding.spec == P(None) and new["embed"] is tree["embed"]  # "embed" has no "a"
    with pytest.raises(ShardingError, match=r"line 1: EMBED matches no array leaf"):
        apply_rules(tree, "EMBED = model")  # case matters


def test_a_key_with_an_equals_sign(mesh):
    x = jax.device_put(jnp.ones(8), NamedSharding(mesh, P()))
    applied = apply_rules({"a=b": x}, "a=b = data")
    assert applied.tree["a=b"].sharding == NamedSharding(mesh, P("data"))


def test_rules_on_an_abstract_tree_make_new_shapedtypestructs():
    mesh = AbstractMesh((16, 16), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)

    def init(key):
        return {"w": jax.random.normal(key, (4096, 1024)), "count": jnp.zeros((), jnp.int32)}

    with jax.sharding.use_abstract_mesh(mesh):
        key = jax.eval_shape(lambda: jax.random.key(0))
        shapes = jax.eval_shape(init, key)  # no out_shardings: w is unsplit, count has no sharding
    assert shapes["count"].sharding is None
    applied = apply_rules(shapes, "w = model, data\ncount = ")
    assert applied.tree["w"] == jax.ShapeDtypeStruct(
        (4096, 1024), jnp.float32, sharding=NamedSharding(mesh, P("model", "data"))
    )
    assert applied.tree["count"].sharding == NamedSharding(mesh, P())
    assert applied.fallback_mesh == mesh
    tl = shardviz.describe_tree(applied.tree)
    assert tl.device_count == 256
    assert tl.leaves[1].shard_shape == NamedSharding(mesh, P("model", "data")).shard_shape((4096, 1024))
    assert shapes["count"].sharding is None  # the input stays as it was


def test_leaves_without_a_mesh_take_the_one_given():
    auto = AbstractMesh((8,), ("data",), axis_types=(AxisType.Auto,))
    with jax.sharding.use_abstract_mesh(auto):
        shapes = jax.eval_shape(lambda: {"w": jnp.zeros((64, 8)), "b": jnp.zeros((8,))})
    assert shapes["w"].sharding is None  # Auto: eval_shape says nothing
    with pytest.raises(ShardingError, match=r"line 1: \* matches leaf 'b', which has no mesh, .* pass mesh="):
        apply_rules(shapes, "* = data")
    applied = apply_rules(shapes, "w = data\n* = ", mesh=auto)
    assert applied.tree["w"].sharding == NamedSharding(auto, P("data"))
    assert applied.tree["b"].sharding == NamedSharding(auto, P())


BAD_RULES = [
    (
        "w = None, modl",
        r"^line 1: w matches leaf 'w': dimension 1: axis 'modl' is not in the mesh, whose axes are 'data', 'model'$",
    ),
    (
        "w = data\nodd = model",
        r"^line 2: odd matches leaf 'odd': dimension 0 has size 6, which model=4 cannot split evenly",
    ),
    ("[w = model", r"^line 1: bad glob '\[w': the \[ at character 1 is never closed$"),
    ("layers.[!]. = model", r"^line 1: bad glob 'layers.\[!\].': the \[ at character 8 is never closed$"),
    ("[z-a] = model", r"^line 1: bad glob '\[z-a\]': the range z-a is reversed$"),
    (
        "w = data\n\n# a comment\nnothing.here = model",
        r"^line 4: nothing.here matches no array leaf; paths read like 'layers.0.w', or",
    ),
    ("lr = model", r"^line 1: lr matches no array leaf; paths read like "),
    (
        "layers.* = model\nlayers.0.w = data",
        r"^line 2: every leaf layers.0.w matches is taken first by line 1, so this rule sets nothing$",
    ),
    ("w = (data", r"^line 1: the spec '\(data' has a \( without its \)$"),
    ("w model", r"^line 1: expected GLOB = SPEC \(e.g. layers.\*.w = None, model\), got 'w model'$"),
    ("  = model", r"^line 1: expected GLOB = SPEC"),
    (
        "w = data, model, data",
        r"^line 1: w matches leaf 'w': the spec P\('data', 'model', 'data'\) has 3 entries but the array has rank 2",
    ),
    ("w = data, data", r"^line 1: w matches leaf 'w': axis 'data' is used twice, by dimension 0 and dimension 1"),
    (
        "w = (data, model)",
        r"^line 1: w matches leaf 'w': dimension 0 has size 4, which data=2 × model=4 cannot split",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_RULES, ids=[t for t, _ in BAD_RULES])
def test_every_bad_rule_names_its_line(mesh, text, message):
    w = jax.device_put(jnp.arange(16.0).reshape(4, 4), NamedSharding(mesh, P()))
    tree = {"w": w, "odd": jax.device_put(jnp.ones(6), NamedSharding(mesh, P())), "lr": 0.1,
            "layers": [{"w": jax.device_put(jnp.ones((4, 4)), NamedSharding(mesh, P()))}]}  # fmt: skip
    with pytest.raises(ShardingError, match=message):
        apply_rules(tree, text)
    assert (
        not w.is_deleted() and w.sharding == NamedSharding(mesh, P()) and values_equal(w, np.arange(16.0).reshape(4, 4))
    )


def test_rules_parse_to_canonical_text():
    rules = parse_rules("a.* = P('data', None)\n b = (x, y), z \nc=\n")
    assert rules == (
        Rule(1, "a.*", (("data",), None)),
        Rule(2, "b", (("x", "y"), ("z",))),
        Rule(3, "c", ()),
    )
    assert [r.text for r in rules] == ["a.* = data", "b = (x, y), z", "c = None"]
    assert [r.partition_spec for r in rules] == [P("data", None), P(("x", "y"), "z"), P()]
    with pytest.raises(ShardingError, match=r"rules are text \(one GLOB = SPEC per line\), not int"):
        parse_rules(5)  # type: ignore[arg-type]
    with pytest.raises(ShardingError, match=r"at most \d+ are accepted"):
        parse_rules("a = b\n" * 20000)


def test_a_tree_of_single_device_leaves_has_no_mesh_to_give():
    x = jax.device_put(jnp.ones(8), SingleDeviceSharding(jax.devices()[0]))
    with pytest.raises(ShardingError, match=r"line 1: x matches leaf 'x', which has no mesh, and the tree has none"):
        apply_rules({"x": x}, "x = data")


# --------------------------------------------------------------------------
# copy code: the Python the rules stand for, run on the same tree


def run_code(code: str, tree, name: str = "TREE"):
    """Runs the copy code as pasted where ``name`` holds the tree; returns ``resharded``."""
    namespace = {name: tree, "mesh": "the user's mesh", "devices": "the user's devices"}
    exec(compile(code, "<rules code>", "exec"), namespace)  # test-only: our own generated source
    # It defines what its first line says, and leaves the user's names alone.
    assert (
        namespace[name] is tree
        and namespace["mesh"] == "the user's mesh"
        and namespace["devices"] == "the user's devices"
    )
    defined = code.splitlines()[0].removeprefix("# Defines ").split(" and resharded")[0].split(", ")
    assert all(n in namespace for n in defined)
    return namespace["resharded"]


def assert_same_tree(a, b):
    leaves_a = jax.tree.leaves(a, is_leaf=lambda x: x is None)
    leaves_b = jax.tree.leaves(b, is_leaf=lambda x: x is None)
    assert jax.tree.structure(a, is_leaf=lambda x: x is None) == jax.tree.structure(b, is_leaf=lambda x: x is None)
    for x, y in zip(leaves_a, leaves_b):
        if isinstance(x, jax.ShapeDtypeStruct):
            assert x == y
        elif isinstance(x, jax.Array):
            assert x.sharding == y.sharding and values_equal(x, y)
        else:
            assert x == y or (x is None and y is None)


def test_copy_code_does_what_the_rules_do(tree):
    applied = apply_rules(tree, RULES)
    code = rules_code(applied)
    assert (
        "rules_mesh = Mesh(rules_devices, ('data', 'model'), axis_types=(AxisType.Explicit, AxisType.Explicit))" in code
    )
    assert "    ('layers.*.w', P('data', 'model')),  # line 4" in code
    assert_same_tree(run_code(code, tree), applied.tree)


def test_copy_code_without_a_fallback_mesh_uses_each_leaf_mesh(tree):
    applied = apply_rules(tree, "embed = None, model\nhead = data")
    assert applied.fallback_mesh is None
    code = rules_code(applied)
    assert "rules_mesh =" not in code and "import numpy" not in code
    assert_same_tree(run_code(code, tree), applied.tree)


def test_copy_code_rebuilds_a_shuffled_mesh():
    order = [5, 2, 7, 0, 1, 6, 3, 4]
    shuffled = Mesh(np.array([jax.devices()[i] for i in order]).reshape(2, 4), ("a", "b"),
                    axis_types=(AxisType.Auto, AxisType.Explicit))  # fmt: skip
    tree = {"w": jax.device_put(jnp.ones((4, 8)), NamedSharding(shuffled, P())),
            "n": jax.device_put(jnp.ones(4), SingleDeviceSharding(jax.devices()[0]))}  # fmt: skip
    applied = apply_rules(tree, "* = a")
    code = rules_code(applied)
    assert "[5, 2, 7, 0, 1, 6, 3, 4]" in code and "AxisType.Auto, AxisType.Explicit" in code
    assert_same_tree(run_code(code, tree), applied.tree)


def test_copy_code_for_an_abstract_tree():
    mesh = AbstractMesh((16, 16), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Auto))
    tree = {"w": jax.ShapeDtypeStruct((4096, 1024), jnp.float32, sharding=NamedSharding(mesh, P())),
            "count": jax.ShapeDtypeStruct((), jnp.int32)}  # fmt: skip
    applied = apply_rules(tree, "w = model\ncount = ", mesh=mesh)
    code = rules_code(applied)
    assert (
        "rules_mesh = AbstractMesh((16, 16), ('data', 'model'), axis_types=(AxisType.Explicit, AxisType.Auto))" in code
    )
    assert_same_tree(run_code(code, tree), applied.tree)
    # Text rules and a mesh give the same source as the applied result.
    assert rules_code("w = model\ncount = ", fallback_mesh=mesh) == code


def test_slash_paths_as_flax_and_orbax_write_them(tree, mesh):
    """``*/w = ...`` matches the leaves ``*.w`` does: the same paths joined by slashes."""
    dotted = apply_rules(tree, "layers.*.w = None, model")
    slashed = apply_rules(tree, "layers/*/w = None, model")
    star = apply_rules(tree, "*/w = None, model")
    assert dotted.matched == slashed.matched == star.matched == (("layers.0.w", "layers.1.w"),)
    for layer in star.tree["layers"]:
        assert layer["w"].sharding.is_equivalent_to(NamedSharding(mesh, P(None, "model")), 2)
    # The copy code matches the same way.
    code = rules_code(star, tree_name="params")
    namespace = {"params": tree}
    exec(compile(code, "<rules code>", "exec"), namespace)  # test-only: our own generated source
    assert namespace["resharded"]["layers"][0]["w"].sharding == star.tree["layers"][0]["w"].sharding
    # A pattern of either form that matches nothing says what the paths look like.
    with pytest.raises(
        ShardingError, match=r"^line 1: \*/w1 matches no array leaf; paths read like 'layers.0.b', or 'layers/0/b' in a"
    ):
        apply_rules(tree, "*/w1 = None, model")


def test_the_notice_counts_only_leaves_whose_sharding_changed(tree):
    from shardviz.tree.rules import rules_notice

    # embed is already P('data'); the layers' w are replicated and become P(None, 'model').
    applied = apply_rules(tree, "embed = data\nlayers.*.w = None, model")
    assert applied.changed == ("layers.0.w", "layers.1.w")
    assert sum(len(m) for m in applied.matched) == 3
    assert rules_notice(applied) == "2 leaves re-sharded by 2 rules (1 already laid out so)."
    assert rules_notice(apply_rules(tree, "embed = data")) == "0 leaves re-sharded by 1 rule (1 already laid out so)."


def test_copy_code_gives_the_pytree_of_shardings(tree, mesh):
    """``shardings`` from the copy code is ready for jax.device_put and jax.jit; the arrays it
    places equal what the view shows (JAX's own addressable_shards)."""
    applied = apply_rules(tree, "layers.*.w = None, model\nhead = data, model")
    namespace = {"params": tree}
    exec(compile(rules_code(applied, tree_name="params"), "<rules code>", "exec"), namespace)
    shardings = namespace["shardings"]
    arrays = {k: v for k, v in tree.items() if k in ("embed", "layers", "head")}
    wanted = {k: shardings[k] for k in arrays}
    placed = jax.device_put(arrays, wanted)
    for got, shown in zip(jax.tree.leaves(placed), jax.tree.leaves({k: applied.tree[k] for k in arrays})):
        assert got.sharding.is_equivalent_to(shown.sharding, got.ndim)
        assert [s.index for s in got.addressable_shards] == [s.index for s in shown.addressable_shards]
    # and jax.jit takes it as in/out shardings
    out = jax.jit(lambda t: t, in_shardings=(wanted,), out_shardings=wanted)(placed)
    assert out["head"].sharding.is_equivalent_to(NamedSharding(mesh, P("data", "model")), 2)


# --------------------------------------------------------------------------
# one group per layout, and "already laid out so" as JAX judges it


def test_specs_written_two_ways_share_a_group_and_lay_out_alike():
    """P('x') and P('x', None) (and memory kinds None and device on an AbstractMesh) compare unequal
    in JAX but lay a leaf out alike: one group, so the browser's rules engine can tell groups apart."""
    mesh = jax.make_mesh((4, 2), ("x", "y"), devices=jax.devices()[:8])
    short = jax.device_put(jnp.zeros((8, 4)), NamedSharding(mesh, P("x")))
    long = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x", None)))
    assert short.sharding != long.sharding
    assert short.sharding.devices_indices_map((8, 4)) == long.sharding.devices_indices_map((8, 4))
    layout = shardviz.describe_tree({"a": short, "b": long})
    assert layout.leaf_group.tolist() == [0, 0]
    assert layout.type_str(0) == str(jax.typeof(short)) and layout.type_str(1) == str(jax.typeof(long))

    pod = AbstractMesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    plain = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(pod, P("x")))
    named = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(pod, P("x"), memory_kind="device"))
    assert plain.sharding != named.sharding
    assert shardviz.describe_tree([plain, named]).leaf_group.tolist() == [0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_already_laid_out_so_is_what_jax_calls_equivalent(seed):
    """The notice's "already laid out so" agrees with NamedSharding.is_equivalent_to on Auto and Explicit meshes."""
    import random

    from shardviz.tree.rules import lays_out_alike

    rng = random.Random(seed)
    kind = rng.choice([AxisType.Auto, AxisType.Explicit])
    mesh = jax.make_mesh((2, 1, 4), ("a", "b", "c"), devices=jax.devices()[:8], axis_types=(kind,) * 3)
    entries = [None, "a", "b", "c", ("a", "b"), ("b", "c"), ("c", "a"), ("a", "b", "c")]

    def spec() -> P:
        used: set[str] = set()
        out = []
        for _ in range(rng.randint(0, 2)):
            entry = rng.choice([e for e in entries if not set(jax.tree.leaves(e)) & used])
            used |= set(jax.tree.leaves(entry))
            out.append(entry)
        return P(*out)

    for _ in range(40):
        old, new = NamedSharding(mesh, spec()), NamedSharding(mesh, spec())
        assert lays_out_alike(old, new, 2) == old.is_equivalent_to(new, 2), (old.spec, new.spec)


def test_rules_over_a_manual_axis_say_what_changed_where_jax_cannot_compare():
    """JAX's is_equivalent_to asserts on P() against P('x') over a Manual axis; the rules still apply and
    count the leaf as changed, and its new sharding is the one JAX builds from the spec."""
    mesh = AbstractMesh((2, 4), ("x", "y"), axis_types=(AxisType.Manual, AxisType.Explicit))
    tree = {"w": jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=NamedSharding(mesh, P()))}
    with pytest.raises(AssertionError):
        tree["w"].sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 2)
    applied = apply_rules(tree, "w = x")
    assert applied.changed == ("w",)
    assert applied.tree["w"].sharding == NamedSharding(mesh, P("x"))
