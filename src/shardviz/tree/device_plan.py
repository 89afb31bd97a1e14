"""Which devices a tree's leaves are on: each sharding's devices and blocks, the meshes they name
(checked to agree), and one column per device of the whole tree, in mesh order.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jax.sharding import AbstractMesh, NamedSharding, Sharding, SingleDeviceSharding

from ..array.checks import check_spec, entry_axes
from ..array.devices import columns_of, device_columns, memory_kinds, mesh_columns
from ..array.model import DeviceColumns, MeshInfo
from ..errors import ShardingError
from .model import Spec, TreeMesh, leaf_name


@dataclasses.dataclass(frozen=True)
class ShardingInfo:
    """What one sharding says, whatever the leaf's shape."""

    spec: Spec
    divisors: tuple[int, ...] | None  # None: ask JAX per leaf
    memory_kind: str
    mesh: int | None
    positions: np.ndarray
    replicated_axes: tuple[str, ...]
    replication: int


@dataclasses.dataclass(frozen=True)
class _DevicePlan:
    columns: DeviceColumns
    meshes: tuple[TreeMesh, ...]
    sharding_info: dict[Sharding, ShardingInfo]


def plan_devices(
    keys: Sequence[tuple[Any, ...]],
    members: Sequence[Sequence[int]],
    paths: Sequence[str],
    shapes: Sequence[tuple[int, ...]],
) -> _DevicePlan:
    """Check the meshes agree, lay out the tree's device columns, place every sharding on them."""
    first_leaf: dict[Sharding, int] = {}
    for key, idx in zip(keys, members):
        first_leaf.setdefault(key[0], idx[0])
    # Meshes in the order their first leaf comes, each with the first leaf on it.
    mesh_leaf: dict[Any, int] = {}
    for sharding, i in sorted(first_leaf.items(), key=lambda kv: kv[1]):
        if isinstance(sharding, NamedSharding):
            mesh_leaf.setdefault(sharding.mesh, i)
            check_named(sharding, paths[i], shapes[i])
    meshes = list(mesh_leaf)
    abstract = bool(meshes) and isinstance(meshes[0], AbstractMesh)
    _check_meshes_agree(meshes, mesh_leaf, first_leaf, paths, abstract)
    columns, position = _tree_columns(meshes, first_leaf, shapes, abstract)
    tree_meshes = _tree_meshes(meshes, position, abstract)
    mesh_index = {mesh: k for k, mesh in enumerate(meshes)}
    sharding_info = {
        sharding: _sharding_info(sharding, shapes[i], tree_meshes, mesh_index, position)
        for sharding, i in first_leaf.items()
    }
    return _DevicePlan(columns, tuple(tree_meshes), sharding_info)


def _check_meshes_agree(
    meshes: Sequence[Any],
    mesh_leaf: dict[Any, int],
    first_leaf: dict[Sharding, int],
    paths: Sequence[str],
    abstract: bool,
) -> None:
    """A tree's meshes have one size, and are all what-if (abstract) or all real; names the leaves that differ."""
    if not meshes:
        return
    size0 = math.prod(meshes[0].axis_sizes)
    first = leaf_name(paths[mesh_leaf[meshes[0]]])
    for mesh in meshes[1:]:
        if math.prod(mesh.axis_sizes) != size0:
            raise ShardingError(
                f"leaf {leaf_name(paths[mesh_leaf[mesh]])!r} is on a mesh of {math.prod(mesh.axis_sizes)} devices "
                f"({_mesh_text(mesh)}) but leaf {first!r} is on one of {size0} "
                f"({_mesh_text(meshes[0])}); a tree's meshes must all have the same number of devices"
            )
        if isinstance(mesh, AbstractMesh) != abstract:
            what, real = (mesh, meshes[0]) if abstract is False else (meshes[0], mesh)
            raise ShardingError(
                f"leaf {leaf_name(paths[mesh_leaf[what]])!r} is on an AbstractMesh (a what-if layout) but "
                f"leaf {leaf_name(paths[mesh_leaf[real]])!r} is on real devices; "
                "describe what-if and real trees separately"
            )
    if abstract:
        for sharding, i in first_leaf.items():
            if not isinstance(sharding, NamedSharding):
                raise ShardingError(
                    f"leaf {leaf_name(paths[i])!r} is on real devices ({type(sharding).__name__}) but "
                    f"leaf {first!r} is on an AbstractMesh (a what-if layout); "
                    "put it on the abstract mesh too, e.g. NamedSharding(mesh, P())"
                )


def _tree_columns(
    meshes: Sequence[Any], first_leaf: dict[Sharding, int], shapes: Sequence[tuple[int, ...]], abstract: bool
) -> tuple[DeviceColumns, dict[int, int]]:
    """The tree's device columns (the first mesh in mesh order, then every other device by id) and each
    real device's position in them (none for a what-if tree: its ids are virtual)."""
    if abstract:
        return columns_of(meshes[0]), {}
    columns = mesh_columns(meshes[0]) if meshes else device_columns(())
    position = {int(d): k for k, d in enumerate(columns.ids.tolist())}
    extra: dict[int, Any] = {}
    holders = [m.devices.flat for m in meshes[1:]]
    holders += [_devices_of(s, shapes[i]) for s, i in first_leaf.items() if not isinstance(s, NamedSharding)]
    for devices in holders:
        for device in devices:
            if device.id not in position:
                extra[device.id] = device
    if extra:
        columns = _concat(columns, device_columns(tuple(extra[k] for k in sorted(extra))))
        position = {int(d): k for k, d in enumerate(columns.ids.tolist())}
    return columns, position


def _tree_meshes(meshes: Sequence[Any], position: dict[int, int], abstract: bool) -> list[TreeMesh]:
    out: list[TreeMesh] = []
    for k, mesh in enumerate(meshes):
        if abstract or k == 0:  # virtual ids follow each mesh's order; the columns follow the first mesh
            positions = np.arange(math.prod(mesh.axis_sizes), dtype=np.int64)
        else:
            positions = np.array([position[d.id] for d in mesh.devices.flat], dtype=np.int64)
        positions.flags.writeable = False
        names = tuple(str(n) for n in mesh.axis_names)
        sizes = tuple(int(s) for s in mesh.axis_sizes)
        info = MeshInfo(names, sizes, tuple(t.name for t in mesh.axis_types), abstract)
        own = columns_of(mesh)  # what describe() of a leaf on this mesh reads (cached per mesh)
        out.append(TreeMesh(info, positions, memory_kinds(own), own.machine_order, own.physical))
    return out


def _sharding_info(
    sharding: Sharding,
    shape: tuple[int, ...],
    tree_meshes: Sequence[TreeMesh],
    mesh_index: dict[Any, int],
    position: dict[int, int],
) -> ShardingInfo:
    """What one sharding says: its spec and block counts on a mesh, or its devices as JAX lists them."""
    memory_kind = sharding.memory_kind or "device"
    if isinstance(sharding, NamedSharding):
        k = mesh_index[sharding.mesh]
        mesh_info = tree_meshes[k].info
        size_of = dict(zip(mesh_info.axis_names, mesh_info.axis_sizes))
        spec = tuple(tuple(str(a) for a in entry_axes(e)) for e in sharding.spec)
        used = {a for axes in spec for a in axes}
        return ShardingInfo(
            spec=spec,
            divisors=tuple(math.prod(size_of[a] for a in axes) for axes in spec),
            memory_kind=memory_kind,
            mesh=k,
            positions=tree_meshes[k].positions,
            replicated_axes=tuple(a for a in mesh_info.axis_names if a not in used and size_of[a] > 1),
            replication=math.prod(n for a, n in size_of.items() if a not in used),
        )
    devices = _devices_of(sharding, shape)
    positions = np.array([position[d.id] for d in devices], dtype=np.int64)
    positions.flags.writeable = False
    single = isinstance(sharding, SingleDeviceSharding)
    blocks = 1 if single else _distinct_blocks(sharding, shape)
    return ShardingInfo(
        spec=(),
        divisors=() if single else None,
        memory_kind=memory_kind,
        mesh=None,
        positions=positions,
        replicated_axes=(),
        replication=max(1, len(devices) // blocks),
    )


def check_named(sharding: NamedSharding, path: str, shape: tuple[int, ...]) -> None:
    try:
        check_spec(sharding.mesh, sharding.spec, tuple(shape))
    except ShardingError as err:
        raise ShardingError(f"leaf {leaf_name(path)!r}: {err}") from None


def _mesh_text(mesh: Any) -> str:
    return ", ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes))


def _devices_of(sharding: Sharding, shape: tuple[int, ...]) -> list[Any]:
    if isinstance(sharding, NamedSharding):
        return list(sharding.mesh.devices.flat)
    if isinstance(sharding, SingleDeviceSharding):
        return list(sharding.device_set)
    return list(sharding.devices_indices_map(tuple(shape)))


def _distinct_blocks(sharding: Sharding, shape: tuple[int, ...]) -> int:
    index_map = sharding.devices_indices_map(tuple(shape))
    return len({tuple(s.indices(n)[:2] for s, n in zip(idx, shape)) for idx in index_map.values()})


def _concat(a: DeviceColumns, b: DeviceColumns) -> DeviceColumns:
    kinds = list(a.kinds)
    remap = []
    for platform_kind in b.kinds:
        if platform_kind not in kinds:
            kinds.append(platform_kind)
        remap.append(kinds.index(platform_kind))
    b_kind = np.asarray(remap, dtype=np.int64)[b.kind] if len(b.kind) else b.kind
    columns = [np.concatenate(pair) for pair in ((a.ids, b.ids), (a.process, b.process),
                                                   (a.addressable, b.addressable), (a.kind, b_kind))]  # fmt: skip
    for column in columns:
        column.flags.writeable = False
    ids, process, addressable, kind = columns
    return DeviceColumns(ids=ids, process=process, addressable=addressable, kind=kind, kinds=tuple(kinds))
