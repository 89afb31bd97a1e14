"""Why each collective is there, checked whole: every field of the reason and its full sentence, for the
programs whose parts mutation testing of program/why/causes.py found unread (a combined all-reduce's
operands, a shard_map collective over axes named out of mesh order, the exact rule of each cause).

Each expected reason is the hand analysis of the operation and its operands' specs, written out, and
each program's collectives are checked against JAX's own compiled HLO first. Mesh: 4x3 (``a`` of 4,
``b`` of 3), Auto axes.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from test_program_causes import (
    EXPLICIT,
    MESH,
    added,
    added_at,
    best,
    carried,
    constrained,
    contraction,
    doubled,
    embedded_rows,
    hlo_kinds,
    looked_up,
    looped_until,
    merged,
    mismatched_matmul,
    put,
    running,
    sorted_rows,
    summed,
    the_collective,
    top_two,
)


def two_contractions(x, w, y, v):
    first = x @ w
    second = y @ v
    return first, second


def test_a_combined_all_reduce_gives_each_operand_the_reason_of_its_own_line():
    """x @ w and y @ v, each [8,12] P(None,'a') @ [12,6] P('a'): each leaves partial sums over 'a', and XLA's
    all-reduce combiner sends both [8,6] results in one all-reduce of two operands. Each operand's reason is
    its own line's contraction: operand 0 (x, then y) split over 'a' on its contracting dimension 1."""
    args = (put((8, 12), P(None, "a")), put((12, 6), P("a", None))) * 2
    assert hlo_kinds(two_contractions, *args) == ["all-reduce"]
    (c,) = shardviz.trace(two_contractions, *args).collectives
    assert len(c.parts) == 2
    seen = [
        (
            p.why.cause,
            p.why.primitive,
            p.why.expression,
            p.why.operands[p.why.operand].label,
            p.why.dimension,
            p.why.axes,
        )
        for p in c.parts
    ]
    assert seen == [
        ("partial-sums", "dot_general", "first = x @ w", "x", 1, ("a",)),
        ("partial-sums", "dot_general", "second = y @ v", "y", 1, ("a",)),
    ]
    assert c.why == c.parts[0].why


def summed_out_of_order(x):
    @partial(jax.shard_map, mesh=MESH, in_specs=P(("a", "b")), out_specs=P())
    def body(block):
        return jax.lax.psum(block.sum(0), ("b", "a"))

    return body(x)


def test_a_shard_map_collective_names_the_axes_as_the_user_wrote_them():
    """psum over ('b', 'a') in a shard_map body: one all-reduce over all 12 devices; the reason names the
    axes in the user's order, 'b' first, not the mesh's."""
    x = put((12, 6), P(("a", "b"), None))
    assert hlo_kinds(summed_out_of_order, x) == ["all-reduce"]
    why = the_collective(shardviz.trace(summed_out_of_order, x), "all-reduce").why
    assert (why.cause, why.primitive, why.axes) == ("shard-map", "psum_invariant", ("b", "a"))
    assert why.expression == 'return jax.lax.psum(block.sum(0), ("b", "a"))'
    assert why.rule == (
        "you wrote psum_invariant over 'b', 'a' inside a shard_map body: each device runs the body on its own "
        "block, and this collective is the one your code asks for"
    )
    assert (
        len(why.operands) == 1 and why.operands[0].type_str == "float32[6]{V:(a,b)}"
    )  # the block sum, varying over both axes, as JAX spells it


def test_a_split_contraction_says_which_operand_dimension_and_axis_leave_partial_sums():
    """x [8,12] P(None,'a') @ w [12,6] P('a'): x's contracting dimension 1 split over 'a' (x is the first
    operand looked at), so the all-reduce adds the partial [8,6] sums over 'a'."""
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("a", None))
    why = the_collective(shardviz.trace(contraction, x, w), "all-reduce").why
    assert [(o.label, o.type_str, o.spec, o.role, o.note) for o in why.operands] == [
        ("x", "float32[8,12]", ((), ("a",)), "operand", ""),
        ("w", "float32[12,6]", (("a",), ()), "operand", ""),
    ]
    assert (why.operand, why.dimension, why.axes, why.wanted, why.wanted_by) == (0, 1, ("a",), None, "")
    assert why.rule == (
        "x is split over 'a' on its contracting dimension 1: each device multiplies only its block of it and "
        "holds a partial sum, which the all-reduce adds up over 'a'"
    )


def test_a_sum_over_a_split_dimension_says_how_the_blocks_are_combined():
    """x [12,6] P('a') summed over dimension 0: 4 partial sums along 'a', added by the all-reduce."""
    why = the_collective(shardviz.trace(summed, put((12, 6), P("a", None))), "all-reduce").why
    assert (why.cause, why.primitive, why.expression) == ("partial-sums", "reduce_sum", "return x.sum(axis=0)")
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ()))]
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert why.rule == (
        "reduce_sum runs over dimension 0 of x, split over 'a': each device reduces only its block, and the "
        "all-reduce combines the blocks' results over 'a'"
    )


def test_contracting_dimensions_split_over_different_axes_name_both_splits():
    """x [8,12] P(None,'a') @ w [12,6] P('b'): dimension 1 of x is split over 'a', dimension 0 of w over 'b';
    the axes that differ are 'a' and 'b'. XLA gathers both whole: the all-gather over 'b' is w's (its block
    [4,6] from 3 devices), the one over 'a' is x's ([8,3] from 4)."""
    x, w = put((8, 12), P(None, "a")), put((12, 6), P("b", None))
    prog = shardviz.trace(mismatched_matmul, x, w)
    assert sorted(c.kind for c in prog.collectives) == sorted(hlo_kinds(mismatched_matmul, x, w))
    by_axes = {c.axes: c.why for c in prog.collectives}
    assert sorted(by_axes) == [("a",), ("b",)]
    for axes, (operand, dimension, wanted, moved, other) in {
        ("b",): (1, 0, (("a",), ()), "w is gathered over 'b' to match x", "x"),
        ("a",): (0, 1, ((), ("b",)), "x is gathered over 'a' to match w", "w"),
    }.items():
        why = by_axes[axes]
        assert (why.cause, why.operand, why.dimension, why.axes) == ("layout-mismatch", operand, dimension, ("a", "b"))
        assert (why.primitive, why.expression) == ("dot_general", "return x @ w")
        assert [(o.label, o.spec) for o in why.operands] == [("x", ((), ("a",))), ("w", (("b",), ()))]
        assert (why.wanted, why.wanted_by) == (wanted, f"the contraction with {other}")
        assert why.rule == (
            "a contraction needs both operands' contracting dimensions split alike, but dimension 1 of x is "
            f"split over 'a' and dimension 0 of w over 'b': {moved}"
        )


def test_a_contracting_dimension_split_on_one_side_only_gathers_that_side():
    """FSDP: x [16,24] P('a') @ w [24,12] P('a'): x's contracting dimension 1 is whole, w's dimension 0 is
    split over 'a', so XLA gathers w over 'a' (its [6,12] block from 4 devices) and x keeps its layout. The
    reason points at w, dimension 0, wanted whole; laying w out whole takes the gather out of JAX's module."""
    x, w = put((16, 24), P("a", None)), put((24, 12), P("a", None))
    assert hlo_kinds(mismatched_matmul, x, w) == ["all-gather"]
    prog = shardviz.trace(mismatched_matmul, x, w)
    (c,) = prog.collectives
    why = c.why
    assert (c.kind, c.axes) == ("all-gather", ("a",))
    assert (why.cause, why.operand, why.dimension, why.axes) == ("layout-mismatch", 1, 0, ("a",))
    assert (why.wanted, why.wanted_by) == (((), ()), "the contraction with x")
    assert why.rule == (
        "a contraction needs both operands' contracting dimensions split alike, but dimension 1 of x is "
        "split over no mesh axis and dimension 0 of w over 'a': w is gathered over 'a' to match x"
    )
    top = c.fixes[0]
    assert (top.removed, top.kind, top.target, top.spec) == (True, "input-spec", "w", ((), ()))
    assert hlo_kinds(mismatched_matmul, x, put((24, 12), P())) == []


def test_a_loop_carry_moved_back_says_both_layouts():
    """The carry x [12,12] starts a pass P('a') and c @ w (w P(None,'b')) makes it P('a','b'): gathered
    over 'b' on dimension 1 back to P('a'), the layout the next pass starts in."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    why = the_collective(shardviz.trace(carried, x, w), "all-gather").why
    assert (why.cause, why.primitive, why.expression) == ("loop-carry", "scan", "c = jnp.tanh(c @ w)")
    assert [(o.role, o.type_str, o.spec) for o in why.operands] == [
        ("carry-start", "float32[12,12]", (("a",), ())),
        ("carry-end", "float32[12,12]", (("a",), ("b",))),
    ]
    assert why.operands[0].label == "x"
    assert (why.operand, why.wanted_by) == (1, "the carry's layout at the start of a pass")
    assert why.rule == (
        "the loop's carry x starts each pass as P('a') but the body makes it P('a', 'b'): it is moved back "
        "before the next pass"
    )


def test_a_constraint_unlike_the_layout_made_says_each_dimensions_move():
    """y [12,12] P('a','b') constrained to P('b','a'): dimension 0 goes 'a' -> 'b' and 1 goes 'b' -> 'a';
    XLA gathers (two all-gathers), so the rule says the dropped split is gathered."""
    y = put((12, 12), P("a", "b"))
    prog = shardviz.trace(constrained, y)
    assert sorted(c.kind for c in prog.collectives) == sorted(hlo_kinds(constrained, y)) == ["all-gather"] * 2
    for c in prog.collectives:
        why = c.why
        assert [(o.label, o.type_str, o.spec, o.role) for o in why.operands] == [
            ("y", "float32[12,12]", (("a",), ("b",)), "operand")
        ]
        assert (why.operand, why.dimension, why.axes) == (0, 0, ("a", "b"))
        assert (why.wanted, why.wanted_by) == ((("b",), ("a",)), "with_sharding_constraint")
        assert why.rule == (
            "with_sharding_constraint asks for P('b', 'a') of y, made as P('a', 'b'): dimension 0 goes from 'a' "
            "to 'b', dimension 1 goes from 'b' to 'a', so the split that is dropped is gathered"
        )


def doubled_then_constrained(x):
    y = jnp.tanh(x) * 2
    return jax.lax.with_sharding_constraint(y, NamedSharding(MESH, P("b", "a")))


def test_a_constraint_met_by_its_operand_points_at_the_value_made_before_it():
    """x [12,12] P('a','b'); y = tanh(x) * 2 constrained to P('b','a'). XLA lays y out as asked already, so
    the move is further back: tanh(x), made P('a','b') like x, is what is re-laid out (two all-gathers)."""
    x = put((12, 12), P("a", "b"))
    prog = shardviz.trace(doubled_then_constrained, x)
    assert sorted(c.kind for c in prog.collectives) == sorted(hlo_kinds(doubled_then_constrained, x))
    assert prog.collectives
    for c in prog.collectives:
        why = c.why
        assert (why.cause, why.primitive) == ("layout-mismatch", "sharding_constraint")
        made, asked = why.operands
        assert (made.role, made.type_str, made.spec) == ("made", "float32[12,12]", (("a",), ("b",)))
        assert (asked.label, asked.role, asked.spec) == ("y", "operand", (("b",), ("a",)))
        assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a", "b"), (("b",), ("a",)))
        assert why.rule == (
            f"with_sharding_constraint asks for P('b', 'a') of {made.label}, made as P('a', 'b'): dimension 0 "
            "goes from 'a' to 'b', dimension 1 goes from 'b' to 'a', so the split that is dropped is gathered"
        )


def test_operands_of_an_elementwise_operation_laid_out_unlike_say_which_is_moved():
    """x [12,12] P('a') + y [12,12] P(None,'a'): y (operand 1) is moved to x's layout, its first differing
    dimension 0; XLA does it with one all-to-all over 'a'."""
    x, y = put((12, 12), P("a", None)), put((12, 12), P(None, "a"))
    why = the_collective(shardviz.trace(added, x, y), "all-to-all").why
    assert (why.cause, why.primitive, why.expression) == ("layout-mismatch", "add", "return x + y")
    assert [(o.label, o.spec, o.role) for o in why.operands] == [
        ("x", (("a",), ()), "operand"),
        ("y", ((), ("a",)), "operand"),
    ]
    assert (why.operand, why.dimension, why.axes) == (1, 0, ("a",))
    assert (why.wanted, why.wanted_by) == ((("a",), ()), "x's layout")
    assert why.rule == (
        "add works element by element and needs its operands laid out alike, but x is P('a') and y is "
        "P(None, 'a'): one is moved to match"
    )


def test_an_output_asked_for_unlike_its_line_says_where_the_split_moves():
    """x [12,12] P('a') doubled, returned under out_shardings P(None,'a'): 'a' moves from dimension 0 to 1,
    one all-to-all."""
    x = put((12, 12), P("a", None))
    fn = jax.jit(doubled, out_shardings=NamedSharding(MESH, P(None, "a")))
    why = the_collective(shardviz.trace(fn, x), "all-to-all").why
    assert (why.cause, why.primitive, why.expression) == ("layout-mismatch", "mul", "return x * 2")
    assert [(o.label, o.spec, o.role) for o in why.operands] == [("x", (("a",), ()), "made")]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), ((), ("a",)))
    assert why.wanted_by == "the sharding of output out (out_shardings, or the layout the caller asks for)"
    assert why.rule == (
        "output out must be P(None, 'a') but its line makes it P('a'): dimension 0 goes from 'a' to whole, "
        "dimension 1 goes from whole to 'a', so a split moves to another dimension, each device trading "
        "blocks with the others"
    )


def test_operands_split_over_one_axis_on_free_dimensions_gather_one_of_them():
    """x [12,8] P('a') @ w [8,12] P(None,'a'): the contracted dimensions are whole on both, but 'a' splits
    x's rows and w's columns, and the [12,12] result can be split over 'a' on one dimension only: XLA
    gathers one operand (one all-gather over 'a'). The rule names x's dimension 0, the first such split."""
    x, w = put((12, 8), P("a", None)), put((8, 12), P(None, "a"))
    assert hlo_kinds(mismatched_matmul, x, w) == ["all-gather"]
    why = the_collective(shardviz.trace(mismatched_matmul, x, w), "all-gather").why
    assert (why.cause, why.primitive) == ("layout-mismatch", "dot_general")
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ())), ("w", ((), ("a",)))]
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert why.rule == (
        "both operands are split over 'a' on dimensions that are not contracted (P('a') and P(None, 'a')): a "
        "mesh axis can split only one dimension of the result, so one operand is gathered"
    )


def test_a_scatter_add_of_split_updates_names_the_table_they_are_added_into():
    """zeros [16,6] .at[ids].add(u), u [8,6] P('a'), ids [8] P('a'): the operands are the table, the indices
    (as [8,1]) and u (operand 2), split over 'a' on dimension 0, the one it scatters along; each device adds
    into the whole table, and the all-reduce sums the 4 tables."""
    u, ids = put((8, 6), P("a", None)), jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(MESH, P("a")))
    why = the_collective(shardviz.trace(added_at, u, ids), "all-reduce").why
    table, indices, updates = why.operands
    assert (table.type_str, indices.type_str, indices.spec) == ("float32[16,6]", "int32[8,1]", (("a",), ()))
    assert (updates.label, updates.spec, why.operand, why.dimension, why.axes) == ("u", (("a",), ()), 2, 0, ("a",))
    assert why.rule == (
        "u, the updates, is split over 'a' on dimension 0: each device adds only its share of the updates into "
        f"the whole {table.label}, and the all-reduce sums the devices' partial results over 'a'"
    )


def test_the_lookups_gradient_names_the_reshard_its_updates_were_split_before():
    """The embedding lookup's gradient (see test_program_causes): the cotangent [8,6] is split over 'a' before
    the reshard that makes it whole, so that layout, added last (operand 3), is the one the rule names."""
    with jax.set_mesh(EXPLICIT):
        table = jax.ShapeDtypeStruct((16, 6), jnp.float32, sharding=NamedSharding(EXPLICIT, P(None, None)))
        ids = jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(EXPLICIT, P("a")))
        (c,) = shardviz.trace(jax.grad(embedded_rows), table, ids).collectives
    why = c.why
    assert len(why.operands) == 4 and why.operand == 3
    target, made = why.operands[0], why.operands[3]
    assert (target.type_str, made.type_str, made.role) == ("float32[16,6]", "float32[8@a,6]", "made")
    assert why.rule == (
        f"{made.label}, the updates, is split over 'a' on dimension 0 before the reshard that makes it whole; XLA "
        f"keeps it split: each device adds only its share of the updates into the whole {target.label}, and the "
        "all-reduce sums the devices' partial results over 'a'"
    )


@pytest.mark.parametrize(
    ("fn", "shape", "spec", "words", "dimension", "axis"),
    [
        (sorted_rows, (12, 6), P("a", None), "sort sorts along", 0, "a"),
        (running, (12, 6), P("a", None), "cumsum accumulates along", 0, "a"),
        (best, (12, 6), P("a", None), "argmax searches along", 0, "a"),
        (top_two, (6, 12), P(None, "a"), "top_k picks the largest along", 1, "a"),
        # [12,6] -> [6,12]: neither dimension is carried over whole; dimension 1 is the split one
        (merged, (12, 6), P(None, "b"), "reshape merges or splits", 1, "b"),
    ],
)
def test_an_operation_needing_a_whole_dimension_says_what_it_does_along_it(fn, shape, spec, words, dimension, axis):
    """Each operation needs dimension ``dimension`` of x whole, and x is split there over ``axis``: XLA gathers
    x (an all-gather for each collective, as its compiled HLO shows)."""
    x = put(shape, spec)
    prog = shardviz.trace(fn, x)
    assert sorted(c.kind for c in prog.collectives) == sorted(hlo_kinds(fn, x))
    for c in prog.collectives:
        why = c.why
        assert [(o.label, o.spec) for o in why.operands] == [("x", tuple(tuple(e) if e else () for e in (*spec,)))]
        assert (why.cause, why.operand, why.dimension, why.axes) == ("whole-dimension", 0, dimension, (axis,))
        assert why.rule == (
            f"{words} dimension {dimension} of x, which is split over '{axis}': it needs that dimension whole on "
            "each device, so it is gathered"
        )


def test_a_gather_along_a_split_dimension_says_the_partial_lookups_are_combined():
    """x[i], x [12,6] P('a'), i [4] whole: each device looks up what its 3 rows hold and the all-reduce over 'a'
    combines the 4 partial lookups. The operands are x and the indices (as [4,1], laid out by nothing)."""
    x, i = put((12, 6), P("a", None)), jax.ShapeDtypeStruct((4,), jnp.int32, sharding=NamedSharding(MESH, P()))
    assert hlo_kinds(looked_up, x, i) == ["all-reduce"]
    why = the_collective(shardviz.trace(looked_up, x, i), "all-reduce").why
    table, indices = why.operands
    assert (table.label, table.type_str, table.spec, indices.type_str) == (
        "x",
        "float32[12,6]",
        (("a",), ()),
        "int32[4,1]",
    )
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert why.rule == (
        "gather indexes along dimension 0 of x, which is split over 'a': it needs that dimension whole on each "
        "device, so each device works on the part it holds and the partial results are combined over 'a'"
    )


def kept_then_merged(x):
    return x.reshape(12, 24)


def test_a_reshape_that_keeps_a_split_dimension_names_only_the_merged_one():
    """x [12,4,6] P('a', None, 'b') reshaped to [12,24]: dimension 0 (12, nothing before it) is carried over
    whole, so its split over 'a' stays; dimensions 1 and 2 merge into 24, and dimension 2, split over 'b', is
    the minor one of the merge: XLA gathers it over 'b' (one all-gather)."""
    x = put((12, 4, 6), P("a", None, "b"))
    assert hlo_kinds(kept_then_merged, x) == ["all-gather"]
    why = the_collective(shardviz.trace(kept_then_merged, x), "all-gather").why
    assert (why.cause, why.primitive, why.expression) == ("whole-dimension", "reshape", "return x.reshape(12, 24)")
    assert [(o.label, o.type_str, o.spec) for o in why.operands] == [("x", "float32[12,4,6]", (("a",), (), ("b",)))]
    assert (why.operand, why.dimension, why.axes) == (0, 2, ("b",))
    assert why.rule == (
        "reshape merges or splits dimension 2 of x, which is split over 'b': it needs that dimension whole on each "
        "device, so it is gathered"
    )


def carried_into_another_layout(x):
    def step(c, _):
        c = jax.lax.with_sharding_constraint(jnp.tanh(c), NamedSharding(MESH, P(None, "a")))
        return c, None

    out, _ = jax.lax.scan(step, x, None, length=3)
    return out


def test_a_carry_moved_before_the_loop_is_charged_to_the_loops_own_line():
    """x [12,12] P('a') is the carry's first value, and the body constrains the carry to P(None,'a'): the carry
    has one layout in every pass, so XLA moves x once, before the loop, from 'a' on dimension 0 to 'a' on
    dimension 1 (one all-to-all over 'a', in the entry computation, on the scan's line)."""
    x = put((12, 12), P("a", None))
    assert hlo_kinds(carried_into_another_layout, x) == ["all-to-all"]
    why = the_collective(shardviz.trace(carried_into_another_layout, x), "all-to-all").why
    assert (why.cause, why.primitive) == ("loop-carry", "scan")
    assert why.expression == "out, _ = jax.lax.scan(step, x, None, length=3)"
    assert [(o.role, o.type_str, o.spec) for o in why.operands] == [
        ("carry-start", "float32[12,12]", (("a",), ())),
        ("carry-end", "float32[12,12]", ((), ("a",))),
    ]
    assert why.operands[0].label == "x"
    assert (why.operand, why.dimension, why.axes) == (0, 0, ("a",))
    assert (why.wanted, why.wanted_by) == (((), ("a",)), "the carry's layout at the end of a pass")
    assert why.rule == (
        "the loop's carry x comes in as P('a') but the body makes it P(None, 'a'), and a carry has one layout in "
        "every pass: it is moved to the body's layout"
    )


def added_into_columns(u, ids):
    return jnp.zeros((12, 16), u.dtype).at[:, ids].add(u)


def test_a_scatter_add_split_on_its_window_dimension_names_the_scattered_one():
    """zeros [12,16] .at[:, ids].add(u), u [12,12] P('b','a'), ids [12] whole: u's dimension 0 is the window
    (whole rows of the table, copied as they are), dimension 1 the one it scatters along. Dimension 1 is split
    over 'a', so each device adds its 3 columns into a whole table and the all-reduce over 'a' sums them; the
    split over 'b' of the window dimension needs no sum."""
    u = put((12, 12), P("b", "a"))
    ids = jax.ShapeDtypeStruct((12,), jnp.int32, sharding=NamedSharding(MESH, P()))
    assert hlo_kinds(added_into_columns, u, ids) == ["all-reduce"]
    c = the_collective(shardviz.trace(added_into_columns, u, ids), "all-reduce")
    assert c.axes == ("a",)
    why = c.why
    table, _, updates = why.operands
    assert (why.cause, why.primitive, table.type_str) == ("partial-sums", "scatter-add", "float32[12,16]")
    assert (updates.label, updates.spec, why.operand, why.dimension, why.axes) == ("u", (("b",), ("a",)), 2, 1, ("a",))
    assert why.rule == (
        "u, the updates, is split over 'a' on dimension 1: each device adds only its share of the updates into "
        f"the whole {table.label}, and the all-reduce sums the devices' partial results over 'a'"
    )


def summed_over_half_an_axis(x):
    return x.reshape(2, 6, 6).sum(axis=1)


def test_a_sum_over_a_piece_of_an_axis_says_its_operand_has_no_partition_spec():
    """x [12,6] P('a') reshaped to [2,6,6]: 'a''s 4 blocks of 3 rows become 2 halves of dimension 0, each cut
    into 2 blocks of dimension 1, so the sum over dimension 1 adds over pairs of devices, half of 'a'. That
    layout has no PartitionSpec, so the reason says the operand's layout is unknown rather than guess."""
    x = put((12, 6), P("a", None))
    assert "all-reduce" in hlo_kinds(summed_over_half_an_axis, x)
    c = the_collective(shardviz.trace(summed_over_half_an_axis, x), "all-reduce")
    assert c.axes is None and [(p.axis, p.size, p.axis_size) for p in c.pieces] == [("a", 2, 4)]
    why = c.why
    (operand,) = why.operands
    assert (why.cause, why.primitive, operand.type_str, operand.spec) == (
        "unknown",
        "reduce_sum",
        "float32[2,6,6]",
        None,
    )
    assert operand.note.startswith("XLA split it in a way no PartitionSpec over this mesh can say")
    assert why.rule == f"the layout of {operand.label} is unknown"


def accumulated_over_half_an_axis(x):
    return jnp.cumsum(x.reshape(2, 6, 6), axis=1)


def test_an_operation_needing_a_whole_dimension_of_a_layout_with_no_spec_says_it_is_unknown():
    """cumsum along dimension 1 of x [12,6] P('a') reshaped to [2,6,6]: the reshape leaves dimension 1 cut over
    half of 'a' (pairs of devices), a layout no PartitionSpec can say, so the reason cannot name the split and
    says the operand's layout is unknown; XLA gathers over the pairs (all-gathers over pieces of 'a')."""
    x = put((12, 6), P("a", None))
    kinds = hlo_kinds(accumulated_over_half_an_axis, x)
    assert set(kinds) == {"all-gather"}
    prog = shardviz.trace(accumulated_over_half_an_axis, x)
    assert sorted(c.kind for c in prog.collectives) == sorted(kinds)
    on_cumsum = [c for c in prog.collectives if c.why.primitive == "cumsum"]
    assert on_cumsum and all(c.axes is None and c.pieces for c in on_cumsum)
    for c in on_cumsum:
        why = c.why
        (operand,) = why.operands
        assert (why.cause, why.expression) == ("unknown", "return jnp.cumsum(x.reshape(2, 6, 6), axis=1)")
        assert (operand.type_str, operand.spec, operand.role) == ("float32[2,6,6]", None, "operand")
        assert operand.note.startswith("XLA split it in a way no PartitionSpec over this mesh can say")
        assert (why.operand, why.dimension, why.axes) == (None, None, ())
        assert why.rule == f"the layout of {operand.label} is unknown"
    # the others' metadata names no operation (an empty op_name), so no equation of the line is theirs
    for c in prog.collectives:
        if c not in on_cumsum:
            assert c.op_name == ""
            why = c.why
            assert (why.cause, why.primitive, why.operands) == ("unknown", "?", ())
            assert why.expression == "return jnp.cumsum(x.reshape(2, 6, 6), axis=1)"
            assert why.rule == "no operation of the jaxpr on that line is the operation XLA's metadata names"


def merged_rows(x):
    return x.reshape(72, 4)


def test_a_merge_gathers_the_minor_split_and_names_it_not_the_major_one():
    """x [12,6,4] P('a','b') reshaped to [72,4]: dimensions 0 and 1 merge. The major one's split over 'a' stays
    (blocks of 18 merged rows), but the minor one's over 'b' would scatter each device's rows, so XLA gathers
    over 'b' only: the reason is dimension 1 and 'b', though dimension 0, also merged, is split over 'a'."""
    x = put((12, 6, 4), P("a", "b"))
    assert hlo_kinds(merged_rows, x) == ["all-gather"]
    c = the_collective(shardviz.trace(merged_rows, x), "all-gather")
    assert c.axes == ("b",)
    why = c.why
    assert [(o.label, o.spec) for o in why.operands] == [("x", (("a",), ("b",), ()))]
    assert (why.cause, why.operand, why.dimension, why.axes) == ("whole-dimension", 0, 1, ("b",))
    assert why.rule == (
        "reshape merges or splits dimension 1 of x, which is split over 'b': it needs that dimension whole on each "
        "device, so it is gathered"
    )


def sorted_down(x):
    return jnp.sort(x, axis=0)


def test_a_sort_along_a_split_dimension_done_by_all_to_all_says_the_split_moves():
    """x [12,12] P('a') sorted along dimension 0: XLA moves the split over 'a' to dimension 1 (all-to-alls)
    rather than gather, so the rule says the split is moved to another dimension."""
    x = put((12, 12), P("a", None))
    kinds = hlo_kinds(sorted_down, x)
    assert kinds and set(kinds) == {"all-to-all"}
    prog = shardviz.trace(sorted_down, x)
    assert sorted(c.kind for c in prog.collectives) == sorted(kinds)
    for c in prog.collectives:
        why = c.why
        assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
            "whole-dimension",
            "sort",
            0,
            0,
            ("a",),
        )
        assert why.rule == (
            "sort sorts along dimension 0 of x, which is split over 'a': it needs that dimension whole on each "
            "device, so the split is moved to another dimension"
        )


def spread_over_both(x):
    return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(("a", "b"), None)))


def test_a_constraint_to_a_dimension_split_over_two_axes_names_both_and_each_collectives_move():
    """x [12,12] P(None,'a') constrained to P(('a','b'), None): dimension 0 goes from whole to split over 'a'
    then 'b' (12 blocks), dimension 1 from 'a' to whole. XLA moves 'a' across with an all-to-all, then puts
    the blocks on the devices the new layout names with a collective-permute over both axes."""
    x = put((12, 12), P(None, "a"))
    assert sorted(hlo_kinds(spread_over_both, x)) == ["all-to-all", "collective-permute"]
    prog = shardviz.trace(spread_over_both, x)
    how = {
        "all-to-all": "a split moves to another dimension, each device trading blocks with the others",
        "collective-permute": "the blocks trade places between devices",
    }
    assert sorted(c.kind for c in prog.collectives) == sorted(how)
    for c in prog.collectives:
        why = c.why
        assert [(o.label, o.spec, o.role) for o in why.operands] == [("x", ((), ("a",)), "operand")]
        assert (why.cause, why.operand, why.dimension, why.axes) == ("layout-mismatch", 0, 0, ("a", "b"))
        assert (why.wanted, why.wanted_by) == ((("a", "b"), ()), "with_sharding_constraint")
        assert why.rule == (
            "with_sharding_constraint asks for P(('a', 'b')) of x, made as P(None, 'a'): dimension 0 goes from whole "
            f"to 'a' and 'b', dimension 1 goes from 'a' to whole, so {how[c.kind]}"
        )


def doubled_into(x):
    return jax.lax.with_sharding_constraint(x * 2, NamedSharding(MESH, P(None, "a")))


def test_a_result_laid_out_unlike_its_operand_says_the_operand_is_moved_to_the_results_layout():
    """x [12,12] P('b','a'), x * 2 constrained to P(None,'a') on the same line: XLA makes mul's result in the
    layout the constraint asks for, so it gathers x over 'b' on dimension 0 at the mul (its metadata names the
    mul, not the constraint): x comes in as P('b','a'), the result is P(None,'a')."""
    x = put((12, 12), P("b", "a"))
    assert hlo_kinds(doubled_into, x) == ["all-gather"]
    c = the_collective(shardviz.trace(doubled_into, x), "all-gather")
    why = c.why
    assert (why.cause, why.primitive) == ("layout-mismatch", "mul")
    assert why.expression == 'return jax.lax.with_sharding_constraint(x * 2, NamedSharding(MESH, P(None, "a")))'
    assert [(o.type_str, o.spec, o.role) for o in why.operands] == [
        ("float32[12,12]", (("b",), ("a",)), "operand"),
        ("float32[12,12]", ((), ("a",)), "result"),
    ]
    assert why.operands[0].label == "x"
    by = "the with_sharding_constraint it is passed to"
    assert (why.operand, why.dimension, why.axes, why.wanted, why.wanted_by) == (0, 0, ("b",), ((), ("a",)), by)
    assert why.rule == (
        f"x comes in as P('b', 'a') but mul's result must be P(None, 'a') ({by}): dimension 0 goes from 'b' to "
        "whole, so the split that is dropped is gathered"
    )


def written_into(table, u, ids):
    return table.at[ids].set(u)


def test_a_scatter_with_split_indices_into_a_whole_table_says_any_index_may_point_anywhere():
    """table [16,6] whole .at[ids].set(u), ids [8] and u [8,6] P('a'): the table is split nowhere, but each
    device holds 2 of the 8 indices (as [8,1], split on dimension 0) and any of them may name any row of the
    whole table every device keeps, so XLA gathers the indices and the updates over 'a' (two all-gathers)."""
    table, u = put((16, 6), P()), put((8, 6), P("a", None))
    ids = jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(MESH, P("a")))
    assert hlo_kinds(written_into, table, u, ids) == ["all-gather", "all-gather"]
    prog = shardviz.trace(written_into, table, u, ids)
    assert [c.kind for c in prog.collectives] == ["all-gather", "all-gather"]
    for c in prog.collectives:
        why = c.why
        assert [(o.type_str, o.spec) for o in why.operands] == [
            ("float32[16,6]", ((), ())),
            ("int32[8,1]", (("a",), ())),
            ("float32[8,6]", (("a",), ())),
        ]
        assert (why.operands[0].label, why.operands[2].label) == ("table", "u")
        assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
            "whole-dimension",
            "scatter",
            1,
            0,
            ("a",),
        )
        assert why.expression == "return table.at[ids].set(u)"
        assert why.rule == (
            f"scatter's indices {why.operands[1].label} are split over 'a' on dimension 0: each device holds only "
            "some indices, and any of them may point anywhere in table"
        )


def accumulated_across(x):
    return jnp.cumsum(x, axis=1)


def worst_in_row(x):
    return jnp.argmin(x, axis=1)


def stacked(x, y):
    return jnp.concatenate([x, y], axis=0)


def side_by_side(x, y):
    return jnp.concatenate([x, y], axis=1)


def sliced_at(x, i):
    return jax.lax.dynamic_slice(x, (i, 0), (4, 6))


def written_at(x, u, i):
    return jax.lax.dynamic_update_slice(x, u, (i, 0))


def transformed(x):
    return jnp.fft.fft(x, axis=-1)


INDEX = jax.ShapeDtypeStruct((), jnp.int32)


@pytest.mark.parametrize(
    ("fn", "args", "words", "dimension", "operands"),
    [
        # along dimension 1, not the parameter's default 0
        (accumulated_across, (put((6, 12), P(None, "a")),), "cumsum accumulates along", 1, [((), ("a",))]),
        (worst_in_row, (put((6, 12), P(None, "a")),), "argmin searches along", 1, [((), ("a",))]),
        (stacked, (put((12, 6), P("a")), put((12, 6), P("a"))), "concatenate joins along", 0, [(("a",), ())] * 2),
        (side_by_side, (put((6, 12), P(None, "a")),) * 2, "concatenate joins along", 1, [((), ("a",))] * 2),
        # the traced start index is an operand too, laid out by nothing
        (sliced_at, (put((12, 6), P("a")), INDEX), "dynamic_slice indexes along", 0, [(("a",), ()), None]),
        (
            written_at,
            (put((12, 6), P("a")), put((4, 6), P()), INDEX),
            "dynamic_update_slice indexes along",
            0,
            [(("a",), ()), ((), ()), None],
        ),
        # the transform reads x converted to complex64, the value its rule names
        (transformed, (put((6, 12), P(None, "a")),), "fft transforms along", 1, [((), ("a",))]),
    ],
)
def test_each_operation_needing_a_whole_dimension_names_its_own_dimension_and_words(
    fn, args, words, dimension, operands
):
    """Each operation needs dimension ``dimension`` of its first operand whole, split there over 'a': XLA gathers
    it over 'a' (all-gathers only, as its compiled HLO shows), and the rule says what the operation does along it."""
    kinds = hlo_kinds(fn, *args)
    assert kinds and set(kinds) == {"all-gather"}
    prog = shardviz.trace(fn, *args)
    assert sorted(c.kind for c in prog.collectives) == sorted(kinds)
    for c in prog.collectives:
        why = c.why
        assert [o.spec for o in why.operands] == operands
        assert (why.cause, why.operand, why.dimension, why.axes) == ("whole-dimension", 0, dimension, ("a",))
        assert why.rule == (
            f"{words} dimension {dimension} of {why.operands[0].label}, which is split over 'a': it needs that "
            "dimension whole on each device, so it is gathered"
        )


def constrained_in_the_body(x, w):
    def step(c, _):
        c = jax.lax.with_sharding_constraint(jnp.tanh(c @ w), NamedSharding(MESH, P("a", None)))
        return c, None

    return jax.lax.scan(step, x, None, length=3)[0]


def test_a_result_in_a_loop_body_laid_out_unlike_its_operand_is_not_called_the_carry():
    """The carry x [12,12] P('a'); c @ w with w P(None,'b') is made P('a','b'), and the constraint asks for
    P('a') of tanh's result: XLA gathers over 'b' on dimension 1 before tanh (its metadata names tanh). The carry
    starts and ends P('a'), so nothing is moved back: the reason is tanh's operand moved to its result's
    layout, and tanh's result is not itself the carry (the constraint's is)."""
    x, w = put((12, 12), P("a", None)), put((12, 12), P(None, "b"))
    assert hlo_kinds(constrained_in_the_body, x, w) == ["all-gather"]
    why = the_collective(shardviz.trace(constrained_in_the_body, x, w), "all-gather").why
    assert (why.cause, why.primitive) == ("layout-mismatch", "tanh")
    assert [(o.type_str, o.spec, o.role) for o in why.operands] == [
        ("float32[12,12]", (("a",), ("b",)), "operand"),
        ("float32[12,12]", (("a",), ()), "result"),
    ]
    by = "the with_sharding_constraint it is passed to"
    assert (why.operand, why.dimension, why.axes, why.wanted, why.wanted_by) == (0, 1, ("b",), (("a",), ()), by)
    assert why.rule == (
        f"{why.operands[0].label} comes in as P('a', 'b') but tanh's result must be P('a') ({by}): dimension 1 "
        "goes from 'b' to whole, so the split that is dropped is gathered"
    )


def doubled_and_tripled(x, y):
    return x * 2, y * 3


def test_the_second_output_asked_for_unlike_its_line_is_named_by_its_own_path():
    """x and y [12,12] P('a'), returned as x * 2 under P('a') (as made) and y * 3 under P(None,'a'): only the
    second output moves, 'a' from dimension 0 to 1 (one all-to-all), so the reason is out[1]'s and y's."""
    x = y = put((12, 12), P("a", None))
    shardings = (NamedSharding(MESH, P("a", None)), NamedSharding(MESH, P(None, "a")))
    fn = jax.jit(doubled_and_tripled, out_shardings=shardings)
    assert hlo_kinds(fn, x, y) == ["all-to-all"]
    why = the_collective(shardviz.trace(fn, x, y), "all-to-all").why
    assert [(o.label, o.spec, o.role) for o in why.operands] == [("y", (("a",), ()), "made")]
    assert (why.operand, why.dimension, why.axes, why.wanted) == (0, 0, ("a",), ((), ("a",)))
    assert why.wanted_by == "the sharding of output out[1] (out_shardings, or the layout the caller asks for)"
    assert why.rule == (
        "output out[1] must be P(None, 'a') but its line makes it P('a'): dimension 0 goes from 'a' to whole, "
        "dimension 1 goes from whole to 'a', so a split moves to another dimension, each device trading blocks "
        "with the others"
    )


def added_at_split_indices(table, u, ids):
    return table.at[ids].add(u)


def looked_up_whole(x, ids):
    return jax.lax.with_sharding_constraint(x[ids], NamedSharding(MESH, P()))


SPLIT_IDS = jax.ShapeDtypeStruct((8,), jnp.int32, sharding=NamedSharding(MESH, P("a")))


@pytest.mark.parametrize(
    ("fn", "args", "kind", "primitive", "specs"),
    [
        # u whole, ids split: each device adds the rows its 2 indices pick into a whole table; the tables are summed
        (
            added_at_split_indices,
            (put((16, 6), P()), put((8, 6), P()), SPLIT_IDS),
            "all-reduce",
            "scatter-add",
            [((), ()), (("a",), ()), ((), ())],
        ),
        # each device looks up its 2 rows of the whole x; the constraint asks for all 8 on every device
        (looked_up_whole, (put((16, 6), P()), SPLIT_IDS), "all-gather", "gather", [((), ()), (("a",), ())]),
    ],
)
def test_split_indices_into_a_whole_operand_say_any_index_may_point_anywhere(fn, args, kind, primitive, specs):
    """The operand (16 rows) is whole on every device but the 8 indices (as [8,1]) are split over 'a', 2 a
    device: XLA combines what each device's indices reach over 'a', one collective as its compiled HLO shows."""
    assert hlo_kinds(fn, *args) == [kind]
    why = the_collective(shardviz.trace(fn, *args), kind).why
    assert [o.spec for o in why.operands] == specs
    operand, indices = why.operands[:2]
    assert (operand.type_str, indices.type_str) == ("float32[16,6]", "int32[8,1]")
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
        "whole-dimension",
        primitive,
        1,
        0,
        ("a",),
    )
    assert why.rule == (
        f"{primitive}'s indices {indices.label} are split over 'a' on dimension 0: each device holds only some "
        f"indices, and any of them may point anywhere in {operand.label}"
    )
    assert operand.label in ("table", "x")


def test_a_loop_bodys_closed_over_operand_is_named_by_the_loops_own_operand():
    """The carry x [12,12] P(None,'a') and w [12,12] P('a'), closed over by the scan's body: c @ w contracts
    dimension 1 of c with dimension 0 of w, both split over 'a', so each device holds a partial sum that one
    all-reduce over 'a' adds up. w is the scan's constant, the same value in every pass: the reason names it w
    with its layout. The carry inside the body comes in as x and the body makes it P(None, 'a') again, so in
    every pass it is x's layout: named "the carry x", the same in every run (it was an address once)."""
    x, w = put((12, 12), P(None, "a")), put((12, 12), P("a", None))
    assert hlo_kinds(carried, x, w) == ["all-reduce"]
    whys = [shardviz.trace(carried, x, w).collectives[0].why for _ in range(2)]
    assert whys[0] == whys[1]
    why = whys[0]
    assert (why.cause, why.primitive, why.expression) == ("partial-sums", "dot_general", "c = jnp.tanh(c @ w)")
    assert [(o.label, o.type_str, o.spec) for o in why.operands] == [
        ("the carry x", "float32[12,12]", ((), ("a",))),
        ("w", "float32[12,12]", (("a",), ())),
    ]
    assert why.rule == (
        "the carry x is split over 'a' on its contracting dimension 1: each device multiplies only its block of "
        "it and holds a partial sum, which the all-reduce adds up over 'a'"
    )


def test_a_while_loops_closed_over_operand_is_named_by_the_loops_own_operand():
    """The same contraction in a while loop whose condition reads a traced limit: the condition's
    constant (limit) comes before the body's (w) among the loop's operands. c @ w contracts dimension 1 of c
    with dimension 0 of w, both split over 'a': partial sums, one all-reduce over 'a', naming the carry (x's
    layout in every pass) first."""
    x, w = put((12, 12), P(None, "a")), put((12, 12), P("a", None))
    n = jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(MESH, P()))
    assert hlo_kinds(looped_until, x, w, n) == ["all-reduce"]
    prog = shardviz.trace(looped_until, x, w, n)
    (c,) = prog.collectives
    why = c.why
    assert (why.cause, why.primitive, why.expression) == (
        "partial-sums",
        "dot_general",
        "return k + 1, jnp.tanh(c @ w)",
    )
    assert [(o.label, o.spec) for o in why.operands] == [("the carry x", ((), ("a",))), ("w", (("a",), ()))]
    assert why.rule == (
        "the carry x is split over 'a' on its contracting dimension 1: each device multiplies only its block of "
        "it and holds a partial sum, which the all-reduce adds up over 'a'"
    )
