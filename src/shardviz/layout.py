"""The engine: turn a JAX array, sharding or ShapeDtypeStruct into a Layout.

``describe`` reads what the sharding already says (mesh, spec, memory kind)
and works out blocks and replica ids from the mesh order, so it never
touches ``addressable_shards`` or copies data. It imports no widget code.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec, Sharding

from . import blocks as _blocks
from .errors import ShardingError

DEFAULT_DTYPE = "float32"


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

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(a, b) for a, b in zip(self.start, self.stop))


@dataclass(frozen=True)
class DeviceInfo:
    """One device of the layout, in mesh order."""

    id: int
    platform: str
    device_kind: str
    process_index: int
    addressable: bool
    mesh_coords: tuple[int, ...]
    tile: int
    replica_id: int


@dataclass(frozen=True)
class DeviceColumns:
    """Per-device facts in mesh order, as arrays (cheap at 4096 devices)."""

    ids: np.ndarray
    process: np.ndarray
    addressable: np.ndarray
    kind: np.ndarray
    kinds: tuple[tuple[str, str], ...]  # (platform, device_kind)


@dataclass(frozen=True, eq=False)
class Layout:
    """How one array (real or hypothetical) is laid out over devices.

    Immutable. ``tiles`` and ``devices`` are built on first use from the
    columns below, so a layout of 4096 devices costs little until asked.
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
    blocks: _blocks.BlockAssignment
    columns: DeviceColumns

    @property
    def shard_bytes(self) -> int:
        """Bytes of the array that each device holds."""
        return math.prod(self.shard_shape) * self.itemsize

    @property
    def device_count(self) -> int:
        return len(self.columns.ids)

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
            start, stop = _blocks.tile_extent(self.blocks.bounds, t)
            result.append(Tile(t, start, stop, tuple(int(i) for i in holders[t])))
        return tuple(result)

    @functools.cached_property
    def devices(self) -> tuple[DeviceInfo, ...]:
        cols = self.columns
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
                )
            )
        return tuple(out)

    def device(self, device_id: int) -> DeviceInfo:
        """The device with this id (ShardingError if the layout lacks it)."""
        hits = np.flatnonzero(self.columns.ids == device_id)
        if not len(hits):
            raise ShardingError(f"device {device_id} is not part of this layout")
        return self.devices[int(hits[0])]

    def to_json(self) -> dict[str, Any]:
        """The compact payload the widget sends; see docs/payload.md."""
        from .payload import layout_payload

        return layout_payload(self)

    def __str__(self) -> str:
        from .textview import render_layout

        return render_layout(self)

    def __repr__(self) -> str:
        mesh = "" if self.mesh is None else f", mesh={self.mesh.shape}"
        counts = f"tiles={self.blocks.tile_count}, devices={self.device_count}"
        return f"Layout({self.type_str}, memory_kind={self.memory_kind!r}{mesh}, {counts})"


# --------------------------------------------------------------------------
# describe


def describe(x: Any, *, shape: Sequence[int] | None = None, dtype: Any = None) -> Layout:
    """Lay out ``x``: a jax.Array, a ShapeDtypeStruct with a sharding, or a
    Sharding together with ``shape=`` (and optionally ``dtype=``).

    Raises :class:`ShardingError` naming what was wrong; never changes ``x``.
    """
    if isinstance(x, jax.core.Tracer):
        raise ShardingError(
            f"got a tracer ({jax.typeof(x)}) inside a traced function: its sharding is only "
            "decided at compile time. Inside jit use jax.typeof(x) or "
            "jax.debug.inspect_array_sharding(x, callback=print); call shardviz on the "
            "concrete array outside the transformation."
        )
    if isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) and (shape is not None or dtype is not None):
        kind = "an array" if isinstance(x, jax.Array) else "a ShapeDtypeStruct"
        raise ShardingError(f"shape= and dtype= go with a Sharding, not with {kind} (it has its own)")
    if isinstance(x, jax.Array):
        if x.is_deleted():
            raise ShardingError(
                "the array has been deleted (by .delete() or by donation to a jitted function); "
                "there is no layout left to show"
            )
        return _describe(x.sharding, tuple(x.shape), np.dtype(x.dtype), str(jax.typeof(x)), has_array=True)
    if isinstance(x, jax.ShapeDtypeStruct):
        if x.sharding is None:
            raise ShardingError(
                "the ShapeDtypeStruct carries no sharding; make it with sharding=NamedSharding(mesh, spec)"
            )
        if not isinstance(x.sharding, Sharding):
            raise ShardingError(f"the ShapeDtypeStruct's sharding is {type(x.sharding).__name__}, not a jax Sharding")
        return _describe_hypothetical(x.sharding, tuple(x.shape), np.dtype(x.dtype))
    if isinstance(x, Sharding):
        if shape is None:
            raise ShardingError(f"a {type(x).__name__} needs shape= to be laid out (e.g. shape=(4, 8))")
        shape_t = _check_shape(shape)
        return _describe_hypothetical(x, shape_t, _check_dtype(dtype))
    if isinstance(x, np.ndarray) or np.isscalar(x):
        raise ShardingError(
            f"got a {type(x).__name__}, which lives on the host, not on devices; "
            "jax.device_put it onto a sharding first"
        )
    raise ShardingError(
        f"cannot lay out a {type(x).__name__}: pass a jax.Array, a jax.ShapeDtypeStruct with a sharding, "
        "or a Sharding with shape="
    )


def _check_shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise ShardingError(f"shape must be a sequence of non-negative ints, got {shape!r}") from None
    for d, n in enumerate(dims):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ShardingError(f"shape dimension {d} is {n!r}; it must be a non-negative int")
    return tuple(int(n) for n in dims)


def _check_dtype(dtype: Any) -> np.dtype:
    try:
        return np.dtype(jax.numpy.dtype(DEFAULT_DTYPE if dtype is None else dtype))
    except (TypeError, ValueError):
        raise ShardingError(f"unknown dtype {dtype!r}") from None


def _describe_hypothetical(sharding: Sharding, shape: tuple[int, ...], dtype: np.dtype) -> Layout:
    """A layout with no array behind it: typeof comes from JAX's own aval."""
    check_sharding_fits(sharding, shape)
    try:
        aval = jax.typeof(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
    except Exception as err:  # JAX's own refusal, in its words
        raise ShardingError(f"JAX cannot type a {dtype.name}{list(shape)} array with {sharding}: {err}") from None
    if sharding.memory_kind == "pinned_host" and aval.memory_space != jax.memory.Space.Host:
        # typeof of a ShapeDtypeStruct drops the host space for some shardings;
        # a real array in pinned_host memory prints it, so say it too.
        aval = aval.update(memory_space=jax.memory.Space.Host)
    return _describe(sharding, shape, dtype, str(aval), has_array=False)


def check_sharding_fits(sharding: Sharding, shape: tuple[int, ...]) -> None:
    """Reject a NamedSharding that does not fit the shape, naming the culprit."""
    if isinstance(sharding, NamedSharding):
        check_spec(sharding.mesh, sharding.spec, shape)


def check_spec(mesh: Any, spec: Any, shape: tuple[int, ...]) -> None:
    """Reject a spec that does not fit the mesh or the shape, naming the culprit.

    JAX refuses some of these itself, with messages about "resource axes";
    checking first lets shardviz name the dimension and axis in plain words.
    """
    names = tuple(mesh.axis_names)
    sizes = dict(zip(names, mesh.axis_sizes))
    if len(spec) > len(shape):
        raise ShardingError(
            f"the spec {_spec_repr(spec)} has {len(spec)} entries but the array has rank {len(shape)} "
            f"(shape {shape}); give at most one entry per dimension"
        )
    seen: dict[Any, int] = {}
    for d, entry in enumerate(spec):
        if entry is PartitionSpec.UNCONSTRAINED:
            raise ShardingError(
                f"dimension {d} is UNCONSTRAINED, which only with_sharding_constraint accepts; "
                "a layout needs axes or None"
            )
        for axis in _entry_axes(entry):
            if axis not in names:
                raise ShardingError(
                    f"dimension {d}: axis {axis!r} is not in the mesh, whose axes are {', '.join(map(repr, names))}"
                )
            if axis in seen:
                raise ShardingError(
                    f"axis {axis!r} is used twice, by dimension {seen[axis]} and dimension {d}; "
                    "each mesh axis can split at most one dimension"
                )
            seen[axis] = d
        cuts = math.prod(sizes[a] for a in _entry_axes(entry))
        if cuts and shape[d] % cuts:
            axes = " x ".join(f"{a}={sizes[a]}" for a in _entry_axes(entry))
            raise ShardingError(
                f"dimension {d} has size {shape[d]}, which {axes} cannot split evenly into {cuts} blocks "
                f"(JAX has no uneven shards); choose a size divisible by {cuts} or other axes"
            )


def check_memory_kind(kind: str, addressable: Sequence[str]) -> None:
    """Reject a memory kind the devices cannot address, listing the ones they can."""
    if kind not in addressable:
        raise ShardingError(
            f"memory kind {kind!r} is not addressable by these devices; they address {', '.join(addressable)}"
        )


def memory_kinds_of(mesh: Any) -> tuple[str, ...]:
    """Memory kinds every device of a mesh (or a virtual mesh's platform) addresses."""
    columns = _abstract_columns(mesh) if isinstance(mesh, AbstractMesh) else _mesh_columns(mesh)
    return _memory_kinds(columns)


def _entry_axes(entry: Any) -> tuple[Any, ...]:
    if entry is None:
        return ()
    if isinstance(entry, (tuple, list)):
        return tuple(entry)
    return (entry,)


def _spec_repr(spec: Sequence[Any]) -> str:
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def _describe(sharding: Sharding, shape: tuple[int, ...], dtype: np.dtype, type_str: str, *, has_array: bool) -> Layout:
    memory_kind = sharding.memory_kind or "device"
    if isinstance(sharding, NamedSharding):
        check_sharding_fits(sharding, shape)
        mesh = sharding.mesh
        spec = tuple(tuple(str(a) for a in _entry_axes(e)) for e in sharding.spec) + ((),) * (
            len(shape) - len(sharding.spec)
        )
        names = tuple(str(n) for n in mesh.axis_names)
        sizes = tuple(int(s) for s in mesh.axis_sizes)
        assignment = _blocks.mesh_order_blocks(sizes, names, spec, shape)
        abstract = isinstance(mesh, AbstractMesh)
        columns = _abstract_columns(mesh) if abstract else _mesh_columns(mesh)
        mesh_info = MeshInfo(names, sizes, tuple(t.name for t in mesh.axis_types), abstract)
    else:
        spec = ((),) * len(shape)
        try:
            index_map = sharding.devices_indices_map(shape)
        except Exception as err:  # JAX's own message says what did not fit
            raise ShardingError(f"{type(sharding).__name__} cannot lay out shape {shape}: {err}") from None
        devices = list(index_map)
        assignment = _blocks.blocks_from_index_map(shape, [index_map[d] for d in devices])
        columns = _device_columns(tuple(devices))
        mesh_info = None
    shard_shape = tuple((b[1] - b[0]) if len(b) > 1 else 0 for b in assignment.bounds)
    memory_kinds = _memory_kinds(columns)
    if not (mesh_info and mesh_info.abstract):
        check_memory_kind(memory_kind, memory_kinds)
    return Layout(
        type_str=type_str,
        dtype=dtype.name,
        itemsize=dtype.itemsize,
        shape=shape,
        spec=spec,
        memory_kind=memory_kind,
        memory_kinds=memory_kinds,
        shard_shape=shard_shape,
        mesh=mesh_info,
        sharding_name=type(sharding).__name__,
        has_array=has_array,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        blocks=assignment,
        columns=columns,
    )


# --------------------------------------------------------------------------
# per-device facts, cached per mesh: meshes are immutable and hashable


@functools.lru_cache(maxsize=64)
def _mesh_columns(mesh: jax.sharding.Mesh) -> DeviceColumns:
    return _device_columns(tuple(mesh.devices.flat))


@functools.lru_cache(maxsize=64)
def _device_columns(devices: tuple[Any, ...]) -> DeviceColumns:
    me = jax.process_index()
    kinds: dict[tuple[str, str], int] = {}
    kind = np.empty(len(devices), dtype=np.int64)
    ids = np.empty(len(devices), dtype=np.int64)
    process = np.empty(len(devices), dtype=np.int64)
    for k, d in enumerate(devices):
        ids[k] = d.id
        process[k] = d.process_index
        kind[k] = kinds.setdefault((d.platform, d.device_kind), len(kinds))
    return DeviceColumns(
        ids=ids,
        process=process,
        addressable=(process == me).astype(np.int64),
        kind=kind,
        kinds=tuple(kinds),
    )


@functools.lru_cache(maxsize=64)
def _abstract_columns(mesh: AbstractMesh) -> DeviceColumns:
    """Virtual devices 0..N-1 in mesh order, of the platform JAX would use."""
    n = math.prod(mesh.axis_sizes)
    local = jax.local_devices()[0]
    platform = getattr(mesh, "_platform", None) or local.platform
    kind = getattr(mesh, "_device_kind", None) or local.device_kind
    return DeviceColumns(
        ids=np.arange(n, dtype=np.int64),
        process=np.zeros(n, dtype=np.int64),
        addressable=np.zeros(n, dtype=np.int64),
        kind=np.zeros(n, dtype=np.int64),
        kinds=((str(platform), str(kind)),),
    )


def _memory_kinds(columns: DeviceColumns) -> tuple[str, ...]:
    """Memory kinds that every addressable device of the layout can use."""
    kinds: set[str] | None = None
    for platform, device_kind in columns.kinds:
        found = _platform_memory_kinds(platform, device_kind)
        kinds = set(found) if kinds is None else kinds & set(found)
    order = ("device", "pinned_host", "unpinned_host")
    ranked = sorted(kinds or {"device"}, key=lambda k: (order.index(k) if k in order else len(order), k))
    return tuple(ranked)


@functools.cache
def _platform_memory_kinds(platform: str, device_kind: str) -> tuple[str, ...]:
    for d in jax.local_devices():
        if d.platform == platform and d.device_kind == device_kind:
            return tuple(m.kind for m in d.addressable_memories())
    # Devices of another process or a virtual mesh: ask a local device of the
    # same platform, which addresses the same kinds of memory.
    for d in jax.local_devices():
        if d.platform == platform:
            return tuple(m.kind for m in d.addressable_memories())
    return ("device",)
