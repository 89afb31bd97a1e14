"""Causes read through operations that move a layout without a collective of their own: a transpose or
pad between a value and the constraint on it, an input XLA moves as it comes in (metadata naming the
input, no line), a convolution's window across a split dimension and its summed input features.

Each is checked against a hand analysis of the operands' specs and against JAX's own compiled module:
the collective is there, and it is gone once the top fix's specs are compiled.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from test_program_causes_loops_and_batches import MESH, hlo_kinds, put, top_fix_compiles_without

__all__ = ["MESH", "conv_nwc", "hlo_kinds", "put", "top_fix_compiles_without"]


def transposed_then_constrained(x):
    y = x.T
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("a", "b")))


def test_a_constraint_after_a_transpose_reads_the_layout_the_transpose_makes():
    """x [12,12] is P('a','b'); x.T carries dimension 1's 'b' to dimension 0 and 'a' to 1: P('b','a'). The
    constraint asks P('a','b'), so both splits move (XLA gathers and re-cuts). XLA lays the transpose's
    result out as asked, so before, the cause read "already P('a','b') ... cannot tell". Laying x out as
    P('b','a') makes x.T P('a','b'): nothing moves."""
    x = put((12, 12), P("a", "b"))
    assert sorted(hlo_kinds(transposed_then_constrained, x)) == ["all-gather", "all-gather"]
    prog = shardviz.trace(transposed_then_constrained, x)
    assert len(prog.collectives) == 2
    for c in prog.collectives:
        why = c.why
        assert why.cause == "layout-mismatch" and why.primitive == "sharding_constraint"
        assert [o.spec for o in why.operands] == [(("a",), ("b",)), (("b",), ("a",))]
        assert why.operands[0].label == "x" and why.operand == 1 and why.dimension == 0
        assert why.wanted == (("a",), ("b",)) and set(why.axes) == {"a", "b"}
        assert "made as P('b', 'a') by transpose from x (P('a', 'b'))" in why.rule
    top = top_fix_compiles_without(transposed_then_constrained, [(12, 12)], prog.collectives[0], "all-gather")
    assert top.program.inputs[0].spec == (("b",), ("a",))


def padded_then_replicated(x):
    y = jnp.pad(x, ((1, 1), (0, 0)))
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P()))


def test_a_constraint_after_a_pad_reads_the_split_the_pad_keeps():
    """pad keeps each dimension where it was: x P('a') padded to [14,12] is split over 'a' on dimension 0,
    and the constraint asks P(), so that split is gathered. Laying x out as P() leaves nothing to gather."""
    x = put((12, 12), P("a", None))
    assert hlo_kinds(padded_then_replicated, x) == ["all-gather"]
    prog = shardviz.trace(padded_then_replicated, x)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch"
    assert [o.spec for o in why.operands] == [(("a",), ()), (("a",), ())]
    assert why.operand == 1 and why.dimension == 0 and why.axes == ("a",) and why.wanted == ((), ())
    assert "by pad from x" in why.rule and "float32[14,12]" == why.operands[1].type_str
    top = top_fix_compiles_without(padded_then_replicated, [(12, 12)], c, "all-gather")
    assert top.program.inputs[0].spec == ((), ())


def joined(x, y):
    return jnp.concatenate([x, y], axis=1)


def test_an_input_moved_as_it_comes_in_is_explained_by_the_operation_that_reads_it():
    """x is P('a') and y P(None,'a'); concatenate along dimension 1 needs them alike, so XLA moves y to
    P('a') with an all-to-all whose metadata names only "y" (no line). Before, "no operation ... is the
    y". y laid out as P('a') needs no move."""
    shapes = ((12, 12), (12, 12))
    x, y = put(shapes[0], P("a", None)), put(shapes[1], P(None, "a"))
    assert hlo_kinds(joined, x, y) == ["all-to-all"]
    prog = shardviz.trace(joined, x, y)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.primitive == "concatenate"
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("y", ((), ("a",)))]
    assert why.operand == 1 and why.wanted == (("a",), ()) and why.dimension == 0
    assert "joins its operands along dimension 1" in why.rule
    top = top_fix_compiles_without(joined, shapes, c, "all-to-all")
    assert top.program.inputs[1].spec == (("a",), ())


def conv_nwc(x, k):
    """A 1-D convolution as Flax's nn.Conv calls it: features last, kernel (width, in, out)."""
    return jax.lax.conv_general_dilated(x, k, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))


def test_a_convolution_along_a_split_width_exchanges_halos():
    """x [4,24,4] split over 'b' on its width: each device holds 8 positions, and a window of 3 reads one
    past each edge, which XLA sends from the neighbours (collective-permutes). The width whole removes
    them."""
    shapes = ((4, 24, 4), (3, 4, 4))
    x, k = put(shapes[0], P(None, "b", None)), put(shapes[1], P())
    kinds = hlo_kinds(conv_nwc, x, k)
    assert kinds and set(kinds) == {"collective-permute"}
    prog = shardviz.trace(conv_nwc, x, k)
    assert [c.kind for c in prog.collectives] == kinds
    for c in prog.collectives:
        why = c.why
        assert why.cause == "whole-dimension" and why.primitive == "conv_general_dilated"
        assert why.operand == 0 and why.dimension == 1 and why.axes == ("b",)
        assert "window of 3 along dimension 1 of x" in why.rule and "halo exchange" in why.rule
    top_fix_compiles_without(conv_nwc, shapes, prog.collectives[0], "collective-permute")


def test_a_convolution_over_split_input_features_leaves_partial_sums():
    """x's features (dimension 2) and k's input features (dimension 1) are both split over 'b': each device
    convolves 2 of the 6 features and the 3 partial sums are added (all-reduce over 'b'). The batch split
    over 'a' needs nothing."""
    shapes = ((4, 24, 6), (3, 6, 4))
    x, k = put(shapes[0], P("a", None, "b")), put(shapes[1], P(None, "b", None))
    assert hlo_kinds(conv_nwc, x, k) == ["all-reduce"]
    prog = shardviz.trace(conv_nwc, x, k)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "partial-sums" and why.primitive == "conv_general_dilated"
    assert why.operand == 0 and why.dimension == 2 and why.axes == ("b",)
    assert [o.spec for o in why.operands] == [(("a",), (), ("b",)), ((), ("b",), ())]
    top_fix_compiles_without(conv_nwc, shapes, c, "all-reduce")


def test_a_convolution_split_over_its_batch_moves_nothing():
    """Planted: the batch dimension split is not a window's nor a feature's; XLA needs no collective and
    shardviz lists none."""
    x, k = put((4, 24, 6), P("a", None, None)), put((3, 6, 4), P())
    assert hlo_kinds(conv_nwc, x, k) == []
    assert shardviz.trace(conv_nwc, x, k).collectives == ()


def sliced_window(x):
    return jax.lax.dynamic_slice_in_dim(x, 3, 4, axis=0) * 2


def test_a_slice_across_blocks_says_the_blocks_are_sent_not_gathered():
    """Rows 3..6 of x [12,12] split in blocks of 3 over 'a' live on devices 0, 1 and 2: XLA sends them
    (collective-permutes), and the rule says so rather than "gathered"."""
    x = put((12, 12), P("a", None))
    kinds = hlo_kinds(sliced_window, x)
    assert kinds and set(kinds) == {"collective-permute"}
    for c in shardviz.trace(sliced_window, x).collectives:
        assert c.why.cause == "whole-dimension" and c.why.dimension == 0
        assert "sent to it from the devices that hold them" in c.why.rule and "gathered" not in c.why.rule


def transposed_into_constraint(x):
    return jax.lax.with_sharding_constraint(x.T, NamedSharding(MESH, P("a", "b")))


def test_a_transpose_on_the_constraints_line_names_the_constraint_as_what_asks():
    """On one line XLA's metadata names the transpose: x P('a','b') must be P('b','a') for x.T to be the
    P('a','b') the constraint it is passed to asks, not a layout XLA chose on its own."""
    x = put((12, 12), P("a", "b"))
    prog = shardviz.trace(transposed_into_constraint, x)
    assert [c.kind for c in prog.collectives] == hlo_kinds(transposed_into_constraint, x)
    for c in prog.collectives:
        assert c.why.cause == "layout-mismatch" and c.why.primitive == "transpose"
        assert c.why.wanted == (("b",), ("a",)) and c.why.operand == 0
        assert c.why.wanted_by == "the with_sharding_constraint it is passed to"
    top_fix_compiles_without(transposed_into_constraint, [(12, 12)], prog.collectives[0], "all-gather")


def added_unlike(x, y):
    return x + y


def test_operands_laid_out_unlike_are_the_cause_where_nothing_asks_the_outputs_layout():
    """x P('a') + y P('b'): add needs them alike, so XLA moves y (a full rematerialization) and lays the
    result out as it chooses. No out_shardings asks the output's layout, so the cause is the add's
    operands, not "output out must be ...". y laid out as x is needs no collective."""
    shapes = ((12, 12), (12, 12))
    x, y = put(shapes[0], P("a", None)), put(shapes[1], P("b", None))
    kinds = hlo_kinds(added_unlike, x, y)
    assert kinds and set(kinds) == {"all-gather"}
    prog = shardviz.trace(added_unlike, x, y)
    assert sorted(c.kind for c in prog.collectives) == sorted(kinds)
    for c in prog.collectives:
        why = c.why
        assert why.cause == "layout-mismatch" and why.primitive == "add"
        assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("y", (("b",), ()))]
        assert why.operand == 1 and why.wanted == (("a",), ()) and "output" not in why.rule
    top = top_fix_compiles_without(added_unlike, shapes, prog.collectives[0], "all-gather")
    assert top.program.inputs[1].spec == (("a",), ())


def test_an_out_shardings_still_asks_the_outputs_layout():
    """Planted: with out_shardings P(None,'a'), the output is asked for, so x * 2 of x P('a') is moved to
    it (an all-to-all), and the reason names the output's sharding as what asks."""
    doubled = jax.jit(lambda x: x * 2, out_shardings=NamedSharding(MESH, P(None, "a")))
    x = put((12, 12), P("a", None))
    assert hlo_kinds(doubled, x) == ["all-to-all"]
    (c,) = shardviz.trace(doubled, x).collectives
    assert c.why.cause == "layout-mismatch" and c.why.wanted == ((), ("a",))
    assert c.why.wanted_by == "the sharding of output out (out_shardings, or the layout the caller asks for)"
    assert c.why.rule.startswith("output out must be P(None, 'a') but its line makes it P('a')")


def projected_then_attended(x, w):
    q = x @ w
    return jnp.einsum("bqd,bkd->bqk", q, q)


def test_a_contraction_fused_by_xla_is_real_work_not_an_output_handed_on():
    """x [8,12,12] P('a',None,'b') @ w P(None,'b'): x's contracting dimension is split over 'b' and w's is
    whole, so XLA gathers x over 'b' (w's split carries to q). XLA:CPU fuses the dot; before, that fusion
    was read as handing the gathered x on to the output, and the cause was "output out must be ..."."""
    x, w = put((8, 12, 12), P("a", None, "b")), put((12, 12), P(None, "b"))
    assert hlo_kinds(projected_then_attended, x, w) == ["all-gather", "all-reduce"]
    prog = shardviz.trace(projected_then_attended, x, w)
    gather = next(c for c in prog.collectives if c.kind == "all-gather")
    why = gather.why
    assert why.cause == "layout-mismatch" and why.primitive == "dot_general"
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), (), ("b",))), ("w", ((), ("b",)))]
    assert why.operand == 0 and why.dimension == 2 and why.axes == ("b",) and "output" not in why.rule
