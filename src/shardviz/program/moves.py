"""What moving an array from one layout to another costs: the compiled identity's
collectives and bytes, the copy between device and host memory of a memory-kind
change, or why no single program moves it (the array view's move line).
"""

from __future__ import annotations

import math
from typing import Any

import jax

from ..engine.placement import ArrayState
from ..errors import ShardingError
from .program import Program
from .trace import trace


def _identity(a: Any) -> Any:
    return a


def resharding(before: ArrayState, after: ArrayState) -> tuple[Program | None, dict[str, Any]]:
    """What moving the array from ``before``'s layout to ``after``'s costs, as a
    Program and a summary for the front end (``{}`` when nothing moved).

    The summary holds the collectives of the compiled identity and their bytes,
    ``memory`` when the memory kind changed (each device copies its block
    between device and host memory, which no collective shows), or ``error``:
    why no single program moves the array (onto other devices, say).
    """
    old, new = before.array, after.array
    if old is None or new is None or old is new or old.sharding == new.sharding:
        return None, {}
    old_devices, new_devices = old.sharding.device_set, new.sharding.device_set
    if old_devices != new_devices:
        # JAX compiles no program whose input and output live on different devices.
        shared = len(old_devices & new_devices)
        return None, {
            "error": (
                f"the new layout is on {_count(len(new_devices), 'device')}, the array was on "
                f"{len(old_devices)} ({shared} in both); jax.device_put copies it across, and JAX compiles "
                "no one program whose input and output are on different devices"
            )
        }
    try:
        # One function object for every move: JAX's caches then hold one
        # executable per pair of layouts, not one per edit.
        program = trace(jax.jit(_identity, out_shardings=new.sharding), old)
    except ShardingError as err:
        return None, {"error": str(err)}
    collectives = []
    for c in program.collectives:
        entry: dict[str, Any] = {
            "kind": c.kind,
            "axes": list(c.axes) if c.axes is not None else None,
            "group_size": c.group_size,
            "count": c.count,
            "wire_bytes": c.total_wire_bytes,
        }
        if c.kind == "collective-permute":
            # A pair whose source is its own target moves nothing: count the devices that send.
            entry["pairs"] = sum(source != target for source, target in c.pairs)
        collectives.append(entry)
    summary: dict[str, Any] = {"collectives": collectives, "wire_bytes": program.totals.wire_bytes}
    old_kind, new_kind = old.sharding.memory_kind, new.sharding.memory_kind
    if old_kind != new_kind:
        block = new.sharding.shard_shape(new.shape)
        summary["memory"] = {
            "from": old_kind or "device",
            "to": new_kind or "device",
            "bytes": math.prod(block) * new.dtype.itemsize,
        }
    return program, summary


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
