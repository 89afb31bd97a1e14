"""The bytes a compiled module reads and writes in memory per call, per device, in the program's dtypes.

Each operation the module schedules (a fusion, a dot, a copy...) reads its
operands and writes its result; loops count as often as they run
(:func:`.collectives.execution_counts`). XLA's CPU backend has no bf16 or
f16 arithmetic: it wraps such values in converts to f32 and back, so its
own ``bytes_accessed`` counts buffers twice as wide as a TPU's or GPU's and
converts no device runs. Here a value is counted in the narrowest float
type the program gives it: a convert that only widens or narrows a float
costs nothing and passes its input's width on; an operation whose result
goes straight into a narrower convert writes the narrower type; a fusion
reads a parameter as narrow as its first converts make it.

What an operation touches, not its buffers' sizes: a slice of an operand
(``dynamic-slice``, ``slice``, ``gather``; a scanned layer's weights) reads
only the slice, and an in-place ``dynamic-update-slice`` (a scan's stacked
outputs) writes only its update. Collectives are left out: their bytes are
the network's (:mod:`shardviz.program.memory.wire`). Bookkeeping (parameters,
tuples, bitcasts, constants, control flow) costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .collectives import COLLECTIVE_KINDS, execution_counts
from .module import Computation, Instruction, Module
from .scanning import Shape, element_bits

_FREE = frozenset(
    {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "partition-id", "replica-id",
     "while", "conditional", "call", "add-dependency", "opt-barrier", "domain", "get-dimension-size"}
)  # fmt: skip
_PASS_THROUGH = frozenset({"convert", "bitcast", "copy", "reshape"})  # change a value's type or layout, not its data
_SLICING = frozenset({"dynamic-slice", "slice", "gather"})
_MOVES = frozenset(
    {"bitcast", "copy", "slice", "concatenate", "reshape", "transpose", "broadcast", "dynamic-slice",
     "dynamic-update-slice"}
)  # fmt: skip
_KEEPS_VALUES = _MOVES | {"select", "pad", "reverse", "maximum", "minimum", "negate", "abs"}
_SCHEDULED_ROLES = frozenset({"body", "condition", "branch", "true_computation", "false_computation"})


@dataclass(frozen=True)
class HbmBytes:
    """Bytes read and written per call per device, loops counted."""

    bytes: float
    exact: bool  # False when a loop without a known trip count (counted once) or a branch is on the way
    operations: int  # operations counted, each once


def _float_bits(shape: Shape) -> int | None:
    if shape.is_tuple or not shape.element_type.startswith(("f", "bf")):
        return None
    return element_bits(shape.element_type)


def _elements(shape: Shape) -> int:
    return math.prod(shape.dims)


def _leaf_bytes(shape: Shape, bits: int | None = None) -> float:
    if shape.is_tuple:
        return float(shape.byte_size)
    return _elements(shape) * (bits if bits is not None else (element_bits(shape.element_type) or 0)) / 8


def _is_collective(inst: Instruction) -> bool:
    base = inst.opcode.removesuffix("-start").removesuffix("-done")
    return base in COLLECTIVE_KINDS or inst.opcode.startswith(("all-", "reduce-scatter", "collective-"))


# --------------------------------------------------------------------------
# inside one computation: how wide and how much of each operand is read, how much is written


def _users(comp: Computation) -> dict[str, list[tuple[Instruction, int]]]:
    out: dict[str, list[tuple[Instruction, int]]] = {}
    for inst in comp.instructions:
        for i, operand in enumerate(inst.operands):
            out.setdefault(operand, []).append((inst, i))
    return out


def _read(
    comp: Computation, users: Mapping[str, list[tuple[Instruction, int]]], name: str, shape: Shape
) -> tuple[float, int | None]:
    """What a fused computation reads of one parameter: elements and float bits, following converts,
    bitcasts and slices (an in-place update's buffer is not read)."""
    reads: list[tuple[float, int | None]] = []
    for user, index in users.get(name, []):
        elements: float = float(_elements(shape))
        bits = _float_bits(shape)
        current, position = user, index
        while True:
            if current.opcode == "dynamic-update-slice" and position == 0:
                elements = 0
                break
            if current.opcode in _SLICING and position == 0:
                elements = min(elements, _elements(current.shape))
            elif current.opcode not in _PASS_THROUGH:
                break
            narrow = _float_bits(current.shape)
            bits = narrow if bits is None or (narrow is not None and narrow < bits) else bits
            following = users.get(current.name, [])
            if len(following) != 1:
                break
            current, position = following[0]
        reads.append((elements, bits))
    if not reads:
        return 0.0, _float_bits(shape)
    elements = max(r[0] for r in reads)
    widths = [r[1] for r in reads if r[1] is not None]
    return elements, (max(widths) if widths else None)


def _data_operands(inst: Instruction) -> tuple[str, ...]:
    """The operands whose values an operation passes on (a select's choices, an update's buffer and update)."""
    if inst.opcode == "select":
        return inst.operands[1:]
    if inst.opcode == "dynamic-update-slice":
        return inst.operands[:2]
    if inst.opcode in ("dynamic-slice", "pad", "convert"):
        return inst.operands[:1]
    return inst.operands


def _op_width(inst: Instruction, widths: Mapping[str, int | None], comp: Computation) -> int | None:
    """The narrowest float type an operation's result fits, from its operands' (``widths``; None: any,
    a constant's): a convert or an operation that only passes values on (a select, a slice, a maximum,
    a collective) the widest of its data operands', at most its own type; arithmetic its own type."""
    own = _float_bits(inst.shape)
    if inst.opcode == "constant" or own is None:
        return None
    if inst.opcode not in _KEEPS_VALUES and inst.opcode != "convert" and not _is_collective(inst):
        return own
    data = []
    for name in _data_operands(inst):
        producer = comp.by_name.get(name)
        if producer is not None and producer.opcode != "constant" and _float_bits(producer.shape) is None:
            return own  # from an integer or a tuple: its own type
        data.append(widths.get(name))
    known = [w for w in data if w is not None]
    return min(own, max(known)) if known else None


def _value_widths(comp: Computation, seeds: Mapping[int, int | None]) -> dict[str, int | None]:
    """:func:`_op_width` of every value of a computation, its parameters as wide as ``seeds`` says."""
    widths: dict[str, int | None] = {}
    for inst in comp.instructions:
        if inst.opcode == "parameter":
            index = _parameter_index(inst)
            widths[inst.name] = seeds[index] if index in seeds else _float_bits(inst.shape)
        else:
            widths[inst.name] = _op_width(inst, widths, comp)
    return widths


def _parameter_index(inst: Instruction) -> int:
    return int(inst.text.split("parameter(", 1)[1].split(")", 1)[0])


def _written(comp: Computation) -> float:
    """Elements a computation's root writes: an in-place update writes only its update."""
    root = comp.root
    if root is None or root.shape.is_tuple:
        return -1.0
    inst: Instruction | None = root
    while inst is not None and inst.opcode in _PASS_THROUGH | {"dynamic-update-slice"} and inst.operands:
        if inst.opcode == "dynamic-update-slice":
            update = comp.by_name.get(inst.operands[1]) if len(inst.operands) > 1 else None
            return float(_elements(update.shape)) if update is not None else -1.0
        inst = comp.by_name.get(inst.operands[0])
    return float(_elements(root.shape))


def _pure_move(inst: Instruction, fused: Computation | None) -> bool:
    """An operation that only moves data (a float convert, a copy, a slice, a transpose; alone or fused
    with its kind): XLA:CPU's widening and layout changes around its collectives and dots, and slicing a
    device fuses into its neighbours (``jax.experimental.roofline`` counts none of them either)."""
    if inst.opcode == "convert":
        return _float_bits(inst.shape) is not None
    if inst.opcode in _MOVES:
        return True
    if fused is None or inst.opcode != "fusion":
        return False
    body = [i for i in fused.instructions if i.opcode not in ("parameter", "constant") and i.shape.dims]
    if not body or any(i.opcode not in _MOVES | {"convert"} for i in body):
        return False
    return all(_float_bits(i.shape) is not None for i in body if i.opcode == "convert")


# --------------------------------------------------------------------------
# the module's scheduled operations


@dataclass(frozen=True)
class _Access:
    """One operation as the memory sees it: per operand, the elements read (-1: all) and their float
    bits (None: as wide as the operand); the elements written (-1: all)."""

    reads: tuple[tuple[float, int | None], ...]
    written: float
    free: bool  # XLA:CPU's float convert or copy, or a collective: no memory time of its own


def _access(inst: Instruction, module: Module) -> _Access:
    fused = _fused(inst, module)
    if fused is None:
        whole: list[tuple[float, int | None]] = [(-1.0, None)] * len(inst.operands)  # each whole operand
        if inst.opcode in _SLICING and whole:
            whole[0] = (float(_elements(inst.shape)), None)
        return _Access(tuple(whole), -1.0, _pure_move(inst, None))
    users = _users(fused)
    params = {_parameter_index(p): p for p in fused.instructions if p.opcode == "parameter"}
    reads: list[tuple[float, int | None]] = [
        _read(fused, users, params[i].name, params[i].shape) if i in params else (-1.0, None)
        for i in range(len(inst.operands))
    ]
    return _Access(tuple(reads), _written(fused), _pure_move(inst, fused))


_PASSED = _Access((), -1.0, True)  # a collective: the network's bytes; its width passes through


def _fused(inst: Instruction, module: Module) -> Computation | None:
    if inst.opcode != "fusion":
        return None
    for role, callee in inst.called_computations:
        if role == "calls" and callee in module.by_name:
            return module.by_name[callee]
    return None


def _scheduled(module: Module) -> list[Computation]:
    """The entry and the computations it runs as control flow (loop bodies, branches, calls), not
    the ones fused into an operation or applied by one (a reduction's adder)."""
    seen, order = {module.entry.name}, [module.entry]
    for comp in order:
        for inst in comp.instructions:
            for role, callee in inst.called_computations:
                runs = role in _SCHEDULED_ROLES or (inst.opcode == "call" and role == "to_apply")
                if runs and callee in module.by_name and callee not in seen:
                    seen.add(callee)
                    order.append(module.by_name[callee])
    return order


def _widths(
    comp: Computation,
    accesses: Mapping[str, _Access],
    module: Module,
    made: set[str],
    known: Mapping[str, int] | None = None,
) -> dict[str, int | None]:
    """Each value's float bits on the device (None: as the module holds it): what its operation makes of
    its operands' widths (a fusion: its root's, :func:`_value_widths`), then narrowed to what every
    reader takes of it, last value first. ``known`` gives the bits of values whose width is known
    otherwise (the program's own dtype), passed on to what reads them."""
    bits: dict[str, int | None] = {}
    for inst in comp.instructions:
        fused = _fused(inst, module)
        if known is not None and inst.name in known:
            bits[inst.name] = known[inst.name]
        elif inst.name in made:
            bits[inst.name] = None
        elif fused is not None and fused.root is not None:
            seeds = {i: bits.get(o) for i, o in enumerate(inst.operands)}
            bits[inst.name] = _value_widths(fused, seeds).get(fused.root.name)
        elif inst.opcode in ("parameter", "get-tuple-element"):
            bits[inst.name] = _float_bits(inst.shape)
        else:
            bits[inst.name] = _op_width(inst, bits, comp)
    users = _users(comp)
    for inst in reversed(comp.instructions):
        own = bits[inst.name]
        readers = users.get(inst.name, [])
        if own is None or not readers:
            continue
        taken = [_taken(reader, index, accesses, bits) for reader, index in readers]
        if all(t is not None and t < own for t in taken):
            bits[inst.name] = max(t for t in taken if t is not None)
    return bits


def _taken(
    reader: Instruction, index: int, accesses: Mapping[str, _Access], bits: Mapping[str, int | None]
) -> int | None:
    access = accesses.get(reader.name)
    if access is None:
        return None
    if access.free:
        return bits.get(reader.name)
    return access.reads[index][1] if index < len(access.reads) else None


def _generated(comp: Computation, module: Module, carried: frozenset[int]) -> set[str]:
    """Values made from no array (an iota, a broadcast scalar, a mask computed from them; a loop's
    copy of one it carries unchanged, index in ``carried``): a device makes them where they are used,
    so they are neither written nor read. XLA:CPU hoists such fills out of loops as whole arrays."""
    made: set[str] = set()
    for inst in comp.instructions:
        inputs = [comp.by_name.get(o) for o in inst.operands]
        arrays = [i for i in inputs if i is not None and (i.shape.is_tuple or i.shape.dims) and i.name not in made]
        if inst.opcode == "get-tuple-element":
            source = inputs[0] if inputs else None
            index = inst.attr("index")
            if source is not None and source.opcode == "parameter" and index is not None and int(index) in carried:
                made.add(inst.name)
        elif inst.opcode == "iota" or (inst.opcode == "constant" and not inst.shape.dims):
            made.add(inst.name)
        elif inst.opcode in ("broadcast", "fusion") and not arrays and not inst.shape.is_tuple:
            made.add(inst.name)
        elif _pure_move(inst, _fused(inst, module)) and inputs and not arrays:
            made.add(inst.name)
    return made


def _carried(comp: Computation, made: set[str]) -> dict[str, frozenset[int]]:
    """For each loop body this computation runs: the indices of its state that start as made values."""
    out: dict[str, frozenset[int]] = {}
    for inst in comp.instructions:
        if inst.opcode != "while" or not inst.operands:
            continue
        init = comp.by_name.get(inst.operands[0])
        if init is None or init.opcode != "tuple":
            continue
        indices = frozenset(i for i, o in enumerate(init.operands) if o in made)
        for role, callee in inst.called_computations:
            if role == "body":
                out[callee] = indices
    return out


def scheduled_accesses(comp: Computation, module: Module) -> Mapping[str, _Access]:
    """What each costed operation of a scheduled computation reads and writes, worked out once per
    module (:func:`hbm_bytes` reads them while XLA generates code; the memory recount reads them again)."""
    kept: dict[str, Mapping[str, _Access]] = module.derived.setdefault("scheduled_accesses", {})
    found = kept.get(comp.name)
    if found is None:
        found = kept[comp.name] = MappingProxyType(
            {
                i.name: _PASSED if _is_collective(i) else _access(i, module)
                for i in comp.instructions
                if i.opcode not in _FREE
            }
        )
    return found


def device_widths(module: Module, known: Mapping[str, int]) -> dict[str, dict[str, int | None]]:
    """Per scheduled computation, each value's float bits on the device (:func:`_widths`), the values
    in ``known`` (by instruction name) taken as that wide."""
    out: dict[str, dict[str, int | None]] = {}
    for comp in _scheduled(module):
        out[comp.name] = _widths(comp, scheduled_accesses(comp, module), module, set(), known)
    return out


def is_float_convert(inst: Instruction, module: Module) -> bool:
    """A float convert on its own, or a fusion of nothing else (bitcasts and reshapes beside it):
    XLA:CPU's widening of a bf16 or f16 value and its narrowing back."""
    if inst.opcode == "convert":
        return _float_bits(inst.shape) is not None
    fused = _fused(inst, module)
    if fused is None:
        return False
    body = [i for i in fused.instructions if i.opcode != "parameter"]
    if not body or any(i.opcode not in ("convert", "bitcast", "reshape") for i in body):
        return False
    return any(i.opcode == "convert" for i in body) and all(
        _float_bits(i.shape) is not None for i in body if i.opcode == "convert"
    )


def hbm_bytes(module: Module) -> HbmBytes:
    """Bytes the module's operations read and write per call, loops counted, in the program's dtypes."""
    counts = execution_counts(module)
    total, exact, operations = 0.0, True, 0
    carried: dict[str, frozenset[int]] = {}
    for comp in _scheduled(module):
        made = _generated(comp, module, carried.get(comp.name, frozenset()))
        carried.update(_carried(comp, made))
        runs = counts.get(comp.name)
        if runs is None:
            continue
        costed = [i for i in comp.instructions if i.opcode not in _FREE]
        accesses = scheduled_accesses(comp, module)
        bits = _widths(comp, accesses, module, made)
        for inst in costed:
            access = accesses[inst.name]
            if access.free or inst.name in made:
                continue
            total += runs.count * _operation_bytes(inst, comp, access, bits, made)
            exact = exact and runs.exact
            operations += 1
    return HbmBytes(total, exact, operations)


def _operation_bytes(
    inst: Instruction, comp: Computation, access: _Access, bits: Mapping[str, int | None], made: set[str]
) -> float:
    out = 0.0
    for operand, (elements, read_bits) in zip(inst.operands, access.reads):
        producer = comp.by_name.get(operand)
        if producer is None or operand in made:
            continue
        width = bits.get(operand)
        if read_bits is not None and width is not None:
            width = min(width, read_bits)
        if producer.shape.is_tuple:
            out += producer.shape.byte_size
        else:
            count = _elements(producer.shape) if elements < 0 else elements
            out += count * (width if width is not None else (element_bits(producer.shape.element_type) or 0)) / 8
    elements = access.written
    if inst.shape.is_tuple:
        return out + inst.shape.byte_size
    width = bits.get(inst.name)
    count = _elements(inst.shape) if elements < 0 else elements
    return out + count * (width if width is not None else (element_bits(inst.shape.element_type) or 0)) / 8
