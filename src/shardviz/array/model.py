"""The array view's result: pure, immutable data about one layout.

Nothing here computes a layout, serialises it or draws it: ``describe``
fills these records, ``payload`` and the terminal picture read them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ShardingError
from .blocks import BlockAssignment, tile_extent


@dataclass(frozen=True)
class MeshInfo:
    """The mesh a NamedSharding lives on: names, sizes and types, in order."""

    axis_names: tuple[str, ...]
    axis_sizes: tuple[int, ...]
    axis_types: tuple[str, ...]
    abstract: bool

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))


@dataclass(frozen=True)
class Tile:
    """One unique block of the array and the devices that hold a copy."""

    index: int
    start: tuple[int, ...]
    stop: tuple[int, ...]
    device_ids: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in zip(self.start, self.stop))


@dataclass(frozen=True)
class DeviceInfo:
    """One device of the layout, in mesh order.

    ``platform`` is ``""`` for a virtual device of an AbstractMesh whose
    platform was not named. ``coords``, ``core_on_chip`` and ``slice_index``
    are the device's physical attributes where it has them (TPUs), else None.
    """

    id: int
    platform: str
    device_kind: str
    process_index: int
    addressable: bool
    mesh_coords: tuple[int, ...]
    tile: int
    replica_id: int
    coords: tuple[int, ...] | None = None
    core_on_chip: int | None = None
    slice_index: int | None = None


@dataclass(frozen=True)
class PhysicalColumns:
    """Physical device attributes in mesh order; a column is None where no device has it."""

    coords: np.ndarray | None = None  # (devices, dims)
    core_on_chip: np.ndarray | None = None
    slice_index: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        return self.coords is None and self.core_on_chip is None and self.slice_index is None


@dataclass(frozen=True)
class DeviceColumns:
    """Per-device facts in mesh order, as arrays (cheap at 4096 devices)."""

    ids: np.ndarray
    process: np.ndarray
    addressable: np.ndarray
    kind: np.ndarray
    kinds: tuple[tuple[str, str], ...]  # (platform, device_kind)
    physical: PhysicalColumns = PhysicalColumns()
    virtual: bool = False
    # The ids are this machine's first devices in jax.devices() order, so
    # jax.make_mesh(..., devices=jax.devices()[:n]) rebuilds the mesh.
    machine_order: bool = False


@dataclass(frozen=True, eq=False)
class LayoutData:
    """How one array (real or hypothetical) is laid out over devices.

    Immutable. ``tiles`` and ``devices`` are built on first use from the
    columns, so a layout of 4096 devices costs little until asked.
    ``sharding`` is the JAX sharding described (for code that wants to act
    on it); everything else is plain data.
    """

    type_str: str
    dtype: str
    itemsize: int
    shape: tuple[int, ...]
    spec: tuple[tuple[str, ...], ...]
    memory_kind: str
    memory_kinds: tuple[str, ...]
    shard_shape: tuple[int, ...]
    mesh: MeshInfo | None
    sharding_name: str
    has_array: bool
    process_index: int
    process_count: int
    machine_devices: int  # jax.device_count() where the layout was made
    blocks: BlockAssignment
    columns: DeviceColumns
    sharding: Any = None
    unreduced: tuple[str, ...] = ()  # mesh axes along which devices hold partial sums, not copies ({U:y})

    @property
    def shard_bytes(self) -> int:
        """Bytes of the array that each device holds."""
        return math.prod(self.shard_shape) * self.itemsize

    @property
    def device_count(self) -> int:
        return len(self.columns.ids)

    @property
    def is_virtual(self) -> bool:
        """True for a what-if layout on an AbstractMesh: its devices are numbered, not real."""
        return self.columns.virtual

    @property
    def is_fully_replicated(self) -> bool:
        return self.blocks.tile_count == 1

    @functools.cached_property
    def tiles(self) -> tuple[Tile, ...]:
        ids = self.columns.ids
        order = np.argsort(self.blocks.tile, kind="stable")
        holders = np.split(ids[order], np.cumsum(np.bincount(self.blocks.tile, minlength=self.blocks.tile_count))[:-1])
        result = []
        for t in range(self.blocks.tile_count):
            start, stop = tile_extent(self.blocks.bounds, t)
            result.append(Tile(t, start, stop, tuple(int(i) for i in holders[t])))
        return tuple(result)

    @functools.cached_property
    def devices(self) -> tuple[DeviceInfo, ...]:
        cols = self.columns
        phys = cols.physical
        sizes = self.mesh.axis_sizes if self.mesh else ()
        coords = np.unravel_index(np.arange(len(cols.ids)), sizes) if sizes else ()
        out = []
        for k in range(len(cols.ids)):
            platform, kind = cols.kinds[int(cols.kind[k])]
            out.append(
                DeviceInfo(
                    id=int(cols.ids[k]),
                    platform=platform,
                    device_kind=kind,
                    process_index=int(cols.process[k]),
                    addressable=bool(cols.addressable[k]),
                    mesh_coords=tuple(int(c[k]) for c in coords),
                    tile=int(self.blocks.tile[k]),
                    replica_id=int(self.blocks.replica[k]),
                    coords=None if phys.coords is None else tuple(int(c) for c in phys.coords[k]),
                    core_on_chip=None if phys.core_on_chip is None else int(phys.core_on_chip[k]),
                    slice_index=None if phys.slice_index is None else int(phys.slice_index[k]),
                )
            )
        return tuple(out)

    @functools.cached_property
    def physical_axes(self) -> dict[str, tuple[str, ...]]:
        """For each mesh axis, the physical attributes that change along it.

        E.g. ``{"x": ("coords[0]",), "y": ("coords[1]", "core_on_chip")}``: a
        TPU user's check that a mesh axis runs along one dimension of the
        torus. Empty when the devices carry no physical attributes.
        """
        phys = self.columns.physical
        if self.mesh is None or phys.empty:
            return {}
        columns: list[tuple[str, np.ndarray]] = []
        if phys.coords is not None:
            columns += [(f"coords[{d}]", phys.coords[:, d]) for d in range(phys.coords.shape[1])]
        if phys.core_on_chip is not None:
            columns.append(("core_on_chip", phys.core_on_chip))
        if phys.slice_index is not None:
            columns.append(("slice_index", phys.slice_index))
        sizes = self.mesh.axis_sizes
        out: dict[str, tuple[str, ...]] = {}
        for i, name in enumerate(self.mesh.axis_names):
            moved = []
            for label, column in columns:
                grid = column.reshape(sizes)
                if sizes[i] > 1 and np.any(np.diff(grid, axis=i) != 0):
                    moved.append(label)
            out[name] = tuple(moved)
        return out

    def device(self, device_id: int) -> DeviceInfo:
        """The device with this id (ShardingError if the layout lacks it)."""
        hits = np.flatnonzero(self.columns.ids == device_id)
        if not len(hits):
            raise ShardingError(f"device {device_id} is not part of this layout")
        return self.devices[int(hits[0])]
