"""Snapshots of a program's collectives per source line, kept in a small JSON file beside the tests.

A snapshot records, for each line of the user's code that sends collectives,
each (kind, mesh axes) pair with the bytes one device sends per call and the
runs, how bytes were counted (``bytes_from``: the program's dtypes, or
XLA:CPU's module's, see ``Program.with_bytes``; a program is compared counted
as its snapshot was), and each input's and output's layout. A later trace is compared with
it: a line that sends a collective the snapshot lacks, or more bytes or runs
of one, fails ("line 42 of model.py now all-gathers 16 MiB over data"). Less
traffic, a collective gone or a layout changed passes with a note, unless the
check is strict: then any change beyond a relative tolerance fails, so a
dropped batch axis (less traffic, and an input no longer split) is caught.
Lines are matched by file, function, layer and their code with comments and
spaces left out, so code moving up or down a file, a reformatted line or a
new comment is no change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ShardingError
from ..program.memory.device_bytes import recounted
from ..program.model import ProgramData
from .collectives import line_charges
from .errors import FailurePage, SnapshotChanged
from .layout import typed_text
from .messages import function_names, line_code, relative_file
from .remat import rematerialization_records
from .snapshot_diff import Comparison, compare_records
from .snapshot_file import FORMAT, change_records, load_records

__all__ = [
    "FORMAT",
    "SnapshotResult",
    "assert_collectives_snapshot",
    "collectives_record",
    "compare_records",
]

UPDATE_COMMAND = "pytest --shardviz-update (or update=True)"


@dataclass(frozen=True)
class SnapshotResult:
    """What a snapshot check did: ``recorded`` when it wrote the record; ``notes`` on what changed and passed
    (a comparison's smaller traffic, or, for a record written again, every change against the one it replaced)."""

    path: str
    name: str
    recorded: bool
    notes: tuple[str, ...] = field(default=())


def collectives_record(program: ProgramData, base: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """A program's collectives per source line and its inputs' and outputs' layouts, as the snapshot file
    stores them (files relative to ``base``)."""
    if not isinstance(program, ProgramData):
        raise ShardingError(
            "a collectives snapshot records a program traced with shardviz.trace(f, *args), "
            f"not {type(program).__name__}"
        )
    lines: dict[tuple[str, int, str] | None, dict[str, Any]] = {}
    seen: dict[tuple[Any, str, str], set[str]] = {}  # collectives already counted in an item's runs
    for ch in line_charges(program):
        c = ch.collective
        if c.group_size <= 1:
            continue  # groups of one device move nothing
        source = ch.source
        key = ch.key
        if key not in lines:
            lines[key] = {
                "where": "?" if source is None else f"{relative_file(source.file, base)}:{source.line}",
                "function": "" if source is None else function_names(source.function)[-1],
                **({"layer": ch.layer} if ch.layer else {}),
                "code": line_code(source),
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
    for line in sorted(lines.values(), key=lambda r: (_where_order(r["where"]), r.get("layer", ""))):
        line["collectives"] = sorted(line["collectives"].values(), key=lambda i: (i["kind"], i["axes"]))
        rows.append(line)
    mesh = program.mesh
    remats = rematerialization_records(program, base)
    return {
        "program": program.name,
        "mesh": " ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes)) if mesh else "",
        "inputs": [{"path": p, "type": typed_text(lay)} for p, lay in zip(program.input_paths, program.inputs)],
        "outputs": [{"path": p, "type": typed_text(lay)} for p, lay in zip(program.output_paths, program.outputs)],
        "bytes_from": program.bytes_from,
        "lines": rows,
        # kept only where XLA rematerialized: a record without any stays as it was
        **({"rematerializations": remats} if remats else {}),
    }


def _where_order(where: str) -> tuple[str, int]:
    file, _, line = where.rpartition(":")
    return (file, int(line)) if line.isdigit() else (where, -1)


def _tolerance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ShardingError(
            f"tolerance is a relative change in bytes from 0 up to (not including) 1, e.g. 0.02 for 2%, not {value!r}"
        )
    return float(value)


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


def assert_collectives_snapshot(
    program: ProgramData,
    path: str | os.PathLike[str],
    name: str | None = None,
    *,
    update: bool = False,
    base: str | os.PathLike[str] | None = None,
    strict: bool = False,
    tolerance: float = 0.0,
    update_command: str = UPDATE_COMMAND,
) -> SnapshotResult:
    """Compare ``program``'s collectives per line with the snapshot ``name`` in the JSON file ``path``.

    With ``update=True`` the snapshot is (re)written and the check passes; its
    ``notes`` then list every change against the record it replaced (growth
    and shrinkage). Otherwise a line that sends a collective the snapshot
    lacks, or more bytes or runs of one, raises :class:`SnapshotChanged` (an
    AssertionError) naming each, where, and by how much; a missing snapshot
    fails too, saying how to record it. Less traffic, a collective gone and
    a changed input or output layout pass with ``notes``, unless ``strict``:
    then any change fails. A change in bytes within ``tolerance`` (relative:
    0.02 is 2%) is no change. ``name`` defaults to the program's name; files
    are written relative to ``base`` (default: the folder of ``path``);
    ``update_command`` is how the messages say to record it again.
    """
    __tracebackhide__ = True
    tolerance = _tolerance(tolerance)
    file = Path(path)
    key = name if name is not None else program.name
    if not isinstance(key, str) or not key:
        raise ShardingError(f"a snapshot's name is a non-empty string, not {key!r}")
    recorded = None if update else load_records(file).get(key)
    recount = _recount_note(program, recorded, update)
    if recount:  # compare like with like: the program counted as the snapshot was
        program = recounted(program, recorded.get("bytes_from", "cpu") if recorded is not None else "cpu")
    new = collectives_record(program, base if base is not None else Path(path).parent)
    if update:
        old = change_records(file, lambda records: _put(records, key, new))
        diff = compare_records(old, new, tolerance=tolerance) if old is not None else None
        return SnapshotResult(str(file), key, True, () if diff is None else tuple(diff.lines(signs=True)))
    old = load_records(file).get(key)
    if old is None:
        raise SnapshotChanged(
            f"no snapshot named {key!r} in {file}: record the collectives of {program.name} with {update_command}",
            subject=program,
        )
    diff = compare_records(old, new, tolerance=tolerance)
    if recount:
        diff = Comparison(diff.changes, (*diff.notes, recount))
    failing = diff.failing(strict=strict)
    if failing:
        raise SnapshotChanged(
            _message(program, key, file, diff, strict, tolerance, update_command),
            subject=program,
            page=_page(diff, key, file, strict, tolerance),
        )
    return SnapshotResult(str(file), key, False, tuple(diff.lines()))


def _put(records: dict[str, Any], key: str, record: dict[str, Any]) -> dict[str, Any] | None:
    """Store ``record`` under ``key``; return the record it replaces (None: a new one)."""
    old = records.get(key)
    records[key] = record
    return old


def _message(
    program: ProgramData,
    key: str,
    file: Path,
    diff: Comparison,
    strict: bool,
    tolerance: float,
    update_command: str,
) -> str:
    how = "changed" if strict else "grew"
    mode = f" (strict{f', tolerance {tolerance:.0%}' if tolerance else ''})" if strict else ""
    lines = [f"the collectives of {program.name} {how} since the snapshot {key!r} in {file}{mode}:"]
    lines += [f"  {line}" for line in diff.lines(failing=True, strict=strict)]
    passing = diff.lines(failing=False, strict=strict)
    if passing:
        lines += ["also (these pass):", *(f"  {line}" for line in passing)]
    lines += ["", f"if the change is intended, record it again: {update_command}"]
    return "\n".join(lines)


def _page(diff: Comparison, key: str, file: Path, strict: bool, tolerance: float) -> FailurePage:
    mode = "strict" if strict else "no growth"
    return FailurePage(
        budget=f"the snapshot {key!r} in {file} ({mode}{f', tolerance {tolerance:.0%}' if tolerance else ''})",
        figure=f"{len(diff.failing(strict=strict))} changes that fail, {len(diff.changes)} in all",
        columns=("line", "code", "collective", "axes", "snapshot", "now", "change"),
        rows=tuple(change.row() for change in diff.changes),
        marked=tuple(change.fails(strict) for change in diff.changes),
    )


def stale_records(path: Path, tests: set[str], finished: set[str], used: set[str], *, prune: bool) -> list[str]:
    """The records of ``path`` whose test is gone, removed from the file with ``prune``.

    ``tests`` are every test the module collected (node names, parameters
    included), ``finished`` those that ran to their end in this run and
    ``used`` the records they checked or wrote. A record is stale when it
    belongs to no test of ``tests`` (the test, or that parameter, was
    removed) or to a finished test that did not use it (a call removed).
    Records of tests that did not run are left alone.
    """

    def find(records: dict[str, Any]) -> list[str]:
        gone = []
        for name in sorted(records):
            owner = record_owner(name, tests)
            if owner is None or (owner in finished and name not in used):
                gone.append(name)
        if prune:
            for name in gone:
                del records[name]
        return gone

    return list(change_records(path, find)) if prune else find(dict(load_records(path)))


def record_owner(name: str, tests: set[str]) -> str | None:
    """The test a record is named after: ``t`` for ``t``, ``t::name`` or ``t#2``; None when no test of ``tests``."""
    owners = [t for t in tests if name == t or name.startswith((f"{t}::", f"{t}#"))]
    return max(owners, key=len) if owners else None
