"""The largest batch that fits: for one traced plan, the batch per device whose step the estimate
(the corrected memory, ``Estimate.device_bytes`` against the chip's HBM) says fits, confirmed by a
trace at that batch.

A step's memory per device is taken as affine in the batch: the parameters
and optimizer state do not grow with it, the batch, its activations and
scratch do. The first guess scales the traced memory above the parameters'
bytes; a trace there gives a second point, the line through both the
batch that fills the HBM, and one more trace at that batch confirms it (a
step down to the HBM's share where it does not fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import jax

from ..compare.candidates import Candidate, resolve_arguments
from ..compare.run import submit_trace
from ..errors import ShardingError
from ..plan.estimate import estimate
from ..plan.hardware import Hardware
from ..program.trace import trace
from .space import Plan

ATTEMPTS = 4  # traces at most per plan past the first


@dataclass(frozen=True)
class MaxBatch:
    """The largest batch of one plan that fits: in rows of the batch (all devices) and per device."""

    plan: str
    batch: int  # rows of the batch arguments' leading dimension, all devices together
    per_device: int  # rows per device of the batch axes
    device_bytes: int | None  # what the confirming trace holds per device
    hbm_bytes: float
    fits: bool | None  # the confirming trace's verdict
    traces: int

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan, "batch": self.batch, "per_device": self.per_device,
                "device_bytes": self.device_bytes, "hbm_bytes": self.hbm_bytes, "fits": self.fits,
                "traces": self.traces}  # fmt: skip


def with_batch(args: Sequence[Any], batch_paths: set[int], rows: int) -> tuple[Any, ...]:
    """``args`` with the leading dimension of each batch argument (by argument number) set to ``rows``."""

    def resized(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct) and x.shape:
            return jax.ShapeDtypeStruct((rows, *x.shape[1:]), x.dtype, weak_type=x.weak_type, is_ref=x.is_ref)
        return x

    return tuple(jax.tree.map(resized, a) if i in batch_paths else a for i, a in enumerate(args))


def _memory(
    step: Callable[..., Any],
    plan: Plan,
    args: tuple[Any, ...],
    hw: Hardware,
    timeout: float,
    executor: Executor | None = None,
) -> int | None:
    """What the step holds per device on ``plan`` at these arguments, traced here or by ``executor``."""
    candidate = Candidate(plan.name, _mesh(plan), plan.rules)
    if executor is not None:
        program = submit_trace(executor, step, candidate, args, timeout).result()
    else:
        arguments = resolve_arguments(candidate, args)
        program = trace(step, *arguments, mesh=candidate.abstract_mesh, whatif_timeout=timeout)
    return estimate(program, hw).device_bytes


def _mesh(plan: Plan) -> jax.sharding.AbstractMesh:
    return jax.sharding.AbstractMesh(tuple(n for _, n in plan.axes), tuple(a for a, _ in plan.axes))


def largest_batch(
    step: Callable[..., Any],
    plan: Plan,
    args: tuple[Any, ...],
    batch_args: set[int],
    rows: int,
    held: int,
    hw: Hardware,
    timeout: float,
    executor: Executor | None = None,
) -> MaxBatch:
    """The largest batch of ``plan`` whose step fits ``hw``'s HBM, from its trace at ``rows`` rows
    (``held`` bytes per device), confirmed by a trace at that batch; each trace on ``executor``
    where one is given, as ``compare`` runs its candidates."""
    if hw.hbm_bytes is None:
        raise ShardingError(f"batch='max' needs the chip's HBM; {hw.name} names none (give Hardware(hbm_bytes=...))")
    split = math.prod(n for a, n in plan.axes if a in ("data", "fsdp"))
    hbm = hw.hbm_bytes
    fixed = sum(-(-s.leaf.nbytes // s.split(plan.sizes)) for s in plan.strategies if s.leaf.role != "batch")
    points = [(rows, held)]
    guess = _rounded(rows * (hbm - fixed) / max(held - fixed, 1), split)
    traced: list[tuple[int, int | None]] = []
    while len(traced) < ATTEMPTS:
        measured = _memory(step, plan, with_batch(args, batch_args, guess), hw, timeout, executor)
        traced.append((guess, measured))
        if measured is None:
            break
        points.append((guess, measured))
        (b0, m0), (b1, m1) = points[-2], points[-1]
        slope = (m1 - m0) / (b1 - b0) if b1 != b0 and m1 != m0 else max((m1 - fixed) / b1, 1.0)
        target = _rounded(b1 + (hbm - m1) / slope, split)
        if measured <= hbm and target <= guess:
            break  # it fits, and the line through the last two traces says no more rows would
        if measured > hbm and target >= guess:
            target = _rounded(guess * hbm / measured, split) - split
        if any(b == max(split, target) for b, _ in traced):
            break
        guess = max(split, target)
    fitting = [(b, m) for b, m in traced if m is not None and m <= hbm]
    batch, held_at = max(fitting) if fitting else min(traced)
    fits = None if held_at is None else held_at <= hbm
    return MaxBatch(plan.name, batch, batch // split, held_at, hbm, fits, len(traced))


def _rounded(rows: float, split: int) -> int:
    """``rows`` down to a multiple of the batch axes' devices (at least one row each)."""
    return max(split, int(rows) // split * split)
