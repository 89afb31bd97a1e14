"""Causes read through element-wise operations that stretch size-1 dimensions (``v[:, None] * ones``, an
outer product ``u[:, None] * w[None, :]``) and a shard_map body's ``all_to_all``, whose own out_specs differ
from its in_specs. Each expected reason is worked out by hand from the operands' specs; each collective is in
JAX's compiled module, and the top fix's specs compiled again leave it out.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from test_program_causes_loops_and_batches import MESH, hlo_kinds, put, top_fix_compiles_without


def constrain(x, *spec):
    return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(*spec)))


def swapped_in_body(x):
    @partial(jax.shard_map, mesh=MESH, in_specs=P("a", None), out_specs=P(None, "a"))
    def body(block):
        return jax.lax.all_to_all(block, "a", 1, 0, tiled=True)

    return body(x)


def test_a_shard_map_bodys_all_to_all_is_the_users_own_not_an_output_laid_out_unlike():
    """Planted wrong rule: the body's result leaves as P(None,'a') while x comes in P('a'), which reads like
    an output laid out unlike its operand. The all_to_all is the user's, written in the body, and nothing
    else moves; there is no change to try on a collective the code asks for."""
    x = put((12, 12), P("a", None))
    assert hlo_kinds(swapped_in_body, x) == ["all-to-all"]
    prog = shardviz.trace(swapped_in_body, x)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.axes) == ("shard-map", "all_to_all", ("a",))
    assert why.expression == 'return jax.lax.all_to_all(block, "a", 1, 0, tiled=True)'
    assert why.rule.startswith("you wrote all_to_all over 'a' inside a shard_map body")
    assert why.wanted is None and c.fixes == ()


def spread(v):
    return constrain(v[:, None] * jnp.ones((12, 12)), None, "a")


def test_a_value_stretched_against_a_constant_fill_carries_its_split_to_the_constraint():
    """v [12] P('a') becomes v[:, None] [12,1] P('a',None); times jnp.ones((12,12)), which holds no layout,
    the product is P('a',None), and the constraint asks P(None,'a'): dimension 0 drops 'a' (gathered) and
    dimension 1 takes it (a local cut). Before, the walk stopped at the mul (no operand of its shape holds
    data) and said it could not tell. v laid out whole leaves nothing to gather."""
    v = put((12,), P("a"))
    assert hlo_kinds(spread, v) == ["all-gather"]
    prog = shardviz.trace(spread, v)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.primitive == "sharding_constraint"
    assert [(o.type_str, o.spec) for o in why.operands] == [
        ("float32[12,1]", (("a",), ())),
        ("float32[12,12]", (("a",), ())),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (1, 0, ("a",), ((), ("a",)))
    assert "made as P('a') by mul from" in why.rule
    assert "dimension 0 goes from 'a' to whole, dimension 1 goes from whole to 'a'" in why.rule
    top = top_fix_compiles_without(spread, [(12,)], c, "all-gather")
    assert top.program.inputs[0].spec == ((),)


def outer(u, w):
    return constrain(u[:, None] * w[None, :], None, "a")


def outer_swapped(u, w):
    return constrain(w[None, :] * u[:, None], None, "a")


def test_an_outer_product_names_the_operand_whose_full_size_dimension_is_split_unlike():
    """u [12] P('a') and w [12] P(): u[:, None] is [12,1] split over 'a' on dimension 0, w[None, :] is
    [1,12] whole. The constraint asks P(None,'a') of the product, so u's split on dimension 0, which it
    holds at full size, is gathered; w is only cut (dimension 1 whole to 'a', no collective). Before, the
    reason said "cannot tell" and that nothing the product is made from was laid out otherwise."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer, *args) == ["all-gather"]
    prog = shardviz.trace(outer, *args)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.primitive == "mul" and why.wanted_by == "with_sharding_constraint"
    assert [(o.type_str, o.spec) for o in why.operands] == [
        ("float32[12,1]", (("a",), ())),
        ("float32[1,12]", ((), ("a",))),
        ("float32[12,12]", ((), ("a",))),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), ((), ("a",)))
    assert why.expression == "return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(*spec)))"
    assert why.rule == (
        "with_sharding_constraint asks for P(None, 'a') of %e, which mul makes element by element from %c "
        "(P('a')) stretched against %d: %c's full-size dimensions keep their splits, and dimension 0 goes from "
        "'a' to whole, so the split that is dropped is gathered"
    )
    top = top_fix_compiles_without(outer, [(12,), (12,)], c, "all-gather")
    assert [i.spec for i in top.program.inputs] == [((),), ((),)]


def test_an_outer_product_does_not_blame_the_whole_operand_that_comes_first():
    """Planted wrong operand: with w's stretch first, w[None, :] is whole on dimension 1 where P(None,'a')
    splits it, which is a cut and needs no collective. The operand named is still u's stretch, second."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_swapped, *args) == ["all-gather"]
    prog = shardviz.trace(outer_swapped, *args)
    (c,) = prog.collectives
    why = c.why
    assert why.primitive == "mul" and why.operand == 1
    assert why.operands[1].type_str == "float32[12,1]" and why.operands[1].spec == (("a",), ())
    assert (why.dimension, why.axes) == (0, ("a",))


def outer_as_made(u, w):
    return constrain(u[:, None] * w[None, :], "a", None)


def test_an_outer_product_asked_as_its_operands_make_it_moves_nothing():
    """u P('a') and w P() make the product P('a', None); asking for that is no move at all: XLA's module
    has no collective, so there is no reason to give."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_as_made, *args) == []
    assert shardviz.trace(outer_as_made, *args).collectives == ()


def layers_scanned(x, ws):
    def layer(h, w):
        return constrain(jnp.tanh(h @ w), "a", None), None

    return jax.lax.scan(layer, x, ws)[0]


def test_a_layer_scan_names_the_weight_gathered_for_a_contraction_the_constraint_splits_as_asked():
    """FSDP-shaped: h [12,12] P('a') and each layer's w (a slice of ws [3,12,12] P(None,'a')) P('a') on
    its contracting dimension 0. 'a' already splits h's rows, which the constraint keeps, so the product
    cannot be left as partial sums over 'a': XLA gathers w before the dot, and tanh(h @ w) comes out as
    asked. Planted wrong operand: h is split over 'a' on a dimension the contraction keeps, but as the
    constraint asks, so it is not the one gathered. ws laid out whole takes the gather out."""
    args = put((12, 12), P("a", None)), put((3, 12, 12), P(None, "a", None))
    assert hlo_kinds(layers_scanned, *args) == ["all-gather"]
    prog = shardviz.trace(layers_scanned, *args)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and c.axes == ("a",)
    assert [(o.label, o.spec) for o in why.operands] == [("a slice of ws", (("a",), ())), ("%g", (("a",), ()))]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), ((), ()))
    assert why.expression == "return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(*spec)))"
    assert why.rule == (
        "with_sharding_constraint asks for P('a') of %g, but a slice of ws (P('a')) is split over 'a' on its "
        "contracting dimension 0, while %g is split over 'a' as asked, so the product cannot be left as partial "
        "sums over it: XLA gathers a slice of ws over 'a' first, and %g comes out as asked"
    )
    top = top_fix_compiles_without(layers_scanned, [(12, 12), (3, 12, 12)], c, "all-gather")
    assert top.target == "ws" and [i.spec for i in top.program.inputs] == [(("a",), ()), ((), (), ())]


@jax.jit
def times(a, b):
    return a * b


def outer_in_a_helper(u, w):
    return constrain(times(u[:, None], w[None, :]), None, "a")


def test_an_outer_product_in_a_jitted_helper_names_the_axis_that_splits_two_dimensions():
    """The same product inside a jitted helper: XLA's metadata names the helper's mul, whose operands are
    u[:, None] P('a') and w[None, :], which XLA cuts P(None,'a') for the constraint. 'a' would split the
    product's dimension 0 (from u) and dimension 1 (from w): a mesh axis splits one dimension only, and
    the result is P(None,'a'), so u's stretch is the one moved. No operand has the product's shape, so
    before, the element-wise rule found no operand to lead and said it could not tell."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_in_a_helper, *args) == ["all-gather"]
    prog = shardviz.trace(outer_in_a_helper, *args)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.expression) == ("layout-mismatch", "mul", "return a * b")
    assert [(o.type_str, o.spec) for o in why.operands] == [
        ("float32[12,1]", (("a",), ())),
        ("float32[1,12]", ((), ("a",))),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), None)
    assert why.rule == (
        "mul works element by element on operands stretched against each other, and %c (P('a')) and %d "
        "(P(None, 'a')) are split over 'a' on different dimensions of the result: a mesh axis can split only "
        "one of them, so %c is moved to match %d"
    )
    top = top_fix_compiles_without(outer_in_a_helper, [(12,), (12,)], c, "all-gather")
    assert top.target == "u" and [i.spec for i in top.program.inputs] == [((),), ((),)]


def joined_then_constrained(x, y):
    return constrain(jnp.concatenate([x, y], 1), None, "a")


def test_a_concatenate_of_operands_laid_out_alike_carries_their_layout_to_the_constraint():
    """x and y [12,6] both P('a'), joined along dimension 1 (whole in both): the join is P('a'), and the
    constraint asks P(None,'a'), so 'a' moves from dimension 0 to 1, an all-to-all. Before, the walk back
    stopped at the concatenate (no operand of its shape) and said nothing it is made from was laid out
    otherwise. XLA keeps the all-to-all even for x and y whole, so no change tried removes it, and each
    says so."""
    args = put((12, 6), P("a")), put((12, 6), P("a"))
    assert hlo_kinds(joined_then_constrained, *args) == ["all-to-all"]
    assert hlo_kinds(joined_then_constrained, put((12, 6), P()), put((12, 6), P())) == ["all-to-all"]
    prog = shardviz.trace(joined_then_constrained, *args)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive) == ("layout-mismatch", "sharding_constraint")
    assert [(o.label, o.type_str, o.spec) for o in why.operands] == [
        ("x", "float32[12,6]", (("a",), ())),
        ("%c", "float32[12,12]", (("a",), ())),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (1, 0, ("a",), ((), ("a",)))
    assert "made as P('a') by concatenate from x (P('a'))" in why.rule
    assert c.fixes and not any(f.removed for f in c.fixes)


def joined_unlike_then_constrained(x, y):
    return constrain(jnp.concatenate([x, y], 1), None, "a")


def test_a_concatenate_of_operands_laid_out_unlike_carries_neither_layout():
    """x P('a') and y P(None,'b') joined along dimension 1. XLA gathers y over 'b' (its metadata names the
    input y, its line the constraint's) to lay it out as x is, then moves the join's 'a' to dimension 1
    (all-to-all). The gather is y's, moved for the concatenate. Planted wrong reasons: reading x's layout
    as the join's would be a guess at which operand XLA moved, so the all-to-all says it cannot tell and
    names the concatenate it cannot read back through; "nothing it is made from is laid out otherwise"
    would be false."""
    args = put((12, 6), P("a")), put((12, 6), P(None, "b"))
    assert sorted(hlo_kinds(joined_unlike_then_constrained, *args)) == ["all-gather", "all-to-all"]
    prog = shardviz.trace(joined_unlike_then_constrained, *args)
    gather = next(c for c in prog.collectives if c.kind == "all-gather")
    why = gather.why
    assert (why.cause, why.primitive, why.wanted_by) == ("layout-mismatch", "concatenate", "x's layout")
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("y", ((), ("b",)))]
    assert (why.operand, why.wanted) == (1, (("a",), ()))
    assert why.rule == (
        "concatenate joins its operands along dimension 1 and needs them laid out alike, but x is P('a') and "
        "y is P(None, 'b'): one is moved to match"
    )
    top = top_fix_compiles_without(joined_unlike_then_constrained, [(12, 6), (12, 6)], gather, "all-gather")
    assert top.target == "y"
    swap = next(c for c in prog.collectives if c.kind == "all-to-all")
    assert swap.why.cause == "unknown"
    assert swap.why.rule == (
        "%c is already P(None, 'a'), as with_sharding_constraint asks, and shardviz reads no one layout back "
        "through the concatenate that makes it from its operands"
    )


matmul_in_a_jit = jax.jit(jnp.matmul)


def outer_by_matmul(u, w):
    return constrain(matmul_in_a_jit(u[:, None], w[None, :]), None, "a")


def test_an_outer_product_by_a_jitted_matmul_is_read_inside_the_call():
    """u[:, None] [12,1] P('a') @ w[None, :] [1,12] through a jitted jnp.matmul: the contraction keeps u's
    dimension 0, split over 'a', where the constraint asks P(None,'a') of the product, so XLA gathers u's
    stretch first. The product is the jit's result; its dot_general is inside the call, and before, the
    walk stopped at the call and said nothing was laid out otherwise."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_by_matmul, *args) == ["all-gather"]
    prog = shardviz.trace(outer_by_matmul, *args)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive) == ("layout-mismatch", "sharding_constraint")
    assert [(o.type_str, o.spec) for o in why.operands] == [
        ("float32[12,1]", (("a",), ())),
        ("float32[12,12]", ((), ("a",))),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), ((), ()))
    assert "is split over 'a' on dimension 0, which the contraction keeps" in why.rule
    top = top_fix_compiles_without(outer_by_matmul, [(12,), (12,)], c, "all-gather")
    assert top.target == "u"


def outer_in_a_helper_swapped(u, w):
    return constrain(times(w[None, :], u[:, None]), None, "a")


def test_the_operand_moved_is_the_one_laid_out_unlike_the_result_wherever_it_stands():
    """Planted wrong operand: with w's stretch first, it is P(None,'a') as the product is, and u's stretch,
    second, is the one gathered. Naming the first operand would blame the one XLA only cuts."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_in_a_helper_swapped, *args) == ["all-gather"]
    prog = shardviz.trace(outer_in_a_helper_swapped, *args)
    (c,) = prog.collectives
    why = c.why
    assert [(o.type_str, o.spec) for o in why.operands] == [
        ("float32[1,12]", ((), ("a",))),
        ("float32[12,1]", (("a",), ())),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted, why.wanted_by) == (1, 0, ("a",), None, "")
    assert why.rule.endswith("so %d is moved to match %c")
    assert top_fix_compiles_without(outer_in_a_helper_swapped, [(12,), (12,)], c, "all-gather").target == "u"


def joined_along_a_split_dimension(x, y):
    return constrain(jnp.concatenate([x, y], 1), "a", None)


def test_a_concatenate_along_a_dimension_its_operands_split_carries_no_layout():
    """Planted wrong rule: x and y [12,6] both P(None,'b'), joined along dimension 1, which each splits.
    Their blocks do not line up as the join's: no layout is carried to the constraint, so no reason says
    the join was made as P(None,'b') by concatenate."""
    args = put((12, 6), P(None, "b")), put((12, 6), P(None, "b"))
    prog = shardviz.trace(joined_along_a_split_dimension, *args)
    assert prog.collectives
    for c in prog.collectives:
        assert "by concatenate from" not in c.why.rule


def layers_scanned_times_ones(x, ws):
    def layer(h, w):
        return constrain(jnp.ones((12, 12)) * jnp.tanh(h @ w), "a", None), None

    return jax.lax.scan(layer, x, ws)[0]


def test_a_constant_fill_before_the_layer_is_not_the_value_walked_back_from():
    """The same layer scaled by jnp.ones((12, 12)) written first: the fill has the product's shape but no
    layout to hand on, so the walk back goes through the tanh to the contraction, not into the fill."""
    args = put((12, 12), P("a", None)), put((3, 12, 12), P(None, "a", None))
    assert hlo_kinds(layers_scanned_times_ones, *args) == ["all-gather"]
    prog = shardviz.trace(layers_scanned_times_ones, *args)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.operands[0].label == "a slice of ws"
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert top_fix_compiles_without(layers_scanned_times_ones, [(12, 12), (3, 12, 12)], c, "all-gather").target == "ws"


def outer_in_a_helper_asked_on_both(u, w):
    return constrain(times(w[None, :], u[:, None]), "b", "a")


def test_an_operand_whole_where_the_result_is_split_is_still_laid_out_as_the_result():
    """w[None, :] is P(None,'a'); the product is asked P('b','a'). w's stretch is whole on dimension 0, which
    the result splits over 'b' (a cut of a size-1 dimension's stretch, no move), and split as the result
    on dimension 1: it is laid out as the result is, so u's stretch, P('a') on dimension 0, is the one
    gathered over 'a'."""
    args = put((12,), P("a")), put((12,), P())
    assert hlo_kinds(outer_in_a_helper_asked_on_both, *args) == ["all-gather"]
    prog = shardviz.trace(outer_in_a_helper_asked_on_both, *args)
    (c,) = prog.collectives
    why = c.why
    assert why.operands[why.operand].spec == (("a",), ()) and why.axes == ("a",)
    assert why.rule.endswith("so %d is moved to match %c")


def joined_unlike_then_tanh(x, y):
    return constrain(jnp.tanh(jnp.concatenate([x, y], 1)), None, "a")


def test_a_cannot_tell_names_the_operation_past_the_element_wise_steps():
    """The join of x P('a') and y P(None,'b'), through a tanh, then constrained: the walk back goes through
    the tanh (it keeps every dimension) and stops at the concatenate, which is what the reason names."""
    args = put((12, 6), P("a")), put((12, 6), P(None, "b"))
    prog = shardviz.trace(joined_unlike_then_tanh, *args)
    swap = next(c for c in prog.collectives if c.kind == "all-to-all")
    assert swap.why.rule == (
        "%d is already P(None, 'a'), as with_sharding_constraint asks, and shardviz reads no one layout back "
        "through the concatenate that makes it from its operands"
    )


def batched_projection(x, w):
    return constrain(jnp.einsum("bij,bjkl->bikl", x, w), None, "b", None, None)


def test_a_batched_contraction_maps_the_weights_second_free_dimension_to_the_results_last():
    """einsum bij,bjkl->bikl: the result's dimensions are b (batch), i (x's free), k and l (w's free, in
    order), so w's dimension 3 (l), split over 'b', is the result's dimension 3, which the constraint
    P(None,'b',None,None) asks whole. XLA gathers w over 'b' before the contraction."""
    args = put((4, 12, 12), P(None, "b", None)), put((4, 12, 2, 6), P(None, None, None, "b"))
    assert hlo_kinds(batched_projection, *args) == ["all-gather"]
    prog = shardviz.trace(batched_projection, *args)
    (c,) = prog.collectives
    why = c.why
    assert [(o.label, o.spec) for o in why.operands] == [
        ("w", ((), (), (), ("b",))),
        ("%c", ((), ("b",), (), ())),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 3, ("b",), ((), (), (), ()))
    assert "is split over 'b' on dimension 3, which the contraction keeps" in why.rule
    assert top_fix_compiles_without(batched_projection, [(4, 12, 12), (4, 12, 2, 6)], c, "all-gather").target == "w"
