"""Bounded previews of one device's values, for the inspector.

Only a corner of at most PREVIEW x PREVIEW values of the device's own shard
is sliced on the device and copied to the host; never the whole array.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..array.layout import Layout

PREVIEW = 8


def preview_message(array: jax.Array | None, layout: Layout, request: dict[str, Any]) -> dict[str, Any]:
    """Answer a preview request ``{"device": id, "dims": [row, col]}``."""
    device_id = request.get("device")
    reply: dict[str, Any] = {"kind": "preview", "device": device_id}
    if array is None:
        return {**reply, "error": "there is no array behind this layout, only a shape: nothing to preview"}
    if not isinstance(device_id, int) or isinstance(device_id, bool):
        return {**reply, "error": f"device must be a device id, not {device_id!r}"}
    if array.is_deleted():
        return {**reply, "error": "the array has been deleted; there are no values to preview"}
    shard = next((s for s in array.addressable_shards if s.device.id == device_id), None)
    if shard is None:
        owner = next((d.process_index for d in layout.devices if d.id == device_id), None)
        where = (
            "is not part of this layout"
            if owner is None
            else f"belongs to process {owner}; only that process can read it"
        )
        return {**reply, "error": f"device {device_id} {where}"}

    rank = array.ndim
    dims = _shown_dims(request.get("dims"), rank)
    corner = tuple(slice(0, PREVIEW) if d in dims else 0 for d in range(rank))
    try:
        values = np.asarray(shard.data[corner])  # sliced on the device: at most 64 values move
    except Exception as err:  # e.g. memory the host cannot slice in place
        return {**reply, "error": f"cannot read device {device_id}'s values: {err}"}
    table = np.atleast_2d(values) if len(dims) < 2 else values
    if len(dims) == 2 and dims[0] > dims[1]:
        table = table.T  # numpy keeps dims in array order; show rows first
    starts = [idx.start or 0 for idx in shard.index]
    return {
        **reply,
        "values": [[str(v) for v in row] for row in table.tolist()],
        "rows": int(table.shape[0]),
        "cols": int(table.shape[1]),
        "dims": list(dims),
        "row_start": starts[dims[0]] if len(dims) == 2 else 0,
        "col_start": starts[dims[-1]] if dims else 0,
        "index": [[int(s), int(s + n)] for s, n in zip(starts, shard.data.shape)],
        "replica_id": int(shard.replica_id),
    }


def _shown_dims(requested: Any, rank: int) -> tuple[int, ...]:
    """The (at most two) dimensions shown as rows and columns."""
    wanted = min(rank, 2)
    if isinstance(requested, list) and all(isinstance(d, int) and 0 <= d < rank for d in requested):
        unique = tuple(dict.fromkeys(requested))[:wanted]
        if len(unique) == wanted:
            return unique
    return tuple(range(rank - wanted, rank))
