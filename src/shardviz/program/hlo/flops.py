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


def _dot_flops(inst: Instruction, computation: Computation) -> float | None:
    lhs = computation.by_name.get(inst.operands[0]) if inst.operands else None
    if lhs is None or lhs.shape.is_tuple:
        return None
    contracting = ints_in((inst.attr("lhs_contracting_dims") or "").strip("{}"))
    if any(d >= len(lhs.shape.dims) for d in contracting):
        return None
    contracted = math.prod(lhs.shape.dims[d] for d in contracting)
    return 2.0 * math.prod(inst.shape.dims) * contracted


def matmul_flops(module: Module) -> MatmulFlops:
    """Flops of every dot in the module per call, loop trip counts multiplied through."""
    counts = execution_counts(module)
    flops, exact, dots = 0.0, True, 0
    for computation in module.computations:
        runs = counts.get(computation.name)
        if runs is None:
            continue
        for inst in computation.instructions:
            if inst.opcode != "dot":
                continue
            one = _dot_flops(inst, computation)
            if one is None:
                exact = False
                continue
            flops += one * runs.count
            exact = exact and runs.exact
            dots += 1
    return MatmulFlops(flops, exact, dots)
