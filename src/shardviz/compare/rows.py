"""The rows of a Comparison: one candidate on one hardware, its collectives per source line, and
what differs between two rows line by line (:func:`line_changes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..plan.estimate import Estimate
from ..program.memory.totals import charges
from ..program.program import Program
from ..text.files import file_label

TIME_TOLERANCE = 0.01  # a line whose bytes are equal counts as slower or faster past 1% of its time


@dataclass(frozen=True)
class LineCollectives:
    """The collectives one source line causes of one kind over the same mesh axes, summed."""

    line: str  # "step.py:42", "In [3]:4", or "?" where the module names no line of the user's
    kind: str
    axes: str  # "data", "data,model", "?" where the groups span no whole axes
    count: int  # distinct collectives
    bytes: int  # sent per device per call of the step: each collective's wire bytes times its runs
    seconds: float  # all runs, on the row's hardware
    link: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.line, self.kind, self.axes)


@dataclass(frozen=True)
class LineChange:
    """How one line's collectives of one kind and axes differ from a row to another."""

    line: str
    kind: str
    axes: str
    change: str  # "appeared", "vanished", "grown", "shrunk", "slower" or "faster"
    bytes_before: int
    bytes_after: int
    seconds_before: float
    seconds_after: float

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "kind": self.kind,
            "axes": self.axes,
            "change": self.change,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "seconds_before": self.seconds_before,
            "seconds_after": self.seconds_after,
        }


@dataclass(frozen=True)
class Row:
    """One candidate on one hardware."""

    candidate: str
    hardware: str
    mesh: tuple[tuple[str, int], ...]  # (axis name, size) in mesh order
    step_s: float
    bound: str  # "compute", "memory" or "network"
    compute_s: float | None
    memory_s: float | None
    network_s: float
    network_by_axis: tuple[tuple[str, float], ...]  # (axes label, seconds), longest first
    network_by_link: tuple[tuple[str, float], ...]  # (link, seconds), a multi-link collective's parts each on theirs
    device_bytes: int | None  # per device: the program's peak (Program.memory.held_bytes)
    hbm_bytes: float | None
    fits: bool | None
    slices: int  # TPU slices or GPU nodes
    lines: tuple[LineCollectives, ...]  # longest first
    trace_seconds: float  # the what-if child's wall time (0 for a program traced here)
    rank: int = 0  # 1 is the best; rows that do not fit come after those that do
    changes: tuple[LineChange, ...] = ()  # against the row it is compared with (the best on its hardware)
    against: str = ""  # that row's candidate
    held_by_group: tuple[tuple[str, int], ...] = ()  # bytes live at the peak per group, most first

    @property
    def headroom_bytes(self) -> float | None:
        """HBM left per device (negative: over by that much)."""
        if self.device_bytes is None or self.hbm_bytes is None:
            return None
        return self.hbm_bytes - self.device_bytes

    @property
    def mesh_label(self) -> str:
        return " x ".join(f"{name}={size}" for name, size in self.mesh)

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "hardware": self.hardware,
            "rank": self.rank,
            "mesh": [[name, size] for name, size in self.mesh],
            "step_s": self.step_s,
            "bound": self.bound,
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "network_s": self.network_s,
            "network_by_axis": [[axes, s] for axes, s in self.network_by_axis],
            "network_by_link": [[link, s] for link, s in self.network_by_link],
            "device_bytes": self.device_bytes,
            "hbm_bytes": self.hbm_bytes,
            "fits": self.fits,
            "slices": self.slices,
            "trace_seconds": self.trace_seconds,
            "lines": [[c.line, c.kind, c.axes, c.count, c.bytes, c.seconds, c.link] for c in self.lines],
            "against": self.against,
            "changes": [c.to_json() for c in self.changes],
        }


@dataclass(frozen=True)
class Failure:
    """A candidate that could not be traced or compiled (``hardware`` empty), or estimated on one hardware."""

    candidate: str
    hardware: str
    mesh: tuple[tuple[str, int], ...]
    error: str

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "hardware": self.hardware,
            "mesh": [[n, s] for n, s in self.mesh],
            "error": self.error,
        }


def _sum_by(pairs: Sequence[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    totals: dict[str, float] = {}
    for key, seconds in pairs:
        totals[key] = totals.get(key, 0.0) + seconds
    return tuple(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def collective_charges(c: Any) -> tuple[tuple[str, int], ...]:
    """``(line, bytes sent per device per call)`` for each line a collective charges: the one rule
    of the program's table, report and totals (:func:`shardviz.program.memory.totals.charges`), so a
    combined collective puts each operand's wire bytes on the operand's own line."""
    out = []
    for key, sent in charges(c):
        file, sep, number = key.rpartition(":")
        out.append((f"{file_label(file)}:{number}" if sep else key, sent))
    return tuple(out)


def line_collectives(est: Estimate, program: Any) -> tuple[LineCollectives, ...]:
    """The estimate's collectives summed per (line, kind, axes), longest first: bytes as
    :func:`collective_charges` gives them, and a combined collective's time shared among its lines
    as its bytes are. ``est.collectives`` are ``program.collectives`` priced, in order."""
    sums: dict[tuple[str, str, str], list[Any]] = {}
    for c, t in zip(program.collectives, est.collectives, strict=True):
        shares = collective_charges(c)
        total = sum(sent for _, sent in shares)
        axes = ",".join(t.axes) if t.axes is not None else "?"
        for line, sent in shares:
            entry = sums.setdefault((line, t.kind, axes), [0, 0, 0.0, t.link])
            entry[0] += 1
            entry[1] += sent
            entry[2] += t.seconds * (sent / total if total else 1 / len(shares))
    rows = [LineCollectives(*key, *value) for key, value in sums.items()]
    return tuple(sorted(rows, key=lambda r: (-r.seconds, r.key)))


def make_row(candidate: str, program: Program, est: Estimate, trace_seconds: float) -> Row:
    """One row from a candidate's program and its estimate on one hardware."""
    by_axis = [(",".join(c.axes) if c.axes is not None else "?", c.seconds) for c in est.collectives]
    by_link = [(p.link, p.seconds) for c in est.collectives for p in (c.parts or (c,))]
    mesh = () if program.mesh is None else tuple(zip(program.mesh.axis_names, program.mesh.axis_sizes))
    return Row(
        candidate, est.hardware.name, tuple(mesh), est.step_s, est.bound, est.compute_s, est.memory_s,
        est.network_s, _sum_by(by_axis), _sum_by(by_link), est.device_bytes, est.hardware.hbm_bytes, est.fits,
        est.slices, line_collectives(est, program), trace_seconds, held_by_group=est.held_by_group,
    )  # fmt: skip


def line_changes(before: Row, after: Row) -> tuple[LineChange, ...]:
    """What ``after``'s collectives do differently from ``before``'s, line by line, largest change first."""
    return lines_changed(before.lines, after.lines)


def lines_changed(before: Sequence[LineCollectives], after: Sequence[LineCollectives]) -> tuple[LineChange, ...]:
    """The changes from one set of per-line collectives to another, largest change of time (then of
    bytes) first."""
    old = {c.key: c for c in before}
    new = {c.key: c for c in after}
    changes = []
    for key in sorted({*old, *new}):
        a, b = old.get(key), new.get(key)
        if a is None and b is not None:
            change = "appeared"
        elif b is None and a is not None:
            change = "vanished"
        elif a is not None and b is not None and a.bytes != b.bytes:
            change = "grown" if b.bytes > a.bytes else "shrunk"
        elif a is not None and b is not None and abs(b.seconds - a.seconds) > TIME_TOLERANCE * max(a.seconds, 1e-12):
            change = "slower" if b.seconds > a.seconds else "faster"
        else:
            continue
        changes.append(LineChange(*key, change, a.bytes if a else 0, b.bytes if b else 0,
                                  a.seconds if a else 0.0, b.seconds if b else 0.0))  # fmt: skip
    return tuple(
        sorted(
            changes,
            key=lambda c: (-abs(c.seconds_after - c.seconds_before), -abs(c.bytes_after - c.bytes_before), c.line),
        )
    )
