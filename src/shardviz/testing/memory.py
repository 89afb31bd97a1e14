"""``assert_fits`` (bytes per device under a budget) and ``assert_sharded`` (how much of a tree is split)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import jax
import numpy as np

from ..engine.describe import describe
from ..engine.layout import Layout
from ..errors import ShardingError
from ..program.model import ProgramData
from ..program.report import memory_lines
from ..tree.describe import describe_tree
from ..tree.model import TreeData, leaf_name
from ..tree.tree import TreeLayout
from .errors import MemoryBudgetExceeded, NotShardedEnough
from .layout import typed_text
from .messages import exact_bytes, format_bytes
from .sizes import parse_bytes

__all__ = ["assert_fits", "assert_sharded", "program_bytes_per_device", "sharded_fraction"]

LISTED = 10  # leaves or arrays a message names


def _is_host(kind: str) -> bool:
    return "host" in kind


def program_bytes_per_device(program: ProgramData) -> int:
    """Arguments + outputs + temporaries - aliased bytes per device, from ``Compiled.memory_analysis()``.

    Aliased bytes are outputs that reuse an argument's buffer (donation), so
    they count once. Host-memory figures are not included.
    """
    m = program.memory
    if m is None:
        raise ShardingError(
            f"the program {program.name} has no memory analysis (its backend's compiled module reports none), "
            "so assert_fits cannot size it"
        )
    return m.reserved_bytes


def assert_fits(x: Any, bytes_per_device: int | str) -> int:
    """Check that ``x`` needs at most ``bytes_per_device`` on any device; return the figure checked.

    - a Program (``shardviz.trace``): arguments + outputs + temporaries -
      aliased bytes per device, as ``Compiled.memory_analysis()`` reports
      them (device memory; host figures apart);
    - a Layout, a jax.Array or a ShapeDtypeStruct: the bytes one device holds;
    - a pytree (or a TreeLayout): the most bytes any device holds of its
      leaves in device memory (leaves in a host memory kind not counted).

    ``bytes_per_device`` is an int or a string such as ``"16 GiB"``. Raises
    :class:`MemoryBudgetExceeded` (an AssertionError) naming the figure, the
    budget and what takes the most; ``ShardingError`` for a budget of the
    wrong type.
    """
    budget = parse_bytes(bytes_per_device, "bytes_per_device")
    if isinstance(x, ProgramData):
        used = program_bytes_per_device(x)
        if used > budget:
            raise MemoryBudgetExceeded(_program_message(x, used, budget), subject=x)
        return used
    if isinstance(x, (Layout, jax.Array, jax.ShapeDtypeStruct)):
        layout = describe(x)
    else:
        tree = x if isinstance(x, TreeLayout) else describe_tree(x)
        used = _tree_device_bytes(tree)
        if used > budget:
            raise MemoryBudgetExceeded(_tree_message(tree, used, budget), subject=tree)
        return used
    if layout.shard_bytes > budget:
        lines = [
            f"{typed_text(layout)} holds {exact_bytes(layout.shard_bytes)} on each device, "
            f"over the budget of {exact_bytes(budget)} per device",
            "",
            layout.to_text(width=100, color=False),
        ]
        raise MemoryBudgetExceeded("\n".join(lines), subject=layout)
    return layout.shard_bytes


def _tree_device_bytes(tree: TreeData) -> int:
    per_device = np.zeros(tree.device_count, dtype=np.int64)
    for kind, values in tree.bytes_by_kind.items():
        if not _is_host(kind):
            per_device += values
    return int(per_device.max()) if len(per_device) else 0


def _over(used: int, budget: int) -> str:
    return f"{exact_bytes(used)} per device, over the budget of {exact_bytes(budget)} by {format_bytes(used - budget)}"


def _program_message(program: ProgramData, used: int, budget: int) -> str:
    m = program.memory
    assert m is not None
    lines = [
        f"the program {program.name} needs {_over(used, budget)}",
        f"  arguments {format_bytes(m.argument_bytes)} + outputs {format_bytes(m.output_bytes)} "
        f"+ temporaries {format_bytes(m.temp_bytes)} - aliased {format_bytes(m.alias_bytes)} "
        "(Compiled.memory_analysis(), per device)",
    ]
    timeline = program.memory_timeline
    if timeline is not None:  # what is live when memory peaks, as the program's report says it
        lines += ["", *memory_lines(timeline, 100, top=LISTED)]
    elif m.peak_bytes is not None:
        lines.append(f"  peak live bytes (memory_analysis): {format_bytes(m.peak_bytes)}")
    for title, paths, layouts in (
        ("largest arguments", program.input_paths, program.inputs),
        ("largest outputs", program.output_paths, program.outputs),
    ):
        ranked = sorted(zip(paths, layouts), key=lambda pl: -pl[1].shard_bytes)[:LISTED]
        if ranked:
            lines += ["", f"{title}, per device:"]
            lines += [f"  {format_bytes(lay.shard_bytes):>9}  {path}  {typed_text(lay)}" for path, lay in ranked]
    return "\n".join(lines)


def _tree_message(tree: TreeData, used: int, budget: int) -> str:
    totals = np.zeros(tree.device_count, dtype=np.int64)
    for kind, values in tree.bytes_by_kind.items():
        if not _is_host(kind):
            totals += values
    fullest = [int(i) for i in tree.devices.ids[totals == used]]
    shown = ", ".join(map(str, fullest[:8])) + (f" and {len(fullest) - 8} more" if len(fullest) > 8 else "")
    lines = [
        f"the tree needs {_over(used, budget)}",
        f"  on device {shown} (leaves in device memory)",
        "",
        "largest leaves, bytes each device holds:",
    ]
    order = np.argsort(-tree.leaf_bytes, kind="stable")[:LISTED]
    for i in order:
        i = int(i)
        if tree.leaf_bytes[i] == 0:
            break
        lines.append(f"  {format_bytes(int(tree.leaf_bytes[i])):>9}  {leaf_name(tree.paths[i])}  {tree.type_str(i)}")
    host = sum(int(v.max()) for k, v in tree.bytes_by_kind.items() if _is_host(k) and len(v))
    if host:
        lines.append(f"(leaves in host memory, not counted: up to {format_bytes(host)} per device)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- sharded fraction


def _axes(axes: Any, tree: TreeData) -> tuple[str, ...] | None:
    if axes is None:
        return None
    listed = (axes,) if isinstance(axes, str) else axes
    if not isinstance(listed, Iterable) or not all(isinstance(a, str) for a in listed):
        raise ShardingError(f"axes names mesh axes, e.g. ('fsdp',), not {axes!r}")
    names = {a for mesh in tree.meshes for a in mesh.info.axis_names}
    for axis in listed:
        if axis not in names:
            raise ShardingError(
                f"axes names {axis!r}, which no mesh of the tree has (axes: {', '.join(sorted(names))})"
            )
    return tuple(listed)


def sharded_fraction(tree: TreeData, axes: tuple[str, ...] | None = None) -> tuple[float, int, list[int]]:
    """The fraction of the tree's array bytes held split, its array bytes, and the replicated leaves.

    A leaf is split when a mesh axis larger than 1 cuts one of its
    dimensions; with ``axes``, only when every one of those axes (of size
    more than 1) does. Bytes are logical (each leaf counted once).
    """
    sizes: dict[str, int] = {}
    for mesh in tree.meshes:
        sizes.update(zip(mesh.info.axis_names, mesh.info.axis_sizes))
    group_split = []
    for group in tree.groups:
        used = {a for entry in group.spec for a in entry if sizes.get(a, 1) > 1}
        need = {a for a in axes if sizes.get(a, 1) > 1} if axes is not None else None
        group_split.append(bool(used) and (need is None or need <= used))
    total = split = 0
    replicated = []
    for i, g in enumerate(tree.leaf_group.tolist()):
        if g < 0:
            continue
        nbytes = math.prod(tree.shapes[i]) * tree.groups[g].itemsize
        total += nbytes
        if group_split[g]:
            split += nbytes
        elif nbytes:
            replicated.append(i)
    return (split / total if total else 1.0), total, replicated


def assert_sharded(tree: Any, min_fraction: float = 0.9, *, axes: Iterable[str] | str | None = None) -> float:
    """Check that at least ``min_fraction`` of a pytree's bytes are sharded; return the fraction.

    A leaf counts as sharded when some mesh axis larger than 1 splits it (not
    fully replicated); with ``axes=("fsdp",)``, only when every named axis
    does. The fraction is over logical bytes (each leaf's size once). A tree
    whose meshes (or ``axes``) have no axis larger than 1 has nothing to split
    over and passes. Raises :class:`NotShardedEnough` (an AssertionError)
    listing the largest replicated leaves by path; ``ShardingError`` for a
    fraction outside [0, 1] or an axis no mesh of the tree has.
    """
    if isinstance(min_fraction, bool) or not isinstance(min_fraction, (int, float)) or not 0 <= min_fraction <= 1:
        raise ShardingError(f"min_fraction must be a number from 0 to 1, e.g. 0.9, not {min_fraction!r}")
    layout = tree if isinstance(tree, TreeLayout) else describe_tree(tree)
    wanted = _axes(axes, layout)
    sizes = {a: n for mesh in layout.meshes for a, n in zip(mesh.info.axis_names, mesh.info.axis_sizes)}
    if not any(sizes.get(a, 1) > 1 for a in (wanted if wanted is not None else sizes)):
        return 1.0
    fraction, total, replicated = sharded_fraction(layout, wanted)
    if fraction < min_fraction:
        raise NotShardedEnough(
            _sharded_message(layout, fraction, total, replicated, min_fraction, wanted), subject=layout
        )
    return fraction


def _sharded_message(
    tree: TreeData,
    fraction: float,
    total: int,
    replicated: list[int],
    min_fraction: float,
    axes: tuple[str, ...] | None,
) -> str:
    rule = "split by some mesh axis" if axes is None else f"split by every one of {', '.join(axes)}"
    leaf_total = {i: math.prod(tree.shapes[i]) * tree.groups[int(tree.leaf_group[i])].itemsize for i in replicated}
    ranked = sorted(replicated, key=lambda i: -leaf_total[i])
    lines = [
        f"{fraction:.1%} of the tree's {format_bytes(total)} is sharded ({rule}); at least {min_fraction:.1%} must be",
        f"{len(replicated)} {'leaf' if len(replicated) == 1 else 'leaves'}, "
        f"{format_bytes(sum(leaf_total.values()))}, {'is' if len(replicated) == 1 else 'are'} not; the largest:",
    ]
    advice = {r.leaf: r.message for r in tree.audit.replicated}
    for i in ranked[:LISTED]:
        group = tree.groups[int(tree.leaf_group[i])]
        if group.mesh is None:
            held = "on one device, on no mesh"
        elif group.replicated_axes:
            held = f"replicated over {', '.join(group.replicated_axes)}"
        else:
            held = f"split only by {', '.join(a for entry in group.spec for a in entry)}"  # not the named axes
        lines.append(
            f"  {leaf_name(tree.paths[i])}  {tree.type_str(i)}  {format_bytes(leaf_total[i])}, "
            f"{format_bytes(int(tree.leaf_bytes[i]))} per device, {held}"
        )
        if i in advice:
            lines.append(f"      {advice[i]}")
    if len(ranked) > LISTED:
        lines.append(f"  ... and {len(ranked) - LISTED} more")
    return "\n".join(lines)
