"""Run encoding of integer columns: the compact form the payload uses.

A run ``[start, step, count]`` stands for ``start, start + step, ...``
(``count`` values). Device ids in mesh order, tile numbers and process
indices are mostly such progressions, so a 4096-device column usually
shrinks to a handful of runs.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np


def encode_runs(values: np.ndarray) -> list[list[int]]:
    """Greedy left-to-right split of ``values`` into arithmetic runs."""
    values = np.asarray(values, dtype=np.int64).ravel()
    n = len(values)
    if n == 0:
        return []
    if n == 1:
        return [[int(values[0]), 0, 1]]
    steps = np.diff(values)
    # Last index of each stretch of equal steps; searching it turns the
    # per-element loop into a per-run loop.
    stretch_ends = np.flatnonzero(steps[1:] != steps[:-1]).tolist()
    stretch_ends.append(len(steps) - 1)
    runs: list[list[int]] = []
    i = 0
    while i < n:
        if i == n - 1:
            runs.append([int(values[i]), 0, 1])
            break
        last_step = stretch_ends[bisect_left(stretch_ends, i)]
        count = last_step - i + 2
        # Index the few run starts rather than converting whole columns.
        runs.append([int(values[i]), int(steps[i]), count])
        i += count
    return runs
