"""The tree engine: lay out every leaf of a pytree and count each device's bytes.

``describe_tree`` reads each leaf's sharding (never its data, never another
process's shards) and works in groups: leaves that share a sharding, a dtype
and a rank share one ``LeafGroup``, so the per-device arithmetic is one
numpy sum per group rather than a loop over devices per leaf. A leaf's
``type_str`` is JAX's own ``jax.typeof`` string: JAX formats one leaf of each
group, and the other leaves of the group differ from it only in their
dimension sizes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec, Sharding

from ..array.checks import entry_axes
from ..errors import ShardingError
from .audit import audit_tree
from .device_plan import ShardingInfo, check_named, plan_devices
from .logical import logical_names, may_hold_boxes
from .model import LeafGroup, Spec, TreeAudit, leaf_name
from .paths import path_segments
from .tree import TreeLayout

# Stand-in dimension sizes for cutting a typeof string at its dimensions:
# large and distinct, times the dimension's block count so JAX accepts them.
_SENTINEL_BASE = 7_300_000_000_001


_EMPTY_AUDIT = TreeAudit((), (), 0, MappingProxyType({}), None, 0)


def tree_result(tree: Any) -> TreeLayout:
    """``tree`` as a TreeLayout: one as it is, any other pytree described (the tree kind's ``build``)."""
    return tree if isinstance(tree, TreeLayout) else describe_tree(tree)


def describe_tree(tree: Any) -> TreeLayout:
    """Lay out every leaf of ``tree``: jax.Arrays and ShapeDtypeStructs with shardings.

    Leaves that are not arrays (Python scalars, None, host numpy arrays) are
    listed and cost nothing. Raises :class:`ShardingError` naming the leaf's
    path for a leaf without a sharding, a deleted array, a tracer, or leaves
    on meshes of different sizes. Never changes ``tree``.
    """
    try:
        flat, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_none)
    except Exception as err:  # a custom node's flatten, or unsortable dict keys
        raise ShardingError(f"cannot flatten the tree: {err}") from None

    segments = path_segments([key_path for key_path, _ in flat])
    paths = [".".join(seg) for seg in segments]
    leaves = _group_leaves([x for _, x in flat], paths)
    sources, shapes, keys, members = leaves.sources, leaves.shapes, leaves.keys, leaves.members

    plan = plan_devices(keys, members, paths, shapes)
    groups: list[LeafGroup] = []
    type_overrides: dict[int, str] = {}
    leaf_bytes = np.zeros(len(paths), dtype=np.int64)
    bytes_by_kind: dict[str, np.ndarray] = {}
    total = 0
    for g, key in enumerate(keys):
        idx = members[g]
        group, per_leaf = _leaf_group(key, idx, plan.sharding_info[key[0]], shapes, paths, sources, type_overrides)
        groups.append(group)
        leaf_bytes[idx] = per_leaf
        total += int(sum(math.prod(shapes[i]) for i in idx)) * group.itemsize
        if group.memory_kind not in bytes_by_kind:
            bytes_by_kind[group.memory_kind] = np.zeros(len(plan.columns.ids), dtype=np.int64)
        bytes_by_kind[group.memory_kind][group.positions] += int(per_leaf.sum())

    for values in bytes_by_kind.values():
        values.flags.writeable = False
    leaf_bytes.flags.writeable = False
    group_column = np.asarray(leaves.leaf_group, dtype=np.int64)
    group_column.flags.writeable = False
    data = TreeLayout(
        paths=tuple(paths),
        segments=tuple(segments),
        leaf_group=group_column,
        shapes=tuple(shapes),
        leaf_bytes=leaf_bytes,
        other_types=MappingProxyType(leaves.other_types),
        type_overrides=MappingProxyType(type_overrides),
        groups=tuple(groups),
        meshes=plan.meshes,
        devices=plan.columns,
        bytes_by_kind=MappingProxyType(dict(sorted(bytes_by_kind.items(), key=lambda kv: _kind_rank(kv[0])))),
        total_bytes=total,
        audit=_EMPTY_AUDIT,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        machine_devices=jax.device_count(),
        sources=tuple(sources),
        treedef=treedef,
        logical=MappingProxyType(_logical_by_leaf(tree, paths, treedef)),
    )
    return dataclasses.replace(data, audit=audit_tree(data))


def _logical_by_leaf(tree: Any, paths: Sequence[str], treedef: Any) -> dict[int, tuple[str | None, ...]]:
    """Each leaf's logical axis names from Flax's boxes and metadata, by leaf index."""
    if not may_hold_boxes(treedef):
        return {}
    names = logical_names(tree)
    return {i: names[p] for i, p in enumerate(paths) if p in names}


@dataclasses.dataclass(frozen=True)
class _Leaves:
    """The tree's leaves, the array ones grouped by what lays them out alike."""

    sources: list[Any]
    shapes: list[tuple[int, ...]]
    leaf_group: list[int]  # -1 for a leaf that is no array
    other_types: dict[int, str]  # what each leaf that is no array is
    keys: list[tuple[Any, ...]]  # per group: (sharding, dtype, weak type, rank, has an array)
    members: list[list[int]]  # per group: its leaves


def _group_leaves(flat: Sequence[Any], paths: Sequence[str]) -> _Leaves:
    """Group the array leaves by sharding, dtype and rank; refuse a leaf JAX could not lay out."""
    leaves = _Leaves([], [], [], {}, [], [])
    group_of_key: dict[tuple[Any, ...], int] = {}
    canonical: dict[tuple[Sharding, int], Sharding] = {}
    for i, x in enumerate(flat):
        leaves.sources.append(x)
        key = _group_key(x, paths[i], canonical)
        if key is None:
            leaves.shapes.append(_host_shape(x))
            leaves.other_types[i] = _python_type(x)
            leaves.leaf_group.append(-1)
            continue
        leaves.shapes.append(x.shape)
        g = group_of_key.get(key)
        if g is None:
            g = group_of_key[key] = len(leaves.keys)
            leaves.keys.append(key)
            leaves.members.append([])
        leaves.members[g].append(i)
        leaves.leaf_group.append(g)
    return leaves


def _group_key(x: Any, path: str, canonical: dict[tuple[Sharding, int], Sharding]) -> tuple[Any, ...] | None:
    """What lays an array leaf out (None for a leaf that is no array), or why it cannot be."""
    if isinstance(x, jax.Array):
        if isinstance(x, jax.core.Tracer):
            raise ShardingError(
                f"leaf {leaf_name(path)!r} is a tracer ({jax.typeof(x)}) inside a traced function; "
                "describe the tree outside jit, or use jax.typeof inside it"
            )
        if x.is_deleted():
            raise ShardingError(
                f"leaf {leaf_name(path)!r} is a deleted array (by .delete() or by donation to a jitted function)"
            )
        return (
            _canonical(x.sharding, len(x.shape), canonical),
            x.dtype,
            getattr(x, "weak_type", False),
            len(x.shape),
            True,
        )
    if isinstance(x, jax.ShapeDtypeStruct):
        sharding = x.sharding
        if not isinstance(sharding, Sharding):
            what = "no sharding" if sharding is None else f"a {type(sharding).__name__}, not a jax Sharding"
            raise ShardingError(
                f"leaf {leaf_name(path)!r} ({jax.typeof(x)}) has {what}; give it one, e.g. "
                "jax.eval_shape(jax.jit(init, out_shardings=...), ...) or a rule"
            )
        return (_canonical(sharding, len(x.shape), canonical), x.dtype, x.weak_type, len(x.shape), False)
    return None


def _canonical(sharding: Sharding, ndim: int, made: dict[tuple[Sharding, int], Sharding]) -> Sharding:
    """The sharding with its spec written one way: no trailing None, a lone axis as a name.

    ``P('x')`` and ``P('x', None)`` lay a matrix out alike but compare
    unequal, and so do memory kinds None and ``device`` on an AbstractMesh;
    read as one, their leaves share a group, so a group is fixed by its mesh,
    spec, memory kind, dtype and rank alone (what the browser's rules engine
    can tell from the payload). Made once per sharding and rank.
    """
    if not isinstance(sharding, NamedSharding):
        return sharding
    found = made.get((sharding, ndim))
    if found is not None:
        return found
    spec = sharding.spec
    entries = [None if not entry_axes(e) else e for e in spec]
    if len(entries) > ndim or getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        out: Sharding = sharding  # refused later with its own words, or a spec beyond what shardviz draws
    else:
        while entries and entries[-1] is None:
            entries.pop()
        kind = sharding.memory_kind
        if kind is None and isinstance(sharding.mesh, AbstractMesh):
            kind = "device"  # as a real mesh's sharding reads None: what the payload says
        try:
            out = NamedSharding(sharding.mesh, PartitionSpec(*entries), memory_kind=kind)
        except Exception:  # a spec JAX takes only as written (an UNCONSTRAINED entry): leave it so
            out = sharding
        out = sharding if out == sharding else out
    made[(sharding, ndim)] = out
    return out


def _leaf_group(
    key: tuple[Any, ...],
    idx: Sequence[int],
    info: ShardingInfo,
    shapes: Sequence[tuple[int, ...]],
    paths: Sequence[str],
    sources: Sequence[Any],
    type_overrides: dict[int, str],
) -> tuple[LeafGroup, np.ndarray]:
    """One group's LeafGroup and its leaves' bytes per device (JAX's type strings where they do not split)."""
    sharding, dtype, _, ndim, has_array = key
    first = idx[0]
    itemsize = int(dtype.itemsize)
    if info.divisors is None:  # a sharding we only know through JAX's index maps
        shard_shapes = [_jax_shard_shape(sharding, shapes[i], paths[i]) for i in idx]
        # Block counts per dimension belong to the sharding; read them off a leaf without empty dims.
        sample = next((k for k, s in enumerate(shard_shapes) if all(s)), 0)
        divisors = tuple(n // s if s else 1 for n, s in zip(shapes[idx[sample]], shard_shapes[sample]))
        elements = np.array([math.prod(s) for s in shard_shapes], dtype=np.int64)
    else:
        divisors = _rank_divisors(info.divisors, ndim)
        elements = _shard_elements(idx, shapes, ndim, divisors, sharding, paths)
    kind = info.memory_kind
    pieces = _type_pieces(sources[first], shapes[first], divisors, has_array, kind, paths[first])
    if pieces is None:  # JAX's string did not split cleanly: ask JAX for every leaf
        for i in idx:
            type_overrides[i] = _typeof_text(sources[i], has_array, kind, paths[i])
        pieces = ()
    group = LeafGroup(
        dtype=str(dtype),
        itemsize=itemsize,
        ndim=ndim,
        spec=_rank_spec(info.spec, ndim),
        divisors=divisors,
        memory_kind=kind,
        sharding_name=type(sharding).__name__,
        mesh=info.mesh,
        positions=info.positions,
        replicated_axes=info.replicated_axes,
        replication=info.replication,
        type_pieces=pieces,
        has_array=has_array,
    )
    return group, elements * itemsize


def _is_none(x: Any) -> bool:
    return x is None


def _python_type(x: Any) -> str:
    if x is None:
        return "None"
    name = type(x).__name__
    if isinstance(x, (np.ndarray, np.generic)):
        return f"{name} {x.dtype}[{','.join(str(n) for n in np.shape(x))}]"
    return name


def _host_shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in np.shape(x)) if isinstance(x, (np.ndarray, np.generic)) else ()


def _kind_rank(kind: str) -> tuple[int, str]:
    order = ("device", "pinned_host", "unpinned_host")
    return (order.index(kind) if kind in order else len(order), kind)


def _rank_divisors(divisors: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return divisors[:ndim] + (1,) * (ndim - len(divisors))


def _rank_spec(spec: Spec, ndim: int) -> Spec:
    return spec[:ndim] + ((),) * (ndim - len(spec))


def _shard_elements(
    idx: Sequence[int],
    shapes: Sequence[tuple[int, ...]],
    ndim: int,
    divisors: tuple[int, ...],
    sharding: Sharding,
    paths: Sequence[str],
) -> np.ndarray:
    """Elements in one shard of each leaf; refuses a dimension its axes do not divide."""
    if ndim == 0:
        return np.ones(len(idx), dtype=np.int64)
    dims = np.array([shapes[i] for i in idx], dtype=np.int64).reshape(len(idx), ndim)
    div = np.asarray(divisors, dtype=np.int64)
    uneven = (dims % div).any(axis=1)
    if uneven.any():
        bad = idx[int(np.argmax(uneven))]
        if isinstance(sharding, NamedSharding):
            check_named(sharding, paths[bad], shapes[bad])
        name = leaf_name(paths[bad])
        raise ShardingError(f"leaf {name!r}: shape {shapes[bad]} does not split into {divisors} blocks")
    return (dims // div).prod(axis=1)


def _jax_shard_shape(sharding: Sharding, shape: tuple[int, ...], path: str) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in sharding.shard_shape(tuple(shape)))
    except Exception as err:  # JAX's own refusal, in its words
        what = type(sharding).__name__
        raise ShardingError(f"leaf {leaf_name(path)!r}: {what} cannot lay out shape {shape}: {err}") from None


def _aval(x: Any, has_array: bool, memory_kind: str, path: str) -> Any:
    try:
        aval = jax.typeof(x)
    except Exception as err:  # JAX's own refusal, in its words
        raise ShardingError(f"leaf {leaf_name(path)!r}: JAX cannot type it: {err}") from None
    if not has_array and memory_kind == "pinned_host" and aval.memory_space != jax.memory.Space.Host:
        # As describe() does: typeof of a ShapeDtypeStruct drops the host
        # space for some shardings, where the real array prints it.
        aval = aval.update(memory_space=jax.memory.Space.Host)
    return aval


def _typeof_text(x: Any, has_array: bool, memory_kind: str, path: str) -> str:
    return str(_aval(x, has_array, memory_kind, path))


def _type_pieces(
    x: Any, shape: tuple[int, ...], divisors: tuple[int, ...], has_array: bool, memory_kind: str, path: str
) -> tuple[str, ...] | None:
    """JAX's typeof string of ``x`` cut at its dimension sizes, or None if it does not cut cleanly."""
    aval = _aval(x, has_array, memory_kind, path)
    actual = str(aval)
    if not shape:
        return (actual,)
    sentinels = tuple((_SENTINEL_BASE + 2 * d) * k for d, k in enumerate(divisors))
    try:
        probe = str(aval.update(shape=sentinels))
    except Exception:  # an aval that cannot take other sizes: ask JAX per leaf
        return None
    pieces = []
    rest = probe
    for s in sentinels:
        head, found, rest = rest.partition(str(s))
        if not found:
            return None
        pieces.append(head)
    pieces.append(rest)
    rebuilt = pieces[0] + "".join(f"{n}{p}" for n, p in zip(shape, pieces[1:]))
    return tuple(pieces) if rebuilt == actual else None
