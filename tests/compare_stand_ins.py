"""Stand-ins for the comparison's fast tests (tests/test_mut_compare_*.py): rows, estimates and
programs with only the fields the comparison reads, so a test needs no trace and no compile."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from shardviz.compare.rows import LineCollectives, Row
from shardviz.program.program import Program


def row(
    candidate: str,
    step_s: float,
    *,
    hardware: str = "h100",
    fits: bool | None = True,
    lines: tuple[LineCollectives, ...] = (),
    device_bytes: int | None = 30,
    hbm_bytes: float | None = 100.0,
    mesh: tuple[tuple[str, int], ...] = (("data", 4), ("model", 2)),
) -> Row:
    return Row(
        candidate, hardware, mesh, step_s, "network", step_s / 4, step_s / 2, step_s, (), (), device_bytes,
        hbm_bytes, fits, 1, lines, 0.0,
    )  # fmt: skip


def line(where: str, kind: str, axes: str, sent: int, seconds: float) -> LineCollectives:
    return LineCollectives(where, kind, axes, 1, sent, seconds, "NVLink")


def program(
    name: str = "step",
    mesh: tuple[tuple[str, int], ...] | None = (("data", 4), ("model", 2)),
    child_seconds: float | None = 1.5,
    collectives: tuple[Any, ...] = (),
) -> Program:
    """A Program object holding only a name, a mesh, what-if timing and collectives."""
    made = object.__new__(Program)
    fields = {
        "name": name,
        "mesh": None if mesh is None else SimpleNamespace(axis_names=tuple(n for n, _ in mesh),
                                                          axis_sizes=tuple(s for _, s in mesh)),
        "whatif": None if child_seconds is None else SimpleNamespace(child_seconds=child_seconds),
        "collectives": collectives,
    }  # fmt: skip
    for key, value in fields.items():
        object.__setattr__(made, key, value)
    return made
