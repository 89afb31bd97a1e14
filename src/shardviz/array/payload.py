"""Serialise a layout into the payload the front end draws (docs/payload.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .codegen import sharding_code
from .grammar import format_mesh, format_spec
from .model import DeviceColumns, LayoutData, MeshInfo, PhysicalColumns
from .runs import encode_runs

PAYLOAD_VERSION = 3


def mesh_payload(mesh: MeshInfo) -> dict[str, Any]:
    """A mesh as every payload writes it: ``{names, sizes, types, abstract}`` (docs/payload.md)."""
    return {
        "names": list(mesh.axis_names),
        "sizes": list(mesh.axis_sizes),
        "types": list(mesh.axis_types),
        "abstract": mesh.abstract,
    }


def layout_payload(
    layout: LayoutData, *, array_name: str | None = None, user_spec: tuple[tuple[str, ...], ...] | None = None
) -> dict[str, Any]:
    """The payload; ``user_spec`` (one tuple of axes per dimension) is the spec the user set, given
    only where a mesh edit cut the spec shown from it (docs/payload.md)."""
    cols = layout.columns
    mesh = layout.mesh
    payload = {
        "kind": "array",
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
        "mesh": None if mesh is None else mesh_payload(mesh),
        # Cut points are even steps, so one run per dimension: the payload
        # stays the same size however large the array is.
        "tiles": {"bounds": [encode_runs(np.asarray(b, dtype=np.int64)) for b in layout.blocks.bounds]},
        "devices": {
            "count": layout.device_count,
            "id": encode_runs(cols.ids),
            "tile": encode_runs(layout.blocks.tile),
            "replica": encode_runs(layout.blocks.replica),
            **device_columns_payload(cols),
        },
        "kinds": kinds_payload(cols),
        "process_index": layout.process_index,
        "process_count": layout.process_count,
        "machine_devices": layout.machine_devices,
        "sharding": layout.sharding_name,
        "spec_text": format_spec(layout.spec),
        "mesh_text": "" if mesh is None else format_mesh(mesh.axis_names, mesh.axis_sizes, mesh.axis_types),
        "array_name": array_name,
        "code": sharding_code(layout, array_name),
        "has_array": layout.has_array,
    }
    if user_spec is not None:
        payload["user_spec"] = [list(axes) for axes in user_spec]
    return payload


def device_columns_payload(cols: DeviceColumns) -> dict[str, Any]:
    """The columns every view's payload carries for its devices (ids aside).

    Physical attributes appear only when the devices have them.
    """
    out: dict[str, Any] = {
        "process": encode_runs(cols.process),
        "addressable": encode_runs(cols.addressable),
        "kind": encode_runs(cols.kind),
        "virtual": cols.virtual,
        "machine_order": cols.machine_order,
    }
    out.update(physical_payload(cols.physical))
    return out


def physical_payload(phys: PhysicalColumns) -> dict[str, Any]:
    """The physical columns the devices have (none for CPUs), run-encoded."""
    out: dict[str, Any] = {}
    if phys.coords is not None:
        out["coords"] = [encode_runs(phys.coords[:, d]) for d in range(phys.coords.shape[1])]
    if phys.core_on_chip is not None:
        out["core_on_chip"] = encode_runs(phys.core_on_chip)
    if phys.slice_index is not None:
        out["slice_index"] = encode_runs(phys.slice_index)
    return out


def kinds_payload(cols: DeviceColumns) -> list[dict[str, str]]:
    return [{"platform": p, "device_kind": k} for p, k in cols.kinds]
