"""A collective's bytes as the device moves them, where XLA:CPU moved more.

XLA's CPU backend has no bfloat16/float16 collectives: it converts such
values to float32 before a collective and back after it, so the CPU module's
all-gather of a bf16 array moves twice the bytes a TPU's or GPU's would.
The jaxpr says what the program asked for: when every value the
collective's source expression makes with the collective's primitive
(``dot_general``, ``sharding_constraint``, ...) is of one narrower float type
than the module's collective, the device moves that type. The expression is
the line and column of the user's frame, so two products of different types
on one line are told apart; without a column to go by, the whole line must
agree. A value the user converted to float32 (``x.astype(jnp.float32)``, or
the float32 sum ``jnp.sum`` of a bf16 array accumulates in) stays float32,
as it would on the device. A combined collective is read operand by operand,
each on the expression that made it. A resharding collective shown on a
constraint's line (its op_name still the operation that made the value)
moves what the constraint lays out, so it is read as the constraint's.

:func:`count_on_device` runs once per trace: each collective keeps both
counts (``on_device`` and ``on_cpu``) and its ``result_bytes`` and
``wire_bytes`` are the device's. :func:`recounted` gives the same program
counted as XLA:CPU's module moves it (``Program.with_bytes("cpu")``), and back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

import jax.numpy as jnp

from ...errors import ShardingError
from ..hlo import NUMPY_NAMES, parse_instruction
from ..model import BytesIn, Collective, CollectivePart, ProgramData, SourceLocation, Value, replaced
from .totals import program_totals
from .wire import wire_bytes

NARROW_FLOATS = ("bfloat16", "float16")
_RESHARDING = frozenset({"all-gather", "all-to-all", "collective-permute"})
COUNTS = ("device", "cpu")


class MadeDtypes:
    """The dtypes of the values each source expression makes with each primitive."""

    def __init__(self, values: Iterable[Value]) -> None:
        self.by_expression: dict[tuple[str, int, int, str], set[str]] = {}
        self.by_line: dict[tuple[str, int, str], set[str]] = {}
        for v in values:
            if v.source is None or not v.primitive:
                continue
            s = v.source
            self.by_expression.setdefault((s.file, s.line, s.column, v.primitive), set()).add(v.dtype)
            self.by_line.setdefault((s.file, s.line, v.primitive), set()).add(v.dtype)

    def made(self, source: SourceLocation | None, op_name: str) -> set[str]:
        """What ``source``'s expression makes with ``op_name``'s primitive (its last part); the whole
        line's values where no value carries that expression's column."""
        if source is None or not op_name:
            return set()
        primitive = op_name.rsplit("/", 1)[-1]
        found = self.by_expression.get((source.file, source.line, source.column, primitive))
        return found if found else self.by_line.get((source.file, source.line, primitive), set())


def device_dtype(made: set[str], module_dtype: str) -> str:
    """The dtype the device moves for a buffer the module holds as ``module_dtype`` ("" where that is
    unknown): the one narrow float the program made where the module holds a wider float, else the
    module's own."""
    if len(made) != 1 or not module_dtype.startswith("float"):
        return module_dtype
    (dtype,) = made
    if dtype not in NARROW_FLOATS or _bits(dtype) >= _bits(module_dtype):
        return module_dtype
    return dtype


_XLA_NAMES = {numpy: xla for xla, numpy in NUMPY_NAMES.items()}


def _bits(dtype: str) -> int:
    return jnp.dtype(dtype).itemsize * 8


def _module_dtypes(collective: Collective, wanted: int) -> list[str]:
    """The element types of the collective's results in the CPU module: ``wanted`` of them (one per
    operand of a combined collective, else one for all), "" where they cannot be read or differ."""
    try:
        inst = parse_instruction(collective.hlo)
    except ValueError:  # HloParseError is one
        return [""] * wanted
    leaves, n = inst.shape.leaves, len(inst.operands)
    if inst.opcode.endswith("-start") and len(leaves) >= 2 * n:
        leaves = leaves[n : 2 * n]  # an async start's (operands..., results..., contexts...): the results
    types = [leaf.dtype or "" for leaf in leaves]
    if wanted > 1:
        return types if len(types) == wanted else [""] * wanted
    return [types[0] if len(set(types)) == 1 else ""]


def _joined(dtypes: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(d for d in dtypes if d))


def _in_device_dtype(
    c: Collective, nbytes: int, module: str, source: SourceLocation | None, op_name: str, made: MadeDtypes
) -> BytesIn:
    """``nbytes`` of a result the module holds as ``module``, counted as the device moves them."""
    found = made.made(source, op_name)
    if not found and c.kind in _RESHARDING and op_name:
        # shown on a constraint's line, it moves what the constraint lays out: the constraint's dtype
        scope = op_name.rsplit("/", 1)[0]
        found = made.made(source, f"{scope}/sharding_constraint") or made.made(source, f"{scope}/reshard")
    dtype = device_dtype(found, module)
    result = nbytes if dtype == module else nbytes * _bits(dtype) // _bits(module)
    return BytesIn(dtype, result, wire_bytes(c.kind, result, c.group_size, c.pairs))


def _counted(c: Collective, made: MadeDtypes) -> Collective:
    """``c`` with both counts, its bytes the device's."""
    modules = _module_dtypes(c, max(1, len(c.parts)))
    parts = tuple(
        replace(
            p,
            result_bytes=device.result_bytes,
            wire_bytes=device.wire_bytes,
            on_device=device,
            on_cpu=BytesIn(module, p.result_bytes, p.wire_bytes),
        )
        for p, module in zip(c.parts, modules)
        for device in [_in_device_dtype(c, p.result_bytes, module, p.source, p.op_name, made)]
    )
    if parts:
        dtypes = _joined([p.on_device.dtype for p in parts if p.on_device])
        on_device = BytesIn(dtypes, sum(p.result_bytes for p in parts), sum(p.wire_bytes for p in parts))
    else:
        on_device = _in_device_dtype(c, c.result_bytes, modules[0], c.source, c.op_name, made)
    on_cpu = BytesIn(_joined(modules), c.result_bytes, c.wire_bytes)
    return replace(
        c,
        result_bytes=on_device.result_bytes,
        wire_bytes=on_device.wire_bytes,
        parts=parts,
        on_device=on_device,
        on_cpu=on_cpu,
    )


def count_on_device(collectives: Iterable[Collective], values: Iterable[Value]) -> tuple[Collective, ...]:
    """Each collective as the device moves it (``on_device``), with the CPU module's count kept
    (``on_cpu``); run once when a program is traced, on the collectives as read from the module."""
    made = MadeDtypes(values)
    return tuple(_counted(c, made) for c in collectives)


Counted = TypeVar("Counted", Collective, CollectivePart)


def _switched(item: Counted, count: str) -> Counted:
    chosen = item.on_device if count == "device" else item.on_cpu
    if chosen is None:
        return item
    return replaced(item, result_bytes=chosen.result_bytes, wire_bytes=chosen.wire_bytes)


def recounted(program: ProgramData, count: str) -> ProgramData:
    """``program`` with every collective's bytes (and the totals) and its memory counted as ``count``
    says: ``"device"`` (the program's dtypes, as a TPU or GPU moves and holds them) or ``"cpu"``
    (XLA:CPU's module: its memory analysis, and buffers as its f32 copies make them)."""
    if count not in COUNTS:
        raise ShardingError(f"with_bytes takes 'device' or 'cpu', not {count!r}")
    collectives = [
        replaced(_switched(c, count), parts=tuple(_switched(p, count) for p in c.parts)) for c in program.collectives
    ]
    axis_names = program.mesh.axis_names if program.mesh is not None else ()
    memory, timeline = program.memory, program.memory_timeline
    if program.memory_counts is not None:  # the memory as the same count holds it
        memory, timeline = program.memory_counts[count]
    return replace(
        program,
        collectives=tuple(collectives),
        totals=program_totals(collectives, axis_names),
        bytes_from=count,
        memory=memory,
        memory_timeline=timeline,
    )


def short_dtype(dtype: str) -> str:
    """``bf16``, ``f32``, ``bf16+f32``: XLA's short names for a dtype (or several joined), "?" for none."""
    names = [_XLA_NAMES.get(d.strip(), d.strip()) for d in dtype.split(",") if d.strip()]
    return "+".join(names) or "?"


def counted_dtype(item: Collective | CollectivePart, bytes_from: str) -> str:
    """The dtype ``item``'s bytes are counted in under ``bytes_from`` ("" where unknown)."""
    chosen = item.on_cpu if bytes_from == "cpu" else item.on_device
    return "" if chosen is None else chosen.dtype


def other_total(program: ProgramData) -> int | None:
    """Bytes one device sends per call as the count the program does not show has them
    (XLA:CPU's module's when it shows the device's); None where the two agree."""
    if not any(c.widened for c in program.collectives):
        return None
    other = 0
    for c in program.collectives:
        counted = c.on_cpu if program.bytes_from == "device" else c.on_device
        other += (c.wire_bytes if counted is None else counted.wire_bytes) * c.count
    return other
