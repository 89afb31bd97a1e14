"""Matrix-multiply flops of a compiled module, loops counted.

XLA's ``cost_analysis()`` counts a while loop's body once, so a scanned
model of 24 layers reports about one layer's flops. Here every ``dot``
(fused or not) counts ``2 x result elements x contracted elements``, times
how many times one call of the module runs its computation
(:func:`.collectives.execution_counts`). Shapes are per device (the module
is partitioned). Elementwise work and convolutions are left out: the dots
are where a transformer's flops are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .collectives import execution_counts
from .groups import ints_in
from .module import Computation, Instruction, Module


@dataclass(frozen=True)
class MatmulFlops:
    flops: float
    exact: bool  # False when a loop without a known trip count (counted once) or a branch is on the way
    dots: int  # dot instructions counted, each once


@dataclass(frozen=True)
class DotFlops:
    """One dot of the module and its flops per call of the module (its loops' trip counts multiplied)."""

    inst: Instruction
    flops: float
    exact: bool


def _dot_flops(inst: Instruction, computation: Computation) -> float | None:
    lhs = computation.by_name.get(inst.operands[0]) if inst.operands else None
    if lhs is None or lhs.shape.is_tuple:
        return None
    contracting = ints_in((inst.attr("lhs_contracting_dims") or "").strip("{}"))
    if any(d >= len(lhs.shape.dims) for d in contracting):
        return None
    contracted = math.prod(lhs.shape.dims[d] for d in contracting)
    return 2.0 * math.prod(inst.shape.dims) * contracted


def dot_flops(module: Module) -> tuple[list[DotFlops], bool]:
    """Every dot of the module with its flops per call; False with them when a dot's shapes could not be read."""
    counts = execution_counts(module)
    dots: list[DotFlops] = []
    readable = True
    for computation in module.computations:
        runs = counts.get(computation.name)
        if runs is None:
            continue
        for inst in computation.instructions:
            if inst.opcode != "dot":
                continue
            one = _dot_flops(inst, computation)
            if one is None:
                readable = False
                continue
            dots.append(DotFlops(inst, one * runs.count, runs.exact))
    return dots, readable


def matmul_flops(module: Module) -> MatmulFlops:
    """Flops of every dot in the module per call, loop trip counts multiplied through."""
    dots, readable = dot_flops(module)
    exact = readable and all(d.exact for d in dots)
    return MatmulFlops(sum(d.flops for d in dots), exact, len(dots))
