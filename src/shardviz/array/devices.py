"""What the devices of a mesh are: ids, processes, kinds, physical attributes
and memory kinds, as per-device columns in mesh order.

Reading device attributes costs a Python call per device, so the columns are
cached per mesh (meshes are immutable and hashable). Virtual devices of an
AbstractMesh are numbered ``0..N-1`` in mesh order and carry no platform
unless the caller names one: a what-if pod planned on a laptop is not made of
the laptop's CPUs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh

from .model import DeviceColumns, PhysicalColumns

# The order memory kinds are listed in; others follow alphabetically.
MEMORY_KIND_ORDER = ("device", "pinned_host", "unpinned_host")


@functools.lru_cache(maxsize=64)
def mesh_columns(mesh: jax.sharding.Mesh) -> DeviceColumns:
    return device_columns(tuple(mesh.devices.flat))


@functools.lru_cache(maxsize=64)
def device_columns(devices: tuple[Any, ...]) -> DeviceColumns:
    me = jax.process_index()
    kinds: dict[tuple[str, str], int] = {}
    kind = np.empty(len(devices), dtype=np.int64)
    ids = np.empty(len(devices), dtype=np.int64)
    process = np.empty(len(devices), dtype=np.int64)
    for k, d in enumerate(devices):
        ids[k] = d.id
        process[k] = d.process_index
        kind[k] = kinds.setdefault((d.platform, d.device_kind), len(kinds))
    first = [d.id for d in jax.devices()[: len(devices)]]
    return DeviceColumns(
        ids=ids,
        process=process,
        addressable=(process == me).astype(np.int64),
        kind=kind,
        kinds=tuple(kinds),
        physical=physical_columns(devices),
        machine_order=ids.tolist() == first,
    )


def physical_columns(devices: Sequence[Any]) -> PhysicalColumns:
    """TPU-style physical attributes (``coords``, ``core_on_chip``, ``slice_index``).

    Read generically: a column exists only when every device has the
    attribute (CPU devices have none of them, so nothing is shown there).
    """

    def column(name: str) -> list[Any] | None:
        values = [getattr(d, name, None) for d in devices]
        return None if not values or any(v is None for v in values) else values

    coords = column("coords")
    if coords is not None and len({len(tuple(c)) for c in coords}) != 1:
        coords = None  # ragged coordinates: no common grid to show them on
    core = column("core_on_chip")
    slices = column("slice_index")
    return PhysicalColumns(
        coords=None if coords is None else np.array([tuple(int(v) for v in c) for c in coords], dtype=np.int64),
        core_on_chip=None if core is None else np.array([int(v) for v in core], dtype=np.int64),
        slice_index=None if slices is None else np.array([int(v) for v in slices], dtype=np.int64),
    )


@functools.lru_cache(maxsize=64)
def virtual_columns(device_count: int, platform: str) -> DeviceColumns:
    """Virtual devices ``0..N-1`` in mesh order; ``platform`` is ``""`` when not named."""
    n = int(device_count)
    return DeviceColumns(
        ids=np.arange(n, dtype=np.int64),
        process=np.zeros(n, dtype=np.int64),
        addressable=np.zeros(n, dtype=np.int64),
        kind=np.zeros(n, dtype=np.int64),
        kinds=((platform, ""),),
        virtual=True,
    )


def columns_of(mesh: Any, platform: str = "") -> DeviceColumns:
    if isinstance(mesh, AbstractMesh):
        return virtual_columns(math.prod(mesh.axis_sizes), platform)
    return mesh_columns(mesh)


def memory_kinds(columns: DeviceColumns) -> tuple[str, ...]:
    """Memory kinds that every device of the layout can use.

    Virtual devices get the kinds JAX accepts for a sharding on this machine:
    JAX checks an AbstractMesh's memory kind against the local backend, not
    against the platform a what-if names.
    """
    if columns.virtual:
        return local_memory_kinds()
    kinds: set[str] | None = None
    for platform, device_kind in columns.kinds:
        found = platform_memory_kinds(platform, device_kind)
        kinds = set(found) if kinds is None else kinds & set(found)
    return ranked(kinds or {"device"})


def memory_kinds_of(mesh: Any) -> tuple[str, ...]:
    """Memory kinds every device of a mesh (or a virtual mesh) addresses."""
    return memory_kinds(columns_of(mesh))


def ranked(kinds: Iterable[str]) -> tuple[str, ...]:
    order = MEMORY_KIND_ORDER
    return tuple(sorted(set(kinds), key=lambda k: (order.index(k) if k in order else len(order), k)))


@functools.cache
def local_memory_kinds() -> tuple[str, ...]:
    return ranked(m.kind for m in jax.local_devices()[0].addressable_memories())


@functools.cache
def platform_memory_kinds(platform: str, device_kind: str) -> tuple[str, ...]:
    for d in jax.local_devices():
        if d.platform == platform and d.device_kind == device_kind:
            return tuple(m.kind for m in d.addressable_memories())
    # Devices of another process: ask a local device of the same platform,
    # which addresses the same kinds of memory.
    for d in jax.local_devices():
        if d.platform == platform:
            return tuple(m.kind for m in d.addressable_memories())
    return ("device",)
