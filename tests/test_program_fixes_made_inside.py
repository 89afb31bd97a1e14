"""Reasons and fixes where the operand is made inside the program, and the shifts and moves found in a new
user's programs: each reason from a hand analysis of the operation and its operands' specs, each top fix
checked by compiling the changed program with ``jax.jit(...).lower(...).compile()`` and reading its HLO.
"""

from __future__ import annotations

import inspect
import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)


def put(shape, spec, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(MESH, spec))


def as_spec(spec):
    return P(*(None if not s else s[0] if len(s) == 1 else tuple(s) for s in spec))


def hlo_kinds(fn, *args) -> list[str]:
    text = jax.jit(fn).lower(*args).compile().as_text()
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [m.group(2) for m in re.finditer(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", text, re.M)]


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


def changed_args(fix, args):
    """The program's arguments laid out as the fix's changed program takes them in."""
    return [put(a.shape, as_spec(layout.spec), a.dtype) for a, layout in zip(args, fix.program.inputs)]


def the(prog, kind):
    (c,) = [c for c in prog.collectives if c.kind == kind]
    return c


# ---------------------------------------------------------------- a contraction of a value made on a line


def megatron_mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    y = h @ w2
    return y


def megatron_mlp_constrained(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(MESH, P("a")))
    y = h @ w2
    return y


def test_a_partial_sum_of_a_value_made_on_a_line_is_fixed_at_the_inputs_it_is_made_from():
    """Megatron's MLP: x [16,24] P('a'), w1 [24,48] P(None,'b'), w2 [48,24] P('b'). h = relu(x @ w1) is
    [16,48] split P('a','b'); y = h @ w2 contracts h's dimension 1 (split over 'b') with w2's dimension 0
    (split over 'b'), so each device holds a partial sum, added by an all-reduce over 'b'. h is no input: the
    change that removes it keeps the inputs h and w2 are made from off 'b' (w1 and w2 whole). Constraining h
    whole does not: w2 is still split on the contracting dimension, so XLA slices h and sums again."""
    x, w1, w2 = put((16, 24), P("a")), put((24, 48), P(None, "b")), put((48, 24), P("b"))
    assert hlo_kinds(megatron_mlp, x, w1, w2) == ["all-reduce"]
    prog = shardviz.trace(megatron_mlp, x, w1, w2)
    c = the(prog, "all-reduce")
    why = c.why
    assert (c.axes, why.cause, why.primitive, why.expression) == (("b",), "partial-sums", "dot_general", "y = h @ w2")
    assert [(o.label, o.spec) for o in why.operands] == [("h", (("a",), ("b",))), ("w2", (("b",), ()))]
    assert (why.operand, why.dimension, why.axes) == (0, 1, ("b",))
    assert why.sources == (0, 1, 2)  # h from x and w1, and w2
    fixes = c.fixes
    top = fixes[0]
    assert (top.kind, top.removed) == ("input-spec", True)
    assert [layout.spec for layout in top.program.inputs] == [(("a",), ()), ((), ()), ((), ())]
    assert top.code == (
        "w1 = jax.device_put(w1, NamedSharding(mesh, P())); w2 = jax.device_put(w2, NamedSharding(mesh, P()))"
    )
    assert "all-reduce" not in hlo_kinds(megatron_mlp, *changed_args(top, (x, w1, w2)))
    (constraint,) = [f for f in fixes if f.kind == "constraint"]
    made = line_of(megatron_mlp, "h = jax.nn.relu")
    assert constraint.code == (
        f"h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P('a')))  # after line {made}, where h is made"
    )
    assert not constraint.removed
    assert "all-reduce" in hlo_kinds(megatron_mlp_constrained, x, w1, w2)  # as pasted: the sum stays


def test_a_what_if_programs_fixes_of_a_value_made_inside_are_traced_in_a_what_if_child():
    """Megatron's MLP on a what-if 4x3 mesh (an AbstractMesh: the kernel need not have 12 devices): the same
    all-reduce over 'b', the same reason, and both fixes traced in a child process on 12 simulated devices.
    The inputs kept off 'b' remove it there as JAX's compile of the same change here does; the constraint on h
    after its line leaves it (the changed module has an all-gather of h and the all-reduce still)."""
    from jax.sharding import AbstractMesh

    mesh = AbstractMesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)

    def planned(shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))

    x, w1, w2 = planned((16, 24), P("a")), planned((24, 48), P(None, "b")), planned((48, 24), P("b"))
    prog = shardviz.trace(megatron_mlp, x, w1, w2, mesh=mesh)
    assert prog.whatif is not None
    c = the(prog, "all-reduce")
    assert (c.axes, c.why.cause, c.why.sources) == (("b",), "partial-sums", (0, 1, 2))
    top, constraint = c.fixes[0], next(f for f in c.fixes if f.kind == "constraint")
    assert (top.kind, top.removed, top.program.whatif is not None) == ("input-spec", True, True)
    assert [layout.spec for layout in top.program.inputs] == [(("a",), ()), ((), ()), ((), ())]
    here = (put((16, 24), P("a")), put((24, 48), P()), put((48, 24), P()))
    assert hlo_kinds(megatron_mlp, *here) == []
    assert (constraint.removed, constraint.program.whatif is not None) == (False, True)
    assert sorted(k.kind for k in constraint.program.collectives) == sorted(
        hlo_kinds(megatron_mlp_constrained, put((16, 24), P("a")), put((24, 48), P(None, "b")), put((48, 24), P("b")))
    )


# ---------------------------------------------------------------- axes tell two collectives of a line apart


def mean_square(x):
    return jnp.mean(x**2)


def test_a_line_with_an_all_reduce_over_each_axis_fixes_each_by_its_own_axis():
    """x [12,24] P('a','b') squared and averaged: the sum runs over both dimensions, so XLA adds the partial
    sums over 'b' and over 'a' in two all-reduces on the one line. Keeping x off 'b' removes the one over 'b'
    and leaves the one over 'a': each collective's top fix takes out its own, and JAX's module has one fewer."""
    x = put((12, 24), P("a", "b"))
    assert hlo_kinds(mean_square, x) == ["all-reduce", "all-reduce"]
    prog = shardviz.trace(mean_square, x)
    by_axes = {c.axes: c for c in prog.collectives}
    assert sorted(by_axes) == [("a",), ("b",)]
    for axes, dimension, kept in ((("b",), 1, (("a",), ())), (("a",), 0, ((), ("b",)))):
        c = by_axes[axes]
        assert (c.why.cause, c.why.primitive, c.why.dimension, c.why.axes) == (
            "partial-sums",
            "reduce_sum",
            dimension,
            axes,
        )
        top = c.fixes[0]
        assert top.removed and top.program.inputs[0].spec == kept
        assert [d.axes for d in top.program.collectives] == [tuple(a for a in ("a", "b") if a not in axes)]
        assert hlo_kinds(mean_square, put((12, 24), as_spec(kept))) == ["all-reduce"]


# ---------------------------------------------------------------- an operation of two inputs


def joined(x, y):
    z = jnp.concatenate([x, y], axis=0)
    return z


def test_a_concatenate_of_two_inputs_split_on_the_joined_dimension_moves_both():
    """x and y [12,24] P('a') joined along dimension 0, the one split over 'a': concatenate needs it whole,
    and XLA moves the split to dimension 1 with all-to-alls (x's, y's and the result's). Moving x alone
    leaves y's; the top fix moves both to dimension 1 (24 divides over 'a's 4), and JAX's module then has none."""
    x, y = put((12, 24), P("a")), put((12, 24), P("a"))
    assert set(hlo_kinds(joined, x, y)) == {"all-to-all"}
    prog = shardviz.trace(joined, x, y)
    c = prog.collectives[0]
    assert (c.why.cause, c.why.primitive, c.why.dimension, c.why.axes) == ("whole-dimension", "concatenate", 0, ("a",))
    top = c.fixes[0]
    assert top.removed and [layout.spec for layout in top.program.inputs] == [((), ("a",)), ((), ("a",))]
    assert hlo_kinds(joined, *changed_args(top, (x, y))) == []
    alone = put((12, 24), P(None, "a"))
    assert "all-to-all" in hlo_kinds(joined, alone, y)  # moving x alone is not enough
    assert all(len(f.program.inputs) == 2 and f.program.inputs[1].spec != (("a",), ()) for f in c.fixes)


# ---------------------------------------------------------------- a while loop's carry


def looped(x, w):
    def body(state):
        i, c = state
        c = c @ w
        return i + 1, c

    _, c = jax.lax.while_loop(lambda s: s[0] < 3, body, (0, x))
    return c


def test_a_while_loops_carry_made_split_by_a_weight_is_fixed_by_keeping_the_weight_whole():
    """The carry x [24,12] P('a') comes into each pass P('a'); c @ w with w [12,12] P(None,'b') makes it
    P('a','b'), so it is gathered over 'b' back to P('a') before the next pass. The carry's start is laid out
    as wanted already: the fix keeps w, which the carry is made from, off 'b', and the loop has no collective."""
    x, w = put((24, 12), P("a")), put((12, 12), P(None, "b"))
    assert hlo_kinds(looped, x, w) == ["all-gather"]
    prog = shardviz.trace(looped, x, w)
    c = the(prog, "all-gather")
    why = c.why
    assert (why.cause, why.primitive, c.axes) == ("loop-carry", "while", ("b",))
    assert [(o.role, o.spec) for o in why.operands] == [("carry-start", (("a",), ())), ("carry-end", (("a",), ("b",)))]
    assert why.sources == (0, 1)
    top = c.fixes[0]
    assert top.removed and top.target == "w" and top.program.inputs[1].spec == ((), ())
    assert hlo_kinds(looped, x, put((12, 12), P())) == []


# ---------------------------------------------------------------- shifts along a split dimension


def differences(x):
    y = x[1:] - x[:-1]
    return y


def test_a_slice_off_the_start_of_a_split_dimension_sends_the_edges_between_devices():
    """x [24,12] P('a'): x[1:] takes elements 1 to 24 of dimension 0, split over 'a' in blocks of 6, so each
    device's new block ends one row into the next device's: that row is sent by a collective-permute. The
    23-row result does not divide over 'a''s 4 devices, so XLA splits it in padded blocks and gathers them for
    the output, which is returned whole. Splitting x on dimension 1 instead takes the permute out."""
    x = put((24, 12), P("a"))
    assert sorted(hlo_kinds(differences, x)) == ["all-gather", "collective-permute"]
    prog = shardviz.trace(differences, x)
    permute = the(prog, "collective-permute")
    why = permute.why
    assert (why.cause, why.primitive, why.expression) == ("whole-dimension", "slice", "y = x[1:] - x[:-1]")
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ()))]
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert why.rule == (
        "slice takes elements 1 to 24 of dimension 0 of x, which is split over 'a': the new blocks' edges along "
        "it are not x's, so the blocks are sent between devices"
    )
    top = permute.fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ("a",))
    assert "collective-permute" not in hlo_kinds(differences, put((24, 12), P(None, "a")))
    gather = the(prog, "all-gather")
    why = gather.why
    assert (why.cause, why.wanted, gather.charged_to) == ("layout-mismatch", ((), ()), "out")
    assert why.wanted_by.startswith("the sharding of output out")
    assert why.operands[0].spec is None and "unevenly" in why.operands[0].note
    assert why.rule.startswith("output out must be P() but its line makes it split over 'a': XLA split it unevenly")
    top = gather.fixes[0]
    assert top.removed
    assert "all-gather" not in hlo_kinds(differences, *changed_args(top, (x,)))


def padded(x):
    return jnp.pad(x, ((1, 1), (0, 0)))


def mirrored(x, b):
    y = x + b[::-1]
    return y


def test_a_pad_and_a_rev_along_a_split_dimension_name_the_dimension_and_the_move():
    """pad adds a row before and after dimension 0 of x [24,12] P('a'): every block's edge shifts by one, so
    rows are sent between devices. b [24] P('b') reversed: the block on device k belongs on device 2 - k
    of 'b', so the blocks trade places (a collective-permute over 'b'). Keeping b whole takes it out."""
    x = put((24, 12), P("a"))
    assert "collective-permute" in hlo_kinds(padded, x)
    why = the(shardviz.trace(padded, x), "collective-permute").why
    assert (why.cause, why.primitive, why.dimension, why.axes) == ("whole-dimension", "pad", 0, ("a",))
    assert why.rule.startswith("pad adds 1 before and 1 after dimension 0 of x, which is split over 'a'")
    x, b = put((12, 24), P(None, "b")), put((24,), P("b"))
    assert hlo_kinds(mirrored, x, b) == ["collective-permute"]
    prog = shardviz.trace(mirrored, x, b)
    c = the(prog, "collective-permute")
    assert (c.why.cause, c.why.primitive, c.why.dimension, c.why.axes) == ("whole-dimension", "rev", 0, ("b",))
    assert [(o.label, o.spec) for o in c.why.operands] == [("b", (("b",),))]
    assert c.why.rule == (
        "rev reverses dimension 0 of b, which is split over 'b': each device's block belongs at the mirrored "
        "place along it, so the blocks are sent between devices"
    )
    top = c.fixes[0]
    assert top.removed and top.target == "b" and top.program.inputs[1].spec == ((),)
    assert hlo_kinds(mirrored, x, put((24,), P())) == []


# ---------------------------------------------------------------- a transpose laid out for what reads it


def transposed(x):
    y = x.T
    z = y * 2
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def transposed_times_ones(x):
    y = x.T
    z = y * jnp.ones((24, 12))
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def test_a_constraint_after_a_transpose_is_fixed_by_the_input_layout_that_arrives_as_asked():
    """x [12,24] P('a'): x.T carries the split to dimension 1 (P(None,'a')), doubled, then constrained to
    P('a') of [24,12]: the split moves from dimension 1 to 0 (an all-to-all, shown on the constraint's line).
    Followed back through the doubling and the transpose, x laid out P(None,'a') arrives as P('a') with no move."""
    x = put((12, 24), P("a"))
    assert hlo_kinds(transposed, x) == ["all-to-all"]
    prog = shardviz.trace(transposed, x)
    c = the(prog, "all-to-all")
    why = c.why
    assert (c.source.line, why.cause, why.primitive) == (
        line_of(transposed, "with_sharding_constraint"),
        "layout-mismatch",
        "sharding_constraint",
    )
    assert [(o.label, o.role, o.spec) for o in why.operands] == [
        ("y", "made", ((), ("a",))),
        ("z", "operand", (("a",), ())),
    ]
    assert (why.wanted, why.arrival) == ((("a",), ()), (0, ((), ("a",))))
    top = c.fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ("a",))
    assert top.summary == "input x as P(None, 'a') (lay x out so that y, made from it, arrives as it is wanted)"
    assert hlo_kinds(transposed, put((12, 24), P(None, "a"))) == []


def scaled_transpose(x, scale):
    z = x.T * scale
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def transposed_times_weight(x, w):
    z = x.T * w
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def doubled_in_a_loop(x):
    z = jax.lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 2, x.T)
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def test_a_wanted_layout_is_followed_past_a_scalar_but_not_past_a_second_array_or_a_loop():
    """x [12,24] P('a') transposed (P(None,'a')) and constrained to P('a'): one all-to-all each time.
    - x.T * scale, scale a traced scalar: the product is x.T's layout, so x laid out P(None,'a') arrives as
      wanted; compiled so, nothing moves.
    - x.T * w, w [24,12] P(None,'a'): the product's layout comes from both, so no one input says how it
      arrives (x alone laid out P(None,'a') leaves w); keeping both off 'a' removes it.
    - the transpose doubled in a while_loop (one carry, one result): the loop's result is not followed back,
      by design, since its carry may leave a pass laid out unlike it came in; keeping x off 'a' removes the
      all-to-all (the loop's test still sums over 'a')."""
    x = put((12, 24), P("a"))
    scale = put((), P())
    assert hlo_kinds(scaled_transpose, x, scale) == ["all-to-all"]
    why = the(shardviz.trace(scaled_transpose, x, scale), "all-to-all").why
    assert (why.cause, why.arrival) == ("layout-mismatch", (0, ((), ("a",))))
    assert hlo_kinds(scaled_transpose, put((12, 24), P(None, "a")), scale) == []

    w = put((24, 12), P(None, "a"))
    assert hlo_kinds(transposed_times_weight, x, w) == ["all-to-all"]
    prog = shardviz.trace(transposed_times_weight, x, w)  # a collective's fixes are traced from its program
    c = the(prog, "all-to-all")
    assert (c.why.cause, c.why.arrival) == ("layout-mismatch", None)
    assert c.fixes[0].removed and [i.spec for i in c.fixes[0].program.inputs] == [((), ()), ((), ())]
    assert hlo_kinds(transposed_times_weight, put((12, 24), P()), put((24, 12), P())) == []

    assert sorted(hlo_kinds(doubled_in_a_loop, x)) == ["all-reduce", "all-to-all"]
    prog = shardviz.trace(doubled_in_a_loop, x)
    c = the(prog, "all-to-all")
    assert (c.why.cause, c.why.arrival) == ("layout-mismatch", None)
    assert c.fixes[0].removed and c.fixes[0].program.inputs[0].spec == ((), ())
    assert hlo_kinds(doubled_in_a_loop, put((12, 24), P())) == ["all-reduce"]


def reshaped_then_constrained(x):
    z = x.reshape(24, 12)
    return jax.lax.with_sharding_constraint(z, NamedSharding(MESH, P("a", None)))


def test_a_move_xla_puts_on_a_constraint_after_a_reshape_of_a_split_dimension_is_the_reshapes():
    """x [12,24] P(None,'a') reshaped to [24,12] and constrained to P('a'): XLA lays z out P('a') as asked and
    names the constraint's line for its all-to-all, but the move is the reshape's. A row of z is half a row of
    x, so x's dimension 1 (split over 'a') does not survive the reshape whole: its split must move. x laid out
    P('a') (rows 0-2 of x on a device are rows 0-5 of z) needs no move, nor does x whole."""
    x = put((12, 24), P(None, "a"))
    assert hlo_kinds(reshaped_then_constrained, x) == ["all-to-all"]
    prog = shardviz.trace(reshaped_then_constrained, x)
    c = the(prog, "all-to-all")
    why = c.why
    assert c.source.line == line_of(reshaped_then_constrained, "with_sharding_constraint")
    assert (why.cause, why.primitive, why.expression) == ("whole-dimension", "reshape", "z = x.reshape(24, 12)")
    assert [(o.label, o.spec) for o in why.operands] == [("x", ((), ("a",)))]
    assert (why.operand, why.dimension, why.axes) == (0, 1, ("a",))
    assert why.rule == (
        "reshape merges or splits dimension 1 of x, which is split over 'a': it needs that dimension whole on "
        "each device, so the split is moved to another dimension"
    )  # the all-to-all JAX compiles moves a split between dimensions
    top = c.fixes[0]
    assert (top.removed, top.program.inputs[0].spec) == (True, (("a",), ()))
    assert top.summary == "input x as P('a') (split x on another dimension)"
    assert hlo_kinds(reshaped_then_constrained, put((12, 24), P("a"))) == []


def test_a_transpose_laid_out_for_what_reads_it_names_the_operand_layout_that_needs_no_move():
    """The same, times a whole [24,12] of ones: XLA lays the transpose's result out P('a') for the
    constraint, so the move is on the transpose's line: x P('a') transposed is P(None,'a'), and for the
    result to be P('a') x must be P(None,'a') (dimension 0 of x from 'a' to whole, dimension 1 from whole
    to 'a': an all-to-all)."""
    x = put((12, 24), P("a"))
    assert hlo_kinds(transposed_times_ones, x) == ["all-to-all"]
    prog = shardviz.trace(transposed_times_ones, x)
    c = the(prog, "all-to-all")
    why = c.why
    assert (c.source.line, why.cause, why.primitive) == (
        line_of(transposed_times_ones, "y = x.T"),
        "layout-mismatch",
        "transpose",
    )
    assert [(o.label, o.role, o.spec) for o in why.operands] == [
        ("x", "operand", (("a",), ())),
        ("y", "result", (("a",), ())),
    ]
    assert (why.operand, why.wanted, why.dimension, why.axes) == (0, ((), ("a",)), 0, ("a",))
    assert why.rule == (
        "x comes in as P('a'), which transposed is P(None, 'a'), but the result must be P('a') (the layout XLA "
        "chose for its result, for what reads it), so x must be P(None, 'a'): dimension 0 goes from 'a' to "
        "whole, dimension 1 goes from whole to 'a', so a split moves to another dimension, each device trading "
        "blocks with the others"
    )
    top = c.fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ("a",))
    assert hlo_kinds(transposed_times_ones, put((12, 24), P(None, "a"))) == []


# ---------------------------------------------------------------- a constraint met by gathering an operand


def projected_whole(x, w):
    y = x @ w
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("a", None)))


def test_a_constraint_met_by_gathering_a_contractions_operand_names_that_operand():
    """x [16,24] P('a') @ w [24,48] P(None,'b'): w's dimension 1 is kept by the contraction, so y would be
    P('a','b'); the constraint asks for P('a'). XLA gathers w over 'b' (its [24,16] block from 3 devices)
    before the dot, and y comes out as asked: the constraint's operand is already P('a'), the move is w's.
    Laying w out whole takes the gather out of JAX's module."""
    x, w = put((16, 24), P("a")), put((24, 48), P(None, "b"))
    assert hlo_kinds(projected_whole, x, w) == ["all-gather"]
    prog = shardviz.trace(projected_whole, x, w)
    c = the(prog, "all-gather")
    why = c.why
    assert (c.axes, why.cause, why.primitive) == (("b",), "layout-mismatch", "sharding_constraint")
    assert [(o.label, o.role, o.spec) for o in why.operands] == [
        ("w", "made", ((), ("b",))),
        ("y", "operand", (("a",), ())),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 1, ("b",), ((), ()))
    assert why.wanted_by == "with_sharding_constraint, through y"
    assert why.rule == (
        "with_sharding_constraint asks for P('a') of y, but w (P(None, 'b')) is split over 'b' on dimension 1, "
        "which the contraction keeps, so it would split y too: XLA gathers w over 'b' first, and y comes out as "
        "asked"
    )
    top = c.fixes[0]
    assert top.removed and top.target == "w" and top.program.inputs[1].spec == ((), ())
    assert hlo_kinds(projected_whole, x, put((24, 48), P())) == []


# ---------------------------------------------------------------- a scan over a split dimension


def scanned_rows(xs, w):
    def body(c, x):
        c = c + x @ w
        return c, c

    _, ys = jax.lax.scan(body, jnp.zeros((12,)), xs)
    return ys


def test_a_scan_over_a_split_dimension_gathers_its_input_and_names_the_scan():
    """xs [24,12] P('a') scanned along dimension 0, the one split over 'a': each pass reads one row, which one
    device holds, so XLA gathers xs over 'a' before the loop (the module's dynamic_slice of each pass reads the
    gathered rows). xs whole takes the gather out of JAX's module."""
    xs, w = put((24, 12), P("a")), put((12, 12), P())
    assert hlo_kinds(scanned_rows, xs, w) == ["all-gather"]
    prog = shardviz.trace(scanned_rows, xs, w)
    c = the(prog, "all-gather")
    why = c.why
    assert (c.axes, c.source.line) == (("a",), line_of(scanned_rows, "jax.lax.scan"))
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == ("whole-dimension", "scan", 0, 0, ("a",))
    assert [(o.label, o.spec) for o in why.operands] == [("xs", (("a",), ()))]
    assert why.rule == (
        "scan steps through dimension 0 of xs, which is split over 'a': each pass reads one slice of it, held by "
        "one device, so it is gathered"
    )
    assert any(f.removed and f.program.inputs[0].spec == ((), ()) for f in c.fixes)
    assert c.fixes[0].removed
    assert hlo_kinds(scanned_rows, *changed_args(c.fixes[0], (xs, w))).count("all-gather") == 0


# ---------------------------------------------------------------- a jit whose in_shardings fix the inputs


def summed_rows(x):
    return x.sum(axis=0)


def test_an_input_fixed_by_the_jits_own_in_shardings_is_changed_there():
    """jax.jit(summed_rows, in_shardings=P('a')) of x [12,6]: the sum over dimension 0, split over 'a', leaves
    partial sums (an all-reduce over 'a'). The jit refuses x laid out otherwise, so the fix changes its
    in_shardings: compiled by JAX with in_shardings P(), the module has no all-reduce."""
    fn = jax.jit(summed_rows, in_shardings=NamedSharding(MESH, P("a")))
    x = put((12, 6), P("a"))
    assert hlo_kinds(fn, x) == ["all-reduce"]
    prog = shardviz.trace(fn, x)
    c = the(prog, "all-reduce")
    assert (c.why.cause, c.why.primitive, c.why.dimension) == ("partial-sums", "reduce_sum", 0)
    top = c.fixes[0]
    assert top.removed and top.kind == "input-spec" and top.program.inputs[0].spec == ((), ())
    assert top.summary == "input x as P() (keep dimension 0 of x whole), in the jit's in_shardings"
    assert top.code == "jax.jit(f, in_shardings=...)  # x: NamedSharding(mesh, P())"
    changed = jax.jit(summed_rows, in_shardings=NamedSharding(MESH, P()))
    assert hlo_kinds(changed, put((12, 6), P())) == []


# ---------------------------------------------------------------- a cond's branches, an operand transposed


def branched(x, p):
    return jax.lax.cond(p, lambda v: v.sum(axis=0), lambda v: v.max(axis=0), x)


def test_a_conds_branches_read_the_conds_own_operand():
    """x [12,24] P('a','b') summed (or maxed) over dimension 0 in a cond's branches: each branch reduces the
    dimension split over 'a', an all-reduce over 'a' in each branch. The branch's input is the cond's operand
    x, so the reason names x and its layout, and keeping dimension 0 whole takes both out of JAX's module."""
    x, p = put((12, 24), P("a", "b")), put((), P(), jnp.bool_)
    assert hlo_kinds(branched, x, p) == ["all-reduce", "all-reduce"]
    prog = shardviz.trace(branched, x, p)
    assert {c.why.primitive for c in prog.collectives} == {"reduce_sum", "reduce_max"}
    for c in prog.collectives:
        why = c.why
        assert (c.axes, why.cause, why.operand, why.dimension, why.axes) == (("a",), "partial-sums", 0, 0, ("a",))
        assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ("b",)))]
        top = c.fixes[0]
        assert top.removed and top.program.inputs[0].spec == ((), ("b",))
    assert hlo_kinds(branched, put((12, 24), P(None, "b")), p) == []


def added_to_transposed(x, y):
    z = x + y.T
    return z


def test_an_elementwise_mismatch_with_a_transposed_operand_lays_the_input_out_so_it_arrives_alike():
    """x and y [12,12] P('a'): y.T is P(None,'a'), unlike x's P('a'), so the add moves one (an all-to-all
    over 'a'). y laid out P(None,'a') transposes to P('a'), as x is: JAX's module then has no collective."""
    x, y = put((12, 12), P("a")), put((12, 12), P("a"))
    assert hlo_kinds(added_to_transposed, x, y) == ["all-to-all"]
    prog = shardviz.trace(added_to_transposed, x, y)
    c = the(prog, "all-to-all")
    why = c.why
    assert (why.cause, why.primitive, why.wanted) == ("layout-mismatch", "add", (("a",), ()))
    assert why.operands[why.operand].spec == ((), ("a",))
    assert why.arrival == (1, ((), ("a",)))
    top = c.fixes[0]
    assert top.removed and top.target == "y" and top.program.inputs[1].spec == ((), ("a",))
    assert top.summary.endswith("arrives as it is wanted)")
    assert hlo_kinds(added_to_transposed, x, put((12, 12), P(None, "a"))) == []


# ---------------------------------------------------------------- a Ref input


def ref_step(w_ref, x):
    w = w_ref[...]
    y = x @ w
    w_ref[...] = w * 0.5
    return y


def test_a_fix_of_a_ref_input_is_traced_on_its_shape_and_the_changed_ref_compiles_without_the_gather():
    """FSDP through a Ref: x [16,24] P('a') @ w [24,12] read from a Ref laid out P('a'), so w is gathered over
    'a' to match x's whole contracting dimension. A Ref cannot be laid out anew without its data, so the fix
    is traced on a Ref's shape; JAX's module for a Ref made whole (real data, zeros) has no collective."""
    import numpy as np

    x = jax.device_put(np.ones((16, 24), np.float32), NamedSharding(MESH, P("a")))
    w_ref = jax.ref.new_ref(jax.device_put(np.ones((24, 12), np.float32), NamedSharding(MESH, P("a"))))
    assert hlo_kinds(ref_step, w_ref, x) == ["all-gather"]
    prog = shardviz.trace(ref_step, w_ref, x)
    c = the(prog, "all-gather")
    assert (c.why.cause, c.why.primitive, c.why.dimension, c.why.axes) == ("layout-mismatch", "dot_general", 0, ("a",))
    top = c.fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ())
    whole = jax.ref.new_ref(jax.device_put(np.zeros((24, 12), np.float32), NamedSharding(MESH, P())))
    assert hlo_kinds(ref_step, whole, x) == []
    with pytest.raises(shardviz.ShardingError, match="is a Ref"):
        shardviz.program.retrace(prog, [P(), None])  # an edit still refuses: it would lose the Ref's data


def rolled(x):
    y = jnp.roll(x, 1, axis=0)
    return y


def test_a_roll_along_a_split_dimension_names_the_array_its_pieces_are_cut_from():
    """jnp.roll(x, 1, axis=0) of x [24,12] P('a') is a concatenate of x's last row and its first 23: the
    pieces are cut unevenly (XLA's padded blocks), so the reason names x, whose split over 'a' along
    dimension 0 the roll shifts by a row: the rows across each block's edge are sent to the next device (a
    collective-permute over 'a'). x split on dimension 1 instead: JAX's module has no collective."""
    x = put((24, 12), P("a"))
    assert hlo_kinds(rolled, x) == ["collective-permute"]
    prog = shardviz.trace(rolled, x)
    c = the(prog, "collective-permute")
    why = c.why
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
        "whole-dimension",
        "concatenate",
        0,
        0,
        ("a",),
    )
    assert [(o.label, o.role, o.spec) for o in why.operands] == [("x", "made", (("a",), ()))]
    assert why.rule == (
        "concatenate joins along dimension 0 pieces sliced from x, which is split over 'a' along it: the joined "
        "blocks' edges are not x's, so the blocks are sent between devices"
    )
    top = c.fixes[0]
    assert top.removed and top.program.inputs[0].spec == ((), ("a",))
    assert hlo_kinds(rolled, put((24, 12), P(None, "a"))) == []


# ---------------------------------------------------------------- a gradient's all-reduce


def squared_loss(w, x):
    return jnp.mean((x @ w) ** 2)


def gradient_step(w, x):
    g = jax.grad(squared_loss)(w, x)
    return w - 0.1 * g


def test_a_data_parallel_gradients_all_reduce_is_fixed_at_the_batch_and_never_by_a_constraint_in_the_backward():
    """w [24,12] whole, x [16,24] P('a'): the gradient of x @ w with respect to w is x.T @ dy, contracting the
    batch dimension, split over 'a': each device holds a partial gradient, summed by an all-reduce over 'a'
    (data parallelism). The value contracted is the backward pass's own: no line of the user's makes it, so no
    constraint is offered; the batch whole takes the all-reduce out of JAX's module."""
    w, x = put((24, 12), P()), put((16, 24), P("a"))
    assert hlo_kinds(gradient_step, w, x) == ["all-reduce"]
    prog = shardviz.trace(gradient_step, w, x)
    c = the(prog, "all-reduce")
    why = c.why
    assert (c.axes, why.cause, why.primitive, why.dimension, why.axes) == (
        ("a",),
        "partial-sums",
        "dot_general",
        0,
        ("a",),
    )
    assert why.made_at is None
    assert all(f.kind == "input-spec" for f in c.fixes)
    top = c.fixes[0]
    assert top.removed and top.program.inputs[1].spec == ((), ())
    assert hlo_kinds(gradient_step, w, put((16, 24), P())) == []
