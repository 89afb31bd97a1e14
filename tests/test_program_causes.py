"""Why each collective is there: one constructed program per cause, each checked against a hand
analysis of the operation and its operands' specs, and against JAX's compiled HLO (the collective
is really there, of that kind, over those axes).

The mesh is 4x3 (``a`` of 4, ``b`` of 3) under Auto axes, as a user's GSPMD program would be.
"""

from __future__ import annotations

import inspect
import re
from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.why.reasons import CAUSES, OperandLayout, Why, spec_text

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)


def put(shape, spec):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(MESH, spec))


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


def hlo_kinds(fn, *args) -> list[str]:
    """The collectives of JAX's own compiled module, by kind (an async pair once)."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [m.group(2) for m in re.finditer(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", text, re.M)]


def the_collective(prog, kind):
    found = [c for c in prog.collectives if c.kind == kind]
    assert found, f"no {kind} in {[c.kind for c in prog.collectives]}"
    return found[0]


# ---------------------------------------------------------------- partial sums


def contraction(x, w):
    return x @ w


def test_a_contraction_over_a_split_dimension_leaves_partial_sums():
    """x [8,12] P(None,'a') @ w [12,6] P('a'): dimension 1 of x (the contracting one) is split over
    'a', so each of the 4 devices along 'a' multiplies a 8x3 by a 3x6 block and holds a partial
    [8,6]: summed over 'a' (an all-reduce). The first operand split there is x, dimension 1."""
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    assert hlo_kinds(contraction, x, w) == ["all-reduce"]
    prog = shardviz.trace(contraction, x, w)
    c = the_collective(prog, "all-reduce")
    why = c.why
    assert why.cause == "partial-sums"
    assert why.primitive == "dot_general"
    assert why.expression == "return x @ w"
    assert [(o.label, o.spec) for o in why.operands] == [("x", ((), ("a",))), ("w", (("a",), ()))]
    assert (why.operand, why.dimension, why.axes) == (0, 1, ("a",))
    assert "contracting dimension 1" in why.rule and "partial sum" in why.rule
    assert why.text.startswith("because x is split over 'a'")


def summed(x):
    return x.sum(axis=0)


def test_a_sum_over_a_split_dimension_combines_the_blocks():
    """x [12,6] P('a') summed over dimension 0: each device sums its 3 rows; the 4 partial sums
    along 'a' are added (all-reduce)."""
    x = put((12, 6), P("a", None))
    assert hlo_kinds(summed, x) == ["all-reduce"]
    why = the_collective(shardviz.trace(summed, x), "all-reduce").why
    assert (why.cause, why.primitive, why.dimension, why.axes) == ("partial-sums", "reduce_sum", 0, ("a",))


def added_at(u, ids):
    return jnp.zeros((16, 6), u.dtype).at[ids].add(u)


def test_a_scatter_add_of_split_updates_leaves_partial_sums():
    """u [8,6] P('a') added at ids [8] P('a') into a [16,6] table: the updates' dimension 0 (the one they
    scatter along; dimension 1 is the window) is split over 'a', so each of the 4 devices adds its 2 rows into
    a whole [16,6] of its own, and the 4 partial tables are summed over 'a' (an all-reduce of f32[16,6])."""
    u, ids = put((8, 6), P("a", None)), jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(MESH, P("a")))
    assert hlo_kinds(added_at, u, ids) == ["all-reduce"]
    c = the_collective(shardviz.trace(added_at, u, ids), "all-reduce")
    why = c.why
    assert (why.cause, why.primitive) == ("partial-sums", "scatter-add")
    assert why.operands[why.operand].label == "u" and why.operands[why.operand].spec == (("a",), ())
    assert (why.dimension, why.axes) == (0, ("a",))
    assert why.rule.startswith("u, the updates, is split over 'a' on dimension 0: each device adds only its share")


EXPLICIT = jax.make_mesh((4,), ("a",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4])


def embedded_rows(table, ids):
    rows = table.at[ids].get(out_sharding=P("a", None))
    return jnp.sum(rows * rows)


def test_the_gradient_of_a_lookup_sums_partial_scatter_adds_of_the_split_cotangent():
    """The training cookbook's embedding lookup, small: table [16,6] P() looked up at ids [8] P('a') into rows
    laid out P('a'). Its gradient scatter-adds the rows' cotangent (split over 'a' on dimension 0) into a zero
    table; JAX's transpose reshards the cotangent whole first, but XLA keeps it split: each device adds its 2
    rows and the [16,6] tables are summed over 'a' (one all-reduce of f32[16,6], nothing gathered)."""
    with jax.set_mesh(EXPLICIT):
        table = jax.ShapeDtypeStruct((16, 6), jnp.float32, sharding=NamedSharding(EXPLICIT, P(None, None)))
        ids = jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(EXPLICIT, P("a")))
        grad = jax.grad(embedded_rows)
        text = jax.jit(grad).lower(table, ids).compile().as_text()
        assert re.findall(r"= (f32\[[\d,]*\])\S* (all-reduce|all-gather)\(", text) == [("f32[16,6]", "all-reduce")]
        prog = shardviz.trace(grad, table, ids)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive) == ("partial-sums", "scatter-add")
    assert c.source.line == line_of(embedded_rows, "table.at[ids].get")
    cotangent = why.operands[why.operand]
    # the operand the rule is about is the cotangent as made, before the reshard: split over 'a' on dimension 0
    assert (cotangent.role, cotangent.spec, cotangent.type_str) == ("made", (("a",), ()), "float32[8@a,6]")
    assert [o.spec for o in why.operands[:3]] == [((), ()), ((), ()), ((), ())]  # as the jaxpr lays them out
    assert (why.dimension, why.axes) == (0, ("a",))
    assert "before the reshard that makes it whole; XLA keeps it split" in why.rule
    assert why.rule.endswith("the all-reduce sums the devices' partial results over 'a'")


# ---------------------------------------------------------------- layout mismatch


def constrained(y):
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("b", "a")))


def test_a_constraint_unlike_the_layout_made_is_a_layout_mismatch():
    """y [12,12] P('a','b') constrained to P('b','a'): both dimensions change their axis. XLA
    cannot trade the two splits in place and gathers (two all-gathers, over 'b' then 'a')."""
    y = put((12, 12), P("a", "b"))
    assert sorted(hlo_kinds(constrained, y)) == ["all-gather", "all-gather"]
    prog = shardviz.trace(constrained, y)
    for c in prog.collectives:
        why = c.why
        assert why.cause == "layout-mismatch"
        assert why.primitive == "sharding_constraint"
        assert why.operands[why.operand].label == "y"
        assert why.operands[why.operand].spec == (("a",), ("b",))
        assert why.wanted == (("b",), ("a",))
        assert why.wanted_by == "with_sharding_constraint"
        assert why.dimension == 0
        assert "dimension 0 goes from 'a' to 'b'" in why.rule and "dimension 1 goes from 'b' to 'a'" in why.rule


def doubled(x):
    return x * 2


def test_an_output_sharding_unlike_the_layout_made_is_a_layout_mismatch():
    """x [12,12] P('a') doubled and returned under out_shardings P(None,'a'): the 'a' split moves
    from dimension 0 to dimension 1, an all-to-all over 'a' to lay out the output."""
    x = put((12, 12), P("a", None))
    fn = jax.jit(doubled, out_shardings=NamedSharding(MESH, P(None, "a")))
    assert hlo_kinds(fn, x) == ["all-to-all"]
    why = the_collective(shardviz.trace(fn, x), "all-to-all").why
    assert why.cause == "layout-mismatch"
    assert why.wanted == ((), ("a",))
    assert "output out" in why.wanted_by
    assert why.operands[0].label == "x" and why.operands[0].spec == (("a",), ())
    assert why.dimension == 0 and set(why.axes) == {"a"}


def mismatched_matmul(x, w):
    return x @ w


def test_operands_split_unlike_on_their_contracting_dimensions_are_a_layout_mismatch():
    """x [8,12] P(None,'a') @ w [12,6] P('b'): x's contracting dimension is split over 'a', w's over
    'b'; the two must match, so one is moved (XLA gathers)."""
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("b", None))
    kinds = hlo_kinds(mismatched_matmul, x, w)
    prog = shardviz.trace(mismatched_matmul, x, w)
    assert len(prog.collectives) == len(kinds)
    moves = [c for c in prog.collectives if c.kind in ("all-gather", "all-to-all", "collective-permute")]
    assert moves, kinds
    for c in moves:
        assert c.why.cause == "layout-mismatch", c.why
        assert c.why.primitive == "dot_general"
        assert "contracting dimensions split alike" in c.why.rule


# ---------------------------------------------------------------- whole dimension


def sorted_rows(x):
    return jnp.sort(x, axis=0)


def running(x):
    return jnp.cumsum(x, axis=0)


def merged(x):
    return x.reshape(6, 12) * 2


def best(x):
    return jnp.argmax(x, axis=0)


@pytest.mark.parametrize(
    ("fn", "shape", "spec", "primitive", "dimension", "axis"),
    [
        # sort along dimension 0, split over 'a': sorting needs every row on each device
        (sorted_rows, (12, 6), P("a", None), "sort", 0, "a"),
        # a running sum along dimension 0, split over 'a': each block needs all rows before it
        (running, (12, 6), P("a", None), "cumsum", 0, "a"),
        # [12,6] -> [6,12]: dimension 1 (6, split over 'b') is not carried over whole
        (merged, (12, 6), P(None, "b"), "reshape", 1, "b"),
    ],
)
def test_an_operation_that_needs_a_whole_dimension_gathers_a_split_one(fn, shape, spec, primitive, dimension, axis):
    x = put(shape, spec)
    assert "all-gather" in hlo_kinds(fn, x)
    prog = shardviz.trace(fn, x)
    c = the_collective(prog, "all-gather")
    why = c.why
    assert why.cause == "whole-dimension", why
    assert why.primitive == primitive
    assert (why.dimension, why.axes) == (dimension, (axis,))
    assert why.operands[why.operand].label == "x"
    assert f"dimension {dimension} of x" in why.rule


# ---------------------------------------------------------------- loop carry


def carried(x, w):
    def step(c, _):
        c = jnp.tanh(c @ w)
        return c, None

    return jax.lax.scan(step, x, None, length=3)[0]


def test_a_loop_carry_made_in_another_layout_than_it_starts_in_is_moved_back():
    """The carry x [12,12] starts each pass P('a'); c @ w with w P(None,'b') makes it P('a','b')
    at the pass's end, so the body gathers over 'b' to hand the next pass P('a') again."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    assert "all-gather" in hlo_kinds(carried, x, w)
    c = the_collective(shardviz.trace(carried, x, w), "all-gather")
    why = c.why
    assert why.cause == "loop-carry"
    assert [o.role for o in why.operands] == ["carry-start", "carry-end"]
    assert why.operands[0].spec == (("a",), ())
    assert why.operands[1].spec == (("a",), ("b",))
    assert why.wanted == (("a",), ())
    assert why.dimension == 1 and why.axes == ("b",)


def looped_until(x, w, limit):
    def body(state):
        k, c = state
        return k + 1, jnp.tanh(c @ w)

    return jax.lax.while_loop(lambda s: s[0] < limit, body, (0, x))[1]


def test_a_while_loops_carry_is_found_past_its_conditions_constants():
    """The same carry in a while_loop whose condition reads ``limit``: the while's operands are the
    condition's constant (limit), the body's (w), then the carry (0, x), so x is operand 3, not 2."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    limit = jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(MESH, P()))
    assert "all-gather" in hlo_kinds(looped_until, x, w, limit)
    why = the_collective(shardviz.trace(looped_until, x, w, limit), "all-gather").why
    assert (why.cause, why.primitive) == ("loop-carry", "while")
    first = why.operands[0]
    assert (first.role, first.label, first.spec) == ("carry-start", "x", (("a",), ()))
    assert why.operands[1].spec == (("a",), ("b",)) and why.wanted == (("a",), ())
    assert why.dimension == 1 and why.axes == ("b",)


# ---------------------------------------------------------------- shard_map


def written(x):
    @partial(jax.shard_map, mesh=MESH, in_specs=P("a"), out_specs=P())
    def body(block):
        return jax.lax.psum(block.sum(0), "a")

    return body(x)


def test_a_shard_map_bodys_collective_is_the_users_own():
    x = put((12, 6), P("a", None))
    assert hlo_kinds(written, x) == ["all-reduce"]
    c = the_collective(shardviz.trace(written, x), "all-reduce")
    assert c.why.cause == "shard-map"
    assert c.why.axes == ("a",)
    assert c.why.expression == 'return jax.lax.psum(block.sum(0), "a")'
    assert "you wrote" in c.why.rule


# ---------------------------------------------------------------- cannot tell


def test_a_collective_on_no_line_of_the_jaxpr_says_it_cannot_tell_and_why():
    why = Why("unknown", "dot_general", "", (), "XLA's metadata names no line of yours for it")
    assert why.text == "cannot tell why, because XLA's metadata names no line of yours for it"
    assert not why.known
    assert set(CAUSES) == {"partial-sums", "layout-mismatch", "whole-dimension", "loop-carry", "shard-map", "unknown"}


def test_spec_text_reads_as_a_user_writes_it():
    assert spec_text(((), ("a",))) == "P(None, 'a')"
    assert spec_text((("a", "b"), ())) == "P(('a', 'b'))"
    assert spec_text(((), ())) == "P()"
    assert spec_text(None) == "?"
    assert OperandLayout("x", "float32[4]", None).spec_text == "?"


# ---------------------------------------------------------------- planted wrong reasons


def planted(why: Why, **change) -> Why:
    from dataclasses import replace

    return replace(why, **change)


def check_contraction(why: Why) -> None:
    """The hand analysis of ``contraction``: x's contracting dimension 1, split over 'a'."""
    assert why.cause == "partial-sums"
    assert why.operands[why.operand].label == "x"
    assert why.dimension == 1
    assert why.axes == ("a",)


def test_planted_wrong_reasons_fail_the_hand_analysis():
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    why = the_collective(shardviz.trace(contraction, x, w), "all-reduce").why
    check_contraction(why)
    for wrong in (
        planted(why, operand=1, dimension=0),  # the wrong operand: w (its dimension 0 is split too)
        planted(why, dimension=0),  # the wrong dimension
        planted(why, cause="whole-dimension"),  # the wrong rule
        planted(why, axes=("b",)),
    ):
        with pytest.raises(AssertionError):
            check_contraction(wrong)


def top_two(x):
    return jax.lax.top_k(x, 2)[0]


def spectrum(x):
    return jnp.fft.fft(x, axis=-1).real


def looked_up(x, i):
    return x[i]


@pytest.mark.parametrize(
    ("fn", "shape", "spec", "primitive", "dimension"),
    [
        # argmax along dimension 0, split over 'a': the best row may be on any device
        (best, (12, 6), P("a", None), "argmax", 0),
        # top_k works along the last dimension, here split over 'a'
        (top_two, (6, 12), P(None, "a"), "top_k", 1),
        # an FFT along the last dimension needs all of it
        (spectrum, (6, 12), P(None, "a"), "fft", 1),
    ],
)
def test_search_and_transform_along_a_split_dimension_need_it_whole(fn, shape, spec, primitive, dimension):
    x = put(shape, spec)
    kinds = hlo_kinds(fn, x)
    prog = shardviz.trace(fn, x)
    assert len(prog.collectives) == len(kinds) > 0
    for c in prog.collectives:
        assert (c.why.cause, c.why.primitive, c.why.dimension, c.why.axes) == (
            "whole-dimension",
            primitive,
            dimension,
            ("a",),
        ), c.why


def test_a_gather_along_a_split_dimension_needs_it_whole():
    """x[i] with x [12,6] P('a'): any index may point at any of the 4 blocks along 'a'. XLA looks up
    each device's own rows and sums the results over 'a' (an all-reduce)."""
    x, i = put((12, 6), P("a", None)), jax.ShapeDtypeStruct((4,), jnp.int32, sharding=NamedSharding(MESH, P()))
    assert hlo_kinds(looked_up, x, i) == ["all-reduce"]
    why = the_collective(shardviz.trace(looked_up, x, i), "all-reduce").why
    assert (why.cause, why.primitive, why.dimension, why.axes) == ("whole-dimension", "gather", 0, ("a",))
    assert "combined over 'a'" in why.rule


def added(x, y):
    return x + y


def test_an_elementwise_operation_on_operands_laid_out_unlike_moves_one():
    x, y = put((12, 12), P("a", None)), put((12, 12), P(None, "a"))
    assert hlo_kinds(added, x, y) == ["all-to-all"]
    why = the_collective(shardviz.trace(added, x, y), "all-to-all").why
    assert why.cause == "layout-mismatch" and why.primitive == "add"
    assert {o.label: o.spec for o in why.operands} == {"x": (("a",), ()), "y": ((), ("a",))}


def test_a_failing_assert_collectives_says_why_each_collective_is_there():
    from shardviz.testing import CollectiveBudgetExceeded, assert_collectives

    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    prog = shardviz.trace(contraction, x, w)
    with pytest.raises(CollectiveBudgetExceeded) as caught:
        assert_collectives(prog, allow={})
    message = str(caught.value)
    line = line_of(contraction, "return x @ w")
    at = message.index(f"test_program_causes.py:{line}")
    assert "because x is split over 'a' on its contracting dimension 1" in message[at:]
