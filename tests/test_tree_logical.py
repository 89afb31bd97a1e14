"""Logical axes in the model view: Flax NNX's ``nnx.with_partitioning`` / ``sharding`` metadata and
Linen's ``nn.with_logical_partitioning`` with logical-axis rules, read by ``describe_tree`` and shown
beside the mesh axes JAX laid each parameter out on (``embed -> fsdp``), checked against each
array's own ``sharding.spec``; and logical-axis rules as a ``compare`` candidate."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType

import shardviz
from shardviz.tree.logical import logical_text

nnx = pytest.importorskip("flax.nnx")
nn = pytest.importorskip("flax.linen")


def _axes(array):
    spec = tuple(array.sharding.spec) + (None,) * (array.ndim - len(array.sharding.spec))
    return [() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in spec]


def test_the_nnx_guides_model_shows_its_partitioning_names_beside_the_mesh_axes():
    # Flax's NNX GSPMD guide: DotReluDot, one kernel by nnx.with_partitioning, one Param by sharding=
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])

    class DotReluDot(nnx.Module):
        def __init__(self, depth, rngs):
            init_fn = nnx.initializers.lecun_normal()
            self.dot1 = nnx.Linear(
                depth, depth, kernel_init=nnx.with_partitioning(init_fn, (None, "model")), use_bias=False, rngs=rngs
            )
            self.w2 = nnx.Param(init_fn(rngs.params(), (depth, depth)), sharding=("model", None))

    with jax.set_mesh(mesh):
        state = nnx.state(DotReluDot(64, rngs=nnx.Rngs(0)))
    layout = shardviz.describe_tree(state)
    by_path = {p: i for i, p in enumerate(layout.paths)}
    kernel, w2 = by_path["dot1.kernel.value"], by_path["w2.value"]
    assert layout.logical[kernel] == (None, "model") and layout.logical[w2] == ("model", None)
    # beside the axes JAX laid each array out on
    arrays = dict(zip(layout.paths, jax.tree.leaves(state)))
    assert layout.logical_text(w2) == logical_text(("model", None), _axes(arrays["w2.value"]))
    assert _axes(arrays["w2.value"]) == [("model",), ()]
    assert layout.logical_text(w2) == "model -> model"
    assert "model -> model" in str(layout)
    payload = layout.to_json()
    assert [kernel, [None, "model"], "model -> model"] in payload["leaves"]["logical"]


def test_the_linen_guides_logical_rules_show_embed_and_hidden_on_their_mesh_axes():
    # Flax's Linen guide "Scale up Flax Modules on multiple devices": logical names on the kernels,
    # rules mapping them to mesh axes, the params initialised onto those shardings
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])
    rules = (("batch", "data"), ("hidden", "model"), ("embed", None))

    class DotReluDot(nn.Module):
        depth: int

        @nn.compact
        def __call__(self, x):
            w1 = self.param("W1", nn.with_logical_partitioning(nn.initializers.xavier_normal(), ("embed", "hidden")),
                            (x.shape[-1], self.depth))  # fmt: skip
            y = jax.nn.relu(x @ w1)
            w2 = self.param("W2", nn.with_logical_partitioning(nn.initializers.xavier_normal(), ("hidden", "embed")),
                            (self.depth, x.shape[-1]))  # fmt: skip
            return y @ w2

    x = jnp.ones((8, 32))
    model = DotReluDot(64)
    abstract = jax.eval_shape(model.init, jax.random.key(0), x)
    shardings = nn.logical_to_mesh_sharding(nn.get_partition_spec(abstract), mesh, rules)
    params = jax.jit(model.init, out_shardings=shardings)(jax.random.key(0), x)
    layout = shardviz.describe_tree(params)
    by_path = {p: i for i, p in enumerate(layout.paths)}
    w1 = by_path["params.W1.value"]
    assert layout.logical[w1] == ("embed", "hidden")
    array = params["params"]["W1"].value
    assert _axes(array) == [(), ("model",)]  # JAX's own layout of W1 by the rules
    assert layout.logical_text(w1) == "embed -> -, hidden -> model"
    assert "hidden -> model" in str(layout)


def test_a_tree_without_flax_boxes_has_no_logical_axes():
    layout = shardviz.describe_tree({"w": jnp.ones((8, 4))})
    assert dict(layout.logical) == {} and "logical" not in layout.to_json()["leaves"]


def test_search_gives_every_traced_plan_as_logical_rules_and_compare_takes_them():
    from search_steps import mlp_block_arguments, mlp_block_step

    # MaxText's way: activations have their own names, so a weight's embed can go to fsdp
    names = {"0.w_in": ("embed", "mlp"), "0.w_out": ("mlp", "embed"), "1": ("batch", "activation_embed")}
    args = mlp_block_arguments(8 * 750, 64, 2048)
    result = shardviz.search(mlp_block_step, args, devices=8, top_k=3, names=names, timeout=300)
    traced = [c for c in result.search.candidates if c.status == "traced"]
    assert len(traced) == 3 and all(c.logical_rules is not None for c in traced)
    best = next(c for c in traced if c.name == result.search.best)
    assert result.search.best_logical_rules == best.logical_rules
    again = shardviz.compare(
        mlp_block_step,
        [
            shardviz.Candidate(c.name, jax.sharding.AbstractMesh(tuple(n for _, n in c.axes), tuple(a for a, _ in c.axes)),
                               shardviz.LogicalRules(c.logical_rules, names))
            for c in traced
        ],
        args=args,
    )  # fmt: skip
    assert not again.failures
    for c in traced:
        # each plan's logical rules lay every argument out as its rules text did (JAX's own input layouts)
        assert [x.spec for x in again.programs[c.name].inputs] == [x.spec for x in result.programs[c.name].inputs]
        assert again.row(c.name).step_s == pytest.approx(result.row(c.name).step_s, rel=1e-9)
        assert result.search.to_json()["candidates"][result.search.candidates.index(c)]["logical_rules"] == [
            [n, list(a)] for n, a in c.logical_rules
        ]
    assert "logical-axis rules" in result.search.report()
    plain = shardviz.search(mlp_block_step, args, devices=8, top_k=1, timeout=300)
    assert all(c.logical_rules is None for c in plain.search.candidates)


def test_logical_rules_name_what_is_wrong():
    from search_steps import mlp_block_arguments, mlp_block_step

    mesh = jax.sharding.AbstractMesh((8,), ("fsdp",))
    bad = shardviz.LogicalRules([("embed",)], {"0.w_in": ("embed", "mlp")})
    result = shardviz.compare(mlp_block_step, [("bad", mesh, bad)], args=mlp_block_arguments(64, 32, 64))
    assert "logical-axis rule 1" in result.failures[0].error
    wrong = shardviz.LogicalRules([("embed", "fsdp")], {"0.w_in": ("embed",)})
    result = shardviz.compare(mlp_block_step, [("wrong", mesh, wrong)], args=mlp_block_arguments(64, 32, 64))
    assert "0.w_in" in result.failures[0].error and "2 dimensions" in result.failures[0].error


def test_only_a_tree_with_a_registered_node_is_walked_for_flax_boxes():
    """dicts, lists, tuples, None and optax's namedtuple states can hold no Flax box, so describe_tree
    skips the second walk for them; a Linen box and an NNX variable are registered nodes of their own."""
    import optax
    from flax import linen as nn
    from flax import nnx

    from shardviz.tree.logical import may_hold_boxes

    x = jnp.ones((2, 4))
    plain = {"a": [x, (x, None)], "opt": optax.adam(1e-3).init({"w": x})}
    assert not may_hold_boxes(jax.tree_util.tree_structure(plain))
    assert shardviz.describe_tree(plain).logical == {}
    boxed = {"p": nn.LogicallyPartitioned(x, names=("batch", "embed"))}
    assert may_hold_boxes(jax.tree_util.tree_structure(boxed))
    assert dict(shardviz.describe_tree(boxed).logical) == {0: ("batch", "embed")}
    assert may_hold_boxes(jax.tree_util.tree_structure({"v": nnx.Param(x)}))


@pytest.mark.parametrize(
    ("names", "rules"),
    [
        (("embed", "mlp"), (("embed", "fsdp"), ("mlp", "model"))),
        (("mlp", "embed"), (("embed", "fsdp"), ("mlp", "model"), ("embed", "data"))),  # the first rule wins
        (("batch", "length", "embed"), (("batch", ("data", "fsdp")), ("length", None), ("embed", "model"))),
        # a mesh axis is used once per array: the second dimension that maps to it stays whole
        (("embed", "embed_again"), (("embed", "fsdp"), ("embed_again", "fsdp"))),
        (("heads", None, "kv"), (("heads", "model"), ("kv", None))),
        (("unknown", "mlp"), (("mlp", "model"),)),
        (("a", "b"), (("a", ("fsdp", "model")), ("b", ("model", "data")))),  # 'model' taken by a
        (("a", "b"), (("b", "x"), ("a", "x"))),  # rules in order: b takes x first
        (("embed", "mlp"), (("mlp", "fsdp"), ("embed", "fsdp"), ("embed", "data"))),  # a fallback rule
        (("embed", "mlp"), (("embed", None), ("embed", "fsdp"), ("mlp", "fsdp"))),  # None assigns, no fallback
    ],
)
def test_logical_rules_lay_out_each_dimension_as_flax_does(names, rules):
    from jax.sharding import PartitionSpec

    from shardviz.tree.logical import parse_logical_rules, spec_for

    ours = spec_for(names, parse_logical_rules(rules))
    theirs = nn.logical_to_mesh_axes(names, rules)  # Flax's own answer
    assert isinstance(theirs, PartitionSpec)
    expected = tuple(() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in theirs)
    assert ours == expected + ((),) * (len(names) - len(expected))


def test_logical_rules_are_read_as_pairs_and_bad_ones_are_named():
    from shardviz import ShardingError
    from shardviz.tree.logical import logical_text, mesh_axes_of, parse_logical_rules

    assert parse_logical_rules({"embed": "fsdp", "mlp": ("model", "data"), "norm": None}) == (
        ("embed", ("fsdp",)), ("mlp", ("model", "data")), ("norm", ()),
    )  # fmt: skip
    assert parse_logical_rules([["embed", ["fsdp"]]]) == (("embed", ("fsdp",)),)
    assert parse_logical_rules(()) == ()
    for bad, words in [
        ("embed=fsdp", "got a str"),
        (b"x", "got a bytes"),
        (42, "got a int"),
        ([("embed",)], "logical-axis rule 1 is ('embed',)"),
        ([("a", "x"), ("b", "y", "z")], "logical-axis rule 2 is"),
        ([(3, "fsdp")], "rule 1 is (3, 'fsdp')"),
        (["ab"], "rule 1 is 'ab'"),
        ([("embed", 3)], "logical-axis rule 1 ('embed') names 3; mesh axes are strings"),
        ([("embed", ("fsdp", None))], "rule 1 ('embed') names ('fsdp', None)"),
    ]:
        with pytest.raises(ShardingError, match=re.escape(words)):
            parse_logical_rules(bad)
    # beside the mesh axes: a spec shorter than the names is padded, an unnamed dimension left out
    assert mesh_axes_of(("embed", "mlp", None), [("fsdp",)]) == (("embed", ("fsdp",)), ("mlp", ()), (None, ()))
    assert logical_text(("embed", None, "mlp"), [("fsdp", "data"), ("model",), ()]) == "embed -> fsdp+data, mlp -> -"


def test_a_box_by_its_names_or_its_metadata():
    from shardviz.tree.logical import _is_box, _names_of

    class Linen:
        def __init__(self, names):
            self.names = names

    class Variable:
        def __init__(self, meta):
            self.meta = meta

        def get_metadata(self):
            return self.meta

    class Raising:
        @property
        def names(self):
            raise RuntimeError("no")

    assert _names_of(Linen(("embed", None))) == ("embed", None)
    assert _names_of(Linen(["embed", "mlp"])) == ("embed", "mlp")
    assert _names_of(Linen(())) is None and _names_of(Linen(("embed", 3))) is None and _names_of(Linen("ab")) is None
    # NNX: the newest metadata key first
    assert _names_of(Variable({"sharding": ("old",), "out_sharding": ("new",)})) == ("new",)
    assert _names_of(Variable({"sharding_names": ("mid",), "sharding": ("old",)})) == ("mid",)
    assert _names_of(Variable({"sharding": ("model", None)})) == ("model", None)
    assert _names_of(Variable({"other": ("x",)})) is None and _names_of(Variable(["not", "a", "mapping"])) is None
    assert _names_of(Variable) is None  # the class itself is no box
    assert _names_of(jnp.ones((2,))) is None and _names_of(jax.ShapeDtypeStruct((2,), jnp.float32)) is None
    assert _is_box(Linen(("a",))) and not _is_box(Raising()) and not _is_box(object())


def test_logical_names_of_boxes_among_plain_leaves():
    from shardviz.tree.logical import logical_names, parse_logical_rules, spec_for

    class Box:  # a Linen-like box: names, and the value's shape
        def __init__(self, names, shape):
            self.names, self.shape = names, shape

    tree = {"a": jnp.ones(2), "b": Box(("x",), (3,)), "c": Box(("x", "y"), (3,))}
    # the plain leaf first is passed over; a box whose names do not match its rank has none
    assert logical_names(tree) == {"b": ("x",)}
    # a rule for a name the array lacks is passed over too (Flax's own answer)
    rules = (("batch", "data"), ("embed", "fsdp"))
    expected = tuple(() if e is None else (e,) for e in nn.logical_to_mesh_axes(("embed", "mlp"), rules))
    assert spec_for(("embed", "mlp"), parse_logical_rules(rules)) == expected + ((),) * (2 - len(expected))
    assert expected[0] == ("fsdp",)
