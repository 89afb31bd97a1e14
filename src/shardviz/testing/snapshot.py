"""Snapshots of a program's collectives per source line, kept in a small JSON file beside the tests.

A snapshot records, for each line of the user's code that sends collectives,
each (kind, mesh axes) pair with the bytes one device sends per call and the
runs, and how bytes were counted (``bytes_from``: the program's dtypes, or
XLA:CPU's module's, see ``Program.with_bytes``); a program is compared counted
as its snapshot was. A later trace is compared with it: a line that sends a collective the
snapshot lacks, or more bytes or runs of one, fails ("line 42 of model.py
now all-gathers 16 MiB over data"); a line that sends less, or no longer
sends one, passes with a note. Lines are matched by file, function and text,
so code moving up or down a file does not count as a change.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ShardingError
from ..program.device_bytes import recounted
from ..program.model import ProgramData
from ..program.sources import line_text
from .collectives import line_charges
from .errors import SnapshotChanged
from .messages import format_bytes, function_names, relative_file

__all__ = ["FORMAT", "SnapshotResult", "assert_collectives_snapshot", "collectives_record", "compare_records"]

FORMAT = "shardviz collectives snapshot 1"
UPDATE_HINT = "if the change is intended, record it again: pytest --shardviz-update (or update=True)"

VERBS = {
    "all-reduce": "all-reduces",
    "all-gather": "all-gathers",
    "reduce-scatter": "reduce-scatters",
    "all-to-all": "sends all-to-all",
    "collective-permute": "permutes",
    "collective-broadcast": "broadcasts",
    "ragged-all-to-all": "sends ragged all-to-all",
}


@dataclass(frozen=True)
class SnapshotResult:
    """What a snapshot check did: ``recorded`` when it wrote the entry, ``notes`` on what shrank or went."""

    path: str
    name: str
    recorded: bool
    notes: tuple[str, ...] = field(default=())


def collectives_record(program: ProgramData, base: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """A program's collectives per source line, as the snapshot file stores them (files relative to ``base``)."""
    if not isinstance(program, ProgramData):
        raise ShardingError(
            "a collectives snapshot records a program traced with shardviz.trace(f, *args), "
            f"not {type(program).__name__}"
        )
    lines: dict[tuple[str, int] | None, dict[str, Any]] = {}
    seen: dict[tuple[Any, str, str], set[str]] = {}  # collectives already counted in an item's runs
    for ch in line_charges(program):
        c = ch.collective
        if c.group_size <= 1:
            continue  # groups of one device move nothing
        source = ch.source
        key = None if source is None else (source.file, source.line)
        if key not in lines:
            lines[key] = {
                "where": "?" if source is None else f"{relative_file(source.file, base)}:{source.line}",
                "function": "" if source is None else function_names(source.function)[-1],
                "code": "" if source is None else line_text(source.file, source.line),
                "collectives": {},
            }
        items = lines[key]["collectives"]
        item = items.setdefault((c.kind, c.axes_label), {"kind": c.kind, "axes": c.axes_label, "bytes": 0, "runs": 0})
        item["bytes"] += ch.wire_bytes
        counted = seen.setdefault((key, c.kind, c.axes_label), set())
        if c.name not in counted:  # one collective's operands on one line run together
            counted.add(c.name)
            item["runs"] += c.count
    rows = []
    for line in sorted(lines.values(), key=lambda r: _where_order(r["where"])):
        line["collectives"] = sorted(line["collectives"].values(), key=lambda i: (i["kind"], i["axes"]))
        rows.append(line)
    mesh = program.mesh
    return {
        "program": program.name,
        "mesh": " ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes)) if mesh else "",
        "bytes_from": program.bytes_from,
        "lines": rows,
    }


def _where_order(where: str) -> tuple[str, int]:
    file, _, line = where.rpartition(":")
    return (file, int(line)) if line.isdigit() else (where, -1)


def _identities(record: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each line under an identity that survives edits elsewhere in its file: file, function, text, occurrence."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    occurrences: dict[tuple[str, str, str], int] = {}
    for line in record.get("lines", []):
        file = line["where"].rpartition(":")[0]
        if not line.get("code"):
            out[("at", line["where"])] = line
            continue
        base = (file, line.get("function", ""), line["code"])
        k = occurrences.get(base, 0)
        occurrences[base] = k + 1
        out[(*base, k)] = line
    return out


def _place(line: dict[str, Any]) -> str:
    file, _, number = line["where"].rpartition(":")
    if not file:
        return "a line of no file of yours"
    function = f" ({line['function']})" if line.get("function") else ""
    return f"line {number} of {file}{function}"


def _runs(item: dict[str, Any]) -> str:
    return f"x{item['runs']}"


def compare_records(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(grown, notes)``: what was added or grew (each a message), and what shrank or went."""
    grown: list[str] = []
    notes: list[str] = []
    if old.get("mesh") != new.get("mesh"):
        notes.append(f"the mesh is {new.get('mesh') or 'none'} now, {old.get('mesh') or 'none'} in the snapshot")
    before = _identities(old)
    after = _identities(new)
    for identity, line in after.items():
        was = {(i["kind"], i["axes"]): i for i in before.get(identity, {}).get("collectives", [])}
        code = f"\n      {line['code']}" if line.get("code") else ""
        for item in line["collectives"]:
            verb, axes = VERBS.get(item["kind"], f"runs {item['kind']}"), item["axes"]
            now = f"{_place(line)} now {verb} {format_bytes(item['bytes'])} over {axes} per call ({_runs(item)})"
            old_item = was.get((item["kind"], axes))
            if old_item is None:
                grown.append(f"{now}; the snapshot has none{code}")
            elif item["bytes"] > old_item["bytes"] or item["runs"] > old_item["runs"]:
                grown.append(f"{now}; the snapshot has {format_bytes(old_item['bytes'])} ({_runs(old_item)}){code}")
            elif item["bytes"] < old_item["bytes"] or item["runs"] < old_item["runs"]:
                notes.append(f"{now}, less than the {format_bytes(old_item['bytes'])} ({_runs(old_item)}) recorded")
    for identity, line in before.items():
        kept = {(i["kind"], i["axes"]) for i in after.get(identity, {}).get("collectives", [])}
        for item in line["collectives"]:
            if (item["kind"], item["axes"]) not in kept:
                verb = VERBS.get(item["kind"], f"runs {item['kind']}")
                notes.append(
                    f"{_place(line)} no longer {verb} "
                    f"{format_bytes(item['bytes'])} over {item['axes']} (it did in the snapshot)"
                )
    return grown, notes


def _recount_note(program: ProgramData, old: dict[str, Any] | None, update: bool) -> str:
    """Why ``program`` is compared counted as XLA:CPU's module (or as the device) moves its bytes:
    the snapshot was recorded that way ("" where it counts as the program does). A snapshot without
    ``bytes_from`` was recorded before shardviz counted the program's dtypes: XLA:CPU's module's."""
    if update or old is None:
        return ""
    recorded = old.get("bytes_from", "cpu")
    if recorded == program.bytes_from or recorded not in ("device", "cpu"):
        return ""
    if not any(c.widened for c in program.collectives):
        return ""
    said = {"cpu": "as XLA:CPU's module moves them (bf16/f16 as f32)", "device": "in the program's dtypes"}
    return (
        f"the snapshot counts bytes {said[recorded]}, so the program was compared counted that way; "
        f"record it again (pytest --shardviz-update, or update=True) to count them {said[program.bytes_from]}"
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"format": FORMAT, "snapshots": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ShardingError(f"cannot read the snapshot file {path}: {err}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("snapshots"), dict):
        raise ShardingError(f"{path} is no shardviz collectives snapshot (its format is not {FORMAT!r})")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data["snapshots"] = dict(sorted(data["snapshots"].items()))
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)


def assert_collectives_snapshot(
    program: ProgramData,
    path: str | os.PathLike[str],
    name: str | None = None,
    *,
    update: bool = False,
    base: str | os.PathLike[str] | None = None,
) -> SnapshotResult:
    """Compare ``program``'s collectives per line with the snapshot ``name`` in the JSON file ``path``.

    With ``update=True`` the snapshot is (re)written and the check passes.
    Otherwise a line that sends a collective the snapshot lacks, or more bytes
    or runs of one, raises :class:`SnapshotChanged` (an AssertionError) naming
    each ("line 42 of model.py (loss) now all-gathers 16 MiB over data per
    call"); a missing snapshot fails too, saying how to record it. Less
    traffic passes, with ``notes`` saying what shrank. ``name`` defaults to
    the program's name; files are written relative to ``base`` (default: the
    folder of ``path``).
    """
    file = Path(path)
    key = name if name is not None else program.name
    if not isinstance(key, str) or not key:
        raise ShardingError(f"a snapshot's name is a non-empty string, not {key!r}")
    data = _load(file)
    old = data["snapshots"].get(key)
    recount = _recount_note(program, old, update)
    if recount:  # compare like with like: the program counted as the snapshot was
        program = recounted(program, old.get("bytes_from", "cpu") if old is not None else "cpu")
    new = collectives_record(program, base if base is not None else Path(path).parent)
    if update:
        changes = tuple(compare_records(old, new)[1]) if old is not None else ()
        data["snapshots"][key] = new
        _save(file, data)
        return SnapshotResult(str(file), key, True, changes)
    if old is None:
        raise SnapshotChanged(
            f"no snapshot named {key!r} in {file}: record the collectives of {program.name} "
            "with pytest --shardviz-update (or update=True)",
            subject=program,
        )
    grown, notes = compare_records(old, new)
    notes += [recount] if recount else []
    if grown:
        lines = [f"the collectives of {program.name} grew since the snapshot {key!r} in {file}:"]
        lines += [f"  {g}" for g in grown]
        if notes:
            lines += ["also (these pass):", *(f"  {n}" for n in notes)]
        lines += ["", UPDATE_HINT]
        raise SnapshotChanged("\n".join(lines), subject=program)
    return SnapshotResult(str(file), key, False, tuple(notes))
