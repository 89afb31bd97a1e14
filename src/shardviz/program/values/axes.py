"""Index arithmetic: which mesh axes a collective's device groups span, and
which PartitionSpec an HLO tile assignment is.

Pure numpy over mesh coordinates. Ids in HLO are *partition positions*:
indices into the program's device assignment. ``positions_to_mesh`` maps
them to indices in the mesh's own order, so a mesh whose devices are not in
id order still gets the right axes. Nothing here guesses: a group structure
that no set of whole mesh axes produces gives ``None``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np


def mesh_coordinates(axis_sizes: Sequence[int]) -> np.ndarray:
    """``coords[k]``: the mesh coordinates of the k-th device in mesh order."""
    sizes = tuple(int(s) for s in axis_sizes)
    n = math.prod(sizes)
    if not sizes:
        return np.zeros((n, 0), dtype=np.int64)
    return np.stack(np.unravel_index(np.arange(n), sizes), axis=1).astype(np.int64)


def positions_to_mesh(assignment_ids: Sequence[int], mesh_ids: Sequence[int]) -> np.ndarray | None:
    """For each partition position, the index of its device in mesh order.

    ``assignment_ids`` are the device ids of the program's device
    assignment (position order); ``mesh_ids`` those of the mesh (mesh
    order). None when the two are not the same set of devices.
    """
    where = {int(d): k for k, d in enumerate(mesh_ids)}
    if len(assignment_ids) != len(where) or any(int(d) not in where for d in assignment_ids):
        return None
    return np.asarray([where[int(d)] for d in assignment_ids], dtype=np.int64)


def group_axes(
    groups: Sequence[Sequence[int]],
    axis_names: Sequence[str],
    axis_sizes: Sequence[int],
    to_mesh: np.ndarray | None = None,
) -> tuple[str, ...] | None:
    """The mesh axes whose devices the groups gather, in mesh order, or None.

    The answer is a set ``A`` of axes such that the groups are exactly the
    sets of devices that agree on every axis outside ``A``: every device is
    in one group, and a group holds every device of its slice. Groups of
    one device each give ``()``. Size-1 axes never count.
    """
    sizes = tuple(int(s) for s in axis_sizes)
    members = _partition(groups, math.prod(sizes), to_mesh)
    if members is None:
        return None
    coords = mesh_coordinates(sizes)[members]  # (groups, group size, axes)
    varying = (coords != coords[:, :1, :]).any(axis=(0, 1))
    spanned = [a for a in range(len(sizes)) if varying[a]]
    # A group agrees with itself outside the spanned axes, so it lies in one
    # slice; as large as the slice, with no device twice, it is the slice.
    if members.shape[1] != math.prod(sizes[a] for a in spanned):
        return None
    return tuple(str(axis_names[a]) for a in spanned)


def group_pieces(
    groups: Sequence[Sequence[int]],
    axis_names: Sequence[str],
    axis_sizes: Sequence[int],
    to_mesh: np.ndarray | None = None,
) -> tuple[tuple[str, int, int, int], ...] | None:
    """The pieces of mesh axes the groups run along, for groups no set of whole axes makes.

    Each piece is ``(axis, size, stride, axis size)``: along that axis a
    group holds ``size`` devices ``stride`` apart, as XLA's sub-axes do
    (``'x':(2)2`` is pairs of neighbours in an axis of 4). The answer is
    checked: grouping every device by its coordinates outside the pieces
    must give exactly these groups. None when no such pieces make them.
    """
    sizes = tuple(int(s) for s in axis_sizes)
    n = math.prod(sizes)
    members = _partition(groups, n, to_mesh)
    if members is None:
        return None
    coords = mesh_coordinates(sizes)
    first = coords[members[0]]  # the first group's coordinates, (group size, axes)
    pieces: list[tuple[int, int, int]] = []  # (axis index, size, stride)
    for a, size in enumerate(sizes):
        values = np.unique(first[:, a])
        if len(values) == 1:
            continue
        steps = np.diff(values)
        stride = int(steps[0])
        if not (steps == stride).all() or size % (stride * len(values)):
            return None
        pieces.append((a, len(values), stride))
    if not pieces or members.shape[1] != math.prod(m for _, m, _ in pieces):
        return None
    # Devices of one group agree on every axis outside the pieces, and inside a
    # piece on which block of size*stride they sit in and where in the stride.
    key = coords.copy()
    for a, m, stride in pieces:
        key[:, a] = (coords[:, a] // (m * stride)) * stride + coords[:, a] % stride
    group_of = np.empty(n, dtype=np.int64)
    for g, row in enumerate(members):
        group_of[row] = g
    keys = [tuple(k) for k in key]
    seen: dict[tuple[int, ...], int] = {}
    for device, k in enumerate(keys):
        if seen.setdefault(k, int(group_of[device])) != group_of[device]:
            return None
    if len(seen) != len(members):
        return None
    return tuple((str(axis_names[a]), m, stride, sizes[a]) for a, m, stride in pieces)


def _partition(groups: Sequence[Sequence[int]], n: int, to_mesh: np.ndarray | None) -> np.ndarray | None:
    """The groups as mesh positions, ``(groups, group size)``, when they split all ``n`` devices
    into equal groups with no device twice; None otherwise."""
    if not groups or len({len(g) for g in groups}) != 1:
        return None  # slices of one axis set are all the same size
    members = np.asarray(groups, dtype=np.int64)
    if members.size != n or members.min() < 0 or members.max() >= n:
        return None
    if to_mesh is not None:
        if len(to_mesh) != n:
            return None
        members = to_mesh[members]
    return members if len(np.unique(members)) == n else None


def pair_axes(
    pairs: Sequence[tuple[int, int]],
    axis_names: Sequence[str],
    axis_sizes: Sequence[int],
    to_mesh: np.ndarray | None = None,
) -> tuple[str, ...] | None:
    """The mesh axes along which a collective-permute's source and target differ, in mesh order.

    A ring along ``y`` differs only in ``y``. None when an id is outside the mesh.
    """
    sizes = tuple(int(s) for s in axis_sizes)
    n = math.prod(sizes)
    coords = mesh_coordinates(sizes)
    differ = np.zeros(len(sizes), dtype=bool)
    for s, t in pairs:
        if not (0 <= s < n and 0 <= t < n):
            return None
        ms, mt = (int(to_mesh[s]), int(to_mesh[t])) if to_mesh is not None else (s, t)
        differ |= coords[ms] != coords[mt]
    return tuple(str(axis_names[a]) for a in range(len(sizes)) if differ[a])


def tiles_to_spec(
    tile_assignment: np.ndarray,
    data_dims: int,
    axis_names: Sequence[str],
    axis_sizes: Sequence[int],
    to_mesh: np.ndarray | None = None,
) -> tuple[tuple[str, ...], ...] | None:
    """The PartitionSpec (one tuple of axes per dimension, major first) that
    lays devices out exactly as ``tile_assignment`` does, or None.

    ``tile_assignment`` holds partition positions shaped as the tile grid of
    the first ``data_dims`` dimensions, followed by one replication
    dimension (or none). A dimension cut ``t`` times is matched by peeling
    mesh axes off its tile index, major first: axis ``a`` is next when the
    tile index, divided by what the rest of the cut leaves, equals every
    device's coordinate along ``a``. Distinct axes are independent, so at
    most one axis fits each step and the answer is unique.
    """
    arr = np.asarray(tile_assignment, dtype=np.int64)
    order = None if to_mesh is None else np.asarray(to_mesh, dtype=np.int64)
    names, sizes = tuple(str(a) for a in axis_names), tuple(int(s) for s in axis_sizes)
    order_key = None if order is None else order.tobytes()
    return _tiles_to_spec(arr.shape, arr.tobytes(), data_dims, names, sizes, order_key)


# A program's values share a handful of tile assignments: each is worked out once.
@functools.lru_cache(maxsize=1024)
def _tiles_to_spec(
    grid: tuple[int, ...],
    positions_bytes: bytes,
    data_dims: int,
    axis_names: tuple[str, ...],
    sizes: tuple[int, ...],
    order_bytes: bytes | None,
) -> tuple[tuple[str, ...], ...] | None:
    n = math.prod(sizes)
    arr = np.frombuffer(positions_bytes, dtype=np.int64).reshape(grid)
    to_mesh = None if order_bytes is None else np.frombuffer(order_bytes, dtype=np.int64)
    if arr.size != n or arr.ndim < data_dims:
        return None
    positions = arr.ravel()
    if to_mesh is not None:
        if len(to_mesh) != n or positions.min() < 0 or positions.max() >= n:
            return None
        positions = to_mesh[positions]
    if len(np.unique(positions)) != n:
        return None
    coords = mesh_coordinates(sizes)[positions]  # coords of the device at each slot
    slot_index = np.stack(np.unravel_index(np.arange(arr.size), arr.shape), axis=1)
    used: set[int] = set()
    spec: list[tuple[str, ...]] = []
    for d in range(data_dims):
        tile = slot_index[:, d].copy()
        left = arr.shape[d]
        axes: list[str] = []
        while left > 1:
            found = None
            for a, size in enumerate(sizes):
                if a in used or size == 1 or left % size:
                    continue
                if np.array_equal(tile // (left // size), coords[:, a]):
                    found = a
                    break
            if found is None:
                return None
            used.add(found)
            axes.append(str(axis_names[found]))
            left //= sizes[found]
            tile %= left
        spec.append(tuple(axes))
    return tuple(spec)
