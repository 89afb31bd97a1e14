"""Integer sets and index intervals: the arithmetic behind the text view.

Nothing here knows about JAX or terminals. It turns device-id lists into
short exact text (``compress_ids``, ``abbreviate_ids``) and back
(``expand_ids``), writes index intervals, and splits a grid of blocks into
groups, which is how the terminal picture folds and merges blocks when there
are too many to draw one by one.

Device-id text is always *sorted and de-duplicated*: a set of devices has no
order worth keeping, and sorted text is what lets ``0-3`` stand for four ids.
Ids are non-negative integers (JAX device ids are).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

ELLIPSIS = "..."


def _runs(ids: Iterable[int] | np.ndarray) -> list[tuple[int, int]]:
    """Sorted unique ids as maximal runs of consecutive integers ``(start, length)``."""
    values = np.unique(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64))
    if values.size == 0:
        return []
    if values[0] < 0:
        raise ValueError(f"device ids are non-negative; got {int(values[0])}")
    breaks = np.flatnonzero(np.diff(values) != 1) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [values.size]))
    return [(int(values[a]), int(b - a)) for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]


def _run_text(start: int, length: int, *, pair_as_range: bool = False) -> str:
    if length == 1:
        return str(start)
    if length == 2 and not pair_as_range:
        return f"{start},{start + 1}"
    return f"{start}-{start + length - 1}"


def compress_ids(ids: Iterable[int] | np.ndarray) -> str:
    """Sorted ids with runs of three or more merged: ``[0,1,2,3,8]`` -> ``"0-3,8"``.

    Input order does not matter (``[4, 0]`` -> ``"0,4"``) and duplicates are
    dropped. Two consecutive ids stay a list (``"4,5"``), as a range would save
    nothing. The same rules as ``compressIds`` in ``js/ranges.ts``.
    """
    return ",".join(_run_text(s, n) for s, n in _runs(ids))


def abbreviate_ids(ids: Iterable[int] | np.ndarray) -> str:
    """Like :func:`compress_ids`, but a regular pattern of runs is elided.

    Runs of equal length whose starts step evenly are written as the first
    two, ``...`` and the last, when that is shorter:
    ``0,16,32,...,240`` reads ``"0,16,...,240"`` and sixteen blocks of four,
    sixteen apart, read ``"0-3,16-19,...,240-243"``. The text is still exact:
    :func:`expand_ids` gives every id back.
    """
    runs = _runs(ids)
    parts: list[str] = []
    i = 0
    while i < len(runs):
        j = i
        if i + 1 < len(runs):
            length = runs[i][1]
            step = runs[i + 1][0] - runs[i][0]
            while j + 1 < len(runs) and runs[j + 1][1] == length and runs[j + 1][0] - runs[j][0] == step:
                j += 1
        if j - i + 1 < 3:
            parts.append(_run_text(*runs[i]))
            i += 1
            continue
        full = ",".join(_run_text(s, n) for s, n in runs[i : j + 1])
        short = ",".join(
            [
                _run_text(*runs[i], pair_as_range=True),
                _run_text(*runs[i + 1], pair_as_range=True),
                ELLIPSIS,
                _run_text(*runs[j], pair_as_range=True),
            ]
        )
        parts.append(short if len(short) < len(full) else full)
        i = j + 1
    return ",".join(parts)


def expand_ids(text: str) -> list[int]:
    """The ids a :func:`compress_ids` or :func:`abbreviate_ids` text stands for, sorted.

    ``"a-b"`` is every id from a to b; ``"p,q,...,z"`` continues the pattern
    set by the runs ``p`` and ``q`` (same length, same step) up to ``z``.
    """
    text = text.strip()
    if not text:
        return []
    tokens = [t.strip() for t in text.split(",")]
    runs: list[tuple[int, int]] = []  # (start, length), in text order
    pending_ellipsis = False
    for tok in tokens:
        if tok == ELLIPSIS:
            if len(runs) < 2 or pending_ellipsis:
                raise ValueError(f"'...' needs two runs before it in {text!r}")
            pending_ellipsis = True
            continue
        lo, sep, hi = tok.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"cannot read {tok!r} in {text!r}")
        start, stop = int(lo), int(hi) if sep else int(lo)
        if stop < start:
            raise ValueError(f"range {tok!r} runs backwards in {text!r}")
        if pending_ellipsis:
            (s0, n0), (s1, n1) = runs[-2], runs[-1]
            step = s1 - s0
            if n0 != n1 or step <= 0 or (start - s1) % step or stop - start + 1 != n1:
                raise ValueError(f"{tok!r} does not continue the pattern before '...' in {text!r}")
            runs.extend((s, n1) for s in range(s1 + step, start, step))
            pending_ellipsis = False
        runs.append((start, stop - start + 1))
    if pending_ellipsis:
        raise ValueError(f"'...' must be followed by the last run in {text!r}")
    return sorted({s + k for s, n in runs for k in range(n)})


# --------------------------------------------------------------------------
# intervals and groups of blocks


def format_interval(start: int, stop: int) -> str:
    """A half-open index interval: ``[0:4)`` holds indices 0, 1, 2 and 3."""
    return f"[{start}:{stop})"


def format_bytes(count: int) -> str:
    """Human byte counts: ``512 B``, ``4.0 KiB``, ``1.5 MiB`` (as ``formatBytes`` in js/ranges.ts)."""
    value = float(count)
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{count} B"
    return f"{value:.1f} {units[unit]}" if value < 10 else f"{value:.0f} {units[unit]}"


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` in ascending order (``[1]`` for 0 or 1)."""
    if n <= 1:
        return [1]
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


def smallest_group(count: int, max_groups: int) -> int:
    """The smallest divisor ``g`` of ``count`` with ``count / g <= max_groups``.

    Merging blocks in groups of ``g`` leaves equal groups; ``count`` itself
    (one group) always qualifies.
    """
    for g in divisors(count):
        if count // g <= max_groups:
            return g
    return max(count, 1)


def aligned_groups(grid: Sequence[int], max_groups: int) -> int:
    """How many consecutive row-major cells of ``grid`` to fold into one group.

    Only sizes whose groups are boxes in index space qualify (a divisor of the
    last dimension, or whole last dimensions times a divisor of the one
    before, ...), so that every group can be named by one interval per
    dimension. The smallest such size leaving at most ``max_groups`` groups.
    """
    total = math.prod(grid)
    inner = 1
    for extent in reversed(grid):
        for d in divisors(extent):
            if total // (inner * d) <= max_groups:
                return inner * d
        inner *= extent
    return max(total, 1)


def group_extent(grid: Sequence[int], group: int, index: int) -> tuple[tuple[int, int], ...]:
    """Block range ``[lo, hi)`` per dimension covered by group ``index`` of size ``group``.

    ``group`` must come from :func:`aligned_groups` for the same ``grid``.
    """
    if not grid:
        return ()
    first = np.unravel_index(index * group, grid)
    last = np.unravel_index(index * group + group - 1, grid)
    return tuple((int(a), int(b) + 1) for a, b in zip(first, last, strict=True))


def spans(count: int, group: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` block ranges of ``count`` blocks taken ``group`` at a time."""
    return [(lo, min(lo + group, count)) for lo in range(0, count, group)] or [(0, 0)]
