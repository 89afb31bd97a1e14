"""``Program.explain()``: why each collective is there, in words, and what would remove it."""

from __future__ import annotations

from typing import Any

from ...text.files import file_label
from ...text.ranges import format_bytes
from .reasons import spec_text


def explain_text(program: Any, *, fixes: bool = False, hardware: str = "tpu-v5p") -> str:
    """One entry per collective (a combined one's operands each on their own line): where, what, because."""
    lines = [f"why {program.name} runs each collective"]
    if not program.collectives:
        lines.append("  no collectives")
    for k, c in enumerate(program.collectives):
        for part in c.parts or (None,):
            item = c if part is None else part
            source = item.source
            where = "no line of yours" if source is None else f"{file_label(source.file)}:{source.line}"
            told = item.where_label
            head = f"[{k}] {c.kind} over {c.axes_label} at {where}" + (f" ({told})" if told else "")
            lines.append(f"{head}, {format_bytes(item.wire_bytes * c.count)} per call")
            why = item.why
            if why is None:
                lines.append("    (no reason read)")
                continue
            if why.expression:
                lines.append(f"    {why.primitive} in `{why.expression}`")
            for o in why.operands:
                lines.append(f"    {o.role} {o.label} {o.type_str} {o.spec_text}" + (f" ({o.note})" if o.note else ""))
            if why.wanted is not None:
                lines.append(f"    wanted {spec_text(why.wanted)} by {why.wanted_by}")
            lines.append(f"    {why.text}")
        if fixes:
            for fix in () if c.finder is None else c.finder.fixes_of(c, hardware):
                lines.append("    fix: " + fix.text.replace("\n", "\n    "))
    for k, r in enumerate(program.rematerializations):
        lines.append(r.text + f"; its collectives send {format_bytes(r.wire_bytes)} per device per call")
        if fixes:
            finder = next((c.finder for c in program.collectives if c.finder is not None), None)
            for fix in () if finder is None else finder.fixes_of_rematerialization(k, hardware):
                lines.append("    fix: " + fix.text.replace("\n", "\n    "))
    return "\n".join(lines)
