"""The snapshot JSON files: read whole, changed one record at a time under a lock, written atomically.

Several pytest processes (``pytest -n 2``) may record into one file at once.
Each change takes an exclusive ``fcntl`` lock on the file's folder, reads the
file as it is now, changes its own records, writes a temporary file of its
own (a unique name beside the file) and renames it over the file, so no
writer loses another's records and a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ShardingError

try:  # POSIX; elsewhere writes are still atomic, only not serialised
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT", "change_records", "load_records"]

FORMAT = "shardviz collectives snapshot 1"


def load_records(path: Path) -> dict[str, Any]:
    """The file's records by name (none for a file that does not exist yet)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ShardingError(f"cannot read the snapshot file {path}: {err}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("snapshots"), dict):
        raise ShardingError(f"{path} is no shardviz collectives snapshot (its format is not {FORMAT!r})")
    return data["snapshots"]


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` for as long as the block runs (held by this process alone)."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing the descriptor releases the lock


def change_records(path: Path, change: Callable[[dict[str, Any]], Any]) -> Any:
    """Apply ``change`` to the file's records as they are now, under the lock, and write them back.

    ``change`` mutates the records in place and returns what the caller
    wants back; the file is written only when the records differ.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent):
        records = load_records(path)
        before = json.dumps(records, sort_keys=True)
        result = change(records)
        if json.dumps(records, sort_keys=True) != before:
            _write(path, records)
    return result


def _write(path: Path, records: dict[str, Any]) -> None:
    if not records and path.exists():
        path.unlink()  # no record left: no file
        return
    data = {"format": FORMAT, "snapshots": dict(sorted(records.items()))}
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
