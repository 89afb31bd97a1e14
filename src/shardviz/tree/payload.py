"""Serialise a tree's layout into the payload the front end draws (docs/tree-payload.md).

The mesh and the device columns are sent once, per-device bytes as runs, and
per leaf only its path (sharing leading segments with the leaf before), its
group, its shape and its bytes per device: everything else a leaf needs
(dtype, spec, memory kind, type string, replication) sits once in its group.
"""

from __future__ import annotations

from typing import Any

from ..array.payload import mesh_payload, physical_payload
from ..array.runs import encode_runs
from .model import Imbalance, LeafGroup, ReplicatedLeaf, TreeData, TreeMesh

TREE_PAYLOAD_VERSION = 1


def tree_payload(data: TreeData) -> dict[str, Any]:
    cols = data.devices
    audit = data.audit
    return {
        "kind": "tree",
        "version": TREE_PAYLOAD_VERSION,
        "process_index": data.process_index,
        "process_count": data.process_count,
        "machine_devices": data.machine_devices,
        "meshes": [_mesh(m) for m in data.meshes],
        "devices": {
            "count": data.device_count,
            "id": encode_runs(cols.ids),
            "process": encode_runs(cols.process),
            "addressable": encode_runs(cols.addressable),
            "kind": encode_runs(cols.kind),
        },
        "kinds": [{"platform": p, "device_kind": k} for p, k in cols.kinds],
        "device_bytes": {kind: encode_runs(values) for kind, values in data.bytes_by_kind.items()},
        "total_bytes": data.total_bytes,
        "replicated_bytes": dict(data.replicated_bytes),
        "groups": [_group(g) for g in data.groups],
        "leaves": {
            "count": data.leaf_count,
            "path": shared_prefix_paths(data.segments),
            "group": data.leaf_group.tolist(),
            "shape": [list(s) for s in data.shapes],
            "bytes": data.leaf_bytes.tolist(),
            "other": [[i, t] for i, t in sorted(data.other_types.items())],
            "type": [[i, t] for i, t in sorted(data.type_overrides.items())],
            # [leaf, [logical name or null per dimension], "embed -> fsdp, ..."]; only where Flax named axes
            **(
                {"logical": [[i, list(n), data.logical_text(i)] for i, n in sorted(data.logical.items())]}
                if data.logical
                else {}
            ),
        },
        "audit": {
            "largest": list(audit.largest),
            "replicated": [_finding(f) for f in audit.replicated],
            "replicated_count": audit.replicated_count,
            "replicated_saving": dict(audit.replicated_saving),
            "imbalance": _imbalance(audit.imbalance),
        },
    }


def shared_prefix_paths(segments: tuple[tuple[str, ...], ...]) -> list[list[Any]]:
    """Each path as ``[k, *rest]``: the first ``k`` segments are the previous path's.

    ``layers.0.w`` after ``layers.0.b`` is ``[2, "w"]``. Segments are whole
    keys, so a key with a dot in it stays one segment.
    """
    out: list[list[Any]] = []
    previous: tuple[str, ...] = ()
    for seg in segments:
        k = 0
        limit = min(len(seg), len(previous))
        while k < limit and seg[k] == previous[k]:
            k += 1
        out.append([k, *seg[k:]])
        previous = seg
    return out


def _mesh(mesh: TreeMesh) -> dict[str, Any]:
    return {
        **mesh_payload(mesh.info),
        "devices": encode_runs(mesh.positions),
        "memory_kinds": list(mesh.memory_kinds),
        "machine_order": mesh.machine_order,
        **physical_payload(mesh.physical),
    }


def _group(group: LeafGroup) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dtype": group.dtype,
        "itemsize": group.itemsize,
        "spec": [list(axes) for axes in group.spec],
        "divisors": list(group.divisors),
        "memory_kind": group.memory_kind,
        "sharding": group.sharding_name,
        "mesh": group.mesh,
        "replicated": list(group.replicated_axes),
        "replication": group.replication,
        "type": list(group.type_pieces),
        "array": group.has_array,
    }
    if group.mesh is None:  # a mesh's devices are the mesh's own; others are listed
        out["devices"] = encode_runs(group.positions)
    return out


def _finding(f: ReplicatedLeaf) -> dict[str, Any]:
    return {"leaf": f.leaf, "axis": f.axis, "dim": f.dim, "saving": f.saving, "message": f.message}


def _imbalance(imbalance: Imbalance | None) -> dict[str, Any] | None:
    if imbalance is None:
        return None
    return {
        "max_bytes": imbalance.max_bytes,
        "min_bytes": imbalance.min_bytes,
        "max_devices": list(imbalance.max_devices),
        "min_devices": list(imbalance.min_devices),
        "leaves": list(imbalance.leaves),
        "message": imbalance.message,
    }
