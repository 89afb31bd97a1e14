"""The payload's reasons: each collective's ``why``, the rematerializations, and the fixes already traced.

Kept apart from :mod:`.payload` so the program payload gains three keys and
nothing else changes (docs/program-payload.md). Fixes appear only once read
(``Collective.fixes``, or the widget's reason panel asking): the payload never
traces anything.
"""

from __future__ import annotations

import json
from typing import Any

from .reasons import Why, spec_text


def why_payload(why: Why | None) -> dict[str, Any] | None:
    """A reason, sparse: keys at their defaults (no wanted layout, no note) are left out."""
    if why is None:
        return None
    row: dict[str, Any] = {
        "cause": why.cause,
        "primitive": why.primitive,
        "operands": [_operand_row(o) for o in why.operands],
        "rule": why.rule,
    }
    if why.expression:
        row["expression"] = why.expression
    if why.wanted is not None:
        row["wanted"] = [list(s) for s in why.wanted]
        row["wanted_by"] = why.wanted_by
    if why.operand is not None:
        row["operand"] = why.operand
    if why.dimension is not None:
        row["dimension"] = why.dimension
    if why.axes:
        row["axes"] = list(why.axes)
    return row


def _operand_row(o: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "label": o.label,
        "type": o.type_str,
        "spec": None if o.spec is None else [list(s) for s in o.spec],
    }
    if o.role != "operand":
        row["role"] = o.role
    if o.note:
        row["note"] = o.note
    return row


def rematerializations_payload(program: Any) -> list[dict[str, Any]]:
    return [
        {
            "instruction": r.instruction,
            "shape": list(r.shape),
            "dtype": r.dtype,
            "before": None if r.before is None else [list(s) for s in r.before],
            "after": None if r.after is None else [list(s) for s in r.after],
            "before_text": spec_text(r.before),
            "after_text": spec_text(r.after),
            "full_bytes": r.full_bytes,
            "wire_bytes": r.wire_bytes,
            "line": r.source_line,
            "where": r.where,
            "label": r.label,
            "text": r.text,
        }
        for r in program.rematerializations
    ]


def fix_payload(fix: Any, before: Any) -> dict[str, Any]:
    return {
        "kind": fix.kind,
        "summary": fix.summary,
        "code": fix.code,
        "removed": fix.removed,
        "slower": fix.slower,
        "step_s": fix.step_s,
        "before_s": fix.before_s,
        "hardware": fix.hardware,
        "target": fix.target,
        "changes": line_changes(before, fix.program),
        "wire_before": before.totals.wire_bytes,
        "wire_after": fix.program.totals.wire_bytes,
    }


def line_changes(before: Any, after: Any) -> list[dict[str, Any]]:
    """What vanished and what appeared, line by line: bytes per call before and after, by kind and axes."""

    def per_line(program: Any) -> dict[tuple[int | None, str, str], int]:
        out: dict[tuple[int | None, str, str], int] = {}
        for c in program.collectives:
            for part in c.parts or (None,):
                item = c if part is None else part
                key = (None if item.source is None else item.source.line, c.kind, c.axes_label)
                out[key] = out.get(key, 0) + item.wire_bytes * c.count
        return out

    was, now = per_line(before), per_line(after)
    rows = []
    for key in sorted(set(was) | set(now), key=lambda k: (k[0] or 0, k[1], k[2])):
        a, b = was.get(key, 0), now.get(key, 0)
        if a != b:
            rows.append({"line": key[0], "kind": key[1], "axes": key[2], "before": a, "after": b})
    return rows


def fixes_payload(program: Any) -> dict[str, list[dict[str, Any]]]:
    """The fixes traced so far, by collective index (``"remat 0"`` for a rematerialization's)."""
    finder = next((c.finder for c in program.collectives if c.finder is not None), None)
    if finder is None:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    names = {c.name: i for i, c in enumerate(program.collectives)}
    for key, fixes in finder.traced().items():
        index = str(names[key]) if key in names else key
        out[index] = [fix_payload(f, program) for f in fixes]
    return out


class _WhyTable:
    """Each distinct reason once: a loop's passes and a line's operands share theirs."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._index: dict[str, int] = {}

    def __call__(self, why: Why | None) -> int:
        row = why_payload(why)
        if row is None:
            return -1
        key = json.dumps(row, sort_keys=True)
        if key not in self._index:
            self._index[key] = len(self.rows)
            self.rows.append(row)
        return self._index[key]


def reasons_payload(program: Any) -> dict[str, Any]:
    table = _WhyTable()
    whys = [table(c.why) for c in program.collectives]
    part_whys = [[table(p.why) for p in c.parts] for c in program.collectives]
    return {
        "why_table": table.rows,
        "whys": whys,  # an index into why_table per collective (-1: none read)
        "part_whys": part_whys,
        "rematerializations": rematerializations_payload(program),
        "fixes": fixes_payload(program),
        "back": False,  # the widget's state says True once a tried fix can be undone
    }
