"""The audit of a tree's layout: what costs most, what is needlessly replicated, what is uneven.

Pure arithmetic over :class:`TreeData`'s columns, one numpy pass per group
of leaves; the messages are plain sentences that the terminal report and the
widget show as they are.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..text.ranges import compress_ids, format_bytes
from .model import Imbalance, ReplicatedLeaf, TreeAudit, TreeData, leaf_name

AUDIT_ROWS = 10  # findings kept per section; the counts and sums cover them all


def audit_tree(data: TreeData, limit: int = AUDIT_ROWS) -> TreeAudit:
    """Audit ``data``: its costliest leaves, avoidable replication and device imbalance."""
    findings, count, saving = replication_findings(data, limit)
    return TreeAudit(
        largest=largest_leaves(data, limit),
        replicated=findings,
        replicated_count=count,
        replicated_saving=MappingProxyType(saving),
        imbalance=imbalance(data, limit),
        limit=limit,
    )


def largest_leaves(data: TreeData, limit: int = AUDIT_ROWS) -> tuple[int, ...]:
    """Indices of the array leaves that cost most per device, largest first (ties in flatten order)."""
    arrays = np.flatnonzero((data.leaf_group >= 0) & (data.leaf_bytes > 0))
    order = np.argsort(-data.leaf_bytes[arrays], kind="stable")
    return tuple(int(i) for i in arrays[order[:limit]])


def replication_findings(
    data: TreeData, limit: int | None = AUDIT_ROWS
) -> tuple[tuple[ReplicatedLeaf, ...], int, dict[str, int]]:
    """Leaves replicated over a mesh axis that divides one of their dimensions.

    For each such leaf and axis, the dimension chosen is one not yet split if
    the axis divides one, else the one whose shard is longest (the first of
    equals). Returns the ``limit`` largest savings (all with ``limit=None``),
    how many there are, and per axis the bytes per device that splitting
    every one of them would free.
    """
    found = _replicated(data)
    if found is None:
        return (), 0, {}
    leaf, axis_of, dim, saving, axis_names, axis_sizes = found
    total = {name: int(saving[axis_of == a].sum()) for a, name in enumerate(axis_names)}
    order = np.lexsort((axis_of, leaf, -saving))
    if limit is not None:
        order = order[:limit]
    findings = []
    for j in order.tolist():
        i, a, d = int(leaf[j]), int(axis_of[j]), int(dim[j])
        group = data.groups[int(data.leaf_group[i])]
        dim_size = data.shapes[i][d]
        findings.append(
            _finding(
                i,
                data.paths[i],
                axis_names[a],
                axis_sizes[a],
                d,
                dim_size,
                dim_size // group.divisors[d],
                int(data.leaf_bytes[i]),
                int(saving[j]),
            )
        )
    return tuple(findings), len(leaf), total


def _replicated(
    data: TreeData,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str], list[int]] | None:
    """Every (leaf, axis) a replicated axis could split, with the dimension chosen and the bytes per device
    it frees, as parallel arrays, and the axes' names and sizes they index (None where there is none)."""
    leaves: list[np.ndarray] = []
    axes: list[np.ndarray] = []
    dims: list[np.ndarray] = []
    savings: list[np.ndarray] = []
    axis_names: list[str] = []
    axis_sizes: list[int] = []
    for g, idx in enumerate(data.members()):
        group = data.groups[g]
        if group.mesh is None or not group.replicated_axes or group.ndim == 0 or not len(idx):
            continue
        mesh = data.meshes[group.mesh].info
        size_of = dict(zip(mesh.axis_names, mesh.axis_sizes))
        shape = np.array([data.shapes[i] for i in idx.tolist()], dtype=np.int64).reshape(len(idx), group.ndim)
        divisors = np.asarray(group.divisors, dtype=np.int64)
        extent = shape // divisors
        unsplit = divisors == 1
        per_device = data.leaf_bytes[idx]
        for axis in group.replicated_axes:
            k = size_of[axis]
            fits = (extent % k == 0) & (extent > 0)
            # Prefer a dimension not split yet, then the longest shard: the
            # score orders exactly so, and argmax keeps the first of equals.
            score = np.where(fits, unsplit * (int(extent.max()) + 1) + extent, -1)
            best = score.argmax(axis=1)
            found = fits.any(axis=1) & (per_device > 0)
            if not found.any():
                continue
            if axis not in axis_names:
                axis_names.append(axis)
                axis_sizes.append(k)
            leaves.append(idx[found])
            axes.append(np.full(int(found.sum()), axis_names.index(axis), dtype=np.int64))
            dims.append(best[found])
            savings.append(per_device[found] - per_device[found] // k)
    if not leaves:
        return None
    return (
        np.concatenate(leaves),
        np.concatenate(axes),
        np.concatenate(dims),
        np.concatenate(savings),
        axis_names,
        axis_sizes,
    )


def _finding(
    leaf: int, path: str, axis: str, size: int, dim: int, dim_size: int, extent: int, per_device: int, saving: int
) -> ReplicatedLeaf:
    where = f"dim {dim} ({dim_size})" if extent == dim_size else f"dim {dim} ({dim_size}, {extent} per shard)"
    message = (
        f"{leaf_name(path)} is replicated over {axis}; {where} is divisible by {axis}={size}: "
        f"sharding it saves {format_bytes(saving)} per device"
    )
    return ReplicatedLeaf(leaf, path, axis, size, dim, dim_size, extent, per_device, saving, message)


def imbalance(data: TreeData, limit: int = AUDIT_ROWS) -> Imbalance | None:
    """How far apart the devices' totals are, and the leaves held by only some devices; None if even."""
    if not data.device_count:
        return None
    totals = data.device_totals()
    high, low = int(totals.max()), int(totals.min())
    if high == low:
        return None
    ids = data.devices.ids
    most = tuple(int(i) for i in np.sort(ids[totals == high]))
    least = tuple(int(i) for i in np.sort(ids[totals == low]))
    partial = [g for g, group in enumerate(data.groups) if len(group.positions) < data.device_count]
    uneven = np.flatnonzero(np.isin(data.leaf_group, partial) & (data.leaf_bytes > 0))
    order = np.argsort(-data.leaf_bytes[uneven], kind="stable")
    leaves = tuple(int(i) for i in uneven[order[:limit]])
    message = (
        f"{_devices_text(most)} {'holds' if len(most) == 1 else 'hold'} {format_bytes(high)}, "
        f"{format_bytes(high - low)} more than {_devices_text(least)} ({format_bytes(low)})"
    )
    if leaves:
        shown = ", ".join(
            f"{leaf_name(data.paths[i])} on {len(data.groups[int(data.leaf_group[i])].positions)} of "
            f"{data.device_count}"
            for i in leaves[:3]
        )
        more = len(uneven) - min(3, len(leaves))
        message += f"; on only some devices: {shown}" + (f" and {more} more" if more else "")
    return Imbalance(high, low, most, least, leaves, message)


def _devices_text(ids: tuple[int, ...]) -> str:
    return f"device {ids[0]}" if len(ids) == 1 else f"devices {compress_ids(ids)}"
