"""The analytic cost of a candidate before any trace: bytes per device from the shapes, and each
collective the plan implies priced by the estimate's own link model (:mod:`shardviz.plan.links`).

The collectives are those "How to Scale Your Model" (training.md) counts for
a training step: FSDP gathers each parameter in the forward and backward
passes and reduce-scatters its gradient; a parameter replicated over batch
axes all-reduces its gradient; a Megatron pair gathers its input and
reduce-scatters its output, forward and backward; expert weights move
tokens by all-to-all; on a split sequence, attention gathers the keys and
values of every position (a projection named as keys or values) and
scatters their gradients. Compute is the step's flops split over every
device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..plan.estimate import program_slices
from ..plan.hardware import Hardware
from ..plan.links import Layout, layout_for, run_time
from .space import Plan


@dataclass(frozen=True)
class _MeshSizes:
    axis_sizes: tuple[int, ...]


@dataclass(frozen=True)
class _MeshOnly:
    """What :func:`program_slices` reads of a program: its mesh sizes and device count."""

    mesh: _MeshSizes
    num_partitions: int


@dataclass(frozen=True)
class Collective:
    """One collective the plan implies, per step: its kind, axes, bytes (``V``) and runs."""

    kind: str
    axes: tuple[str, ...]
    bytes: float
    runs: int
    why: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Cost:
    """A candidate's analytic step: compute, network (its collectives summed) and bytes per device."""

    compute_s: float
    network_s: float
    device_bytes: int
    collectives: tuple[Collective, ...]

    @property
    def step_s(self) -> float:
        return max(self.compute_s, self.network_s)

    @property
    def bound(self) -> str:
        return "network" if self.network_s > self.compute_s else "compute"


def _group(axes_sizes: Sequence[tuple[str, int]], over: Sequence[str]) -> list[int]:
    """Mesh positions of the group through position 0 that varies along ``over``."""
    shape = tuple(n for _, n in axes_sizes)
    grid = np.arange(math.prod(shape)).reshape(shape)
    index = tuple(slice(None) if name in over else 0 for name, _ in axes_sizes)
    return [int(p) for p in np.ravel(grid[index])]


def layout_of(plan: Plan, hw: Hardware) -> Layout:
    sizes = tuple(n for _, n in plan.axes)
    slices = program_slices(_MeshOnly(_MeshSizes(sizes), math.prod(sizes)), hw)  # type: ignore[arg-type]
    return layout_for(hw, sizes, slices)


def implied(plan: Plan, tokens: float, width: int | None) -> list[Collective]:
    """The collectives a training step on ``plan`` does, by the book's count."""
    sizes = plan.sizes
    # the axes the tokens are split over: a parameter replicated over them all-reduces its gradient
    batch_axes = tuple(a for a in ("data", "fsdp", "sequence") if sizes[a] > 1)
    local_tokens = tokens / math.prod(sizes[a] for a in batch_axes) if batch_axes else tokens
    out: list[Collective] = []
    pairs_seen = 0
    pair_itemsize = 2
    for s in plan.strategies:
        if s.leaf.role != "param":
            continue
        split = {a for d in s.dims for a in d}
        other = math.prod(sizes[a] for a in split if a != "fsdp")
        if "fsdp" in split:
            gathered = s.leaf.nbytes / other
            out.append(Collective("all-gather", ("fsdp",), gathered, 2, f"{s.leaf.path}: FSDP gathers it, forward "
                                                                          "and backward"))  # fmt: skip
            out.append(Collective("reduce-scatter", ("fsdp",), gathered, 1, f"{s.leaf.path}: its gradient"))
        summed = tuple(a for a in batch_axes if a not in split)
        if summed:
            shard = s.leaf.nbytes / math.prod(sizes[a] for a in split)
            out.append(Collective("all-reduce", summed, shard, 1, f"{s.leaf.path}: its gradient over the batch"))
        if s.kind.startswith("tensor-out"):
            pairs_seen += 1
            pair_itemsize = s.leaf.itemsize  # the activations are in the pair's dtype
        if s.kind.startswith("expert"):
            moved = local_tokens * (width or s.leaf.shape[-1]) * s.leaf.itemsize
            out.append(Collective("all-to-all", ("model",), moved, 4, f"{s.leaf.path}: tokens to their experts"))
        if sizes["sequence"] > 1 and is_key_or_value(s.leaf.path):
            model = math.prod(sizes[a] for a in split if a == "model")
            whole = tokens / math.prod(sizes[a] for a in ("data", "fsdp")) * s.leaf.shape[-1] / model * s.leaf.itemsize
            # attention on a split sequence needs every position's keys and values (training.md)
            out.append(Collective("all-gather", ("sequence",), whole, 1, f"{s.leaf.path}: keys or values of the "
                                                                          "whole sequence"))  # fmt: skip
            out.append(Collective("reduce-scatter", ("sequence",), whole, 1, f"{s.leaf.path}: their gradient"))
    if sizes["model"] > 1 and pairs_seen:
        activations = local_tokens * (width or 1) * pair_itemsize
        # each pair gathers its input and reduce-scatters its output, forward and backward (training.md)
        out.append(Collective("all-gather", ("model",), activations, 2 * pairs_seen, "Megatron pairs: inputs"))
        out.append(Collective("reduce-scatter", ("model",), activations, 2 * pairs_seen, "Megatron pairs: outputs"))
    return out


KEY_VALUE_NAMES = ("wk", "wv", "wkv", "kv", "qkv", "k_proj", "v_proj", "kv_proj", "qkv_proj", "key", "value")


def is_key_or_value(path: str) -> bool:
    """A projection to attention's keys or values, by a part of its path (NNX's ``.value`` suffix aside)."""
    return any(part.lower() in KEY_VALUE_NAMES for part in path.removesuffix(".value").split("."))


def cost(plan: Plan, hw: Hardware, flops: float, tokens: float, width: int | None) -> Cost:
    """The plan's analytic step on ``hw``: ``flops`` of the whole step split over every device."""
    layout = layout_of(plan, hw)
    priced = []
    for c in implied(plan, tokens, width):
        shape = layout.group_shape(_group(plan.axes, c.axes))
        one = run_time(layout, c.kind, c.bytes, c.bytes / max(shape.per_slice * shape.slices, 1), shape)
        priced.append(Collective(c.kind, c.axes, c.bytes, c.runs, c.why, one.seconds * c.runs))
    devices = math.prod(n for _, n in plan.axes)
    compute = flops / devices / hw.flops_per_s
    return Cost(compute, sum(c.seconds for c in priced), plan.device_bytes(), tuple(priced))


def step_flops(step: Any, args: Sequence[Any]) -> float:
    """The step's flops on one device, from XLA's cost analysis of its lowered module (no compile)."""
    import jax

    from ..errors import ShardingError

    plain = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, jax.ShapeDtypeStruct) else x, tuple(args)
    )
    jitted = step if hasattr(step, "lower") else jax.jit(step)
    try:
        analysis = jitted.lower(*plain).cost_analysis()
    except Exception as err:
        raise ShardingError(f"search could not lower the step on its arguments: {type(err).__name__}: {err}") from None
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else {}
    return float((analysis or {}).get("flops", 0.0))
