"""Pure data of a tree's layout: leaves, their sharding groups, meshes, bytes, audit.

Nothing here imports the payload, the text report or JAX's runtime: these
are frozen records that :mod:`shardviz.tree.describe` fills in and the other
modules read.

A tree of 10,000 leaves is stored as columns (one entry per leaf) plus a
small table of *groups*: leaves that share a sharding, a dtype and a rank
share one ``LeafGroup``, which holds everything that does not depend on the
leaf's shape. :attr:`TreeData.leaves` builds one ``Leaf`` per leaf from
those columns on first use, so describing a large tree costs little until
someone asks for the records.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ..array.model import DeviceColumns, MeshInfo, PhysicalColumns

Spec = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Leaf:
    """One leaf of the tree, in flatten order.

    For a leaf that is not an array (a Python scalar, None, a host numpy
    array) ``is_array`` is False, ``type_str`` names its Python type and every
    byte count is 0: it costs no device memory.
    """

    index: int
    path: str
    is_array: bool
    type_str: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    spec: Spec
    shard_shape: tuple[int, ...]
    bytes_per_device: int
    total_bytes: int
    replicated_axes: tuple[str, ...]
    replication: int
    memory_kind: str
    sharding_name: str
    mesh: int | None
    device_count: int
    has_array: bool


@dataclass(frozen=True, eq=False)
class LeafGroup:
    """What leaves with one sharding, dtype and rank have in common.

    ``divisors[d]`` is how many blocks dimension ``d`` is cut into, so a
    leaf's shard shape is its shape divided by ``divisors``. ``positions``
    are the places, in :attr:`TreeData.devices`, of the devices that hold a
    shard; every one of them holds the same number of bytes. A leaf's
    ``type_str`` is ``type_pieces[0]``, then each dimension's size followed by
    the next piece (pieces come from JAX's own ``jax.typeof`` string); where
    that did not reproduce JAX's string, ``type_pieces`` is empty and
    :attr:`TreeData.type_overrides` holds the leaf's own string.
    """

    dtype: str
    itemsize: int
    ndim: int
    spec: Spec
    divisors: tuple[int, ...]
    memory_kind: str
    sharding_name: str
    mesh: int | None
    positions: np.ndarray
    replicated_axes: tuple[str, ...]
    replication: int
    type_pieces: tuple[str, ...]
    has_array: bool


@dataclass(frozen=True, eq=False)
class TreeMesh:
    """A mesh some leaves live on, and where its devices sit in the tree's device columns.

    ``memory_kinds``, ``machine_order`` and ``physical`` are what a leaf's own
    layout on this mesh says about its devices (``Layout.memory_kinds``, the
    device columns' ``machine_order`` and physical attributes), so a front end
    can lay a leaf out from the tree payload alone.
    """

    info: MeshInfo
    positions: np.ndarray  # positions[k]: the k-th device in mesh order, as a place in TreeData.devices
    memory_kinds: tuple[str, ...] = ("device",)
    machine_order: bool = False
    physical: PhysicalColumns = field(default_factory=PhysicalColumns)


@dataclass(frozen=True)
class ReplicatedLeaf:
    """A leaf replicated over a mesh axis that one of its dimensions could be split by."""

    leaf: int
    path: str
    axis: str
    axis_size: int
    dim: int
    dim_size: int
    shard_extent: int  # the dimension's extent in one shard now (dim_size unless already split)
    bytes_per_device: int
    saving: int  # bytes per device that splitting the dimension over the axis frees
    message: str


@dataclass(frozen=True)
class Imbalance:
    """Devices that hold different amounts of the tree, and the leaves that make it so."""

    max_bytes: int
    min_bytes: int
    max_devices: tuple[int, ...]  # device ids
    min_devices: tuple[int, ...]
    leaves: tuple[int, ...]  # leaves held by only some devices, largest first
    message: str


@dataclass(frozen=True)
class TreeAudit:
    """What the audit found: the costliest leaves, avoidable replication, imbalance.

    ``replicated`` lists the largest findings (at most ``limit``);
    ``replicated_count`` counts them all and ``replicated_saving`` sums, per
    axis, what splitting every such leaf over that axis would free per device.
    """

    largest: tuple[int, ...]
    replicated: tuple[ReplicatedLeaf, ...]
    replicated_count: int
    replicated_saving: Mapping[str, int]
    imbalance: Imbalance | None
    limit: int


@dataclass(frozen=True, eq=False, repr=False)
class TreeData:
    """How every leaf of a pytree is laid out, and what each device holds.

    Columns hold one entry per leaf in flatten order; ``leaf_group[i]`` is
    the leaf's index into ``groups`` (``-1`` for a leaf that is not an
    array). ``devices`` are the devices of the first mesh in mesh order, then
    any other device a leaf sits on, by id. ``bytes_by_kind`` holds, per
    memory kind, the bytes each of those devices holds.
    """

    paths: tuple[str, ...]
    segments: tuple[tuple[str, ...], ...]
    leaf_group: np.ndarray
    shapes: tuple[tuple[int, ...], ...]
    leaf_bytes: np.ndarray  # bytes per device of each leaf (0 for non-arrays)
    other_types: Mapping[int, str]  # leaf index -> Python type name, for leaves that are not arrays
    type_overrides: Mapping[int, str]
    groups: tuple[LeafGroup, ...]
    meshes: tuple[TreeMesh, ...]
    devices: DeviceColumns
    bytes_by_kind: Mapping[str, np.ndarray]
    total_bytes: int  # logical bytes of every array leaf, each counted once
    audit: TreeAudit
    process_index: int
    process_count: int
    machine_devices: int = 0  # jax.device_count() where the layout was made (for a leaf's copy code)
    sources: tuple[Any, ...] = field(repr=False, compare=False, default=())
    treedef: Any = field(repr=False, compare=False, default=None)  # with ``sources``, the tree described
    # leaf index -> the logical axis names Flax put on its dimensions (tree/logical.py); empty without Flax boxes
    logical: Mapping[int, tuple[str | None, ...]] = field(default_factory=dict)

    # ------------------------------------------------------------------ sizes

    @property
    def leaf_count(self) -> int:
        return len(self.paths)

    @property
    def array_count(self) -> int:
        return int(np.count_nonzero(self.leaf_group >= 0))

    @property
    def device_count(self) -> int:
        return len(self.devices.ids)

    @property
    def mesh(self) -> MeshInfo | None:
        """The first mesh a leaf lives on (the one the device columns follow), or None."""
        return self.meshes[0].info if self.meshes else None

    # ------------------------------------------------------------------ bytes

    def device_totals(self) -> np.ndarray:
        """Bytes each device holds, all memory kinds together, in the order of ``devices``."""
        total = np.zeros(self.device_count, dtype=np.int64)
        for per_device in self.bytes_by_kind.values():
            total += per_device
        return total

    @functools.cached_property
    def device_bytes(self) -> Mapping[int, int]:
        """Device id -> bytes of this tree the device holds, all memory kinds together."""
        return _by_id(self.devices.ids, self.device_totals())

    @functools.cached_property
    def device_bytes_by_kind(self) -> Mapping[str, Mapping[int, int]]:
        """Memory kind -> device id -> bytes; only kinds some leaf uses."""
        return MappingProxyType({k: _by_id(self.devices.ids, v) for k, v in self.bytes_by_kind.items()})

    @functools.cached_property
    def replicated_bytes(self) -> Mapping[str, int]:
        """Mesh axis -> bytes per device spent on leaves replicated over that axis."""
        per_group = self.group_bytes()
        out: dict[str, int] = {}
        for mesh in self.meshes:
            for name, size in zip(mesh.info.axis_names, mesh.info.axis_sizes):
                if size > 1:
                    out.setdefault(name, 0)
        for g, group in enumerate(self.groups):
            for axis in group.replicated_axes:
                out[axis] = out.get(axis, 0) + int(per_group[g])
        return MappingProxyType(out)

    def group_bytes(self) -> np.ndarray:
        """Bytes per device of each group's leaves together (exact integers)."""
        arrays = self.leaf_group >= 0
        out = np.zeros(len(self.groups), dtype=np.int64)
        np.add.at(out, self.leaf_group[arrays], self.leaf_bytes[arrays])
        return out

    def members(self) -> list[np.ndarray]:
        """The leaf indices of each group, in flatten order."""
        order = np.argsort(self.leaf_group, kind="stable")
        counts = np.bincount(self.leaf_group[self.leaf_group >= 0], minlength=len(self.groups))
        skip = len(self.leaf_group) - int(counts.sum())  # the non-array leaves sort first (-1)
        return np.split(order[skip:], np.cumsum(counts)[:-1]) if len(self.groups) else []

    # ------------------------------------------------------------------ leaves

    def type_str(self, i: int) -> str:
        """Leaf ``i``'s type: ``str(jax.typeof(leaf))`` for an array, its Python type otherwise."""
        g = int(self.leaf_group[i])
        if g < 0:
            return self.other_types[i]
        pieces = self.groups[g].type_pieces
        if not pieces:
            return self.type_overrides[i]
        return pieces[0] + "".join(f"{n}{piece}" for n, piece in zip(self.shapes[i], pieces[1:]))

    def logical_text(self, i: int) -> str:
        """``embed -> fsdp, mlp -> model`` for a leaf with logical axis names ("" otherwise)."""
        names = self.logical.get(i)
        if names is None:
            return ""
        from .logical import logical_text

        return logical_text(names, self.leaf(i).spec)

    def leaf(self, i: int) -> Leaf:
        """Leaf ``i`` (flatten order) as a record."""
        g = int(self.leaf_group[i])
        shape = self.shapes[i]
        if g < 0:
            return Leaf(
                index=i,
                path=self.paths[i],
                is_array=False,
                type_str=self.other_types[i],
                shape=shape,
                dtype="",
                itemsize=0,
                spec=((),) * len(shape),
                shard_shape=shape,
                bytes_per_device=0,
                total_bytes=0,
                replicated_axes=(),
                replication=0,
                memory_kind="",
                sharding_name="",
                mesh=None,
                device_count=0,
                has_array=False,
            )
        group = self.groups[g]
        return Leaf(
            index=i,
            path=self.paths[i],
            is_array=True,
            type_str=self.type_str(i),
            shape=shape,
            dtype=group.dtype,
            itemsize=group.itemsize,
            spec=group.spec,
            shard_shape=tuple(n // k for n, k in zip(shape, group.divisors)),
            bytes_per_device=int(self.leaf_bytes[i]),
            total_bytes=math.prod(shape) * group.itemsize,
            replicated_axes=group.replicated_axes,
            replication=group.replication,
            memory_kind=group.memory_kind,
            sharding_name=group.sharding_name,
            mesh=group.mesh,
            device_count=len(group.positions),
            has_array=group.has_array,
        )

    @functools.cached_property
    def leaves(self) -> tuple[Leaf, ...]:
        """Every leaf, in flatten order (built on first use)."""
        return tuple(self.leaf(i) for i in range(self.leaf_count))

    def index_of(self, path: str) -> int:
        """The index of the leaf whose dotted path is ``path``.

        Raises ``KeyError`` when no leaf has it and ``LookupError`` naming the
        indices when several do (dict keys with dots can collide).
        """
        hits = [i for i, p in enumerate(self.paths) if p == path]
        if not hits:
            raise KeyError(path)
        if len(hits) > 1:
            raise LookupError(f"{len(hits)} leaves have the path {path!r}: indices {hits}")
        return hits[0]


def leaf_name(path: str) -> str:
    """A leaf's path as messages and tables write it (the root leaf of a one-leaf tree has none)."""
    return path if path else "(root)"


def _by_id(ids: np.ndarray, values: np.ndarray) -> Mapping[int, int]:
    return MappingProxyType(dict(zip(ids.tolist(), values.tolist())))
