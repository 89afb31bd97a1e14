"""What moving an array from one layout to another must bring each device,
read from the two layouts alone: the part of its new block it did not hold.

No program can move less: a device can make its new block only from what it
held and what it receives. This needs no compile, so it answers where XLA
cannot compile the move (the array view's move line says both where both
exist; tests/test_move_needs.py checks the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import LayoutData


@dataclass(frozen=True)
class MoveNeeds:
    """``most_bytes``: the most one device lacked of its new block; ``receiving``: the devices
    that lacked any of it; ``devices``: the devices of the new layout."""

    most_bytes: int
    receiving: int
    devices: int

    def to_json(self) -> dict[str, Any]:
        return {"most_bytes": self.most_bytes, "receiving": self.receiving, "devices": self.devices}


def block_boxes(layout: LayoutData) -> tuple[np.ndarray, np.ndarray]:
    """Each device's block as ``(starts, stops)``, arrays of shape (devices, rank), in mesh order."""
    blocks = layout.blocks
    count = len(blocks.tile)
    rank = len(blocks.bounds)
    starts = np.zeros((count, rank), dtype=np.int64)
    stops = np.zeros((count, rank), dtype=np.int64)
    cells = np.unravel_index(np.asarray(blocks.tile, dtype=np.int64), blocks.grid) if rank else ()
    for d, cell in enumerate(cells):
        cuts = np.asarray(blocks.bounds[d], dtype=np.int64)
        starts[:, d] = cuts[cell]
        stops[:, d] = cuts[cell + 1]
    return starts, stops


def lacked_bytes(before: LayoutData, after: LayoutData) -> np.ndarray:
    """Bytes of each device's block under ``after`` (mesh order) that it did not hold under
    ``before``: all of it for a device ``before`` did not use."""
    new_starts, new_stops = block_boxes(after)
    old_starts, old_stops = block_boxes(before)
    old_ids = np.asarray(before.columns.ids, dtype=np.int64)
    new_ids = np.asarray(after.columns.ids, dtype=np.int64)
    order = np.argsort(old_ids)
    sorted_ids = old_ids[order]
    at = np.minimum(np.searchsorted(sorted_ids, new_ids), len(sorted_ids) - 1)
    held = sorted_ids[at] == new_ids
    old_position = order[at]
    sides = np.minimum(new_stops, old_stops[old_position]) - np.maximum(new_starts, old_starts[old_position])
    overlap = np.where(held, np.prod(np.clip(sides, 0, None), axis=1), 0)
    block = np.prod(new_stops - new_starts, axis=1)
    return (block - overlap) * int(after.itemsize)


def move_needs(before: LayoutData, after: LayoutData) -> MoveNeeds:
    """What moving from ``before`` to ``after`` must bring each device (see the module's summary)."""
    lacked = lacked_bytes(before, after)
    return MoveNeeds(
        most_bytes=int(lacked.max()) if len(lacked) else 0,
        receiving=int(np.count_nonzero(lacked)),
        devices=len(lacked),
    )
