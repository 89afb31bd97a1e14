"""``assert_fits`` (bytes per device under a budget) and ``assert_sharded`` (how much of a tree is split)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..api import as_result, kind_of
from ..array.describe import describe
from ..errors import ShardingError
from ..kinds import ARRAY, PROGRAM
from ..program.model import ProgramData
from ..program.result.report import memory_lines
from ..tree.audit import replication_findings
from ..tree.describe import tree_result
from ..tree.model import TreeData, leaf_name
from ..tree.tree import TreeLayout
from .errors import FailurePage, MemoryBudgetExceeded, NotShardedEnough
from .layout import typed_text
from .messages import exact_bytes, format_bytes
from .sizes import parse_bytes

__all__ = ["assert_fits", "assert_sharded", "program_bytes_per_device", "sharded_fraction"]

LISTED = 10  # leaves or arrays a message names


def _is_host(kind: str) -> bool:
    return "host" in kind


def program_bytes_per_device(program: ProgramData) -> int:
    """The program's peak per device (``Program.memory.held_bytes``): the bytes live at the worst step
    of the schedule, arguments and outputs counted as held, in the program's dtypes.

    An output written over a donated argument counts once. Host-memory figures are not included.
    """
    m = program.memory
    if m is None:
        raise ShardingError(
            f"the program {program.name} has no memory analysis (its backend's compiled module reports none), "
            "so assert_fits cannot size it"
        )
    return m.held_bytes


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
    __tracebackhide__ = True
    budget = parse_bytes(bytes_per_device, "bytes_per_device")
    kind = kind_of(x)  # the registry says what x is (src/shardviz/kinds.py)
    if kind == PROGRAM.name:
        used = program_bytes_per_device(x)
        if used > budget:
            raise MemoryBudgetExceeded(
                _program_message(x, used, budget) + _accept(used), subject=x, page=_page(used, budget)
            )
        return used
    if kind == ARRAY.name:
        layout = describe(x)
    else:
        tree = cast(TreeLayout, as_result(x))
        used = _tree_device_bytes(tree)
        if used > budget:
            raise MemoryBudgetExceeded(
                _tree_message(tree, used, budget) + _accept(used), subject=tree, page=_page(used, budget)
            )
        return used
    if layout.shard_bytes > budget:
        lines = [
            f"{typed_text(layout)} holds {exact_bytes(layout.shard_bytes)} on each device, "
            f"over the budget of {exact_bytes(budget)} per device",
            "",
            layout.to_text(width=100, color=False),
        ]
        message = "\n".join(lines) + _accept(layout.shard_bytes)
        raise MemoryBudgetExceeded(message, subject=layout, page=_page(layout.shard_bytes, budget))
    return layout.shard_bytes


def _tree_device_bytes(tree: TreeData) -> int:
    per_device = np.zeros(tree.device_count, dtype=np.int64)
    for kind, values in tree.bytes_by_kind.items():
        if not _is_host(kind):
            per_device += values
    return int(per_device.max()) if len(per_device) else 0


def _accept(used: int) -> str:
    return f"\nif this is intended, raise bytes_per_device to {exact_bytes(used)} or more"


def _page(used: int, budget: int) -> FailurePage:
    return FailurePage(budget=f"{exact_bytes(budget)} per device", figure=f"{exact_bytes(used)} per device")


def _over(used: int, budget: int) -> str:
    return f"{exact_bytes(used)} per device, over the budget of {exact_bytes(budget)} by {format_bytes(used - budget)}"


def _program_message(program: ProgramData, used: int, budget: int) -> str:
    m = program.memory
    assert m is not None
    timeline = program.memory_timeline
    lines = [f"the program {program.name} needs {_over(used, budget)}"]
    if timeline is not None:
        groups = [(name, n) for name, n in timeline.bytes_by_category() if n]
        lines.append(
            "  at its peak (bytes live at the worst step, arguments and outputs as held): "
            + ", ".join(f"{name} {format_bytes(n)}" for name, n in groups)
        )
    lines.append(
        f"  arguments {format_bytes(m.argument_bytes)}, outputs {format_bytes(m.output_bytes)}, "
        f"temporaries at most {format_bytes(m.temp_bytes)} at once, aliased {format_bytes(m.alias_bytes)} "
        "(per device, in the program's dtypes)"
        if timeline is not None
        else f"  arguments {format_bytes(m.argument_bytes)} + outputs {format_bytes(m.output_bytes)} "
        f"+ temporaries {format_bytes(m.temp_bytes)} - aliased {format_bytes(m.alias_bytes)} "
        "(Compiled.memory_analysis(), per device)"
    )
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


@dataclass(frozen=True)
class Share:
    """How much of a tree's bytes is split: the fraction, the bytes counted and the leaves that are not split."""

    fraction: float
    total: int
    not_split: tuple[int, ...]  # leaf indices, flatten order
    host: tuple[int, ...]  # the NumPy leaves among them


def _leaf_total(tree: TreeData, i: int) -> int:
    """A leaf's logical bytes: a device array's from its shape and dtype, a NumPy array's own nbytes."""
    g = int(tree.leaf_group[i])
    if g >= 0:
        return math.prod(tree.shapes[i]) * tree.groups[g].itemsize
    source = tree.sources[i] if i < len(tree.sources) else None
    return int(source.nbytes) if isinstance(source, (np.ndarray, np.generic)) else 0


def sharded_fraction(tree: TreeData, axes: tuple[str, ...] | None = None) -> Share:
    """The fraction of the tree's array bytes held split, counting every array leaf.

    A leaf is split when a mesh axis larger than 1 cuts one of its
    dimensions; with ``axes``, only when every one of those axes (of size
    more than 1) does. A leaf on one device, on no mesh, or a NumPy array in
    host memory is not split. Bytes are logical (each leaf counted once).
    """
    group_split = []
    for group in tree.groups:
        # each leaf's axes are sized by its own mesh: two meshes may give one axis name two sizes
        mesh = tree.meshes[group.mesh].info if group.mesh is not None else None
        sizes = dict(zip(mesh.axis_names, mesh.axis_sizes)) if mesh is not None else {}
        need = {a for a in axes if sizes.get(a, 1) > 1} if axes is not None else set()
        used = {a for entry in group.spec for a in entry if sizes.get(a, 1) > 1}
        group_split.append(bool(used) and need <= used)
    total = split = 0
    not_split: list[int] = []
    host: list[int] = []
    for i, g in enumerate(tree.leaf_group.tolist()):
        nbytes = _leaf_total(tree, i)
        if not nbytes:
            continue
        total += nbytes
        if g >= 0 and group_split[g]:
            split += nbytes
            continue
        not_split.append(i)
        if g < 0:
            host.append(i)
    return Share(split / total if total else 0.0, total, tuple(not_split), tuple(host))


def assert_sharded(tree: Any, min_fraction: float = 0.9, *, axes: Iterable[str] | str | None = None) -> float:
    """Check that at least ``min_fraction`` of a pytree's bytes are sharded; return the fraction.

    Every array leaf counts: a leaf counts as sharded when some mesh axis
    larger than 1 splits it (not fully replicated); with ``axes=("fsdp",)``,
    only when every named axis does. Leaves never placed on a mesh (on one
    device) and NumPy arrays count as not sharded. The fraction is over
    logical bytes (each leaf's size once). It passes at once only where
    nothing can be split: the named ``axes`` all have size 1 (MaxText's
    check), or the process has one device and no mesh axis is larger than 1.
    Raises :class:`NotShardedEnough` (an AssertionError) listing the largest
    leaves that are not sharded by path; ``ShardingError`` for a tree with no
    array leaves, a fraction outside [0, 1] or an axis no mesh of the tree has.
    """
    __tracebackhide__ = True
    if isinstance(min_fraction, bool) or not isinstance(min_fraction, (int, float)) or not 0 <= min_fraction <= 1:
        raise ShardingError(f"min_fraction must be a number from 0 to 1, e.g. 0.9, not {min_fraction!r}")
    layout = tree_result(tree)
    wanted = _axes(axes, layout)
    sizes = {a: n for mesh in layout.meshes for a, n in zip(mesh.info.axis_names, mesh.info.axis_sizes)}
    share = sharded_fraction(layout, wanted)
    if not share.total:
        what = (
            "an empty tree" if not layout.leaf_count else f"a tree of {layout.leaf_count} leaves, no array among them"
        )
        raise ShardingError(f"assert_sharded has nothing to check: it was given {what}; pass the parameters")
    if wanted is not None and not any(sizes[a] > 1 for a in wanted):
        return 1.0  # MaxText: sharding axes of size 1 ask for nothing
    if wanted is None and not any(n > 1 for n in sizes.values()) and layout.machine_devices <= 1:
        return 1.0  # one device and no mesh axis to split over
    if share.fraction < min_fraction:
        page = FailurePage(
            budget=f"at least {percent(min_fraction)} of the tree's bytes sharded",
            figure=f"{percent(share.fraction, min_fraction)} of {format_bytes(share.total)} sharded",
        )
        raise NotShardedEnough(_sharded_message(layout, share, min_fraction, wanted), subject=layout, page=page)
    return share.fraction


def percent(fraction: float, beside: float | None = None) -> str:
    """``93.8%``; with more digits where one decimal would read the same as ``beside``."""
    text = f"{fraction:.1%}"
    if beside is not None and fraction != beside and text == f"{beside:.1%}":
        return f"{fraction:.4%}"
    return text


def _held(tree: TreeData, i: int) -> str:
    g = int(tree.leaf_group[i])
    if g < 0:
        return "a NumPy array in host memory, on no device"
    group = tree.groups[g]
    if group.mesh is None:
        return "on one device, on no mesh"
    if group.replicated_axes:
        return f"replicated over {', '.join(group.replicated_axes)}"
    if not any(group.spec):
        return "on a mesh with no axis larger than 1"
    return f"split only by {', '.join(a for entry in group.spec for a in entry)}"  # not the named axes


def _sharded_message(tree: TreeData, share: Share, min_fraction: float, axes: tuple[str, ...] | None) -> str:
    rule = "split by some mesh axis" if axes is None else f"split by every one of {', '.join(axes)}"
    leaf_total = {i: _leaf_total(tree, i) for i in share.not_split}
    ranked = sorted(share.not_split, key=lambda i: -leaf_total[i])
    count = len(ranked)
    lines = [
        f"{percent(share.fraction, min_fraction)} of the tree's {format_bytes(share.total)} is sharded ({rule}); "
        f"at least {percent(min_fraction)} must be",
        f"{count} {'leaf' if count == 1 else 'leaves'}, {format_bytes(sum(leaf_total.values()))}, "
        f"{'is' if count == 1 else 'are'} not; the largest:",
    ]
    advice = _advice(tree)
    for i in ranked[:LISTED]:
        kind = tree.type_str(i) if int(tree.leaf_group[i]) >= 0 else tree.other_types.get(i, "")
        per_device = f"{format_bytes(int(tree.leaf_bytes[i]))} per device, " if int(tree.leaf_group[i]) >= 0 else ""
        lines.append(
            f"  {leaf_name(tree.paths[i])}  {kind}  {format_bytes(leaf_total[i])}, {per_device}{_held(tree, i)}"
        )
        if i in advice:
            lines.append(f"      {advice[i]}")
    if count > LISTED:
        lines.append(f"  ... and {count - LISTED} more")
    lines.append(f"if this is intended, lower min_fraction to {percent(share.fraction, min_fraction)} or less")
    unplaced = [i for i in ranked if int(tree.leaf_group[i]) < 0 or tree.groups[int(tree.leaf_group[i])].mesh is None]
    if unplaced:
        lines.append(
            f"{len(unplaced)} of them {'is' if len(unplaced) == 1 else 'are'} on no mesh: place each with "
            "jax.device_put(x, NamedSharding(mesh, P(...))) (or jax.jit's out_shardings) before the step"
        )
    return "\n".join(lines)


def _advice(tree: TreeData) -> dict[int, str]:
    """Per replicated leaf, the audit's finding that saves the most (an axis and the dimension to split)."""
    best: dict[int, Any] = {}
    for finding in replication_findings(tree, None)[0]:
        if finding.leaf not in best or finding.saving > best[finding.leaf].saving:
            best[finding.leaf] = finding
    return {i: f.message for i, f in best.items()}
