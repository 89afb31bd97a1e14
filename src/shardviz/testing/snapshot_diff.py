"""What changed between two collectives records: per line and collective, per input and output layout.

Each change is one sentence that says what changed, where (line, function,
layer) and by how much; ``grows`` marks more traffic (a new collective, more
bytes or runs), which fails every snapshot check, while the rest fail only a
strict one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .messages import format_bytes, format_change

__all__ = ["Change", "Comparison", "code_key", "compare_records"]

VERBS = {
    "all-reduce": "all-reduces",
    "all-gather": "all-gathers",
    "reduce-scatter": "reduce-scatters",
    "all-to-all": "sends all-to-all",
    "collective-permute": "permutes",
    "collective-broadcast": "broadcasts",
    "ragged-all-to-all": "sends ragged all-to-all",
}
_AXES_IN_TYPE = re.compile(r"@(?:\(([^()]*)\)|([^,\]()@]+))")  # 8@x or 8@(x,y) in a type string


@dataclass(frozen=True)
class Change:
    """One difference: its sentence, the line's code, the failure page's cells and its direction."""

    text: str
    code: str
    cells: tuple[str, ...]  # line, code, collective, axes, snapshot, now, change
    grows: bool  # more traffic: fails every check
    sign: str  # "+" more, "-" less or gone, "~" otherwise changed

    def fails(self, strict: bool) -> bool:
        return self.grows or strict

    def row(self) -> tuple[str, ...]:
        return self.cells

    def line(self, *, signs: bool = False) -> str:
        text = f"{self.sign} {self.text}" if signs else self.text
        return text + (f"\n      {self.code}" if self.code else "")


@dataclass(frozen=True)
class Comparison:
    """Every change between a record and a new one, and notes that never fail (a record too old to say)."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()

    def failing(self, *, strict: bool) -> list[Change]:
        return [c for c in self.changes if c.fails(strict)]

    def lines(self, *, failing: bool | None = None, strict: bool = False, signs: bool = False) -> list[str]:
        """The changes as message lines: all of them (``failing=None``, notes too), those that fail, or those
        that pass (with the notes)."""
        chosen = [c for c in self.changes if failing is None or c.fails(strict) == failing]
        out = [c.line(signs=signs) for c in chosen]
        return out + list(self.notes) if failing is not True else out


def code_key(code: str) -> str:
    """A line's code as its identity: comments and spaces left out (inside string literals kept)."""
    out: list[str] = []
    quote = ""
    k = 0
    while k < len(code):
        c = code[k]
        if quote:
            out.append(c)
            if c == "\\" and k + 1 < len(code):
                out.append(code[k + 1])
                k += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#":
            break
        elif not c.isspace():
            out.append(c)
        k += 1
    return "".join(out)


def _identities(record: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each line under an identity that survives edits elsewhere in its file: file, function, layer, code
    (without comments and spaces) and the code's occurrence among them."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    occurrences: dict[tuple[str, ...], int] = {}
    for line in record.get("lines", []):
        file = line["where"].rpartition(":")[0]
        code = code_key(line.get("code", ""))
        if not code:
            out[("at", line["where"], line.get("layer", ""))] = line
            continue
        base = (file, line.get("function", ""), line.get("layer", ""), code)
        k = occurrences.get(base, 0)
        occurrences[base] = k + 1
        out[(*base, k)] = line
    return out


def _place(line: dict[str, Any]) -> str:
    file, _, number = line["where"].rpartition(":")
    named = "; in ".join(p for p in (line.get("function", ""), line.get("layer", "")) if p)
    named = f" ({named})" if named else ""
    if not file:
        return f"a line of no file of yours{named}"
    return f"line {number} of {file}{named}"


def _amount(item: dict[str, Any]) -> str:
    return f"{format_bytes(item['bytes'])} (x{item['runs']})"


def _sends(item: dict[str, Any], axes: str) -> str:
    return f"{format_bytes(item['bytes'])} over {axes} per call (x{item['runs']})"


def _pair_moved(
    before: dict[tuple[Any, ...], dict[str, Any]], after: dict[tuple[Any, ...], dict[str, Any]]
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Lines matched across the records: by identity, then an edited line with the collectives an unmatched
    old line of its function had (its code changed); the rest stand alone."""
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    left = {k: v for k, v in before.items() if k not in after}
    for identity, line in after.items():
        old = before.get(identity)
        if old is None:
            shape = _shape(line)
            old_key = next((k for k, v in left.items() if _shape(v) == shape), None)
            old = left.pop(old_key) if old_key is not None else None
        pairs.append((old, line))
    pairs += [(line, None) for line in left.values()]
    return pairs


def _shape(line: dict[str, Any]) -> tuple[Any, ...]:
    file = line["where"].rpartition(":")[0]
    kinds = tuple(sorted((i["kind"], i["axes"]) for i in line["collectives"]))
    return (file, line.get("function", ""), line.get("layer", ""), kinds)


def _line_changes(old: dict[str, Any] | None, new: dict[str, Any] | None, tolerance: float) -> list[Change]:
    line = new if new is not None else old
    assert line is not None
    place, code = _place(line), line.get("code", "")
    was = {(i["kind"], i["axes"]): i for i in (old or {}).get("collectives", [])}
    now = {(i["kind"], i["axes"]): i for i in (new or {}).get("collectives", [])}
    out = []
    for key in [*now, *(k for k in was if k not in now)]:
        kind, axes = key
        verb = VERBS.get(kind, f"runs {kind}")
        before, after = was.get(key), now.get(key)
        if before is None and after is not None:
            text = f"{place} now {verb} {_sends(after, axes)}; the snapshot has none"
            text += f": +{format_bytes(after['bytes'])}"
            grows, sign = True, "+"
        elif after is None and before is not None:
            text = f"{place} no longer {verb} over {axes}; the snapshot has {_sends(before, axes)}"
            text += f": -{format_bytes(before['bytes'])}"
            grows, sign = False, "-"
        else:
            assert before is not None and after is not None
            more = after["bytes"] > before["bytes"] * (1 + tolerance) or after["runs"] > before["runs"]
            less = after["bytes"] < before["bytes"] * (1 - tolerance) or after["runs"] < before["runs"]
            if not more and not less:
                continue
            text = (
                f"{place} now {verb} {_sends(after, axes)}; the snapshot has {_amount(before)}: "
                f"{format_change(before['bytes'], after['bytes'])}"
            )
            grows, sign = more, "+" if more else "-"
        cells = (
            place,
            code,
            kind,
            axes,
            "none" if before is None else _amount(before),
            "none" if after is None else _amount(after),
            format_change(before["bytes"] if before else 0, after["bytes"] if after else 0),
        )
        out.append(Change(text, code, cells, grows, sign))
    return out


def _layout_changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    out = []
    for role in ("inputs", "outputs"):
        was = {e["path"]: e["type"] for e in old.get(role, [])}
        now = {e["path"]: e["type"] for e in new.get(role, [])}
        for path in [*now, *(p for p in was if p not in now)]:
            before, after = was.get(path), now.get(path)
            if before == after:
                continue
            what = f"{role[:-1]} {path}"
            if before is None:
                text = f"{what} is new: {after}"
            elif after is None:
                text = f"{what} is gone; the snapshot has {before}"
            else:
                text = f"{what} is laid out as {after} now; the snapshot has {before}{_lost_axes(before, after)}"
            cells = (what, "", "layout", "", before or "none", after or "none", "changed")
            out.append(Change(text, "", cells, False, "~"))
    return out


def _axes_in(type_str: str) -> set[str]:
    return {a.strip() for many, one in _AXES_IN_TYPE.findall(type_str) for a in (many or one).split(",") if a.strip()}


def _lost_axes(before: str, after: str) -> str:
    lost = sorted(_axes_in(before) - _axes_in(after))
    return f" (no longer split by {', '.join(lost)})" if lost else ""


def _axes_used(record: dict[str, Any]) -> set[str]:
    axes = {a for line in record.get("lines", []) for i in line["collectives"] for a in i["axes"].split(",")}
    for role in ("inputs", "outputs"):
        for entry in record.get(role, []):
            axes |= _axes_in(entry["type"])
    return {a for a in axes if a not in ("?", "-", "")}


def rematerialization_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Change]:
    """A rematerialization the snapshot lacks fails (every device gathers a whole array); one gone passes."""

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r.get("where"), r.get("shape"), r.get("from"), r.get("to"))

    was, now = {key(r): r for r in old}, {key(r): r for r in new}
    out = []
    for k, r in now.items():
        if k not in was:
            text = (
                f"{r['where']}: an involuntary full rematerialization is new: XLA gathers the whole "
                f"{r['shape']} ({r['bytes']} B) on every device to go from {r['from']} to {r['to']}"
            )
            cells = (r["where"], "", "rematerialization", "", "none", f"{r['from']} -> {r['to']}", "new")
            out.append(Change(text, "", cells, True, "+"))
    for k, r in was.items():
        if k not in now:
            text = f"{r['where']}: the involuntary full rematerialization from {r['from']} to {r['to']} is gone"
            cells = (r["where"], "", "rematerialization", "", f"{r['from']} -> {r['to']}", "none", "gone")
            out.append(Change(text, "", cells, False, "-"))
    return out


def compare_records(old: dict[str, Any], new: dict[str, Any], *, tolerance: float = 0.0) -> Comparison:
    """Every change from record ``old`` to record ``new``; byte changes within ``tolerance`` (relative) are none."""
    changes: list[Change] = []
    notes: list[str] = []
    if old.get("mesh") != new.get("mesh"):
        text = f"the mesh is {new.get('mesh') or 'none'} now; the snapshot has {old.get('mesh') or 'none'}"
        changes.append(Change(text, "", ("mesh", "", "", "", old.get("mesh", ""), new.get("mesh", ""), ""), False, "~"))
    for before, after in _pair_moved(_identities(old), _identities(new)):
        changes += _line_changes(before, after, tolerance)
    if "inputs" in old:
        changes += _layout_changes(old, new)
    else:
        notes.append("the snapshot keeps no input or output layouts (recorded before they were kept): record it again")
    changes += rematerialization_changes(old.get("rematerializations", []), new.get("rematerializations", []))
    lost = sorted(_axes_used(old) - _axes_used(new)) if "inputs" in old else []
    if lost:
        text = (
            f"the mesh axes {', '.join(lost)} are used no more: no collective runs over them "
            "and no input or output is split by them"
        )
        changes.append(Change(text, "", ("axes", "", "", ", ".join(lost), "used", "unused", ""), False, "-"))
    return Comparison(tuple(changes), tuple(notes))
