"""Collective traffic summed per mesh axis, per kind and per source line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from ..model import Collective, SourceLocation, Total, Totals

UNATTRIBUTED = "?"


def line_key(source: SourceLocation | None) -> str:
    """``file:line``, the key of ``Totals.by_line`` (``?`` for no line of the user's)."""
    return UNATTRIBUTED if source is None else f"{source.file}:{source.line}"


def charges(c: Collective) -> Iterator[tuple[str, int]]:
    """``(line key, bytes one device sends per call)`` for each line a collective's bytes belong to.

    A combined collective charges each operand's bytes to the operand's own line.
    """
    if c.parts:
        for part in c.parts:
            yield line_key(part.source), part.wire_bytes * c.count
    else:
        yield line_key(c.source), c.total_wire_bytes


def program_totals(collectives: Sequence[Collective], axis_names: Sequence[str] = ()) -> Totals:
    """Totals over ``collectives``; ``by_axis`` lists every mesh axis (in mesh order), even idle ones.

    A collective over a piece of an axis (``x[sub 2 of 4]``) counts toward that axis.
    """

    def axis_keys(c: Collective) -> Iterable[tuple[str, int]]:
        if c.axes is not None:
            names: Iterable[str] = c.axes
        elif c.pieces is not None:
            names = dict.fromkeys(p.axis for p in c.pieces)
        else:
            names = (UNATTRIBUTED,)
        return ((name, c.total_wire_bytes) for name in names)

    by_axis = _sum(collectives, axis_keys)
    ordered_axes = [by_axis.pop(a, Total(a, 0, 0, 0)) for a in axis_names]
    return Totals(
        wire_bytes=sum(c.total_wire_bytes for c in collectives),
        runs=sum(c.count for c in collectives),
        by_axis=tuple(ordered_axes + sorted(by_axis.values(), key=lambda t: t.key)),
        by_kind=tuple(
            sorted(_sum(collectives, lambda c: ((c.kind, c.total_wire_bytes),)).values(), key=lambda t: -t.wire_bytes)
        ),
        by_line=tuple(sorted(_sum(collectives, charges).values(), key=lambda t: -t.wire_bytes)),
    )


def _sum(
    collectives: Iterable[Collective], keys: Callable[[Collective], Iterable[tuple[str, int]]]
) -> dict[str, Total]:
    out: dict[str, Total] = {}
    for c in collectives:
        mine: dict[str, int] = {}
        for key, sent in keys(c):
            mine[key] = mine.get(key, 0) + sent
        for key, sent in mine.items():
            t = out.get(key, Total(key, 0, 0, 0))
            out[key] = Total(key, t.wire_bytes + sent, t.collectives + 1, t.runs + c.count)
    return out
