"""Candidates without a trace: the forms compare() takes, and the step's arguments laid out by a
candidate's specs, rules text (docs/comparing.md's ``GLOB = SPEC`` lines) or function of the mesh,
read back from the ``ShapeDtypeStruct``s' own shardings. Bad input names what was wrong."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.compare.candidates import Candidate, _holds_structs, _without_sharding, as_candidate, resolve_arguments

MESH = AbstractMesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
W = jax.ShapeDtypeStruct((8, 4), jnp.float32)
X = jax.ShapeDtypeStruct((4,), jnp.bfloat16, weak_type=True)
REF = jax.ShapeDtypeStruct((4, 2), jnp.float32, is_ref=True)  # a mutable array's stand-in


def specs_of(arguments):
    return [None if not isinstance(a, jax.ShapeDtypeStruct) else tuple(a.sharding.spec)
            for a in jax.tree.leaves(arguments)]  # fmt: skip


def test_a_candidates_mesh_is_abstract_and_labelled_by_its_axes():
    candidate = Candidate("a", MESH)
    assert candidate.abstract_mesh is MESH and candidate.shardings is None
    assert candidate.mesh_label == "data=4 x model=2"
    real = jax.make_mesh((2, 1), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    assert Candidate("b", real).abstract_mesh == real.abstract_mesh
    assert Candidate("b", real).mesh_label == "x=2 x y=1"


def test_a_candidate_is_a_candidate_or_a_tuple_with_or_without_its_name():
    given = Candidate("a", MESH, "x = data")
    assert as_candidate(given, 0) is given
    assert as_candidate(("b", MESH, "w = model"), 1) == Candidate("b", MESH, "w = model")
    assert as_candidate((MESH, "w = model"), 2) == Candidate("#3", MESH, "w = model")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("nope", "candidate 2 is a str; a candidate is shardviz.compare.Candidate(name, mesh, shardings), "
                 "(name, mesh, shardings) or (mesh, shardings)"),
        ((MESH,), "candidate 2 is a tuple; "),
        ((1, MESH, None), "candidate 2 is a tuple; "),
        (("n", "4x2", None), "candidate 'n': its mesh is a str, not a jax.sharding.Mesh or AbstractMesh"),
        (("4x2", None), "candidate '#2': its mesh is a str, not a jax.sharding.Mesh or AbstractMesh"),
    ],
)  # fmt: skip
def test_what_is_no_candidate_is_refused_by_its_place(item, message):
    with pytest.raises(shardviz.ShardingError) as refused:
        as_candidate(item, 1)
    assert str(refused.value).startswith(message)


def test_arguments_lose_their_own_shardings_and_keep_the_rest():
    laid = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(MESH, P("data")))
    plain = _without_sharding({"w": laid, "x": X, "n": 3, "r": REF})
    assert plain["w"].sharding is None and plain["w"].shape == (8, 4) and plain["w"].dtype == jnp.float32
    assert plain["x"].weak_type is True and plain["n"] == 3
    assert plain["r"].is_ref is True and plain["w"].is_ref is False and plain["x"].is_ref is False
    assert _holds_structs((1, [X])) and not _holds_structs((1, [2.0]))


def test_specs_lay_out_the_arguments_a_prefix_spec_laying_out_a_whole_subtree():
    laid = resolve_arguments(Candidate("a", MESH, (P("data", "model"), None, P("model"))), (W, X, {"b": W, "c": REF}))
    assert specs_of(laid) == [("data", "model"), (), ("model",), ("model",)]
    assert all(a.sharding.mesh == MESH for a in jax.tree.leaves(laid))
    assert laid[1].weak_type is True and laid[1].dtype == jnp.bfloat16 and laid[0].shape == (8, 4)
    assert [a.is_ref for a in jax.tree.leaves(laid)] == [False, False, False, True]
    assert [a.weak_type for a in jax.tree.leaves(laid)] == [False, True, False, False]


def test_specs_keep_what_is_no_array_and_give_each_argument_its_own_sharding_anew():
    old = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(MESH, P("model")))
    laid = resolve_arguments(Candidate("a", MESH, (None, P("data"))), (old, [W, 5]))
    assert specs_of(laid) == [(), ("data",), None]
    assert laid[1][1] == 5


def test_specs_that_do_not_match_the_arguments_name_the_candidate():
    with pytest.raises(shardviz.ShardingError, match=r"^candidate 'a': its specs do not match the step's arguments: "):
        resolve_arguments(Candidate("a", MESH, (P("data"), P("data"))), (W, X, W))


def test_rules_lay_out_the_leaves_they_match_and_replicate_the_rest():
    laid = resolve_arguments(Candidate("a", MESH, "0 = data, model\n2.b = model"), (W, X, {"b": REF, "c": REF}, 7))
    assert laid[3] == 7
    assert specs_of(laid) == [("data", "model"), (), ("model",), (), None]
    assert all(a.sharding.mesh == MESH for a in jax.tree.leaves(laid[:3]))
    assert laid[1].weak_type is True and laid[1].dtype == jnp.bfloat16 and laid[2]["b"].shape == (4, 2)
    assert [a.is_ref for a in jax.tree.leaves(laid[:3])] == [False, False, True, True]
    assert [a.weak_type for a in jax.tree.leaves(laid[:3])] == [False, True, False, False]


def test_rules_that_cannot_apply_name_the_candidate_and_the_line():
    with pytest.raises(shardviz.ShardingError, match=r"^candidate 'a': rules line 2: "):
        resolve_arguments(Candidate("a", MESH, "0 = data\n1 = nope"), (W, X))


def test_a_function_of_the_mesh_gives_specs_rules_or_the_arguments_themselves():
    seen = []

    def specs(mesh):
        seen.append(mesh)
        return (P("model"), None)

    assert specs_of(resolve_arguments(Candidate("a", MESH, specs), (W, X))) == [("model",), ()]
    assert seen == [MESH]
    assert specs_of(resolve_arguments(Candidate("a", MESH, lambda m: "1 = data"), (W, X))) == [(), ("data",)]
    given = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(MESH, P("data")))
    assert resolve_arguments(Candidate("a", MESH, lambda m: [given, given]), None) == (given, given)
    assert resolve_arguments(Candidate("a", MESH, lambda m: (given,)), None) == (given,)
    assert resolve_arguments(Candidate("a", MESH, lambda m: given), None) == (given,)


def test_a_function_that_raises_is_named_with_its_error():
    def broken(mesh):
        raise shardviz.ShardingError("my own words")

    with pytest.raises(shardviz.ShardingError) as refused:
        resolve_arguments(Candidate("a", MESH, broken), (W,))
    assert str(refused.value) == "my own words"
    with pytest.raises(shardviz.ShardingError) as refused:
        resolve_arguments(Candidate("a", MESH, lambda m: 1 / 0), (W,))
    assert str(refused.value) == "candidate 'a': its shardings function raised ZeroDivisionError: division by zero"


def test_shardings_with_no_arguments_say_what_to_pass():
    with pytest.raises(shardviz.ShardingError) as refused:
        resolve_arguments(Candidate("a", MESH, lambda m: (P("data"),)), None)
    assert str(refused.value) == (
        "candidate 'a' gives shardings but no arguments: pass compare(..., args=(...)) of jax.ShapeDtypeStructs, "
        "or give a function of the mesh that returns the arguments"
    )


LOGICAL_MESH = AbstractMesh((2, 2, 2), ("data", "fsdp", "model"), axis_types=(AxisType.Explicit,) * 3)
# an MLP's weights and its input, as MaxText names them: the batch over two axes, a bias left unnamed
LOGICAL_ARGS = (
    {"b": jax.ShapeDtypeStruct((256,), jnp.float32), "w_in": jax.ShapeDtypeStruct((64, 256), jnp.bfloat16),
     "w_out": jax.ShapeDtypeStruct((256, 64), jnp.bfloat16)},
    jax.ShapeDtypeStruct((8, 64), jnp.bfloat16),
)  # fmt: skip
LOGICAL_NAMES = {"0.w_in": ["embed", "mlp"], "0.w_out": ("mlp", "embed"), "1": ("batch", None)}
RULES = [("batch", ("data", "fsdp")), ("embed", "fsdp"), ("mlp", "model"), ("vocab", None)]


def test_logical_names_by_path_are_tuples_and_a_tree_without_flax_boxes_names_nothing():
    rules = shardviz.LogicalRules(RULES, LOGICAL_NAMES)
    assert rules.names_by_path() == {"0.w_in": ("embed", "mlp"), "0.w_out": ("mlp", "embed"), "1": ("batch", None)}
    # a list of plain arrays holds no Flax box, so no leaf has names
    assert shardviz.LogicalRules(RULES, [LOGICAL_ARGS[1]]).names_by_path() == {}


def test_logical_rules_become_rules_text_each_named_leaf_on_its_names_axes():
    text = shardviz.LogicalRules(RULES, LOGICAL_NAMES).rules_text(LOGICAL_ARGS)
    # by hand (Flax's logical_to_mesh_axes): embed -> fsdp, mlp -> model, batch -> (data, fsdp); the
    # unnamed bias has no line; leaves in the tree's order (dict keys sorted)
    assert text == "0.w_in = fsdp, model\n0.w_out = model, fsdp\n1 = (data, fsdp), None"
    # a leaf whose names map to no mesh axis is replicated, so it gets no line
    only_vocab = shardviz.LogicalRules(RULES, {"0.b": ("vocab",), "1": ("batch", "embed")})
    assert only_vocab.rules_text(LOGICAL_ARGS) == "1 = (data, fsdp), None"
    # batch takes fsdp first, so embed's fsdp is taken and embed stays unsplit
    assert shardviz.LogicalRules(RULES, {"1": ("embed", "mlp")}).rules_text(LOGICAL_ARGS) == "1 = fsdp, model"
    # a leaf without a shape is skipped even when named
    assert shardviz.LogicalRules(RULES, {"1": ("batch",)}).rules_text((3, 4)) == ""


def test_logical_names_that_do_not_match_a_leafs_dimensions_are_refused_naming_the_leaf():
    wrong = shardviz.LogicalRules(RULES, {"0.w_in": ("embed",)})
    with pytest.raises(shardviz.ShardingError) as refused:
        wrong.rules_text(LOGICAL_ARGS)
    assert str(refused.value) == "logical names ('embed',) of 0.w_in do not match its 2 dimensions"
    with pytest.raises(shardviz.ShardingError) as refused:
        resolve_arguments(Candidate("lr", LOGICAL_MESH, wrong), LOGICAL_ARGS)
    assert str(refused.value) == "candidate 'lr': logical names ('embed',) of 0.w_in do not match its 2 dimensions"


def test_a_candidates_logical_rules_lay_out_the_arguments_as_their_rules_text_does():
    laid = resolve_arguments(Candidate("lr", LOGICAL_MESH, shardviz.LogicalRules(RULES, LOGICAL_NAMES)), LOGICAL_ARGS)
    # leaves in order b, w_in, w_out, x: the bias replicated
    assert specs_of(laid) == [(), ("fsdp", "model"), ("model", "fsdp"), (("data", "fsdp"), None)]
    assert all(a.sharding.mesh == LOGICAL_MESH for a in jax.tree.leaves(laid))


def test_logical_names_are_read_off_flax_linen_boxes_in_a_tree_laid_out_like_the_arguments():
    nn = pytest.importorskip("flax.linen")
    from flax.core import FrozenDict

    box = nn.LogicallyPartitioned(LOGICAL_ARGS[0]["w_in"], names=("embed", "mlp"))
    # the box's own ".value" is no part of the path rules text matches
    assert shardviz.LogicalRules(RULES, [{"w_in": box}, LOGICAL_ARGS[1]]).names_by_path() == {
        "0.w_in": ("embed", "mlp")
    }
    assert shardviz.LogicalRules(RULES, ({"w_in": box},)).names_by_path() == {"0.w_in": ("embed", "mlp")}
    # a mapping that is no dict of paths (Flax's FrozenDict, a dict keyed by position) is a tree too
    assert shardviz.LogicalRules(RULES, FrozenDict({"w_in": box})).names_by_path() == {"w_in": ("embed", "mlp")}
    assert shardviz.LogicalRules(RULES, {0: box}).names_by_path() == {"0": ("embed", "mlp")}
    laid = resolve_arguments(Candidate("lr", LOGICAL_MESH, shardviz.LogicalRules(RULES, [{"w_in": box}])), LOGICAL_ARGS)
    assert specs_of(laid) == [(), ("fsdp", "model"), (), ()]
