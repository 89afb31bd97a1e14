"""Collective traffic summed per mesh axis, per kind and per source line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .model import Collective, Total, Totals

UNATTRIBUTED = "?"


def program_totals(collectives: Sequence[Collective], axis_names: Sequence[str] = ()) -> Totals:
    """Totals over ``collectives``; ``by_axis`` lists every mesh axis (in mesh order), even idle ones."""

    def axis_keys(c: Collective) -> Iterable[str]:
        return (UNATTRIBUTED,) if c.axes is None else c.axes

    def line_keys(c: Collective) -> Iterable[str]:
        return (UNATTRIBUTED,) if c.source is None else (f"{c.source.file}:{c.source.line}",)

    by_axis = _sum(collectives, axis_keys)
    ordered_axes = [by_axis.pop(a, Total(a, 0, 0, 0)) for a in axis_names]
    return Totals(
        wire_bytes=sum(c.total_wire_bytes for c in collectives),
        runs=sum(c.count for c in collectives),
        by_axis=tuple(ordered_axes + sorted(by_axis.values(), key=lambda t: t.key)),
        by_kind=tuple(sorted(_sum(collectives, lambda c: (c.kind,)).values(), key=lambda t: -t.wire_bytes)),
        by_line=tuple(sorted(_sum(collectives, line_keys).values(), key=lambda t: -t.wire_bytes)),
    )


def _sum(collectives: Iterable[Collective], keys: Callable[[Collective], Iterable[str]]) -> dict[str, Total]:
    out: dict[str, Total] = {}
    for c in collectives:
        for key in keys(c):
            t = out.get(key, Total(key, 0, 0, 0))
            out[key] = Total(key, t.wire_bytes + c.total_wire_bytes, t.collectives + 1, t.runs + c.count)
    return out
