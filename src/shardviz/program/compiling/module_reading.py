"""What the compiled module and XLA's dumps say on their own, before any value is laid out.

The optimized module's instructions, its collectives with their loop counts,
the bytes its operations move through memory, each line's matmul flops, the
partitioner's choices (Auto axes) and the buffer assignment with its live
ranges. None of it needs the compiled executable: XLA writes these dumps
once its HLO passes end, before it generates code for the device, so
:mod:`.compiling` reads them on its worker thread while the code is
generated, and from the executable's own text after the compile when there
are no dumps to read (a cached executable, a backend that refuses them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import hlo
from ..collectives.reading import stacks_of
from ..lines.frames import user_frame
from ..memory import liveness
from ..model import LineFlops, SourceLocation
from ..values.xla_shardings import index_module


@dataclass(frozen=True)
class ModuleReading:
    """The compiled module read on its own (see the module's doc)."""

    module: hlo.Module
    collective_ops: tuple[hlo.CollectiveOp, ...]
    stacks: Callable[[hlo.Instruction], tuple[SourceLocation, ...]]
    line_flops: tuple[LineFlops, ...]
    hbm_bytes: float
    partitioner_index: Any | None  # the partitioner's choices by key (Auto axes), None without its dump
    allocations: tuple[liveness.Allocation, ...] | None  # None without the buffer assignment's dump
    live_ranges: liveness.LiveRanges | None
    # whether jax.checkpoint's recomputation is in the module (only its lowering names a rematted_computation)
    rematerializes: bool = False


def read_module(text: str, dumps: Mapping[str, str]) -> ModuleReading:
    """``text`` (the optimized module) and XLA's ``dumps`` read once, for everything that asks."""
    module = hlo.parse_module(text)
    stacks = stacks_of(module)
    _read_float_values(module, stacks)
    before = dumps.get("before_partitioning")
    allocations, live = _memory_dumps(dumps)
    return ModuleReading(
        module=module,
        collective_ops=tuple(hlo.collective_ops(module)),
        stacks=stacks,
        line_flops=_line_flops(module, stacks),
        hbm_bytes=hlo.hbm_bytes(module).bytes,
        partitioner_index=index_module(hlo.parse_module(before)) if before else None,
        allocations=allocations,
        live_ranges=live,
        rematerializes="rematted_computation" in text,
    )


def _read_float_values(module: hlo.Module, stacks: Callable[[hlo.Instruction], tuple[SourceLocation, ...]]) -> None:
    """Each float value's shape, metadata and stack parsed now, where this runs while XLA generates code:
    the memory recount after the compile reads them all (:func:`..memory.dtypes.device_sizes`)."""
    for _, inst in module.instructions():
        shape = inst.shape
        if not shape.is_tuple and shape.element_type.startswith(("f", "bf")):
            stacks(inst)


def _memory_dumps(
    dumps: Mapping[str, str],
) -> tuple[tuple[liveness.Allocation, ...] | None, liveness.LiveRanges | None]:
    """The buffer assignment and live ranges; None where the backend wrote none (or another form)."""
    if "buffer_assignment" not in dumps or "live_range" not in dumps:
        return None, None
    try:
        return tuple(liveness.parse_buffer_assignment(dumps["buffer_assignment"])), liveness.parse_live_ranges(
            dumps["live_range"]
        )
    except hlo.HloParseError:
        return None, None


def _line_flops(
    module: hlo.Module, stacks: Callable[[hlo.Instruction], tuple[SourceLocation, ...]]
) -> tuple[LineFlops, ...]:
    """Each dot's flops on the user's line that causes it (as collectives take theirs), largest first."""
    by_line: dict[tuple[str, int] | None, LineFlops] = {}
    for dot in hlo.dot_flops(module)[0]:
        stack = stacks(dot.inst)
        meta = dot.inst.metadata
        if not stack and meta.source_file and meta.source_line is not None:
            stack = (SourceLocation(meta.source_file, meta.source_line),)
        mine = user_frame(stack)
        key = None if mine is None else (mine.file, mine.line)
        before = by_line.get(key)
        by_line[key] = LineFlops(mine if before is None else before.source, dot.flops + (before.flops if before else 0))
    return tuple(sorted(by_line.values(), key=lambda f: -f.flops))
