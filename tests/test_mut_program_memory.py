"""Memory over the program (program/memory/timeline.py, program/memory/liveness.py) on XLA's own dumps.

tests/fixtures/memory/ holds what XLA wrote for two small programs (tests/make_memory_fixtures.py):
``step`` (one gradient step, its weights donated) and ``scanned`` (a three-trip scan with two
outputs). Every figure below was counted by hand from those files: the buffers, their offsets and
steps, which share a place, and what is live at each step. Where XLA's own accounting says the
same thing, it is checked too: ``memory_analysis()``'s arguments + outputs - aliased + temporaries,
and the live-range dump's own "Live ranges at N (peak)" list. The hand-made dumps further down are
cut-down copies of the same format for the cases the two programs do not reach. These tests came
from mutation testing (docs/mutation.md); test_program_layers_memory.py checks the same on programs
traced end to end. Nothing is compiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import pytest

from shardviz.program import hlo
from shardviz.program.memory.liveness import (
    Allocation,
    AssignedValue,
    LiveRanges,
    parse_buffer_assignment,
    parse_live_ranges,
    value_key,
)
from shardviz.program.memory.timeline import KINDS, LiveBuffer, MemoryGroup, MemoryTimeline, memory_timeline
from shardviz.program.model import SourceLocation

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "memory"
PROGRAMS = str(HERE / "make_memory_fixtures.py")
# lines of tests/make_memory_fixtures.py (read there by hand)
H_LINE, STEP_RETURN, C_LINE, SCAN_LINE, SUMS_LINE = 26, 32, 37, 40, 41


def read(name: str, kind: str) -> str:
    return (FIXTURES / f"{name}{kind}").read_text()


def xla_figures(name: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in read(name, "-memory.txt").splitlines())}


def stack_of_in(module: hlo.Module):
    """Each instruction's stack as the module's own tables say, with the programs' file found here."""

    def stack_of(inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
        frames = module.frames(inst.metadata.stack_frame_id)
        return tuple(
            SourceLocation(PROGRAMS if f.file.endswith("make_memory_fixtures.py") else f.file, f.line, f.column)
            for f in frames
        )

    return stack_of


def timeline(name: str, input_paths=("w", "x"), output_paths=("out",), kept=None, made=None) -> MemoryTimeline:
    module = hlo.parse_module(read(name, ".hlo"))
    return memory_timeline(
        parse_buffer_assignment(read(name, "-buffer-assignment.txt")),
        parse_live_ranges(read(name, "-live-range.txt")),
        module,
        stack_of_in(module),
        input_paths,
        output_paths,
        kept,
        made or {},
        xla_peak_bytes=1234,
    )


# --- the dumps as read ------------------------------------------------------------------------------


def test_a_buffer_assignment_is_read_allocation_by_allocation() -> None:
    donated, x, temp = parse_buffer_assignment(read("step", "-buffer-assignment.txt"))
    assert donated == Allocation(
        index=0,
        size=256,
        parameter=0,
        parameter_index="{}",
        live_out=True,
        thread_local=False,
        constant=False,
        temp=False,
        values=(
            AssignedValue("w.1{}", 256, 0, "f32[8,8]{1,0}"),
            AssignedValue("multiply_subtract_fusion{}", 256, 0, "f32[8,8]{1,0}"),
        ),
    )
    assert (x.index, x.size, x.parameter, x.live_out, x.temp) == (1, 128, 1, False, False)
    assert (temp.index, temp.size, temp.parameter, temp.parameter_index, temp.temp) == (2, 384, None, "{}", True)
    assert [(v.name, v.size, v.offset) for v in temp.values] == [
        ("ynn_fusion{}", 128, 256),
        ("multiply_add_fusion{}", 128, 256),
        ("dot{}", 256, 0),
    ]


def test_a_buffer_assignments_flags_phis_and_tuples_are_read_as_printed() -> None:
    allocations = parse_buffer_assignment(read("scanned", "-buffer-assignment.txt"))
    assert len(allocations) == 13
    by_index = {a.index: a for a in allocations}
    assert [a.index for a in allocations if a.thread_local] == [3, 10, 11]
    assert [a.index for a in allocations if a.constant] == [6, 7, 8, 9]
    assert [a.index for a in allocations if a.live_out] == [1, 4, 5]
    assert [a.index for a in allocations if a.temp] == [12]
    assert [a.index for a in allocations if a.parameter is not None] == [0, 2]
    carry = by_index[1]
    assert [v.name for v in carry.values] == [
        "wrapped_tanh{}",
        "copy.10{}",
        "arg_tuple.3{1}",  # "(phi)" is not part of the name
        "arg_tuple.1{1}",
        "while.6{1}",
    ]
    assert by_index[4].values == (AssignedValue("tuple.5{}", 16, 0, "(f32[4,8]{1,0}, f32[3]{0})"),)
    assert by_index[12].values[3] == AssignedValue(
        "tuple.6{}", 32, 256, "(s32[], f32[4,8]{1,0}, f32[3]{0}, f32[8,8]{1,0})"
    )
    assert by_index[12].values[3].instruction == "tuple.6"
    assert AssignedValue("all-reduce.4{1}", 4, 0, "f32[]").instruction == "all-reduce.4"


def test_a_parameters_shape_index_is_read_without_spaces_and_a_section_after_ends_the_allocations() -> None:
    text = (
        "BufferAssignment:\n"
        "allocation 0: size 24, parameter 2, shape |(f32[2], f32[4])| at ShapeIndex {0, 1}, thread-local:\n"
        " value: <3 p.1{0,1} @0> (size=8,offset=16): f32[2]{0}\n"
        "\n"
        "allocation 1: size 8, constant:\n"
        " value: <4 constant.2 @0> (size=8,offset=0): f32[2]{0}\n"
        "Used values:\n"
        " value: <5 other.3 @0> (size=8,offset=0): f32[2]{0}\n"
    )
    first, second = parse_buffer_assignment(text)
    assert (first.parameter, first.parameter_index, first.thread_local, first.constant) == (2, "{0,1}", True, False)
    assert first.values == (AssignedValue("p.1{0,1}", 8, 16, "f32[2]{0}"),)
    assert (second.index, second.size, second.constant, second.parameter) == (1, 8, True, None)
    assert [v.name for v in second.values] == ["constant.2{}"]  # other.3 is in the next section
    assert parse_buffer_assignment(" value: <5 stray @0> (size=8,offset=0): f32[2]{0}\n") == ()
    # neither a blank line nor an indented line of another kind ends an allocation
    text = (
        "allocation 0: size 16, preallocated-temp:\n"
        " value: <1 a @0> (size=8,offset=0): f32[2]{0}\n"
        "\n"
        "  (a remark)\n"
        " value: <2 b @0> (size=8,offset=8): f32[2]{0}\n"
    )
    (only,) = parse_buffer_assignment(text)
    assert [v.name for v in only.values] == ["a{}", "b{}"]


def test_a_value_is_keyed_as_the_live_range_dump_spells_it() -> None:
    assert value_key("dot.4") == "dot.4{}"
    assert value_key("all-reduce.4{1}") == "all-reduce.4{1}"


def test_live_ranges_are_the_flattened_schedule_and_each_values_first_and_last_step() -> None:
    live = parse_live_ranges(read("step", "-live-range.txt"))
    assert live == LiveRanges(
        steps=("w.1", "x.1", "ynn_fusion", "multiply_add_fusion", "dot", "multiply_subtract_fusion"),
        ranges={
            "w.1{}": (0, 5),
            "x.1{}": (0, 6),
            "ynn_fusion{}": (2, 3),
            "multiply_add_fusion{}": (3, 4),
            "dot{}": (4, 5),
            "multiply_subtract_fusion{}": (5, 6),
        },
        end=6,
    )
    scanned = parse_live_ranges(read("scanned", "-live-range.txt"))
    assert (len(scanned.steps), scanned.end, scanned.steps[24]) == (29, 29, "while.6")
    assert scanned.ranges["arg_tuple.1{2}"] == (12, 22) and scanned.ranges["while.6{0}"] == (24, 24)
    assert len(scanned.ranges) == 31  # the "Live ranges at 20 (peak)" list after them adds none


def test_live_ranges_read_only_their_own_sections() -> None:
    text = (
        "HloLiveRange (max 3):\n"
        "  Other:\n"
        "    0:stray\n"
        "    stray{}:0-1\n"
        "  InstructionSequence:\n"
        "    0:a\n"
        "    1:b\n"
        "  BufferLiveRange:\n"
        "    1:c\n"
        "    a{}:0-1\n"
        "    b{1}:1-2\n"
    )
    assert parse_live_ranges(text) == LiveRanges(("a", "b"), {"a{}": (0, 1), "b{1}": (1, 2)}, 3)
    with pytest.raises(hlo.HloParseError) as refused:
        parse_live_ranges("InstructionSequence:\n  0:a\n")
    assert str(refused.value) == "no 'HloLiveRange' header in the live-range dump"
    # a blank line ends no section
    text = "HloLiveRange (max 2):\n  InstructionSequence:\n    0:a\n\n    1:b\n  BufferLiveRange:\n    a{}:0-1\n"
    assert parse_live_ranges(text).steps == ("a", "b")


# --- the step: a donated argument, saved activations, the backward pass ------------------------------


def test_a_steps_bytes_live_and_peak_are_counted_from_its_buffers() -> None:
    t = timeline("step")
    # w and x from start to end; h's dot and its gradient (one place, steps 2-4); the gradient's dot (4-5)
    assert t.steps == ("w.1", "x.1", "ynn_fusion", "multiply_add_fusion", "dot", "multiply_subtract_fusion")
    assert t.step_bytes == (384, 384, 512, 512, 768, 640)
    assert (t.peak_bytes, t.peak_step, t.backward_step, t.xla_peak_bytes) == (768, 4, 3, 1234)
    xla = xla_figures("step")  # the donated w holds the new w: XLA's reservation is exactly the peak
    assert (
        t.peak_bytes
        == xla["argument_size_in_bytes"]
        + xla["output_size_in_bytes"]
        - xla["alias_size_in_bytes"]
        + xla["temp_size_in_bytes"]
    )


def test_a_donated_argument_that_holds_the_output_is_counted_once_as_the_argument() -> None:
    t = timeline("step")
    h = SourceLocation(PROGRAMS, H_LINE, 17)
    assert t.groups == (
        MemoryGroup("argument", "w", None, "", 256, 256),
        MemoryGroup("argument", "x", None, "", 128, 128),
        MemoryGroup("saved", "h", h, "", 128, 128),  # made forward, still live when the backward pass starts
        MemoryGroup("temporary", "h (backward)", h, "", 256, 256),
    )
    assert t.buffers == (
        LiveBuffer(0, 0, 6, 256),
        LiveBuffer(1, 0, 6, 128),
        LiveBuffer(2, 2, 4, 128),
        LiveBuffer(3, 4, 5, 256),
    )


def test_what_is_live_at_a_step_is_grouped_most_first() -> None:
    t = timeline("step")
    w, x, saved, backward = t.groups
    assert t.at_peak == [(w, 256), (backward, 256), (x, 128), (saved, 128)]
    assert t.live_at(5) == [(w, 256), (backward, 256), (x, 128)]
    assert t.live_at(2) == [(w, 256), (x, 128), (saved, 128)]
    assert t.bytes_by_kind() == {"argument": 384, "output": 0, "saved": 128, "temporary": 256}
    assert t.bytes_by_kind(5) == {"argument": 384, "output": 0, "saved": 0, "temporary": 256}
    assert t.bytes_by_kind(0) == dict(zip(KINDS, (384, 0, 0, 0)))


def test_each_step_says_the_users_line_its_instruction_comes_from() -> None:
    t = timeline("step")
    assert t.step_sources == (
        None,  # the parameters have no line
        None,
        SourceLocation(PROGRAMS, H_LINE, 17),
        SourceLocation(PROGRAMS, H_LINE, 8),
        SourceLocation(PROGRAMS, H_LINE, 17),
        SourceLocation(PROGRAMS, STEP_RETURN, 11),
    )


def test_arguments_are_named_by_the_input_each_parameter_is() -> None:
    # parameter 0 is the second array input (a static argument came first), parameter 1 has no path
    t = timeline("step", input_paths=("lr", "params['w']"), kept=[1, 2])
    assert [g.label for g in t.groups if g.kind == "argument"] == ["params['w']", "arg 1"]
    t = timeline("step", input_paths=("w",), kept=None)
    assert [g.label for g in t.groups if g.kind == "argument"] == ["w", "arg 1"]


# --- the scan: a loop's carry, two outputs, constants and thread-local scratch left out -----------------


def scanned() -> MemoryTimeline:
    made = {"out[0]": (SourceLocation(PROGRAMS, SCAN_LINE, 14),), "out[1]": ()}
    return timeline("scanned", output_paths=("out[0]", "out[1]"), made=made)


def test_a_scans_bytes_live_leave_out_constants_and_thread_local_scratch() -> None:
    t = scanned()
    assert len(t.steps) == 29 and t.backward_step is None
    expected = [384] * 4 + [512, 516] + [528] * 5 + [529] * 2 + [528] * 5
    expected += [656, 532, 656, 532, 532, 528, 528] + [524] * 4
    assert list(t.step_bytes) == expected
    assert (t.peak_bytes, t.peak_step) == (656, 18)  # the first of the two steps at the most
    # XLA's own list for step 20 adds constant.6's 4 bytes, which live in the executable
    live = read("scanned", "-live-range.txt")
    assert "Stack trace breakdown for peak usage: 660 bytes" in live and "constant.6{}: 4 bytes" in live
    assert t.step_bytes[20] == 660 - 4
    xla = xla_figures("scanned")
    assert t.peak_bytes <= xla["argument_size_in_bytes"] + xla["output_size_in_bytes"] + xla["temp_size_in_bytes"]


def test_a_scans_groups_are_its_arguments_outputs_carry_and_loop_temporaries() -> None:
    t = scanned()
    c = SourceLocation(PROGRAMS, C_LINE, 21)
    scan = SourceLocation(PROGRAMS, SCAN_LINE, 14)
    assert [(g.kind, g.label, g.source, g.peak_bytes, g.most_bytes) for g in t.groups] == [
        ("argument", "w", None, 256, 256),
        ("temporary", "x", None, 128, 128),  # XLA's copy of x into the carry belongs to x
        ("output", "out[0]", scan, 0, 128),  # the carry's last value: where the output's value is made
        ("argument", "x", None, 128, 128),
        ("output", "out[1]", None, 12, 12),  # the stacked sums, one buffer from the first to the last step
        ("temporary", "copy.4", None, 0, 4),  # the trip counter's copies: no line of the user's
        ("temporary", "copy.11", None, 4, 4),
        ("temporary", "loop results", scan, 0, 4),  # what the loop carries; its line binds two names
        ("temporary", "lt", scan, 0, 1),
        ("temporary", "c", c, 128, 128),
    ]
    assert t.bytes_by_kind() == {"argument": 384, "output": 12, "saved": 0, "temporary": 260}
    assert sum(n for _, n in t.at_peak) == t.peak_bytes
    assert [(b.start, b.end, b.bytes) for b in t.buffers] == [
        (0, 29, 256),
        (4, 18, 128),
        (20, 29, 128),
        (0, 29, 128),
        (6, 29, 12),
        (19, 22, 4),
        (5, 19, 4),
        (21, 24, 4),
        (11, 12, 1),
        (18, 20, 128),
    ]


# --- groups --------------------------------------------------------------------------------------------


def test_an_arguments_family_is_its_top_level_name() -> None:
    def family(kind: str, label: str) -> str:
        return MemoryGroup(kind, label, None, "", 0, 0).family

    assert family("argument", "state['mu'][0]") == "state['mu']"
    assert family("argument", "state['mu']['w'][1]") == "state['mu']"
    assert family("argument", "params['w1']") == "params"
    assert family("argument", "x") == "x"
    assert family("argument", "ws[3]") == "ws"
    assert family("temporary", "state['mu'][0]") == "state['mu'][0]"
    assert family("output", "out[0]") == "out[0]"


# --- hand-made dumps: what the two programs do not reach ------------------------------------------------


def made_here(x):
    h = jnp.sin(x)
    h = jnp.cos(h)
    return h


L1 = made_here.__code__.co_firstlineno + 1  # h = jnp.sin(x)
L2 = L1 + 1  # h = jnp.cos(h)


def meta(op_name: str, line: int) -> str:
    return f'metadata={{op_name="{op_name}" source_file="{__file__}" source_line={line}}}'


def stack_of(inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
    m = inst.metadata
    return () if m.source_file is None else (SourceLocation(m.source_file, m.source_line or 0),)


HANDMADE = f"""HloModule handmade, is_scheduled=true

ENTRY %main (p0: f32[4], p1: f32[4]) -> (f32[4], f32[4]) {{
  %p0 = f32[4]{{0}} parameter(0)
  %p1 = f32[4]{{0}} parameter(1)
  %sin.1 = f32[4]{{0}} sine(%p0), {meta("jit(f)/layer_0/sin", L1)}
  %sin.3 = f32[4]{{0}} sine(%p1), {meta("jit(f)/layer_0/sin", L1)}
  %sin.2 = f32[4]{{0}} sine(%sin.1), {meta("jit(f)/layer_1/sin", L1)}
  %cos.1 = f32[4]{{0}} cosine(%sin.3), {meta("jit(f)/layer_0/cos", L2)}
  %fus.1 = f32[4]{{0}} custom-call(%p0, %ghost, %p0, %cos.1), custom_call_target="x"
  %tt = (f32[4]{{0}}, f32[4]{{0}}) tuple(%fus.1, %sin.2)
  %gte.t = f32[4]{{0}} get-tuple-element(%tt), index=1
  %bc = f32[4]{{0}} bitcast(%cos.1)
  ROOT %t = (f32[4]{{0}}, f32[4]{{0}}) tuple(%gte.t, %bc)
}}
"""

HANDMADE_ASSIGNMENT = """BufferAssignment:
allocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:
 value: <0 p0 @0> (size=16,offset=0): f32[4]{0}
allocation 1: size 16, parameter 1, shape |f32[4]| at ShapeIndex {}:
 value: <1 p1 @0> (size=16,offset=0): f32[4]{0}
allocation 2: size 64, preallocated-temp:
 value: <2 sin.1 @0> (size=16,offset=0): f32[4]{0}
 value: <3 fus.1 @0> (size=16,offset=0): f32[4]{0}
 value: <4 called.1 @0> (size=16,offset=16): f32[4]{0}
 value: <5 tt @0> (size=16,offset=32): (f32[4]{0}, f32[4]{0})
 value: <6 sin.3 @0> (size=16,offset=48): f32[4]{0}
allocation 3: size 16, maybe-live-out:
 value: <7 sin.2 @0> (size=16,offset=0): f32[4]{0}
allocation 4: size 16, maybe-live-out:
 value: <8 cos.1 @0> (size=16,offset=0): f32[4]{0}
allocation 5: size 1000, thread-local:
 value: <9 tl.1 @0> (size=1000,offset=0): f32[250]{0}
allocation 6: size 1000, constant:
 value: <10 const.1 @0> (size=1000,offset=0): f32[250]{0}
"""

STEPS = ("p0", "p1", "sin.1", "sin.3", "sin.2", "cos.1", "fus.1", "tt", "gte.t", "bc")
HANDMADE_RANGES = (
    "HloLiveRange (max 10):\n  InstructionSequence:\n"
    + "".join(f"    {k}:{name}\n" for k, name in enumerate(STEPS))
    + "  BufferLiveRange:\n"
    # p0 is missing (live throughout, as an argument); p1 ends early but an argument lives to the end
    + "    p1{}:1-3\n    sin.1{}:2-4\n    sin.3{}:3-4\n    sin.2{}:4-8\n    cos.1{}:5-9\n    fus.1{}:6-6\n"
    + "    tt{}:7-8\n    tl.1{}:0-9\n    const.1{}:0-9\n"
)


def handmade(text: str = HANDMADE, assignment: str = HANDMADE_ASSIGNMENT, ranges: str = HANDMADE_RANGES):
    module = hlo.parse_module(text)
    made = {"out[0]": (SourceLocation(__file__, L1),)}
    return memory_timeline(
        parse_buffer_assignment(assignment),
        parse_live_ranges(ranges),
        module,
        stack_of,
        ("a", "b"),
        ("out[0]", "out[1]"),
        None,
        made,
    )


def test_a_hand_made_programs_groups_follow_its_lines_scopes_and_outputs() -> None:
    t = handmade()
    sin, cos = SourceLocation(__file__, L1), SourceLocation(__file__, L2)
    assert [(g.kind, g.label, g.source, g.scope) for g in t.groups] == [
        ("argument", "a", None, ""),
        ("argument", "b", None, ""),
        ("temporary", "h", sin, "layer_0"),  # sin.1 and sin.3: one line, one scope
        ("temporary", "h", cos, "layer_0"),  # fus.1 has no metadata: the first named operand behind it
        ("output", "out[0]", sin, ""),  # sin.2, reached through a tuple and its get-tuple-element
        ("output", "out[1]", None, ""),  # cos.1, reached through a bitcast; no line said for it
    ]
    assert t.buffers == (
        LiveBuffer(0, 0, 9, 16),
        LiveBuffer(1, 0, 9, 16),
        LiveBuffer(2, 2, 4, 16),
        LiveBuffer(3, 6, 6, 16),
        LiveBuffer(2, 3, 4, 16),
        LiveBuffer(4, 4, 8, 16),
        LiveBuffer(5, 5, 9, 16),
    )
    # constants and thread-local scratch (1000 bytes each) are in no step
    assert t.step_bytes == (32, 32, 48, 64, 80, 64, 80, 64, 64, 48)
    assert (t.peak_bytes, t.peak_step) == (80, 4)
    a, b, h_sin, h_cos, out0, out1 = t.groups
    assert t.live_at(3) == [(h_sin, 32), (a, 16), (b, 16)]
    assert t.live_at(6) == [(a, 16), (b, 16), (h_cos, 16), (out0, 16), (out1, 16)]
    assert [g.most_bytes for g in t.groups] == [16, 16, 32, 16, 16, 16]
    assert [g.peak_bytes for g in t.groups] == [16, 16, 32, 0, 16, 0]  # at step 4


def test_a_value_with_no_metadata_takes_the_first_named_instruction_behind_it_within_32() -> None:
    def chain(n: int) -> MemoryTimeline:
        links = "".join(f"  %u{k} = f32[4]{{0}} negate(%{'n0' if k == 1 else f'u{k - 1}'})\n" for k in range(1, n + 1))
        text = (
            "HloModule chain\n\nENTRY %main (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n"
            f"  %n0 = f32[4]{{0}} sine(%p0), {meta('jit(f)/sin', L1)}\n{links}  ROOT %r = f32[4]{{0}} copy(%u{n})\n}}\n"
        )
        assignment = f"BufferAssignment:\nallocation 0: size 16, preallocated-temp:\n value: <0 u{n} @0> (size=16,offset=0): f32[4]{{0}}\n"
        ranges = f"HloLiveRange (max 2):\n  InstructionSequence:\n    0:p0\n    1:u{n}\n  BufferLiveRange:\n    u{n}{{}}:1-1\n"
        return handmade(text, assignment, ranges)

    # 31 instructions without metadata, then the sine: found, and named by its line
    (found,) = chain(31).groups
    assert (found.label, found.source) == ("h", SourceLocation(__file__, L1))
    # 32 of them: the search gives up and the value keeps its own name
    (lost,) = chain(32).groups
    assert (lost.kind, lost.label, lost.source, lost.scope) == ("temporary", "u32", None, "")


def test_a_program_with_no_steps_or_one_step_peaks_at_its_start() -> None:
    empty = handmade(
        "HloModule e\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n", "", "HloLiveRange (max 0):\n"
    )
    assert (empty.step_bytes, empty.peak_bytes, empty.peak_step, empty.groups) == ((), 0, 0, ())
    one = handmade(
        "HloModule o\n\nENTRY %main (p0: f32[4]) -> f32[4] {\n  ROOT %p0 = f32[4]{0} parameter(0)\n}\n",
        "BufferAssignment:\nallocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:\n"
        " value: <0 p0 @0> (size=16,offset=0): f32[4]{0}\n",
        "HloLiveRange (max 1):\n  InstructionSequence:\n    0:p0\n  BufferLiveRange:\n",
    )
    assert one.buffers == (LiveBuffer(0, 0, 0, 16),)
    assert (one.step_bytes, one.peak_bytes, one.peak_step) == ((16,), 16, 0)


def test_a_buffer_that_starts_after_the_last_step_is_in_none_and_a_step_of_no_instruction_has_no_line() -> None:
    t = handmade(
        "HloModule o\n\nENTRY %main (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n"
        f"  ROOT %late = f32[4]{{0}} sine(%p0), {meta('jit(f)/sin', L1)}\n}}\n",
        "BufferAssignment:\nallocation 0: size 16, preallocated-temp:\n"
        " value: <1 late @0> (size=16,offset=0): f32[4]{0}\n"
        "allocation 1: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:\n"
        " value: <0 p0 @0> (size=16,offset=0): f32[4]{0}\n",
        "HloLiveRange (max 2):\n  InstructionSequence:\n    0:p0\n    1:gone\n  BufferLiveRange:\n"
        "    late{}:2-2\n    p0{}:0-2\n",
    )
    assert t.buffers == (LiveBuffer(0, 2, 2, 16), LiveBuffer(1, 0, 2, 16))
    assert t.step_bytes == (16, 16)  # the argument only
    assert t.step_sources == (None, None)  # p0 has no line; "gone" is no instruction of the module
    assert [g.most_bytes for g in t.groups] == [0, 16]


def test_an_argument_of_a_program_with_no_steps_holds_nothing_at_any_step() -> None:
    t = handmade(
        "HloModule e\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n",
        "BufferAssignment:\nallocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:\n"
        " value: <0 p0 @0> (size=16,offset=0): f32[4]{0}\n",
        "HloLiveRange (max 0):\n",
    )
    assert (t.step_bytes, t.peak_bytes) == ((), 0)
    assert [(g.kind, g.label, g.most_bytes) for g in t.groups] == [("argument", "a", 0)]


def small(body: str, assignment: str, ranges: str, steps: Sequence[str], **kw: Any) -> MemoryTimeline:
    """A hand-made entry computation, its allocations and its values' live steps."""
    text = f"HloModule small, is_scheduled=true\n\nENTRY %main (p0: f32[4]) -> f32[4] {{\n{body}}}\n"
    lines = "".join(f"    {k}:{name}\n" for k, name in enumerate(steps))
    module = hlo.parse_module(text)
    return memory_timeline(
        parse_buffer_assignment("BufferAssignment:\n" + assignment),
        parse_live_ranges(
            f"HloLiveRange (max {len(steps)}):\n  InstructionSequence:\n{lines}  BufferLiveRange:\n{ranges}"
        ),
        module,
        stack_of,
        kw.get("input_paths", ("a",)),
        kw.get("output_paths", ("out[0]", "out[1]")),
        None,
        {},
    )


def temp(*values: tuple[str, int]) -> str:
    """One scratch allocation holding ``(name, offset)`` values of 16 bytes each."""
    rows = "".join(
        f" value: <{k} {name} @0> (size=16,offset={offset}): f32[4]{{0}}\n" for k, (name, offset) in enumerate(values)
    )
    return f"allocation 9: size 64, preallocated-temp:\n{rows}"


def test_the_backward_pass_starts_at_the_first_gradient_reading_what_the_forward_pass_made() -> None:
    grad = "jit(f)/transpose(jvp())"
    body = f"""  %p0 = f32[4]{{0}} parameter(0), metadata={{op_name="x"}}
  %g0 = f32[4]{{0}} negate(%p0), {meta(grad + "/neg", L2)}
  %g1 = f32[4]{{0}} negate(%ghost), {meta(grad + "/neg", L2)}
  %c0 = f32[4]{{0}} constant({{1,1,1,1}}), {meta("jit(f)/broadcast", L1)}
  %g2 = f32[4]{{0}} multiply(%c0, %g0), {meta(grad + "/mul", L2)}
  %u = f32[4]{{0}} custom-call(%p0), custom_call_target="x"
  %g3 = f32[4]{{0}} negate(%u), {meta(grad + "/neg", L2)}
  %f = f32[4]{{0}} sine(%p0), {meta("jit(f)/sin", L1)}
  %kept = f32[4]{{0}} cosine(%f), {meta("jit(f)/cos", L1)}
  %late = f32[4]{{0}} cosine(%p0), {meta("jit(f)/cos", L1)}
  %g4 = f32[4]{{0}} multiply(%f, %g3), {meta(grad + "/mul", L2)}
  ROOT %g5 = f32[4]{{0}} multiply(%kept, %late), {meta(grad + "/mul", L2)}
"""
    steps = ["p0", "g0", "g1", "c0", "g2", "u", "g3", "f", "kept", "g4", "late", "g5"]
    # read: a parameter, an operand missing from the module, a constant, a gradient, an unnamed value: none
    # is what the forward pass made; g4 reads f
    ranges = "    f{}:7-9\n    kept{}:8-11\n    late{}:9-11\n    g4{}:9-10\n"
    t = small(body, temp(("f", 0), ("kept", 16), ("late", 32), ("g4", 48)), ranges, steps)
    assert t.backward_step == 9
    # f dies where the backward pass starts and kept lives on through it: both saved, one group (one line);
    # late is made in the backward pass's first step: a temporary of the same line
    assert [(g.kind, g.label, g.peak_bytes) for g in t.groups] == [
        ("saved", "h", 32),
        ("temporary", "h", 16),
        ("temporary", "h (backward)", 16),
    ]
    assert t.groups[0].source == t.groups[1].source == SourceLocation(__file__, L1)


def test_a_value_behind_tuples_and_copies_is_named_after_the_operand_it_stands_for() -> None:
    other = L2
    body = f"""  %p0 = f32[4]{{0}} parameter(0)
  %na = f32[4]{{0}} sine(%p0), {meta("jit(f)/sin", L1)}
  %nb = f32[4]{{0}} cosine(%p0), {meta("jit(f)/cos", other)}
  %c1 = f32[4]{{0}} copy(%na)
  %tt = (f32[4]{{0}}, f32[4]{{0}}) tuple(%c1, %nb)
  %v1 = f32[4]{{0}} get-tuple-element(%tt), index=0
  %cn = f32[4]{{0}} copy(%na), {meta("jit(f)/cos", other)}
  %v2 = f32[4]{{0}} bitcast(%cn)
  ROOT %r = f32[4]{{0}} add(%v1, %v2)
"""
    steps = ["p0", "na", "nb", "c1", "tt", "v1", "cn", "v2", "r"]
    t = small(body, temp(("v1", 0), ("v2", 16)), "    v1{}:5-8\n    v2{}:7-8\n", steps)
    # v1 is the tuple's first part: c1, XLA's copy of na; v2 is a bitcast of cn, named itself
    assert [(g.label, g.source) for g in t.groups] == [
        ("h", SourceLocation(__file__, L1)),
        ("h", SourceLocation(__file__, other)),
    ]


def test_an_output_is_found_through_nested_tuples_and_a_value_of_no_instruction_keeps_its_name() -> None:
    body = f"""  %p0 = f32[4]{{0}} parameter(0)
  %w = ((f32[4]{{0}}, f32[4]{{0}}), f32[4]{{0}}) while(%p0), condition=%c, body=%b, {meta("jit(f)/while", L1)}
  %g1 = (f32[4]{{0}}, f32[4]{{0}}) get-tuple-element(%w), index=0
  %g2 = f32[4]{{0}} get-tuple-element(%g1), index=1
  %g3 = f32[4]{{0}} get-tuple-element(%w)
  ROOT %t = (f32[4]{{0}}, f32[4]{{0}}, f32[4]{{0}}) tuple(%ghost, %g2, %g3)
"""
    out = "allocation 3: size 48, maybe-live-out:\n"
    out += "".join(
        f" value: <{k} {n} @0> (size=16,offset={16 * k}): f32[4]{{0}}\n"
        for k, n in enumerate(["w{0,1}", "w{0}", "gone"])
    )
    ranges = "    w{0,1}:1-5\n    w{0}:1-5\n    gone{}:2-3\n"
    t = small(body, out, ranges, ["p0", "w", "g1", "g2", "g3", "t"], output_paths=("out[0]", "out[1]", "out[2]"))
    # the second output is w{0,1} (index 1 of index 0); the third, a get-tuple-element with no index, w{0}
    assert [(g.kind, g.label) for g in t.groups] == [("output", "out[1]"), ("output", "out[2]"), ("temporary", "gone")]


def test_an_output_past_the_paths_known_is_a_temporary_and_a_lone_result_is_output_zero() -> None:
    body = f"""  %p0 = f32[4]{{0}} parameter(0)
  ROOT %s = f32[4]{{0}} sine(%p0), {meta("jit(f)/sin", L1)}
"""
    out = "allocation 1: size 16, maybe-live-out:\n value: <1 s @0> (size=16,offset=0): f32[4]{0}\n"
    t = small(body, out, "    s{}:1-2\n", ["p0", "s"])
    assert [(g.kind, g.label) for g in t.groups] == [("output", "out[0]")]
    t = small(body, out, "    s{}:1-2\n", ["p0", "s"], output_paths=())
    assert [(g.kind, g.label) for g in t.groups] == [("temporary", "h")]


def test_a_value_named_after_an_operation_with_no_primitive_takes_its_opcode() -> None:
    body = """  %p0 = f32[4]{0} parameter(0)
  ROOT %s = f32[4]{0} sine(%p0), metadata={op_name="jit(f)/"}
"""
    t = small(body, temp(("s", 0)), "    s{}:1-1\n", ["p0", "s"])
    assert [(g.kind, g.label, g.source) for g in t.groups] == [("temporary", "sine", None)]


def chain_of(n: int, top: str) -> str:
    """``%c1 = copy(%na)`` ... ``%c{n} = copy(%c{n-1})``, then ``top`` reading ``%c{n}``."""
    links = "".join(f"  %c{k} = f32[4]{{0}} copy(%{'na' if k == 1 else f'c{k - 1}'})\n" for k in range(1, n + 1))
    return (
        f"  %p0 = f32[4]{{0}} parameter(0)\n  %na = f32[4]{{0}} sine(%p0), {meta('jit(f)/sin', L1)}\n"
        f"  %nb = f32[4]{{0}} cosine(%p0), {meta('jit(f)/cos', L2)}\n{links}{top}"
    )


def test_a_value_is_followed_back_through_at_most_eight_tuples_and_copies() -> None:
    # v is part 0 of tuple(c_n, nb), c_n a chain of copies of na: na's, until the chain is too long
    # to follow; then the first named instruction behind v, breadth first, is nb
    def source_of(n: int) -> SourceLocation | None:
        top = (
            f"  %tt = (f32[4]{{0}}, f32[4]{{0}}) tuple(%c{n}, %nb)\n"
            "  ROOT %v = f32[4]{0} get-tuple-element(%tt), index=0\n"
        )
        (group,) = small(chain_of(n, top), temp(("v", 0)), "    v{}:1-1\n", ["p0", "v"]).groups
        return group.source

    assert source_of(6) == SourceLocation(__file__, L1)  # v, tt and six copies: eight steps back
    assert source_of(7) == SourceLocation(__file__, L2)


def test_a_value_made_by_an_unnamed_operation_is_named_breadth_first_behind_it() -> None:
    top = '  %u = f32[4]{0} custom-call(%c1, %nb), custom_call_target="x"\n  ROOT %v = f32[4]{0} bitcast(%u)\n'
    (group,) = small(chain_of(1, top), temp(("v", 0)), "    v{}:1-1\n", ["p0", "v"]).groups
    # u is no copy: behind it, nb (one step) comes before na (through c1, two steps)
    assert group.source == SourceLocation(__file__, L2)


def test_an_output_is_followed_back_through_at_most_eight_bitcasts() -> None:
    def kind_of_s(n: int) -> str:
        casts = "".join(f"  %b{k} = f32[4]{{0}} bitcast(%{'s' if k == 1 else f'b{k - 1}'})\n" for k in range(1, n + 1))
        body = (
            f"  %p0 = f32[4]{{0}} parameter(0)\n  %s = f32[4]{{0}} sine(%p0), {meta('jit(f)/sin', L1)}\n"
            f"{casts}  ROOT %t = (f32[4]{{0}}) tuple(%b{n})\n"
        )
        out = "allocation 1: size 16, maybe-live-out:\n value: <1 s @0> (size=16,offset=0): f32[4]{0}\n"
        (group,) = small(body, out, "    s{}:1-2\n", ["p0", "s"]).groups
        return group.kind

    assert kind_of_s(8) == "output"
    assert kind_of_s(9) == "temporary"


def test_a_value_taken_out_of_a_tuple_is_made_by_that_element_of_the_tuple() -> None:
    """``get-tuple-element(tuple(a, m)), index=1`` is ``m``'s value: its maker is the multiply."""
    from shardviz.program.memory.timeline import _maker

    module = hlo.parse_module(
        "HloModule m\n\nENTRY %main (p0: f32[2]) -> f32[2] {\n"
        "  %p0 = f32[2]{0} parameter(0)\n"
        '  %a = f32[2]{0} add(%p0, %p0), metadata={op_name="jit(f)/add"}\n'
        '  %m = f32[2]{0} multiply(%p0, %p0), metadata={op_name="jit(f)/mul"}\n'
        "  %t = (f32[2]{0}, f32[2]{0}) tuple(%a, %m)\n"
        "  %first = f32[2]{0} get-tuple-element(%t), index=0\n"
        "  ROOT %g = f32[2]{0} get-tuple-element(%t), index=1\n"
        "}\n"
    )
    instructions = {inst.name: inst for _, inst in module.instructions()}
    assert _maker("g", instructions) is instructions["m"]
    assert _maker("first", instructions) is instructions["a"]
    assert _maker("t", instructions) is instructions["a"]  # the tuple itself: as made by its first element
