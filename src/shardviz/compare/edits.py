"""What an edit of a program's inputs changed, said in a sentence: which collectives appeared,
vanished, grew or shrank, on which lines (the program widget's notice after a re-trace).

Bytes only: the bytes each collective sends per device per call of the step
(its wire bytes times its runs, a combined collective's on each operand's
line: :func:`.rows.collective_charges`), summed per source line, kind and
mesh axes, as the program's table and a Comparison's rows count them; no
hardware is needed to say what changed.
"""

from __future__ import annotations

from ..program.program import Program
from ..text.ranges import format_bytes
from .rows import LineChange, LineCollectives, collective_charges, lines_changed

SHOWN = 3  # changes named in the notice; the rest are counted


def collective_lines(program: Program) -> tuple[LineCollectives, ...]:
    """The program's collectives summed per (line, kind, axes), bytes only."""
    sums: dict[tuple[str, str, str], list[int]] = {}
    for c in program.collectives:
        axes = ",".join(c.axes) if c.axes is not None else "?"
        for line, sent in collective_charges(c):
            entry = sums.setdefault((line, c.kind, axes), [0, 0])
            entry[0] += 1
            entry[1] += sent
    return tuple(LineCollectives(*key, count, sent, 0.0, "") for key, (count, sent) in sums.items())


def program_changes(before: Program, after: Program) -> tuple[LineChange, ...]:
    """What ``after`` communicates differently from ``before``, line by line, largest first."""
    return lines_changed(collective_lines(before), collective_lines(after))


def _said(c: LineChange) -> str:
    """One change, its bytes named as the program's table names them (bytes per call)."""
    what = f"{c.kind} over {c.axes} at {c.line}"
    if c.change == "appeared":
        return f"{what} appeared ({format_bytes(c.bytes_after)} per call)"
    if c.change == "vanished":
        return f"{what} vanished ({format_bytes(c.bytes_before)} per call)"
    return f"{what} {'grew' if c.change == 'grown' else 'shrank'} ({format_bytes(c.bytes_before)} -> " \
           f"{format_bytes(c.bytes_after)} per call)"  # fmt: skip


def edit_notice(before: Program, after: Program) -> str:
    """``"Traced again: all-reduce over x at model.py:12 appeared (2.0 KiB per call)."``, or that nothing changed."""
    changes = program_changes(before, after)
    if not changes:
        return "Traced again: the same collectives on the same lines."
    named = "; ".join(_said(c) for c in changes[:SHOWN])
    more = f"; and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
    return f"Traced again: {named}{more}."
