"""Memory over the program (program/memory.py, program/hlo/liveness.py) on XLA's own dumps.

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

from pathlib import Path

import pytest

from shardviz.program import hlo
from shardviz.program.hlo.liveness import (
    Allocation,
    AssignedValue,
    LiveRanges,
    parse_buffer_assignment,
    parse_live_ranges,
    value_key,
)
from shardviz.program.memory import KINDS, LiveBuffer, MemoryGroup, MemoryTimeline, memory_timeline
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
    with pytest.raises(hlo.HloParseError, match="no 'HloLiveRange' header in the live-range dump"):
        parse_live_ranges("InstructionSequence:\n  0:a\n")


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
    t = timeline("step", input_paths=("lr", "params['w']"), kept=[1, 5])
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
