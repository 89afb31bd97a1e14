"""Index arithmetic: which block of the array each device holds.

Pure numpy over mesh coordinates; nothing here touches JAX devices, so the
same code serves real meshes and ``AbstractMesh`` what-if layouts. The
results equal JAX's ``devices_indices_map`` and the replica ids of
``addressable_shards`` (the tests prove it on real meshes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockAssignment:
    """Blocks as a grid of intervals, and per-device columns in mesh order.

    ``bounds[d]`` holds the cut points of dimension ``d`` (``0 .. shape[d]``);
    tiles are numbered row-major over that grid. ``tile[k]`` and
    ``replica[k]`` belong to the k-th device in mesh order.
    """

    bounds: tuple[tuple[int, ...], ...]
    tile: np.ndarray
    replica: np.ndarray

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(len(b) - 1 for b in self.bounds)

    @property
    def tile_count(self) -> int:
        return math.prod(self.grid)


def mesh_order_blocks(
    axis_sizes: Sequence[int],
    axis_names: Sequence[str],
    spec: Sequence[Sequence[str]],
    shape: Sequence[int],
) -> BlockAssignment:
    """Blocks of a NamedSharding, worked out from the mesh order and spec.

    A dimension split over axes ``(a, b)`` is cut ``size(a) * size(b)`` times
    and ``a`` is the major axis, so a device's block along that dimension is
    the mixed-radix number of its ``(a, b)`` coordinates. Devices that differ
    only along axes the spec leaves out hold the same block; JAX numbers those
    copies in mesh order, which is the mixed-radix number over the unused axes.
    """
    sizes = tuple(int(s) for s in axis_sizes)
    device_count = math.prod(sizes)
    position = {name: i for i, name in enumerate(axis_names)}
    coords = np.indices(sizes, dtype=np.int64).reshape(len(sizes), device_count)

    used: set[int] = set()
    cuts_per_dim: list[int] = []
    block_per_dim: list[np.ndarray] = []
    for axes, extent in zip(spec, shape):
        block = np.zeros(device_count, dtype=np.int64)
        cuts = 1
        # Every block of an empty dimension is the same empty range, so its
        # axes replicate rather than split (JAX counts those copies too).
        for name in axes if extent else ():
            i = position[name]
            used.add(i)
            block = block * sizes[i] + coords[i]
            cuts *= sizes[i]
        cuts_per_dim.append(cuts)
        block_per_dim.append(block)

    tile = np.zeros(device_count, dtype=np.int64)
    for cuts, block in zip(cuts_per_dim, block_per_dim):
        tile = tile * cuts + block

    replica = np.zeros(device_count, dtype=np.int64)
    for i, size in enumerate(sizes):
        if i not in used:
            replica = replica * size + coords[i]

    bounds = tuple(
        tuple(i * (int(extent) // cuts) for i in range(cuts + 1)) for extent, cuts in zip(shape, cuts_per_dim)
    )
    return BlockAssignment(bounds=bounds, tile=tile, replica=replica)


def blocks_from_index_map(shape: Sequence[int], indices: Sequence[tuple[slice, ...]]) -> BlockAssignment:
    """Blocks from an explicit list of per-device index tuples.

    For shardings that are not a NamedSharding: ``indices`` comes from JAX's
    ``devices_indices_map`` in device-assignment order. Replica ids count the
    earlier devices holding the same block, as JAX does.
    """
    rank = len(shape)
    starts = np.zeros((len(indices), rank), dtype=np.int64)
    stops = np.zeros((len(indices), rank), dtype=np.int64)
    for k, index in enumerate(indices):
        for d in range(rank):
            start, stop, _ = index[d].indices(shape[d])
            starts[k, d], stops[k, d] = start, stop

    bounds = []
    for d in range(rank):
        cuts = sorted(set(starts[:, d].tolist()) | set(stops[:, d].tolist()) | {0, int(shape[d])})
        # An empty dimension still has one (empty) block.
        bounds.append(tuple(cuts) if len(cuts) > 1 else (0, 0))
    grid = tuple(len(b) - 1 for b in bounds)

    tile = np.zeros(len(indices), dtype=np.int64)
    for d in range(rank):
        cell = np.searchsorted(np.asarray(bounds[d]), starts[:, d], side="right") - 1
        if shape[d] == 0:
            cell = np.zeros_like(cell)
        tile = tile * grid[d] + cell

    replica = np.zeros(len(indices), dtype=np.int64)
    seen: dict[int, int] = {}
    for k, t in enumerate(tile.tolist()):
        replica[k] = seen.get(t, 0)
        seen[t] = replica[k] + 1
    return BlockAssignment(bounds=tuple(bounds), tile=tile, replica=replica)


def tile_extent(bounds: Sequence[Sequence[int]], tile: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(start, stop)`` of one tile numbered row-major over ``bounds``."""
    grid = [len(b) - 1 for b in bounds]
    cell = np.unravel_index(tile, grid) if grid else ()
    start = tuple(int(bounds[d][int(c)]) for d, c in enumerate(cell))
    stop = tuple(int(bounds[d][int(c) + 1]) for d, c in enumerate(cell))
    return start, stop
