"""Causes read where a plain jaxpr walk sees no value: a loop body's carry and scanned slice, an
operand lax broadcasts along a size-1 dimension, and a batched contraction's batch dimensions.

Each is checked against a hand analysis of the operands' specs and against JAX's own compiled module:
the collective is there, and it is gone once the top fix's specs are compiled.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)


def put(shape, spec):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(MESH, spec))


def as_spec(spec) -> P:
    return P(*(None if not axes else axes[0] if len(axes) == 1 else axes for axes in spec))


def hlo_kinds(fn, *args) -> list[str]:
    text = jax.jit(fn).lower(*args).compile().as_text()
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [m.group(2) for m in re.finditer(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", text, re.M)]


def top_fix_compiles_without(fn, shapes, c, kind):
    top = c.fixes[0]
    assert top.removed
    args = [put(shape, as_spec(layout.spec)) for shape, layout in zip(shapes, top.program.inputs)]
    assert kind not in hlo_kinds(fn, *args)
    return top


def scanned_matmul(x, w):
    def body(c, _):
        return c @ w, None

    return jax.lax.scan(body, x, None, length=3)[0]


def test_a_scan_bodys_carry_has_the_layout_it_comes_in_with_and_keeps():
    """c [12,12] starts as x, P('a'), and c @ w makes P('a') again; w is P(None, 'a'). Dimension 0 of c
    and dimension 1 of w are both split over 'a' and neither is contracted: the result can hold 'a'
    once, so one operand is gathered (XLA gathers w). Before, the carry was "an unlisted float32[12,12]"
    and the cause unknown."""
    shapes = ((12, 12), (12, 12))
    x, w = put(shapes[0], P("a", None)), put(shapes[1], P(None, "a"))
    assert hlo_kinds(scanned_matmul, x, w) == ["all-gather"]
    prog = shardviz.trace(scanned_matmul, x, w)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.primitive == "dot_general"
    assert [(o.label, o.spec) for o in why.operands] == [("the carry x", (("a",), ())), ("w", ((), ("a",)))]
    assert why.axes == ("a",) and "not contracted" in why.rule
    top = top_fix_compiles_without(scanned_matmul, shapes, c, "all-gather")
    assert top.program.inputs[0].spec == (("a",), ())  # the carry's input untouched: only w changes
    assert top.program.inputs[1].spec == ((), ())


def while_threshold(x):
    return jax.lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 1.5, x)


def test_a_while_conditions_sum_over_a_split_carry_leaves_partial_sums():
    """cond sums c [24,12], P('a') in every pass (c * 1.5 keeps it): each device sums its 6 rows and the
    4 partial sums over 'a' are added. Before, c was "an unlisted float32[24,12]"."""
    x = put((24, 12), P("a", None))
    assert hlo_kinds(while_threshold, x) == ["all-reduce"]
    (c,) = shardviz.trace(while_threshold, x).collectives
    assert c.why.cause == "partial-sums" and c.why.primitive == "reduce_sum"
    assert [(o.label, o.spec) for o in c.why.operands] == [("the carry x", (("a",), ()))]
    assert (c.why.dimension, c.why.axes) == (0, ("a",))


def test_a_scanned_slice_has_its_operands_layout_less_the_scanned_dimension():
    """xs [6,12,12] P(None, 'a'): each pass reads a [12,12] slice split P('a'), met by w P(None, 'a'):
    the same "not contracted" clash as the carry's."""

    def body(c, x, w):
        y = x @ w
        return c + y.sum(), y

    def scanned(xs, w):
        return jax.lax.scan(lambda c, x: body(c, x, w), 0.0, xs)

    xs, w = put((6, 12, 12), P(None, "a", None)), put((12, 12), P(None, "a"))
    prog = shardviz.trace(scanned, xs, w)
    gathers = [c for c in prog.collectives if c.kind == "all-gather"]
    assert gathers and "all-gather" in hlo_kinds(scanned, xs, w)
    why = gathers[0].why
    assert why.cause == "layout-mismatch"
    assert [(o.label, o.spec) for o in why.operands] == [("a slice of xs", (("a",), ())), ("w", ((), ("a",)))]


def add_bias(x, b):
    return x + b


def test_a_bias_broadcast_along_a_size_one_dimension_is_a_layout_mismatch():
    """x [12,12] P('a') + b [12] P('a'): jnp broadcasts b to [1,12], so b's split lands on dimension 1,
    while x is split on dimension 0 and whole on 1. Where both have the full size (dimension 1), x is
    whole and b split: b is gathered to x's layout, P() for a [1,12]. Laying b out whole removes it."""
    shapes = ((12, 12), (12,))
    x, b = put(shapes[0], P("a", None)), put(shapes[1], P("a"))
    assert hlo_kinds(add_bias, x, b) == ["all-gather"]
    prog = shardviz.trace(add_bias, x, b)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch" and why.primitive == "add"
    assert [o.spec for o in why.operands] == [(("a",), ()), ((), ("a",))]
    assert why.operand == 1 and why.wanted == ((), ())
    assert why.arrival == (1, ((),))  # b itself, whole
    top = top_fix_compiles_without(add_bias, shapes, c, "all-gather")
    assert top.program.inputs[0].spec == (("a",), ()) and top.program.inputs[1].spec == ((),)


def batched(x, y):
    return jnp.einsum("bij,bjk->bik", x, y)


def test_batch_dimensions_split_unlike_move_the_operand_that_holds_the_axis_elsewhere():
    """x [4,12,6] P('a') and y [4,6,12] P(None, None, 'a'): x's batch dimension is split over 'a', y
    holds 'a' on its free dimension 2 (k). The result's batch dimension can keep 'a' only once y's 'a'
    moves to its batch dimension: an all-to-all of y, wanted as P('a'). Before, this read as "both
    operands split on dimensions that are not contracted ... gathered"."""
    shapes = ((4, 12, 6), (4, 6, 12))
    x, y = put(shapes[0], P("a", None, None)), put(shapes[1], P(None, None, "a"))
    assert hlo_kinds(batched, x, y) == ["all-to-all"]
    prog = shardviz.trace(batched, x, y)
    (c,) = prog.collectives
    why = c.why
    assert why.cause == "layout-mismatch"
    assert (why.operand, why.dimension, why.axes) == (1, 0, ("a",))
    assert why.wanted == (("a",), (), ())
    assert (why.primitive, why.wanted_by) == ("dot_general", "the contraction with x")
    assert why.expression == 'return jnp.einsum("bij,bjk->bik", x, y)'
    assert why.rule == (
        "a batched contraction keeps each batch element on the devices that hold it, and batch dimension 0 "
        "of x is split over 'a', but y holds 'a' on dimension 2, not on its batch dimension 0: y is moved to "
        "match"
    )
    top = top_fix_compiles_without(batched, shapes, c, "all-to-all")
    assert top.program.inputs[1].spec == (("a",), (), ())


def test_batch_dimensions_split_alike_are_no_batch_mismatch():
    """Planted: both batch dimensions split over 'a' leave nothing to move for the batch rule."""
    x, y = put((4, 12, 6), P("a", None, None)), put((4, 6, 12), P("a", None, None))
    assert hlo_kinds(batched, x, y) == []
    assert shardviz.trace(batched, x, y).collectives == ()


def transposed_each_pass(x, w):
    def body(c, _):
        return (c @ w).T, None

    return jax.lax.scan(body, x, None, length=2)[0]


def test_a_carry_the_body_transposes_is_moved_back_to_its_starting_layout():
    """c starts P('a'); c @ w with w whole keeps 'a' on dimension 0, and .T carries it to dimension 1:
    the body makes P(None,'a'), unlike the P('a') each pass starts in, so XLA re-lays the carry out
    (an all-gather over 'a' XLA names the contraction). Before: "cannot tell, XLA chose to re-lay out".
    x whole has nothing to move."""
    shapes = ((12, 12), (12, 12))
    x, w = put(shapes[0], P("a", None)), put(shapes[1], P())
    assert hlo_kinds(transposed_each_pass, x, w) == ["all-gather"]
    prog = shardviz.trace(transposed_each_pass, x, w)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == ("loop-carry", "scan", 1, 0, ("a",))
    assert [(o.label, o.spec, o.role) for o in why.operands] == [
        ("x", (("a",), ()), "carry-start"),
        ("the carry x at the end of a pass", ((), ("a",)), "carry-end"),
    ]
    assert why.wanted == (("a",), ())
    assert why.rule == (
        "the loop's carry x starts each pass as P('a'), but this line's contraction makes P('a'), which the "
        "body hands on through transpose as P(None, 'a'): XLA re-lays the carry out so that it has one layout "
        "in every pass"
    )
    top_fix_compiles_without(transposed_each_pass, shapes, c, "all-gather")


def kept_each_pass(x, w):
    def body(c, _):
        return jnp.tanh(c @ w), None

    return jax.lax.scan(body, x, None, length=2)[0]


def test_a_carry_the_body_makes_in_its_starting_layout_needs_no_move():
    """Planted: tanh(c @ w) keeps P('a') in every pass; no collective, none listed."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P())
    assert hlo_kinds(kept_each_pass, x, w) == []
    assert shardviz.trace(kept_each_pass, x, w).collectives == ()


def layers_scanned(xs, ws):
    def body(h, w):
        return jnp.tanh(h @ w), None

    h0 = xs[0]
    return jax.lax.scan(body, h0, ws)[0]


def test_a_move_back_with_no_metadata_is_the_one_loops_carry():
    """h starts as h0 = xs[0], P('a'); each layer's w is a slice of ws P(None,None,'a'), so P(None,'a'):
    h @ w has 'a' on both free dimensions, and the body makes P(None,'a') at the pass's end. The carry is
    moved back to P('a') by an all-to-all XLA leaves without metadata (no line, no operation): the program
    has one loop, with one carry changed over 'a', so that is its cause."""
    xs = jax.ShapeDtypeStruct((2, 12, 12), jnp.float32, sharding=NamedSharding(MESH, P(None, "a", None)))
    ws = jax.ShapeDtypeStruct((2, 12, 12), jnp.float32, sharding=NamedSharding(MESH, P(None, None, "a")))
    assert sorted(hlo_kinds(layers_scanned, xs, ws)) == ["all-gather", "all-to-all"]
    prog = shardviz.trace(layers_scanned, xs, ws)
    back = next(c for c in prog.collectives if c.kind == "all-to-all")
    assert back.source is None
    why = back.why
    assert (why.cause, why.primitive, why.operand, why.axes) == ("loop-carry", "scan", 1, ("a",))
    assert [(o.spec, o.role) for o in why.operands] == [((("a",), ()), "carry-start"), (((), ("a",)), "carry-end")]
    assert why.operands[0].label == "h0"
    assert why.expression == "return jax.lax.scan(body, h0, ws)[0]"
    assert why.rule == (
        "the loop's carry h0 starts each pass as P('a') but the body makes it "
        "P(None, 'a'): it is moved back before the next pass"
    )


def two_carries(y, x, w):
    return jax.lax.fori_loop(0, 2, lambda i, cs: (cs[0] * 2.0, (cs[1] @ w).T), (y, x))


def test_the_transposed_carry_is_found_among_several_and_past_the_loops_constants():
    """fori_loop with a fixed trip count is a scan whose carries are the counter, y and x, with w a
    constant: y * 2 keeps P(None,'b'), but x's P('a') comes back P(None,'a') from (c @ w).T, so x alone
    is the carry moved. x whole needs no move."""
    shapes = ((12, 12), (12, 12), (12, 12))
    y, x, w = put(shapes[0], P(None, "b")), put(shapes[1], P("a", None)), put(shapes[2], P())
    assert hlo_kinds(two_carries, y, x, w) == ["all-gather"]
    prog = shardviz.trace(two_carries, y, x, w)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == ("loop-carry", "scan", 1, 0, ("a",))
    assert [(o.label, o.spec, o.role) for o in why.operands] == [
        ("x", (("a",), ()), "carry-start"),
        ("the carry x at the end of a pass", ((), ("a",)), "carry-end"),
    ]
    assert (why.wanted, why.wanted_by) == ((("a",), ()), "the carry's layout at the start of a pass")
    assert why.expression == "return jax.lax.fori_loop(0, 2, lambda i, cs: (cs[0] * 2.0, (cs[1] @ w).T), (y, x))"
    assert top_fix_compiles_without(two_carries, shapes, c, "all-gather").program.inputs[1].spec == ((), ())
