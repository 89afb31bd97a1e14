"""The terminal text of a Comparison: the ranked table, then each row's links and changed lines."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from ..text.ranges import format_bytes
from .rows import Failure, LineChange, Row

CHANGES_SHOWN = 4  # changed lines per row in the text; the payload has them all
COLUMNS = ("#", "candidate", "mesh", "hardware", "step", "bound", "compute", "memory", "network", "per device", "HBM")


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _memory(row: Row) -> tuple[str, str]:
    held = "?" if row.device_bytes is None else format_bytes(row.device_bytes)
    if row.hbm_bytes is None:
        return held, "?"
    verdict = {True: "fits", False: "OVER", None: "?"}[row.fits]
    return held, f"{verdict} {format_bytes(int(row.hbm_bytes))}"


def _cells(row: Row) -> tuple[str, ...]:
    held, hbm = _memory(row)
    return (
        str(row.rank), row.candidate, row.mesh_label or "-", row.hardware, seconds_text(row.step_s), row.bound,
        seconds_text(row.compute_s), seconds_text(row.memory_s), seconds_text(row.network_s), held, hbm,
    )  # fmt: skip


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def change_text(c: LineChange) -> str:
    what = f"{c.kind} over {c.axes} at {c.line}"
    if c.change == "appeared":
        return f"+ {what}: {format_bytes(c.bytes_after)}, {seconds_text(c.seconds_after)} (appeared)"
    if c.change == "vanished":
        return f"- {what}: {format_bytes(c.bytes_before)}, {seconds_text(c.seconds_before)} (vanished)"
    return (
        f"~ {what}: {format_bytes(c.bytes_before)} -> {format_bytes(c.bytes_after)}, "
        f"{seconds_text(c.seconds_before)} -> {seconds_text(c.seconds_after)} ({c.change})"
    )


def _details(row: Row) -> list[str]:
    out = []
    if row.fits is False and row.device_bytes is not None and row.hbm_bytes is not None:
        over = f"     over HBM by {format_bytes(row.device_bytes - int(row.hbm_bytes))} per device"
        if row.held_by_group:
            over += "; at the peak: " + ", ".join(f"{name} {format_bytes(n)}" for name, n in row.held_by_group)
        out.append(over)
    if row.network_by_link:
        links = ", ".join(f"{link} {seconds_text(s)}" for link, s in row.network_by_link)
        axes = ", ".join(f"{axes} {seconds_text(s)}" for axes, s in row.network_by_axis)
        out.append(f"     network by link: {links}; by mesh axis: {axes}")
    if row.changes:
        out.append(f"     against {row.against}: {len(row.changes)} line(s) differ")
        out.extend(f"       {change_text(c)}" for c in row.changes[:CHANGES_SHOWN])
        if len(row.changes) > CHANGES_SHOWN:
            out.append(f"       ... {len(row.changes) - CHANGES_SHOWN} more")
    return out


def render_comparison(
    step: str,
    candidates: Sequence[str],
    hardware: Sequence[str],
    rows: Sequence[Row],
    failures: Sequence[Failure],
    best: Row | None,
    *,
    width: int | None = None,
) -> str:
    """The ranked table, each row's links and changed lines, the best that fits, the failures."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    n = len(candidates)
    failed = len({f.candidate for f in failures if not f.hardware})
    head = (
        f"{step}: {n} candidate{'s' if n != 1 else ''} on {', '.join(hardware)}, "
        f"{len(rows)} row(s) ranked, {failed} failed to trace"
    )
    lines = [head]
    if rows:
        table = _table([COLUMNS, *(_cells(r) for r in rows)])
        lines.append(table[0][:width])
        for row, text in zip(rows, table[1:]):
            lines.append(text[:width])
            lines.extend(d[:width] for d in _details(row))
    if best is not None:
        lines.append(f"best that fits: {best.candidate} on {best.hardware}, {seconds_text(best.step_s)} per step")
    for f in failures:
        where = f" on {f.hardware}" if f.hardware else ""
        lines.append(f"failed: {f.candidate}{where}: {f.error}"[: max(width, 80) * 3])
    return "\n".join(lines)
