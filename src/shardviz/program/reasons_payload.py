"""The payload's reasons: each collective's ``why``, the rematerializations, and the fixes already traced.

Kept apart from :mod:`.payload` so the program payload gains three keys and
nothing else changes (docs/program-payload.md). Fixes appear only once read
(``Collective.fixes``, or the widget's reason panel asking): the payload never
traces anything.
"""

from __future__ import annotations

from typing import Any

from .reasons import Why, spec_text


def why_payload(why: Why | None) -> dict[str, Any] | None:
    if why is None:
        return None
    return {
        "cause": why.cause,
        "primitive": why.primitive,
        "expression": why.expression,
        "operands": [
            {
                "label": o.label,
                "type": o.type_str,
                "spec": None if o.spec is None else [list(s) for s in o.spec],
                "spec_text": o.spec_text,
                "role": o.role,
                "note": o.note,
            }
            for o in why.operands
        ],
        "wanted": None if why.wanted is None else [list(s) for s in why.wanted],
        "wanted_text": None if why.wanted is None else spec_text(why.wanted),
        "wanted_by": why.wanted_by,
        "operand": why.operand,
        "dimension": why.dimension,
        "axes": list(why.axes),
        "rule": why.rule,
        "text": why.text,
    }


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


def reasons_payload(program: Any) -> dict[str, Any]:
    return {
        "whys": [why_payload(c.why) for c in program.collectives],
        "part_whys": [[why_payload(p.why) for p in c.parts] for c in program.collectives],
        "rematerializations": rematerializations_payload(program),
        "fixes": fixes_payload(program),
    }
