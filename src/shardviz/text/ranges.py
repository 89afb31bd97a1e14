"""Integer sets and index intervals: the arithmetic behind the text view.

Nothing here knows about JAX or terminals. It turns device-id lists into
short exact text (``compress_ids``, ``abbreviate_ids``; tests read it back
with ``expand_ids`` in tests/decoding.py), writes index intervals, and splits a grid of blocks into
groups, which is how the terminal picture folds and merges blocks when there
are too many to draw one by one.

Device-id text is always *sorted and de-duplicated*: a set of devices has no
order worth keeping, and sorted text is what lets ``0-3`` stand for four ids.
Ids are non-negative integers (JAX device ids are).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

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
    nothing. The same rules as ``compressIds`` in ``js/util/ranges.ts``.
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


# --------------------------------------------------------------------------
# intervals and groups of blocks


def format_interval(start: int, stop: int) -> str:
    """An index range as a slice: ``0:4`` holds indices 0, 1, 2 and 3.

    The one notation shardviz writes ranges in (the widget too): a block is
    ``[0:2, 4:6]``, as one would index the array.
    """
    return f"{start}:{stop}"


def format_bytes(count: int) -> str:
    """Human byte counts: ``512 B``, ``4.0 KiB``, ``1.5 MiB`` (as ``formatBytes`` in js/util/ranges.ts)."""
    value = float(count)
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{count} B"
    return f"{value:.1f} {units[unit]}" if value < 10 else f"{value:.0f} {units[unit]}"


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("ps", 1e-12))


def format_seconds(seconds: float) -> str:
    """A time in the unit that fits, three figures, zeros after the point dropped: ``505 ms``, ``52 µs``,
    ``21.9 ns``, ``1234 s`` (as ``formatSeconds`` in js/util/ranges.ts). A figure that rounds up to
    1000 of its unit is written in the next one (999.96 µs is ``1 ms``)."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds == 0:
        return "0 s"
    size = abs(seconds)
    unit = next((k for k, (_, scale) in enumerate(_TIME_UNITS) if size >= scale), len(_TIME_UNITS) - 1)
    text = _three_figures(seconds / _TIME_UNITS[unit][1])
    if unit > 0 and abs(float(text)) >= 1000:
        unit -= 1
        text = _three_figures(seconds / _TIME_UNITS[unit][1])
    return f"{text} {_TIME_UNITS[unit][0]}"


def _three_figures(value: float) -> str:
    """``value`` to three significant figures (all its integer digits where it has more), no trailing zeros."""
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


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


def picture_dims(block_counts: Sequence[int]) -> tuple[tuple[int, ...], int | None, int | None]:
    """Which dimensions a picture draws as rows and columns, and which it folds.

    The grid shows the two most split dimensions (ties go to the later
    dimension, so an unsplit array shows its last two), rows before columns
    in array order; every other dimension is folded. The widget's array map
    picks the same pair by default (js: ``defaultPictureDims``).
    """
    rank = len(block_counts)
    if rank == 0:
        return (), None, None
    if rank == 1:
        return (), None, 0
    ranked = sorted(range(rank), key=lambda d: (block_counts[d], d), reverse=True)
    row, col = sorted(ranked[:2])
    return tuple(d for d in range(rank) if d not in (row, col)), row, col


def device_label(platform: str) -> str:
    """How devices of a platform are named: ``CPU``, ``TPU``; virtual devices with no platform are ``device``."""
    return platform.upper() if platform else "device"


def held_word(unreduced: Sequence[str], sizes: dict[str, int], counts: Any) -> str:
    """What the devices holding one tile hold: copies, or partial sums where the only axes they
    differ along are unreduced (``holders`` where some hold copies of partial sums)."""
    if not unreduced:
        return "copies"
    addends = math.prod(sizes[a] for a in unreduced)
    return "partial sums" if all(int(c) == addends for c in counts) else "holders"


def unreduced_note(unreduced: Sequence[str], sizes: dict[str, int]) -> list[str]:
    """The picture's line on unreduced axes (none without them)."""
    if not unreduced:
        return []
    over = " × ".join(f"{a}={sizes[a]}" for a in unreduced)
    return [f"unreduced over {over}: the devices along {'/'.join(unreduced)} hold partial sums, not copies"]
