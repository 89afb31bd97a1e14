"""``Comparison``: traced candidates side by side, one row per candidate and hardware, ranked.

Each row is read off one :class:`shardviz.Estimate` of one candidate's
Program: the step time and its bound, the network time per mesh axis and
per link, memory per device against the chip's HBM, and the collectives of
each source line. What differs between two rows is worked out per source
line, kind and mesh axes (:func:`line_changes`): a collective that appeared,
vanished, moves more or fewer bytes, or takes longer on its links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ShardingError
from ..plan.estimate import estimate
from ..plan.hardware import Hardware, hardware_named
from ..program.program import Program
from .report import render_comparison
from .rows import Failure, LineChange, Row, line_changes, make_row

FORMAT_VERSION = 1


def _order(row: Row) -> tuple[bool, float, str, str]:
    return (row.fits is False, row.step_s, row.candidate, row.hardware)


@dataclass(frozen=True, eq=False)
class Comparison:
    """Candidates traced and estimated, ranked: the fastest that fits first.

    ``rows`` one per candidate and hardware, in rank order; ``failures`` the
    candidates that could not be traced (or estimated on a hardware), each
    with its error; ``programs`` each traced candidate's Program by name;
    ``baseline`` ``"best"`` (each row's changes are against the best row of
    its hardware) or ``"first"`` (against the first candidate: a diff).
    """

    step: str
    rows: tuple[Row, ...]
    failures: tuple[Failure, ...]
    hardware: tuple[str, ...]
    programs: dict[str, Program]
    candidates: tuple[str, ...]  # every candidate's name, in the order given
    baseline: str = "best"
    workers: int = 1
    seconds: float = 0.0  # wall time of the traces, all together
    # what compare() traced, to trace one candidate again (shardviz.compare.run.retrace); None for diff()
    origin: Any = field(default=None, repr=False)
    hardware_used: tuple[Hardware, ...] = ()  # the Hardware behind each name of ``hardware``
    # what shardviz.search explored (a shardviz.search.SearchSpace); None for compare() and diff()
    search: Any = field(default=None, repr=False)

    def best(self, fits: bool = True, hardware: str | None = None) -> Row | None:
        """The fastest row (on ``hardware`` if given); with ``fits`` only rows whose memory is not
        known to overflow the chip's HBM. None when no row qualifies."""
        rows = [r for r in self.rows if hardware is None or r.hardware == hardware]
        if fits:  # the first in rank order: a search ranks plans it cannot tell apart by its own tie-break
            return next((r for r in rows if r.fits is not False), None)
        return min(rows, key=lambda r: (r.step_s, r.candidate, r.hardware), default=None)

    def row(self, candidate: str, hardware: str | None = None) -> Row:
        """The row of ``candidate`` on ``hardware`` (the first hardware when not given)."""
        hardware = hardware or self.hardware[0]
        for r in self.rows:
            if r.candidate == candidate and r.hardware == hardware:
                return r
        raise ShardingError(
            f"no row for candidate {candidate!r} on {hardware!r}; rows: "
            + ", ".join(f"{r.candidate} on {r.hardware}" for r in self.rows)
        )

    def changes(self, before: str, after: str, hardware: str | None = None) -> tuple[LineChange, ...]:
        """What candidate ``after`` does differently from ``before``, line by line, on one hardware."""
        return line_changes(self.row(before, hardware), self.row(after, hardware))

    def on(self, hardware: Any) -> Comparison:
        """The same traces estimated and ranked on other ``hardware`` (one or a list), not traced again."""
        traced_not = [f for f in self.failures if not f.hardware]
        return build_comparison(self.step, self.programs, traced_not, hardware_list(hardware), self.candidates,
                                self.baseline, self.workers, self.seconds, self.origin)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The comparison payload (docs/compare-payload.md)."""
        return {
            "kind": "compare",
            "version": FORMAT_VERSION,
            "step": self.step,
            "baseline": self.baseline,
            "hardware": list(self.hardware),
            "candidates": list(self.candidates),
            "workers": self.workers,
            "seconds": self.seconds,
            "rows": [r.to_json() for r in self.rows],
            "failures": [f.to_json() for f in self.failures],
            **({} if self.search is None else {"search": self.search.to_json()}),
        }

    def report(self, *, width: int | None = None, color: bool | None = None) -> str:
        """The terminal text: the ranked table, each row's links and changed lines, the failures."""
        text = render_comparison(
            self.step, self.candidates, self.hardware, self.rows, self.failures, self.best(), width=width
        )
        return text if self.search is None else self.search.report() + "\n\n" + text

    def render(self, *, width: int | None = None, color: bool | None = None) -> str:
        return self.report(width=width, color=color)

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        return (
            f"Comparison({self.step}, {len(self.candidates)} candidates, {len(self.rows)} rows, "
            f"{len(self.failures)} failed)"
        )


def ranked(
    rows: Sequence[Row], baseline: str, first: str | None, key: Callable[[Row], Any] = _order
) -> tuple[Row, ...]:
    """Rows in rank order (by ``key``), each numbered and with its changes against the baseline row of
    its hardware (the first in that order that fits)."""
    ordered = sorted(rows, key=key)
    out = []
    for rank, row in enumerate(ordered, start=1):
        same = [r for r in ordered if r.hardware == row.hardware]
        if baseline == "first":
            base = next((r for r in same if r.candidate == first), None)
        else:
            base = next((r for r in same if r.fits is not False), None) or same[0]
        if base is None or base is row:
            out.append(_numbered(row, rank, (), ""))
        else:
            out.append(_numbered(row, rank, line_changes(base, row), base.candidate))
    return tuple(out)


def _numbered(row: Row, rank: int, changes: tuple[LineChange, ...], against: str) -> Row:
    return replace(row, rank=rank, changes=changes, against=against)


def hardware_list(hardware: Any) -> tuple[Hardware, ...]:
    """The hardware of ``compare``'s ``hardware=``: one name or Hardware, or a list of them."""
    one = isinstance(hardware, (str, Hardware)) or not isinstance(hardware, Iterable)
    items = [hardware] if one else list(hardware)
    if not items:
        raise ShardingError("hardware= names no hardware; give a name such as 'tpu-v5p' or 'h100', or a list")
    return tuple(hardware_named(h) for h in items)


def rows_of(name: str, program: Program, hardware: Sequence[Hardware]) -> tuple[list[Row], list[Failure]]:
    rows, failures = [], []
    seconds = program.whatif.child_seconds if program.whatif is not None else 0.0
    mesh = () if program.mesh is None else tuple(zip(program.mesh.axis_names, program.mesh.axis_sizes))
    for hw in hardware:
        try:
            rows.append(make_row(name, program, estimate(program, hw), seconds))
        except ShardingError as err:
            failures.append(Failure(name, hw.name, mesh, str(err)))
    return rows, failures


def build_comparison(
    step: str,
    programs: dict[str, Program],
    failures: list[Failure],
    hardware: Sequence[Hardware],
    names: Sequence[str],
    baseline: str,
    workers: int,
    seconds: float,
    origin: Any = None,
) -> Comparison:
    rows: list[Row] = []
    for name, program in programs.items():
        got, failed = rows_of(name, program, hardware)
        rows.extend(got)
        failures.extend(failed)
    first = names[0] if names else None
    return Comparison(
        step, ranked(rows, baseline, first), tuple(failures), tuple(h.name for h in hardware), dict(programs),
        tuple(names), baseline, workers, seconds, origin, tuple(hardware),
    )  # fmt: skip
