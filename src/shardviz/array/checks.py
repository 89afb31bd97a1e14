"""Input checks shared by describe and the editors: each refusal names the culprit.

JAX refuses some of these itself, with messages about "resource axes";
checking first lets shardviz name the dimension, axis or kind in plain words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec, Sharding

from ..errors import ShardingError

DEFAULT_DTYPE = "float32"

# The largest deployments are around 10^5 chips; a what-if mesh beyond this is
# a typo, and laying it out would allocate per-device columns for all of them.
MAX_DEVICES = 2**20
# numpy's limit on array dimensions is 64; no real mesh has more than a handful.
MAX_AXES = 16


def entry_axes(entry: Any) -> tuple[Any, ...]:
    """The mesh axes of one spec entry: None, a name, or a tuple of names."""
    if entry is None:
        return ()
    if isinstance(entry, (tuple, list)):
        return tuple(entry)
    return (entry,)


def spec_partitions(spec: Any) -> tuple[Any, ...]:
    """A spec's entries, one per dimension: a PartitionSpec with unreduced or reduced axes
    (``P('x', unreduced={'y'})``) refuses ``*spec``, and those axes split no dimension."""
    if isinstance(spec, PartitionSpec):
        # JAX 0.10.0 has no ``partitions`` and iterates such a spec without complaint
        return tuple(spec.partitions) if hasattr(spec, "partitions") else tuple(spec)
    return tuple(spec)


def unreduced_axes(sharding: Any) -> tuple[str, ...]:
    """The mesh axes a NamedSharding leaves unreduced (each device along them holds a partial sum)."""
    spec = getattr(sharding, "spec", None)
    return tuple(sorted(str(a) for a in getattr(spec, "unreduced", ())))


def spec_from_entries(entries: Sequence[Sequence[str] | None]) -> PartitionSpec:
    """Spec entries as the grammar parses them or a Layout stores them (None, ``()`` or axis
    names per dimension) as the PartitionSpec JAX would print: one axis bare, several as a
    tuple, none as None."""
    return PartitionSpec(*(None if not e else e[0] if len(e) == 1 else tuple(e) for e in entries))


def spec_repr(spec: Sequence[Any]) -> str:
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def check_shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise ShardingError(f"shape must be a sequence of non-negative ints, got {shape!r}") from None
    for d, n in enumerate(dims):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ShardingError(f"shape dimension {d} is {n!r}; it must be a non-negative int")
    return tuple(int(n) for n in dims)


def check_dtype(dtype: Any) -> np.dtype:
    try:
        return np.dtype(jax.numpy.dtype(DEFAULT_DTYPE if dtype is None else dtype))
    except (TypeError, ValueError):
        raise ShardingError(f"unknown dtype {dtype!r}") from None


def check_mesh_size(names: Sequence[Any], sizes: Sequence[int]) -> None:
    """Refuse a mesh too large to lay out, before anything is allocated for it."""
    if len(sizes) > MAX_AXES:
        raise ShardingError(f"the mesh has {len(sizes)} axes; shardviz lays out at most {MAX_AXES}")
    total = math.prod(int(s) for s in sizes)
    if total > MAX_DEVICES:
        shape = " × ".join(f"{n}={s}" for n, s in zip(names, sizes))
        raise ShardingError(
            f"the mesh {shape} has {total:,} devices; shardviz lays out at most {MAX_DEVICES:,} (2^20), "
            "beyond the largest machines built"
        )


def check_sharding_fits(sharding: Sharding, shape: tuple[int, ...]) -> None:
    """Reject a NamedSharding that does not fit the shape, naming the culprit."""
    if isinstance(sharding, NamedSharding):
        check_mesh_size(sharding.mesh.axis_names, sharding.mesh.axis_sizes)
        check_spec(sharding.mesh, sharding.spec, shape)


def check_spec(mesh: Any, spec: Any, shape: tuple[int, ...]) -> None:
    """Reject a spec that does not fit the mesh or the shape, naming the culprit."""
    names = tuple(mesh.axis_names)
    sizes = dict(zip(names, mesh.axis_sizes))
    spec = spec_partitions(spec)
    if len(spec) > len(shape):
        raise ShardingError(
            f"the spec {spec_repr(spec)} has {len(spec)} entries but the array has rank {len(shape)} "
            f"(shape {shape}); give at most one entry per dimension"
        )
    # Every axis is checked before any extent: an axis used twice, or not in the mesh, is what is
    # wrong with the spec, whatever the extents (JAX refuses it first too).
    seen: dict[Any, int] = {}
    for d, entry in enumerate(spec):
        if entry is PartitionSpec.UNCONSTRAINED:
            raise ShardingError(
                f"dimension {d} is UNCONSTRAINED, which only with_sharding_constraint accepts; "
                "a layout needs axes or None"
            )
        for axis in entry_axes(entry):
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
    for d, entry in enumerate(spec):
        axes = entry_axes(entry)
        cuts = math.prod(sizes[a] for a in axes)
        if cuts and shape[d] % cuts:
            raise ShardingError(indivisible_message(d, shape[d], axes, sizes))


def indivisible_message(dim: int, extent: int, axes: Sequence[Any], sizes: dict[Any, int]) -> str:
    """Why ``axes`` cannot split dimension ``dim``, and which axes could."""
    cuts = math.prod(sizes[a] for a in axes)
    split = " × ".join(f"{a}={sizes[a]}" for a in axes)
    fitting = [f"{a}={s}" for a, s in sizes.items() if s > 1 and extent % s == 0]
    hint = (
        f"axes of this mesh that divide {extent}: {', '.join(fitting)}"
        if fitting
        else f"no axis of this mesh divides {extent}; leave dimension {dim} unsplit (None)"
    )
    return (
        f"dimension {dim} has size {extent}, which {split} cannot split evenly into {cuts} blocks "
        f"(JAX has no uneven shards); {hint}"
    )


def check_memory_kind(kind: str, addressable: Sequence[str]) -> None:
    """Reject a memory kind the devices cannot address, listing the ones they can."""
    if kind not in addressable:
        raise ShardingError(
            f"memory kind {kind!r} is not addressable by these devices; they address {', '.join(addressable)}"
        )
