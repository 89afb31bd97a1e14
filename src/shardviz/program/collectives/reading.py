"""Each collective of the compiled module as the user knows it: its mesh axes, its line, its parts.

A collective's line is the user's frame of its XLA metadata; one XLA made
to lay out an output or take in an input is charged to that array's line;
one on a ``with_sharding_constraint``'s operand moves to the constraint's
line. A combined collective is split into its operands, each on the line
that made it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...array.model import MeshInfo
from .. import hlo
from ..lines.frames import user_frame
from ..lines.jaxpr_walk import RESHARDING_KINDS, Redirects, user_frames
from ..lines.scopes import scope_of_op_name
from ..memory.wire import wire_bytes
from ..model import (
    AxisPiece,
    Collective,
    CollectivePart,
    SourceListing,
    SourceLocation,
)
from ..values import axes as _axes
from . import places


def read_collective(
    op: hlo.CollectiveOp,
    module: hlo.Module,
    mesh: MeshInfo | None,
    to_mesh: np.ndarray | None,
    source: SourceListing | None,
    redirects: Redirects,
    arrays: ArrayLines | None = None,
) -> Collective:
    axes, pieces = _mesh_axes(op, mesh, to_mesh)
    group_size = _group_size(op)
    result_bytes = op.result.byte_size
    meta = op.inst.metadata
    stack, mine, note, (charged_role, charged_to) = _on_users_line(op, module, redirects, arrays)
    parts = _parts(op, module, group_size, source, stack)
    return Collective(
        kind=op.kind,
        name=op.inst.name,
        axes=axes,
        group_size=group_size,
        groups=op.groups,
        groups_form=op.groups_form,
        pairs=op.pairs,
        result_bytes=result_bytes,
        operand_count=op.operand_count,
        count=op.count,
        count_exact=op.count_exact,
        wire_bytes=sum(p.wire_bytes for p in parts)
        if parts
        else wire_bytes(op.kind, result_bytes, group_size, op.pairs),
        source=mine,
        stack=stack,
        listing_line=source.line_of(stack) if source else None,
        op_name=meta.op_name or "",
        hlo=op.inst.text,
        channel_id=op.channel_id,
        pieces=pieces,
        parts=parts,
        note=note,
        scope=scope_of_op_name(meta.op_name or ""),
        charged_to=charged_to,
        charged_role=charged_role,
    )


def _mesh_axes(
    op: hlo.CollectiveOp, mesh: MeshInfo | None, to_mesh: np.ndarray | None
) -> tuple[tuple[str, ...] | None, tuple[AxisPiece, ...] | None]:
    """The mesh axes the collective's groups run over, or else the pieces of axes they do (None: unknown)."""
    if mesh is None or to_mesh is None:
        return None, None
    placed = tuple(int(k) for k in to_mesh)
    if op.kind == "collective-permute":
        return _pair_axes(op.pairs, mesh.axis_names, mesh.axis_sizes, placed), None
    return _groups_axes(op.groups, mesh.axis_names, mesh.axis_sizes, placed)


# A program's collectives repeat a few device groups (one per layer, the same each time): each is
# worked out once.
@functools.lru_cache(maxsize=256)
def _pair_axes(
    pairs: tuple[tuple[int, int], ...], names: tuple[str, ...], sizes: tuple[int, ...], placed: tuple[int, ...]
) -> tuple[str, ...] | None:
    return _axes.pair_axes(pairs, names, sizes, np.asarray(placed, dtype=np.int64))


@functools.lru_cache(maxsize=256)
def _groups_axes(
    groups: tuple[tuple[int, ...], ...], names: tuple[str, ...], sizes: tuple[int, ...], placed: tuple[int, ...]
) -> tuple[tuple[str, ...] | None, tuple[AxisPiece, ...] | None]:
    to_mesh = np.asarray(placed, dtype=np.int64)
    axes = _axes.group_axes(groups, names, sizes, to_mesh)
    if axes is not None:
        return axes, None
    found = _axes.group_pieces(groups, names, sizes, to_mesh)
    return None, None if found is None else tuple(AxisPiece(*p) for p in found)


def _on_users_line(
    op: hlo.CollectiveOp, module: hlo.Module, redirects: Redirects, arrays: ArrayLines | None
) -> tuple[tuple[SourceLocation, ...], SourceLocation | None, str, tuple[str, str]]:
    """The collective's stack and the user's frame in it, why it was moved there (``note``), and the
    array it is charged to (role, path) when XLA made it to lay that array out."""
    meta = op.inst.metadata
    stack = stack_of(module, op.inst)
    if not stack and meta.source_file and meta.source_line is not None:
        stack = (SourceLocation(meta.source_file, meta.source_line),)
    mine = user_frame(stack)
    charged_to, charged_role = "", ""
    if mine is None and arrays is not None:  # XLA's own: laying out an output, or taking in an input
        charge = arrays.charge(op)
        if charge is not None:
            charged_role, charged_to, array_stack = charge
            stack = array_stack + stack
            mine = user_frame(stack)
    note = ""
    moved = redirects.get((mine.file, mine.line)) if mine is not None else None
    if mine is not None and moved is not None and op.kind in RESHARDING_KINDS:
        note = (
            f"XLA's metadata names line {mine.line} ({_primitive_of(meta.op_name)}), whose result the "
            f"with_sharding_constraint on line {moved[0].line} re-lays out: shown on the constraint's line"
        )
        stack = moved + stack
        mine = moved[0]
    return stack, mine, note, (charged_role, charged_to)


class ArrayLines:
    """The outputs and inputs a collective with no line of the user's may belong to, and their lines:
    an output's is where its value is made, an input's where it is first read."""

    def __init__(
        self,
        module: hlo.Module,
        values: Sequence[Any],
        input_paths: Sequence[str],
        output_paths: Sequence[str],
        kept: list[int] | None,
        jaxpr: Any,
    ) -> None:
        self.module = module
        self.input_paths = input_paths
        self.output_paths = output_paths
        self.kept = kept if kept is not None else list(range(len(input_paths)))
        self.made = {v.label: v.stack for v in values if v.role == "output"}
        self.jaxpr = jaxpr
        self._users: dict[str, list[Any]] | None = None

    def charge(self, op: hlo.CollectiveOp) -> tuple[str, str, tuple[SourceLocation, ...]] | None:
        if self._users is None:
            self._users = places.entry_users(self.module)
        found = places.layout_charge(self.module, op, self._users)
        if found is None:
            return None
        role, k = found
        if role == "output":
            if k >= len(self.output_paths):
                return None
            path = self.output_paths[k]
            return role, path, tuple(self.made.get(path, ()))
        if k >= len(self.kept) or self.kept[k] >= len(self.input_paths):
            return None
        index = self.kept[k]
        return role, self.input_paths[index], _first_reader(self.jaxpr, index)


def _first_reader(jaxpr: Any, index: int) -> tuple[SourceLocation, ...]:
    """The user's frames of the first equation that reads input ``index`` (none when nothing does)."""
    if index >= len(jaxpr.invars):
        return ()
    var = jaxpr.invars[index]
    for eqn in jaxpr.eqns:
        if any(v is var for v in eqn.invars):
            return user_frames(eqn.source_info)
    return ()


def _group_size(op: hlo.CollectiveOp) -> int:
    """Devices in one group (a collective-permute's: those its pairs connect; one where every device keeps its own)."""
    if op.kind == "collective-permute" and all(s == t for s, t in op.pairs):
        return 1
    return max((len(g) for g in op.groups), default=1)


def stack_of(module: hlo.Module, inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
    frames = module.frames(inst.metadata.stack_frame_id)
    return tuple(SourceLocation(f.file, f.line, f.column, f.function) for f in frames)


def stacks_of(module: hlo.Module) -> Callable[[hlo.Instruction], tuple[SourceLocation, ...]]:
    """:func:`stack_of` for ``module``, each stack made once: the passes of a loop share their lines."""
    made: dict[int | None, tuple[SourceLocation, ...]] = {}

    def stack(inst: hlo.Instruction) -> tuple[SourceLocation, ...]:
        key = inst.metadata.stack_frame_id
        if key not in made:
            made[key] = stack_of(module, inst)
        return made[key]

    return stack


def _primitive_of(op_name: str | None) -> str:
    """``jit(f)/transpose(jvp())/dot_general`` -> ``dot_general``."""
    return (op_name or "").rsplit("/", 1)[-1]


def _parts(
    op: hlo.CollectiveOp,
    module: hlo.Module,
    group_size: int,
    source: SourceListing | None,
    own_stack: tuple[SourceLocation, ...],
) -> tuple[CollectivePart, ...]:
    """Each operand of a combined collective with its bytes and the line that made it.

    The operand's producer (followed through tuples, copies and bitcasts to
    the first instruction with a stack) names the line; an operand with no
    such producer keeps the collective's own stack. An all-to-all's operands
    are pieces of one array, not merged collectives, so it is never split.
    """
    leaves = op.result.tuple_shapes if op.result.is_tuple else ()
    if op.operand_count < 2 or op.kind == "all-to-all" or len(leaves) != op.operand_count:
        return ()
    computation = module.by_name.get(op.computation)
    operands = op.inst.operands
    out = []
    for index, (operand, shape) in enumerate(zip(operands, leaves)):
        stack: tuple[SourceLocation, ...] = ()
        op_name = ""
        if operands.count(operand) > 1:  # one value merged twice: only the reader of each result can tell them apart
            stack, op_name = _tuple_reader_origin(module, computation, op.inst.name, index)
        if not stack:
            stack, op_name = _producer_origin(module, computation, operand)
        if not stack:
            stack, op_name = own_stack, op.inst.metadata.op_name or ""
        mine = user_frame(stack)
        size = shape.byte_size
        out.append(
            CollectivePart(
                operand=operand,
                result_bytes=size,
                wire_bytes=wire_bytes(op.kind, size, group_size, op.pairs),
                source=mine,
                stack=stack,
                listing_line=source.line_of(stack) if source else None,
                op_name=op_name,
                scope=scope_of_op_name(op_name),
            )
        )
    return tuple(out)


def _tuple_reader_origin(
    module: hlo.Module, computation: hlo.Computation | None, tuple_name: str, index: int
) -> tuple[tuple[SourceLocation, ...], str]:
    """The stack and op_name of the ``get-tuple-element`` that reads result ``index`` of a combined collective.

    XLA's combiner gives each of those readers the metadata of the collective
    it replaced, so when one producer feeds several operands (common
    subexpressions merged: ``x.sum()`` and ``x.mean()``), the reader still
    names each original's line.
    """
    if computation is None:
        return (), ""
    for inst in computation.instructions:
        if inst.opcode == "get-tuple-element" and inst.operands == (tuple_name,) and inst.attr("index") == str(index):
            stack = stack_of(module, inst)
            if stack:
                return stack, inst.metadata.op_name or ""
    return (), ""


def _producer_origin(
    module: hlo.Module, computation: hlo.Computation | None, name: str, limit: int = 32
) -> tuple[tuple[SourceLocation, ...], str]:
    """The stack and op_name of the first instruction with a stack on the way back from ``name``
    (through tuples, copies, bitcasts): the instruction that made the operand."""
    if computation is None:
        return (), ""
    pending: list[str] = [name]
    seen: set[str] = set()
    while pending and len(seen) < limit:
        current = pending.pop(0)
        if current in seen or current not in computation.by_name:
            continue
        seen.add(current)
        inst = computation.by_name[current]
        stack = stack_of(module, inst)
        if stack:
            return stack, inst.metadata.op_name or ""
        pending.extend(inst.operands)
    return (), ""
