"""The bytes a collective moves on an accelerator, where XLA:CPU moved more.

XLA's CPU backend has no bfloat16/float16 arithmetic: it converts such
values to float32 before a collective and back after it, so the CPU module's
all-gather of a bf16 array moves twice the bytes a TPU's or GPU's would.
The jaxpr says what the program asked for: when every value the collective's
line makes with the collective's primitive (``dot_general``,
``sharding_constraint``, ...) is of a narrower float type than the module's
collective, the device moves that type. A value the user converted to
float32 (``x.astype(jnp.float32)``, or the float32 sum ``jnp.sum`` of a bf16
array accumulates in) stays float32, as it would on the device.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..program.hlo import element_bits, parse_instruction
from ..program.model import Collective, ProgramData, SourceLocation

_NARROW_FLOAT_BITS = {"bfloat16": 16, "float16": 16}


@dataclass(frozen=True)
class DeviceBytes:
    """How a collective's bytes change on the device: ``ratio`` of the CPU module's, and why."""

    ratio: float
    dtype: str | None  # the type the device moves, when it is not the CPU module's
    note: str


SAME = DeviceBytes(1.0, None, "")


def _module_bits(collective: Collective) -> int | None:
    """Bits per element of the collective's buffers in the CPU module (None if mixed or unknown)."""
    try:
        leaves = parse_instruction(collective.hlo).shape.leaves
    except ValueError:
        return None
    bits = {element_bits(leaf.element_type) for leaf in leaves if leaf.element_type.startswith("f")}
    return bits.pop() if len(bits) == 1 else None


ValueDtypes = dict[tuple[str, int, str], set[str]]


def value_dtypes(program: ProgramData) -> ValueDtypes:
    """(file, line, primitive) -> the dtypes of the values that line makes with that primitive."""
    index: ValueDtypes = {}
    for v in program.values:
        if v.source is not None and v.primitive:
            index.setdefault((v.source.file, v.source.line, v.primitive), set()).add(v.dtype)
    return index


def _device_bits(index: ValueDtypes, source: SourceLocation | None, op_name: str, module_bits: int) -> tuple[int, str]:
    """The bits per element the device moves for values made on ``source``'s line by ``op_name``'s primitive,
    and their dtype ('' where they are the CPU module's own)."""
    if source is None or not op_name:
        return module_bits, ""
    dtypes = index.get((source.file, source.line, op_name.rsplit("/", 1)[-1]), set())
    if len(dtypes) != 1:
        return module_bits, ""
    dtype = next(iter(dtypes))
    bits = _NARROW_FLOAT_BITS.get(dtype)
    return (bits, dtype) if bits is not None and bits < module_bits else (module_bits, "")


def device_bytes(program: ProgramData, collective: Collective, index: ValueDtypes | None = None) -> DeviceBytes:
    """The ratio of device bytes to the CPU module's for one collective (1.0 unless XLA:CPU widened it);
    ``index`` is :func:`value_dtypes` of the program, made once for all its collectives. A combined
    collective's operands are read one by one, each on the line that made it."""
    module_bits = _module_bits(collective)
    if module_bits is None:
        return SAME
    index = value_dtypes(program) if index is None else index
    if not collective.parts:
        bits, dtype = _device_bits(index, collective.source, collective.op_name, module_bits)
        if not dtype:
            return SAME
        note = f"{dtype} on the device: XLA:CPU moved it as a {module_bits}-bit float"
        return DeviceBytes(bits / module_bits, dtype, note)
    total = device = 0.0
    narrowed: dict[str, int] = {}
    for part in collective.parts:
        bits, dtype = _device_bits(index, part.source, part.op_name, module_bits)
        total += part.result_bytes
        device += part.result_bytes * bits / module_bits
        if dtype:
            narrowed[dtype] = narrowed.get(dtype, 0) + 1
    if not narrowed or total == 0:
        return SAME
    kinds = ", ".join(narrowed)
    count = sum(narrowed.values())
    note = (
        f"{count} of its {len(collective.parts)} operands are {kinds} on the device: "
        f"XLA:CPU moved them as {module_bits}-bit floats"
    )
    return DeviceBytes(device / total, kinds, note)
