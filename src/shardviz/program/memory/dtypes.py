"""Each buffer of XLA:CPU's buffer assignment as a TPU or GPU holds it: in the program's dtypes.

XLA:CPU has no bf16 or f16 arithmetic. Its float normalization widens such
values to f32 before a dot or an elementwise op and narrows the result back,
so its buffer assignment holds f32 copies of bf16 weights, gradients in f32
and a convert's output beside its input: buffers a device never makes.

Each value placed in memory is read back to the program's dtype: where its
instruction carries the user's op (metadata) and the jaxpr made that
expression in one narrower float, that float; otherwise the width its
operands give it (:func:`.hlo.hbm.device_widths`, the same reading the
memory time uses). A float convert whose input and output are as wide on the
device is no buffer of its own there: the value is *folded* into its input,
whose buffer then lives as long as either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .. import hlo
from ..hlo.hbm import device_widths, is_float_convert
from ..hlo.scanning import element_bits
from ..lines.frames import user_frame
from ..model import SourceLocation, Value
from .device_bytes import MadeDtypes, device_dtype
from .liveness import Allocation

_ELEMENT = re.compile(r"^([a-z][a-z0-9]*)\[")
XLA_NAMES = {numpy: xla for xla, numpy in hlo.NUMPY_NAMES.items()}
_PASSES_ON = frozenset({"get-tuple-element", "bitcast"})  # no buffer of their own: the value they read


@dataclass(frozen=True)
class DeviceSizes:
    """Bytes on the device of each value XLA:CPU places (by value key, ``dot.4{}``), and the values
    that are the same data as another's buffer there."""

    sizes: Mapping[str, int]
    folded: Mapping[str, str]  # value key -> the value key whose buffer holds it on the device
    elements: Mapping[str, str]  # value key -> its element type on the device (``bf16``), where narrower

    def size(self, key: str, module_size: int) -> int:
        return self.sizes.get(key, module_size)


def module_element(shape: str) -> str:
    """``f32`` for ``f32[8,2048]{1,0}``, "" for a tuple or what is not a shape."""
    m = _ELEMENT.match(shape)
    return m.group(1) if m else ""


def _program_dtype(
    inst: hlo.Instruction, made: MadeDtypes, stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]]
) -> str | None:
    """The element type (``bf16``) of the program's own value for ``inst`` where it is a narrower float
    than the module's."""
    shape = inst.shape
    if shape.is_tuple or not shape.element_type.startswith(("f", "bf")):
        return None
    op_name = inst.metadata.op_name or ""
    if not op_name:
        return None
    module_dtype = hlo.NUMPY_NAMES.get(shape.element_type, shape.element_type)
    dtype = device_dtype(made.made(user_frame(stack_of(inst)), op_name), module_dtype)
    if dtype == module_dtype:
        return None
    return XLA_NAMES.get(dtype, dtype)


def _source_key(name: str, by_name: Mapping[str, hlo.Instruction]) -> str:
    """The value key of what ``name`` reads, followed back through tuple elements and bitcasts."""
    index: list[str] = []
    inst = by_name.get(name)
    for _ in range(16):
        if inst is None or inst.opcode not in _PASSES_ON or not inst.operands:
            break
        if inst.opcode == "get-tuple-element":
            index.insert(0, inst.attr("index") or "0")
        inst = by_name.get(inst.operands[0])
    base = name if inst is None else inst.name
    return f"{base}{{{','.join(index)}}}"


def _reduced_in_place(inst: hlo.Instruction, key: str, comp: hlo.Computation, readers: Mapping[str, int]) -> str | None:
    """The operand an all-reduce's result ``key`` is written over, where nothing else reads that
    operand: a TPU's or GPU's all-reduce runs in place there, XLA:CPU's writes a second buffer."""
    if inst.opcode not in ("all-reduce", "all-reduce-start"):
        return None
    index = key.partition("{")[2].rstrip("}")
    if inst.shape.is_tuple:
        if not index.isdigit() or int(index) >= len(inst.operands):
            return None
        operand = inst.operands[int(index)]
    elif index == "" and len(inst.operands) == 1:
        operand = inst.operands[0]
    else:
        return None
    if readers.get(operand, 0) != 1:
        return None
    return _source_key(operand, comp.by_name)


def device_sizes(
    module: hlo.Module,
    allocations: Sequence[Allocation],
    values: Sequence[Value],
    stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]],
) -> DeviceSizes:
    """Every placed value's bytes in the program's dtypes, and the float converts folded into their input."""
    made = MadeDtypes(values)
    known: dict[str, int] = {}
    named: dict[str, str] = {}  # the program's element type where its metadata says it
    for _, inst in module.instructions():
        dtype = _program_dtype(inst, made, stack_of)
        bits = None if dtype is None else element_bits(dtype)
        if dtype is not None and bits is not None:
            known[inst.name], named[inst.name] = bits, dtype
    half = "bf16" if any(v.dtype == "bfloat16" for v in values) else "f16"  # a 16-bit float the width says
    widths: dict[str, int | None] = {}
    owner: dict[str, hlo.Computation] = {}
    for comp_name, comp_widths in device_widths(module, known).items():
        widths.update(comp_widths)
        for inst in module.by_name[comp_name].instructions:
            owner[inst.name] = module.by_name[comp_name]

    def bits_of(key: str) -> int | None:
        """Device bits of a value key: an instruction's own, or a tuple element's from what makes it."""
        name, _, rest = key.partition("{")
        index = rest.rstrip("}")
        comp = owner.get(name)
        if comp is None:
            return None
        inst = comp.by_name[name]
        if not index:
            return widths.get(name)
        if "," in index or not inst.operands:
            return None
        k = int(index)
        if inst.opcode == "while":
            init = comp.by_name.get(inst.operands[0])
            if init is None or init.opcode != "tuple" or k >= len(init.operands):
                return None
            return bits_of(_source_key(init.operands[k], comp.by_name))
        if k < len(inst.operands) and len(inst.shape.tuple_shapes) == len(inst.operands):
            return bits_of(_source_key(inst.operands[k], comp.by_name))  # a combined collective: its operand's
        return None

    readers: dict[str, int] = {}
    for _, inst in module.instructions():
        for operand in inst.operands:
            readers[operand] = readers.get(operand, 0) + 1
    sizes: dict[str, int] = {}
    folded: dict[str, str] = {}
    elements: dict[str, str] = {}
    for allocation in allocations:
        for v in allocation.values:
            element = module_element(v.shape)
            own = element_bits(element) if element else None
            bits = bits_of(v.name)
            if own and bits and bits < own:
                sizes[v.name] = v.size * bits // own
                elements[v.name] = named.get(v.instruction) or (half if bits == 16 else f"f{bits}")
            name = v.instruction
            comp = owner.get(name)
            if comp is None or allocation.parameter is not None:
                continue
            inst = comp.by_name[name]
            reduced = _reduced_in_place(inst, v.name, comp, readers)
            if reduced is not None:
                folded[v.name] = reduced
            elif not v.name.endswith("{}"):
                continue
            elif len(inst.operands) == 1 and is_float_convert(inst, module):
                source = _source_key(inst.operands[0], comp.by_name)
                if bits_of(source) == bits_of(v.name) and bits_of(source) is not None:
                    folded[v.name] = source
    return DeviceSizes(sizes, folded, elements)
