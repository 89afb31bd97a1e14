"""XLA's buffer assignment and live ranges, as its dumps print them.

With ``xla_dump_to`` set, a compile writes ``*after_optimizations-buffer-assignment.txt``
(every allocation: its size, whether it holds a parameter, an output or
scratch space, and the values placed in it at their offsets) and
``*after_optimizations-live-range.txt`` (the schedule flattened into steps,
loop bodies in place, and each value's first and last step). Read together
they say how many bytes are live at each step of the program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..hlo.scanning import HloParseError


@dataclass(frozen=True)
class AssignedValue:
    """A value (an instruction's result, or one element of a tuple result) placed in an allocation."""

    name: str  # the instruction's name with its shape index: dot.4{}, all-reduce.4{1}
    size: int
    offset: int
    shape: str

    @property
    def instruction(self) -> str:
        return self.name.split("{", 1)[0]


@dataclass(frozen=True)
class Allocation:
    """One buffer allocation: a parameter's, an output's, scratch (``preallocated-temp``), ..."""

    index: int
    size: int
    parameter: int | None  # the entry parameter it holds, if any
    parameter_index: str  # the shape index within that parameter, "{}" for the whole
    live_out: bool  # maybe-live-out: holds (part of) the program's result
    thread_local: bool
    constant: bool
    temp: bool  # preallocated-temp: XLA's scratch space
    values: tuple[AssignedValue, ...]


_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_VALUE = re.compile(r"^\s*value: <\d+ (\S+?)(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_PARAMETER = re.compile(r"parameter (\d+), shape \|.*?\| at ShapeIndex (\{[^}]*\})")


def value_key(name: str) -> str:
    """The live-range file's spelling of a value: ``dot.4`` -> ``dot.4{}``."""
    return name if "{" in name else name + "{}"


def parse_buffer_assignment(text: str) -> tuple[Allocation, ...]:
    """Every allocation of a ``*-buffer-assignment.txt`` dump."""
    out: list[Allocation] = []
    head: re.Match[str] | None = None
    values: list[AssignedValue] = []

    def close() -> None:
        if head is None:
            return
        flags = head.group(3)
        parameter = _PARAMETER.search(flags)
        out.append(
            Allocation(
                index=int(head.group(1)),
                size=int(head.group(2)),
                parameter=int(parameter.group(1)) if parameter else None,
                parameter_index=parameter.group(2).replace(" ", "") if parameter else "{}",
                live_out="maybe-live-out" in flags,
                thread_local="thread-local" in flags,
                constant="constant" in flags,
                temp="preallocated-temp" in flags,
                values=tuple(values),
            )
        )

    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m is not None:
            close()
            head, values = m, []
            continue
        v = _VALUE.match(line)
        if v is not None and head is not None:
            values.append(AssignedValue(value_key(v.group(1)), int(v.group(2)), int(v.group(3)), v.group(4).strip()))
        elif head is not None and line and not line.startswith(" "):
            close()  # the allocations end where another section starts
            head, values = None, []
    close()
    return tuple(out)


@dataclass(frozen=True)
class LiveRanges:
    """The flattened schedule (instruction names, step by step) and each value's live steps."""

    steps: tuple[str, ...]
    ranges: dict[str, tuple[int, int]]  # value key -> (first step, last step), both live
    end: int  # the step past the last instruction


_RANGE = re.compile(r"^\s*(\S+\{[^}]*\}):(\d+)-(\d+)\s*$")
_STEP = re.compile(r"^\s*(\d+):(\S+)\s*$")


def parse_live_ranges(text: str) -> LiveRanges:
    """A ``*-live-range.txt`` dump: ``InstructionSequence`` then ``BufferLiveRange``."""
    head = re.search(r"HloLiveRange \(max (\d+)\)", text)
    if head is None:
        raise HloParseError("no 'HloLiveRange' header in the live-range dump")
    steps: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and not _RANGE.match(line) and not _STEP.match(line):
            section = stripped
            continue
        if section == "InstructionSequence:":
            m = _STEP.match(line)
            if m is not None:
                steps.append(m.group(2))
        elif section == "BufferLiveRange:":
            r = _RANGE.match(line)
            if r is not None:
                ranges[r.group(1)] = (int(r.group(2)), int(r.group(3)))
    return LiveRanges(tuple(steps), ranges, int(head.group(1)))
