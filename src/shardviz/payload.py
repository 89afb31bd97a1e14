"""Serialise a Layout into the payload the front end draws (docs/payload.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .codegen import sharding_code
from .grammar import format_mesh, format_spec
from .runs import encode_runs

if TYPE_CHECKING:
    from .layout import Layout

PAYLOAD_VERSION = 2


def layout_payload(layout: Layout) -> dict[str, Any]:
    cols = layout.columns
    mesh = layout.mesh
    return {
        "version": PAYLOAD_VERSION,
        "type_str": layout.type_str,
        "dtype": layout.dtype,
        "shape": list(layout.shape),
        "itemsize": layout.itemsize,
        "spec": [list(axes) for axes in layout.spec],
        "shard_shape": list(layout.shard_shape),
        "shard_bytes": layout.shard_bytes,
        "memory_kind": layout.memory_kind,
        "memory_kinds": list(layout.memory_kinds),
        "mesh": None
        if mesh is None
        else {
            "names": list(mesh.axis_names),
            "sizes": list(mesh.axis_sizes),
            "types": list(mesh.axis_types),
            "abstract": mesh.abstract,
        },
        # Cut points are even steps, so one run per dimension: the payload
        # stays the same size however large the array is.
        "tiles": {"bounds": [encode_runs(np.asarray(b, dtype=np.int64)) for b in layout.blocks.bounds]},
        "devices": {
            "count": layout.device_count,
            "id": encode_runs(cols.ids),
            "tile": encode_runs(layout.blocks.tile),
            "replica": encode_runs(layout.blocks.replica),
            "process": encode_runs(cols.process),
            "addressable": encode_runs(cols.addressable),
            "kind": encode_runs(cols.kind),
        },
        "kinds": [{"platform": p, "device_kind": k} for p, k in cols.kinds],
        "process_index": layout.process_index,
        "process_count": layout.process_count,
        "sharding": layout.sharding_name,
        "spec_text": format_spec(layout.spec),
        "mesh_text": "" if mesh is None else format_mesh(mesh.axis_names, mesh.axis_sizes, mesh.axis_types),
        "code": sharding_code(layout),
        "has_array": layout.has_array,
    }
