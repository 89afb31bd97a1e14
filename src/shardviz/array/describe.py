"""``describe``: turn a JAX array, sharding or ShapeDtypeStruct into a Layout.

It reads what the sharding already says (mesh, spec, memory kind) and works
out blocks and replica ids from the mesh order, so it never touches
``addressable_shards`` or copies data. It imports no widget code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, NamedSharding, Sharding

from ..errors import ShardingError
from . import blocks as _blocks
from .checks import (
    check_dtype,
    check_memory_kind,
    check_shape,
    check_sharding_fits,
    entry_axes,
    spec_partitions,
    unreduced_axes,
)
from .devices import columns_of, device_columns, memory_kinds
from .layout import Layout
from .model import MeshInfo


def describe(x: Any, *, shape: Sequence[int] | None = None, dtype: Any = None, platform: str | None = None) -> Layout:
    """Lay out ``x``: a jax.Array, a ShapeDtypeStruct with a sharding, or a
    Sharding together with ``shape=`` (and optionally ``dtype=``). A Layout
    is returned as it is.

    ``platform=`` names the platform of a what-if layout on an AbstractMesh
    (e.g. ``"tpu"``); its devices are otherwise labelled plain "device".
    Raises :class:`ShardingError` naming what was wrong; never changes ``x``.
    """
    if isinstance(x, Layout):
        if shape is not None or dtype is not None or platform is not None:
            raise ShardingError("a Layout is already laid out; shape=, dtype= and platform= do not apply")
        return x
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
        if platform is not None:
            raise ShardingError("platform= names the platform of a what-if layout; an array's devices are real")
        if x.is_deleted():
            raise ShardingError(
                "the array has been deleted (by .delete() or by donation to a jitted function); "
                "there is no layout left to show"
            )
        return _describe(x.sharding, tuple(x.shape), x.dtype, str(jax.typeof(x)), has_array=True)
    if isinstance(x, jax.ShapeDtypeStruct):
        if x.sharding is None:
            raise ShardingError(
                "the ShapeDtypeStruct carries no sharding; make it with sharding=NamedSharding(mesh, spec)"
            )
        if not isinstance(x.sharding, Sharding):
            raise ShardingError(f"the ShapeDtypeStruct's sharding is {type(x.sharding).__name__}, not a jax Sharding")
        return _describe_hypothetical(x.sharding, tuple(x.shape), x.dtype, platform)
    if isinstance(x, Sharding):
        if shape is None:
            raise ShardingError(f"a {type(x).__name__} needs shape= to be laid out (e.g. shape=(4, 8))")
        return _describe_hypothetical(x, check_shape(shape), check_dtype(dtype), platform)
    if isinstance(x, np.ndarray) or np.isscalar(x):
        raise ShardingError(
            f"got a {type(x).__name__}, which lives on the host, not on devices; "
            "jax.device_put it onto a sharding first"
        )
    raise ShardingError(
        f"cannot lay out a {type(x).__name__}: pass a jax.Array, a jax.ShapeDtypeStruct with a sharding, "
        "a Sharding with shape=, or a Layout"
    )


def _describe_hypothetical(sharding: Sharding, shape: tuple[int, ...], dtype: Any, platform: str | None) -> Layout:
    """A layout with no array behind it: typeof comes from JAX's own aval."""
    virtual = isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh)
    if platform is not None and not virtual:
        raise ShardingError(
            "platform= names the platform of a what-if layout on an AbstractMesh; these devices are real"
        )
    if platform is not None and not isinstance(platform, str):
        raise ShardingError(f"platform= takes a name such as 'tpu', not {platform!r}")
    check_sharding_fits(sharding, shape)
    try:
        aval = jax.typeof(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
    except Exception as err:  # JAX's own refusal, in its words
        raise ShardingError(f"JAX cannot type a {dtype.name}{list(shape)} array with {sharding}: {err}") from None
    if sharding.memory_kind == "pinned_host" and aval.memory_space != jax.memory.Space.Host:
        # shardviz's addition: typeof of a ShapeDtypeStruct drops the host
        # space for some shardings, while a real array in pinned_host memory
        # prints it; the picture should say where the data would live.
        aval = aval.update(memory_space=jax.memory.Space.Host)
    return _describe(sharding, shape, dtype, str(aval), has_array=False, platform=platform or "")


def _describe(
    sharding: Sharding, shape: tuple[int, ...], dtype: Any, type_str: str, *, has_array: bool, platform: str = ""
) -> Layout:
    memory_kind = sharding.memory_kind or "device"
    if isinstance(sharding, NamedSharding):
        check_sharding_fits(sharding, shape)
        mesh = sharding.mesh
        entries = spec_partitions(sharding.spec)
        spec = tuple(tuple(str(a) for a in entry_axes(e)) for e in entries) + ((),) * (len(shape) - len(entries))
        names = tuple(str(n) for n in mesh.axis_names)
        sizes = tuple(int(s) for s in mesh.axis_sizes)
        assignment = _blocks.mesh_order_blocks(sizes, names, spec, shape)
        columns = columns_of(mesh, platform)
        mesh_info = MeshInfo(names, sizes, tuple(t.name for t in mesh.axis_types), isinstance(mesh, AbstractMesh))
    else:
        spec = ((),) * len(shape)
        try:
            index_map = sharding.devices_indices_map(shape)
        except Exception as err:  # JAX's own message says what did not fit
            raise ShardingError(f"{type(sharding).__name__} cannot lay out shape {shape}: {err}") from None
        devices = list(index_map)
        assignment = _blocks.blocks_from_index_map(shape, [index_map[d] for d in devices])
        columns = device_columns(tuple(devices))
        mesh_info = None
    shard_shape = tuple((b[1] - b[0]) if len(b) > 1 else 0 for b in assignment.bounds)
    kinds = memory_kinds(columns)
    check_memory_kind(memory_kind, kinds)
    return Layout(
        type_str=type_str,
        dtype=dtype.name,
        itemsize=dtype.itemsize,
        shape=shape,
        spec=spec,
        memory_kind=memory_kind,
        memory_kinds=kinds,
        shard_shape=shard_shape,
        mesh=mesh_info,
        sharding_name=type(sharding).__name__,
        has_array=has_array,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        machine_devices=jax.device_count(),
        blocks=assignment,
        columns=columns,
        sharding=sharding,
        unreduced=unreduced_axes(sharding),
    )
