"""Which pass of a Python loop a collective belongs to, and which output or input XLA added it for
(program/collectives/places.py), on compiled modules written out by hand.

Each module below is what XLA prints for a small loop, cut down to the instructions
that matter, with the user's line in each instruction's metadata (``source_line``, as
older XLA printed it). A reader follows the data by hand: pass 2's dot reads pass 1's
tanh, a one-line loop's dots come in schedule order, an all-gather hands its result
straight to the program's output. These tests came from mutation testing
(docs/mutation.md); the traced-program tests check the same rules on what today's XLA
compiles. They need no JAX backend.
"""

from __future__ import annotations

from typing import Any

from shardviz.program import hlo
from shardviz.program.collectives.places import entry_users, layout_charge, number_passes, positions
from shardviz.program.lines.pass_levels import PassLevels
from shardviz.program.lines.scopes import scope_of_op_name
from shardviz.program.model import Collective, CollectivePart, SourceLocation

FILE = __file__
DOT, TANH = 20, 21  # the loop body's lines: h = x @ w, then x = jnp.tanh(h)
FWD = (((FILE, DOT),), "", False, None)
FWD_TANH = (((FILE, TANH),), "", False, None)
BWD = (((FILE, DOT),), "", True, None)
DOT_TANH = ("jit(f)/dot_general", "jit(f)/tanh")

ADD = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}
"""


def meta(op_name: str, line: int) -> str:
    return f'metadata={{op_name="{op_name}" source_file="{FILE}" source_line={line}}}'


def module(body: str, params: str = "x: f32[8,8], w0: f32[8,8], w1: f32[8,8]") -> hlo.Module:
    text = f"HloModule m, num_partitions=2\n{ADD}\nENTRY %main ({params}) -> f32[8,8] {{\n{body}}}\n"
    return hlo.parse_module(text)


def stack_of(inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
    meta = inst.metadata
    return () if meta.source_file is None else (SourceLocation(meta.source_file, meta.source_line or 0),)


def collective(op: hlo.CollectiveOp, parts: tuple[CollectivePart, ...] = (), count: int = 1, **kw: Any) -> Collective:
    stack = kw.pop("stack", stack_of(op.inst))
    op_name = op.inst.metadata.op_name or ""
    return Collective(
        kind=op.kind,
        name=op.inst.name,
        axes=("x",),
        group_size=2,
        groups=((0, 1),),
        groups_form="list",
        pairs=(),
        result_bytes=256,
        operand_count=len(op.inst.operands),
        count=count,
        count_exact=True,
        wire_bytes=256,
        source=stack[0] if stack else None,
        stack=stack,
        listing_line=None,
        op_name=op_name,
        hlo=op.inst.text,
        channel_id=op.channel_id,
        parts=parts,
        scope=scope_of_op_name(op_name),
        **kw,
    )


def numbered(m: hlo.Module, place_passes: dict[Any, int], **kw: Any) -> list[tuple[int | None, int | None]]:
    ops = hlo.collective_ops(m)
    found = number_passes([collective(op) for op in ops], ops, m, stack_of, place_passes, **kw)
    numbers = [(c.pass_number, c.passes) for c in found]
    assert all(type(n) is int for pair in numbers for n in pair if n is not None)  # "pass 2", never "pass 2.0"
    return numbers


# pass 2's dot reads pass 1's tanh, made on the loop's other line: one level per pass
TWO_LINES = f"""  %x = f32[8,8]{{1,0}} parameter(0)
  %w0 = f32[8,8]{{1,0}} parameter(1)
  %w1 = f32[8,8]{{1,0}} parameter(2)
  %dot.0 = f32[8,8]{{1,0}} dot(%x, %w0), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta("jit(f)/dot_general", DOT)}
  %ar.0 = f32[8,8]{{1,0}} all-reduce(%dot.0), channel_id=1, replica_groups={{{{0,1}}}}, to_apply=%add, {meta("jit(f)/dot_general", DOT)}
  %tanh.0 = f32[8,8]{{1,0}} tanh(%ar.0), {meta("jit(f)/tanh", TANH)}
  %dot.1 = f32[8,8]{{1,0}} dot(%tanh.0, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta("jit(f)/dot_general", DOT)}
  %ar.1 = f32[8,8]{{1,0}} all-reduce(%dot.1), channel_id=2, replica_groups={{{{0,1}}}}, to_apply=%add, {meta("jit(f)/dot_general", DOT)}
  ROOT %tanh.1 = f32[8,8]{{1,0}} tanh(%ar.1), {meta("jit(f)/tanh", TANH)}
"""


def one_line(grad: bool = False) -> str:
    """``x = jnp.tanh(x @ w)``: every instruction on one line, each dot read through a bitcast."""
    dot, tanh = ("jit(f)/transpose(jvp())/dot_general", "jit(f)/transpose(jvp())/tanh") if grad else DOT_TANH
    return f"""  %x = f32[8,8]{{1,0}} parameter(0)
  %w0 = f32[8,8]{{1,0}} parameter(1)
  %w1 = f32[8,8]{{1,0}} parameter(2)
  %dot.0 = f32[8,8]{{1,0}} dot(%x, %w0), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta(dot, DOT)}
  %bitcast.0 = f32[8,8]{{1,0}} bitcast(%dot.0)
  %ar.0 = f32[8,8]{{1,0}} all-reduce(%bitcast.0), channel_id=1, replica_groups={{{{0,1}}}}, to_apply=%add, {meta(dot, DOT)}
  %tanh.0 = f32[8,8]{{1,0}} tanh(%ar.0), {meta(tanh, DOT)}
  %dot.1 = f32[8,8]{{1,0}} dot(%tanh.0, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta(dot, DOT)}
  %bitcast.1 = f32[8,8]{{1,0}} bitcast(%dot.1)
  %ar.1 = f32[8,8]{{1,0}} all-reduce(%bitcast.1), channel_id=2, replica_groups={{{{0,1}}}}, to_apply=%add, {meta(dot, DOT)}
  ROOT %tanh.1 = f32[8,8]{{1,0}} tanh(%ar.1), {meta(tanh, DOT)}
"""


def gathered_weights(grad: bool = False) -> str:
    """``x = jnp.tanh(x @ w)`` with each layer's weight gathered: nothing made on the line feeds a gather."""
    dot, tanh = ("jit(f)/transpose(jvp())/dot_general", "jit(f)/transpose(jvp())/tanh") if grad else DOT_TANH
    return f"""  %x = f32[8,8]{{1,0}} parameter(0)
  %w0 = f32[4,8]{{1,0}} parameter(1)
  %w1 = f32[4,8]{{1,0}} parameter(2)
  %ag.1 = f32[8,8]{{1,0}} all-gather(%w1), channel_id=1, replica_groups={{{{0,1}}}}, dimensions={{0}}, {meta(dot, DOT)}
  %ag.0 = f32[8,8]{{1,0}} all-gather(%w0), channel_id=2, replica_groups={{{{0,1}}}}, dimensions={{0}}, {meta(dot, DOT)}
  %dot.0 = f32[8,8]{{1,0}} dot(%x, %ag.0), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta(dot, DOT)}
  %tanh.0 = f32[8,8]{{1,0}} tanh(%dot.0), {meta(tanh, DOT)}
  %dot.1 = f32[8,8]{{1,0}} dot(%tanh.0, %ag.1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta(dot, DOT)}
  ROOT %tanh.1 = f32[8,8]{{1,0}} tanh(%dot.1), {meta(tanh, DOT)}
"""


def test_each_passes_collective_is_numbered_by_the_pass_whose_data_it_moves() -> None:
    m = module(TWO_LINES)
    assert numbered(m, {FWD: 2, FWD_TANH: 2}) == [(1, 2), (2, 2)]
    # a line that ran once has no passes to number
    assert numbered(m, {FWD: 1, FWD_TANH: 1}) == [(None, None), (None, None)]
    # a place with no values of the user's (a line outside the traced function) is left alone
    assert numbered(m, {FWD_TANH: 2}) == [(None, None), (None, None)]


def test_xlas_longer_stack_is_matched_to_the_values_place_by_its_start() -> None:
    m = module(TWO_LINES)
    ops = hlo.collective_ops(m)
    outer = SourceLocation(FILE, 99)  # the line that called trace, which the jaxpr's stacks leave out
    collectives = [collective(op, stack=(*stack_of(op.inst), outer)) for op in ops]
    found = number_passes(collectives, ops, m, lambda inst: (*stack_of(inst), outer), {FWD: 2, FWD_TANH: 2})
    assert [(c.pass_number, c.passes) for c in found] == [(1, 2), (2, 2)]


def test_a_backward_pass_says_the_forward_lines_count_where_it_ran_fewer() -> None:
    m = module(TWO_LINES)
    # two levels of three passes: XLA dropped the last pass's work on the line
    assert numbered(m, {FWD: 3}) == [(1, 3), (2, 3)]
    grads = TWO_LINES.replace("jit(f)/dot_general", "jit(f)/transpose(jvp())/dot_general")
    assert numbered(module(grads), {BWD: 2, FWD: 3, FWD_TANH: 2}) == [(2, 3), (1, 3)]


def test_a_one_line_loops_collectives_follow_their_dots_in_schedule_order() -> None:
    assert numbered(module(one_line()), {FWD: 2}) == [(1, 2), (2, 2)]
    # backward: the first dot in the schedule is the last pass's gradient
    assert numbered(module(one_line(grad=True)), {BWD: 2}) == [(2, 2), (1, 2)]
    # two dots over three passes cannot be told apart by order
    assert numbered(module(one_line()), {FWD: 3}) == [(None, None), (None, None)]


def lone(text: str) -> str:
    """The same loop with pass 1's all-reduce gone (its partial sums needed none): one collective left."""
    text = text.replace("  %ar.0 = ", "  %gone = ").replace("tanh(%ar.0)", "tanh(%bitcast.0)")
    return "\n".join(line for line in text.splitlines() if "%gone" not in line) + "\n"


def test_a_lone_collective_takes_the_pass_of_the_dot_it_follows_among_its_lines_dots() -> None:
    assert numbered(module(lone(one_line())), {FWD: 2}) == [(2, 2)]
    assert numbered(module(lone(one_line(grad=True))), {BWD: 2}) == [(1, 2)]
    assert numbered(module(lone(one_line(grad=True))), {BWD: 2, FWD: 3}) == [(1, 3)]
    # the dots are found by their place, scope included
    scoped = lone(one_line()).replace('"jit(f)/', '"jit(f)/layer/')
    assert numbered(module(scoped), {(FWD[0], "layer", False, None): 2}) == [(2, 2)]
    # a collective that XLA put on another line than the dot it moves has no dot of its line to follow
    m = module(lone(one_line()))
    ops = hlo.collective_ops(m)
    elsewhere = (((FILE, 22),), "", False, None)
    moved = [collective(op, stack=(SourceLocation(FILE, 22),)) for op in ops]
    found = number_passes(moved, ops, m, stack_of, {FWD: 2, elsewhere: 2})
    assert [(c.pass_number, c.passes) for c in found] == [(None, None)]
    # three passes but two dots: the dots cannot say which pass is whose
    assert numbered(module(lone(one_line())), {FWD: 3}) == [(None, None)]
    # a collective of another operation than the line's dots (here its tanh) has no dot to follow
    tanh_op = lone(one_line()).replace(
        'all-reduce(%bitcast.1), channel_id=2, replica_groups={{0,1}}, to_apply=%add, metadata={op_name="jit(f)/dot_general"',
        'all-reduce(%bitcast.1), channel_id=2, replica_groups={{0,1}}, to_apply=%add, metadata={op_name="jit(f)/tanh"',
    )
    assert tanh_op.count("jit(f)/tanh") == lone(one_line()).count("jit(f)/tanh") + 1
    assert numbered(module(tanh_op), {FWD: 2}) == [(None, None)]


def test_gathers_of_each_layers_weight_split_over_the_passes_by_what_they_gather() -> None:
    # w0 is gathered second in the schedule but is the first layer's weight: the operands' order counts
    assert numbered(module(gathered_weights()), {FWD: 2}) == [(2, 2), (1, 2)]
    assert numbered(module(gathered_weights(grad=True)), {BWD: 2}) == [(1, 2), (2, 2)]
    # a backward line says its forward line's count where that ran more passes
    assert numbered(module(gathered_weights(grad=True)), {BWD: 2, FWD: 4}) == [(1, 4), (2, 4)]
    assert numbered(module(gathered_weights()), {FWD: 3}) == [(None, None), (None, None)]


def test_a_gather_feeding_pass_ones_dot_is_pass_one_whatever_the_order_of_the_parameters() -> None:
    # w1 (pass 2's weight) is parameter 1 and w0 parameter 2; the data says which pass each gather feeds
    body = gathered_weights().replace(meta("jit(f)/tanh", DOT), meta("jit(f)/tanh", TANH))
    body = body.replace("%w0 = f32[4,8]{1,0} parameter(1)", "%w0 = f32[4,8]{1,0} parameter(2)")
    body = body.replace("%w1 = f32[4,8]{1,0} parameter(2)", "%w1 = f32[4,8]{1,0} parameter(1)")
    lines = body.splitlines()
    lines[1], lines[2] = lines[2], lines[1]  # w1 first in the schedule
    m = module("\n".join(lines) + "\n", params="x: f32[8,8], w1: f32[4,8], w0: f32[4,8]")
    assert [i.name for i in m.entry.instructions[:3]] == ["x", "w1", "w0"]
    assert numbered(m, {FWD: 2, FWD_TANH: 2}) == [(2, 2), (1, 2)]


def test_a_collective_of_a_scan_xla_kept_as_a_loop_has_trips_not_passes() -> None:
    m = module(one_line())
    ops = hlo.collective_ops(m)
    runs_twice = [collective(op, count=2) for op in ops]
    found = number_passes(runs_twice, ops, m, stack_of, {FWD: 2}, frozenset({FWD}))
    assert [(c.pass_number, c.passes) for c in found] == [(None, None), (None, None)]
    found = number_passes([collective(op) for op in ops], ops, m, stack_of, {FWD: 2}, frozenset({FWD}))
    assert [(c.pass_number, c.passes) for c in found] == [(1, 2), (2, 2)]


def test_a_collective_without_a_line_of_the_users_has_no_pass() -> None:
    m = module(one_line())
    ops = hlo.collective_ops(m)
    lineless = [collective(op, stack=()) for op in ops]
    found = number_passes(lineless, ops, m, stack_of, {FWD: 2})
    assert [(c.pass_number, c.passes) for c in found] == [(None, None), (None, None)]
    assert found == tuple(lineless)


def test_each_part_of_a_combined_collective_takes_the_pass_of_the_operand_it_moves() -> None:
    body = TWO_LINES.replace("  ROOT %tanh.1", "  %tanh.1").replace(
        "%ar.1 = f32[8,8]{1,0} all-reduce(%dot.1)", "%ar.1 = f32[8,8]{1,0} negate(%dot.1)"
    )
    combined = (
        "  ROOT %both = (f32[8,8]{1,0}, f32[8,8]{1,0}) all-reduce(%dot.1, %dot.0), channel_id=3, "
        f"replica_groups={{{{0,1}}}}, to_apply=%add, {meta('jit(f)/dot_general', DOT)}\n"
    )
    m = module(body + combined)
    ops = hlo.collective_ops(m)
    assert [op.inst.name for op in ops] == ["ar.0", "both"]
    dots = {name: m.entry.by_name[name] for name in ("dot.0", "dot.1")}
    parts = tuple(
        CollectivePart(
            operand=name,
            result_bytes=256,
            wire_bytes=256,
            source=stack_of(dots[name])[0],
            stack=stack_of(dots[name]),
            listing_line=None,
            op_name="jit(f)/dot_general",
        )
        for name in ("dot.1", "dot.0")
    )
    collectives = [collective(ops[0]), collective(ops[1], parts=parts)]
    found = number_passes(collectives, ops, m, stack_of, {FWD: 2, FWD_TANH: 2})
    assert [(p.operand, p.pass_number, p.passes) for p in found[1].parts] == [("dot.1", 2, 2), ("dot.0", 1, 2)]
    # a part with no line of the user's keeps no pass, and the parts after it still get theirs
    lineless = CollectivePart("dot.1", 256, 256, None, (), None, op_name="jit(f)/dot_general")
    collectives = [collective(ops[0]), collective(ops[1], parts=(lineless, parts[1]))]
    found = number_passes(collectives, ops, m, stack_of, {FWD: 2, FWD_TANH: 2})
    assert [(p.pass_number, p.passes) for p in found[1].parts] == [(None, None), (1, 2)]
    assert (found[1].pass_number, found[1].passes) == (None, None)
    assert (found[0].pass_number, found[0].passes) == (1, 2)


def test_every_instruction_has_its_place_in_the_schedule() -> None:
    m = module(TWO_LINES)
    where = positions(m)
    assert where[("add", "sum")] == (0, 2)
    assert where[("main", "x")] == (1, 0)
    assert where[("main", "tanh.1")] == (1, 8)
    assert len(where) == 3 + 9


CHARGES = """HloModule charges, num_partitions=2

ENTRY %main (p0: f32[4], p1: f32[4], p2: f32[4]) -> (f32[8], f32[8], f32[8]) {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[4]{0} parameter(1)
  %p2 = f32[4]{0} parameter(2)
  %copy.1 = f32[4]{0} copy(%p1)
  %gather.in = f32[8]{0} all-gather(%copy.1), channel_id=1, replica_groups={{0,1}}, dimensions={0}
  %neg = f32[8]{0} negate(%gather.in)
  %gather.out = f32[8]{0} all-gather(%neg), channel_id=2, replica_groups={{0,1}}, dimensions={0}
  %bitcast = f32[8]{0} bitcast(%gather.out)
  %sum = f32[4]{0} add(%p0, %p2)
  %gather.mid = f32[8]{0} all-gather(%sum), channel_id=3, replica_groups={{0,1}}, dimensions={0}
  %twice = f32[8]{0} add(%gather.mid, %gather.mid)
  %read.twice = f32[8]{0} multiply(%gather.mid, %neg)
  ROOT %out = (f32[8]{0}, f32[8]{0}, f32[8]{0}) tuple(%twice, %bitcast, %read.twice)
}
"""


def charges(text: str) -> dict[str, tuple[str, int] | None]:
    m = hlo.parse_module(text)
    users = entry_users(m)
    return {op.inst.name: layout_charge(m, op, users) for op in hlo.collective_ops(m)}


def test_a_collective_that_hands_its_result_to_an_output_or_takes_an_input_in_is_charged_to_it() -> None:
    assert charges(CHARGES) == {
        "gather.in": ("input", 1),  # p1 through a copy; what reads it computes
        "gather.out": ("output", 1),  # through a bitcast into the result tuple's second place
        "gather.mid": None,  # read by two instructions, made from two parameters
    }
    users = entry_users(hlo.parse_module(CHARGES))
    assert [i.name for i in users["gather.mid"]] == ["twice", "read.twice"]
    assert [i.name for i in users["neg"]] == ["gather.out", "read.twice"]


def test_a_collective_that_is_the_whole_result_is_charged_to_output_zero() -> None:
    text = """HloModule whole, num_partitions=2

ENTRY %main (p0: f32[4]) -> f32[8] {
  %p0 = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p0)
  ROOT %gather = f32[8]{0} all-gather(%neg), channel_id=1, replica_groups={{0,1}}, dimensions={0}
}
"""
    assert charges(text) == {"gather": ("output", 0)}


def test_a_collective_read_by_a_result_that_computes_is_charged_to_nothing() -> None:
    text = """HloModule computed, num_partitions=2

ENTRY %main (p0: f32[4]) -> f32[8] {
  %p0 = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p0)
  %gather = f32[8]{0} all-gather(%neg), channel_id=1, replica_groups={{0,1}}, dimensions={0}
  %pair = (f32[8]{0}) tuple(%gather)
  %inner = f32[8]{0} get-tuple-element(%pair), index=0
  ROOT %twice = f32[8]{0} negate(%inner)
}
"""
    assert charges(text) == {"gather": None}


def chain(in_hops: int, out_hops: int, read_twice: bool) -> str:
    """A parameter, copies, a gather, copies, the result (read once more by a negate if ``read_twice``)."""
    lines = ["  %p0 = f32[4]{0} parameter(0)"]
    before = "p0"
    for k in range(in_hops):
        lines.append(f"  %in.{k} = f32[4]{{0}} copy(%{before})")
        before = f"in.{k}"
    lines.append(
        f"  %gather = f32[8]{{0}} all-gather(%{before}), channel_id=1, replica_groups={{{{0,1}}}}, dimensions={{0}}"
    )
    before = "gather"
    for k in range(out_hops):
        lines.append(f"  %out.{k} = f32[8]{{0}} copy(%{before})")
        before = f"out.{k}"
    lines.append(f"  %neg = f32[8]{{0}} negate(%{before if read_twice else 'p0'})")
    lines.append(f"  ROOT %out = (f32[8]{{0}}, f32[8]{{0}}) tuple(%neg, %{before})")
    body = "\n".join(lines)
    return f"HloModule c, num_partitions=2\n\nENTRY %main (p0: f32[4]) -> (f32[8], f32[8]) {{\n{body}\n}}\n"


def test_a_charge_is_followed_through_at_most_twelve_instructions() -> None:
    assert charges(chain(0, 11, read_twice=False)) == {"gather": ("output", 1)}
    assert charges(chain(0, 12, read_twice=False)) == {"gather": ("input", 0)}
    # an output read twice (by the tuple and a negate) is no output's alone: the input side charges it
    assert charges(chain(11, 0, read_twice=True)) == {"gather": ("input", 0)}
    assert charges(chain(12, 0, read_twice=True)) == {"gather": None}


def test_a_collective_inside_a_loop_body_is_charged_to_nothing() -> None:
    text = """HloModule looped, num_partitions=2

%body (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, to_apply=%add
}

%cond (q: f32[4]) -> pred[] {
  %q = f32[4]{0} parameter(0)
  ROOT %t = pred[] constant(true)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

ENTRY %main (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  ROOT %loop = f32[4]{0} while(%p0), condition=%cond, body=%body
}
"""
    assert charges(text) == {"ar": None}


# --- pass levels read directly (program/lines/pass_levels.py) ---------------------------------------------------


def levels_of(body: str, places: dict[str, Any]) -> PassLevels:
    m = module(body)
    return PassLevels(m, lambda inst: places.get(inst.name))


# TWO_LINES's instructions by the place each is made at: the dot's line (with its all-reduce), tanh's line
TWO_LINE_PLACES = {"dot.0": FWD, "ar.0": FWD, "dot.1": FWD, "ar.1": FWD, "tanh.0": FWD_TANH, "tanh.1": FWD_TANH}


def test_a_places_two_pieces_are_its_two_passes_by_what_each_reads() -> None:
    levels = levels_of(TWO_LINES, TWO_LINE_PLACES)
    # pass 2's dot reads pass 1's tanh, which read pass 1's all-reduce: one level up
    assert levels.levels("main", FWD, 2) == {"dot.0": 1, "ar.0": 1, "dot.1": 2, "ar.1": 2}
    assert levels.levels("main", FWD_TANH, 2) == {"tanh.0": 1, "tanh.1": 2}  # asked second, worked out apart
    assert levels.pass_of("main", ["x", "ar.1", "dot.0"], FWD, 2) == 2  # the first name of the place's
    assert levels.pass_of("main", ["tanh.0"], FWD_TANH, 2) == 1
    assert levels.pass_of("main", ["x", "w0"], FWD, 2) is None  # none of the place's
    assert levels.pass_of("main", ["dot.1"], FWD, 1) is None  # one pass: nothing to tell apart
    assert levels.pass_of("other", ["dot.1"], FWD, 2) is None  # no such computation


def test_a_backward_place_counts_its_passes_from_the_last() -> None:
    backward = ("dot's line", "", True)  # a place of (chain, scope, backward)
    places = {name: backward if place == FWD else place for name, place in TWO_LINE_PLACES.items()}
    levels = levels_of(TWO_LINES, places)
    assert levels.pass_of("main", ["dot.1"], backward, 2) == 1
    assert levels.pass_of("main", ["dot.0"], backward, 2) == 2
    # a place that says no direction, or says it in no third part, is forward
    for place in ("dot's line and more", ("dot's line", True)):
        named = {name: place if p == FWD else p for name, p in TWO_LINE_PLACES.items()}
        assert levels_of(TWO_LINES, named).pass_of("main", ["dot.1"], place, 2) == 2


def test_more_levels_than_passes_or_one_instruction_alone_say_nothing() -> None:
    levels = levels_of(TWO_LINES, TWO_LINE_PLACES)
    assert levels.levels("main", FWD, 1) is None  # two levels in a loop said to run once: no answer
    alone = {"dot.0": FWD, "tanh.0": FWD_TANH, "dot.1": FWD_TANH, "tanh.1": FWD_TANH}
    assert levels_of(TWO_LINES, alone).levels("main", FWD, 2) is None


def test_what_reads_a_combined_collective_inherits_no_level_through_it() -> None:
    body = f"""  %x = f32[8,8]{{1,0}} parameter(0)
  %w0 = f32[8,8]{{1,0}} parameter(1)
  %w1 = f32[8,8]{{1,0}} parameter(2)
  %dot.0 = f32[8,8]{{1,0}} dot(%x, %w0), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta("jit(f)/dot_general", DOT)}
  %tanh.0 = f32[8,8]{{1,0}} tanh(%dot.0), {meta("jit(f)/tanh", TANH)}
  %dot.1 = f32[8,8]{{1,0}} dot(%tanh.0, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {meta("jit(f)/dot_general", DOT)}
  %ar = (f32[8,8]{{1,0}}, f32[8,8]{{1,0}}) all-reduce(%dot.0, %dot.1), channel_id=1, replica_groups={{{{0,1}}}}, to_apply=%add, {meta("jit(f)/dot_general", DOT)}
  %gte.0 = f32[8,8]{{1,0}} get-tuple-element(%ar), index=0
  %neg = f32[8,8]{{1,0}} negate(%gte.0), {meta("jit(f)/dot_general", DOT)}
  ROOT %tanh.1 = f32[8,8]{{1,0}} tanh(%dot.1), {meta("jit(f)/tanh", TANH)}
"""
    places = {"dot.0": FWD, "dot.1": FWD, "ar": FWD, "neg": FWD, "tanh.0": FWD_TANH, "tanh.1": FWD_TANH}
    # the all-reduce moves both passes' dots: neither pass's, and neg, reading it, starts a piece of its own
    assert levels_of(body, places).levels("main", FWD, 2) == {"dot.0": 1, "dot.1": 2, "neg": 1}
