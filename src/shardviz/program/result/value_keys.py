"""Values' keys as the payload sends them: each an index into a table of stems.

A key is its line's call chain, primitive and name stack, then ``#n`` for the n-th
value before it with the same three (lines/naming.py's ``_keys``), so a program's
keys repeat a few dozen stems hundreds of times. The payload sends each stem once
(``key_stems``) and each value's index into it (``values.key_stem``); the reader
counts how many values before it name the same index and appends ``#`` and that
count where it is not 0 (``decodeValueKeys`` in js/payload/program.ts).
"""

from __future__ import annotations

from collections.abc import Iterable


def encode_keys(keys: Iterable[str]) -> tuple[list[str], list[int]]:
    """The stems table and each key's index into it; decoding gives back every key exactly,
    whatever the strings (a key that is no stem's next repeat gets a row of its own)."""
    stems: list[str] = []
    repeats: list[int] = []  # per row: how many keys so far were written as that row
    row_of_stem: dict[str, int] = {}
    indices: list[int] = []
    for key in keys:
        stem, mark, number = key.rpartition("#")
        row = row_of_stem.get(stem) if mark else None
        if row is None or number != str(repeats[row]):
            row = len(stems)
            stems.append(key)
            repeats.append(0)
            row_of_stem[key] = row
        repeats[row] += 1
        indices.append(row)
    return stems, indices
