"""What moving an array from one layout to another costs: the compiled identity's
collectives and bytes, the copy between device and host memory of a memory-kind
change, or why no single program moves it (the array view's move line),
what each device lacked of its new block, read from the two layouts, and
XLA's involuntary full rematerializations the move's compile logged.

The identity is traced by the program engine, which the caller hands in
(``trace``: ``shardviz.trace``), so the array package never imports the program
one. XLA:CPU compiles for at most 2,048 devices in one process; past that the
identity is compiled in a child process (the what-if trace's, given as
``elsewhere``) over the same mesh positions, so the collectives are XLA's own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from ..errors import ShardingError
from ..text.ranges import format_bytes
from .checks import spec_repr
from .move_needs import move_needs
from .placement import ArrayState, trimmed

# A traced program (a shardviz.Program): the program engine's, read here for its collectives.
Program = Any
# Traces ``fun(*args)`` here: shardviz.trace without mesh=.
Trace = Callable[..., Program]

# XLA:CPU takes device ids past this many local devices for another process's and compiles
# nothing for them (the what-if child starts a one-process distributed runtime instead).
CPU_LOCAL_DEVICES = 2048

# Compiles ``fun(*args)`` in a child process with one CPU device per device of ``mesh``.
Elsewhere = Callable[[Any, tuple[Any, ...], Any], Program]


def _identity(a: Any) -> Any:
    return a


@dataclass(frozen=True)
class MoveInChild:
    """The identity from one layout to another, rebuilt in a what-if child whose mesh is the
    source layout's mesh (same axes, sizes and types, devices in its mesh order).

    ``target_positions[j]`` is the source mesh position of the device at position ``j`` of the
    target mesh, so the target mesh holds the same devices as in the parent, in the same
    places: the program is the parent's, on renumbered devices. Picklable by reference.
    """

    source_memory_kind: str | None
    target_names: tuple[str, ...]
    target_sizes: tuple[int, ...]
    target_types: tuple[str, ...]
    target_positions: tuple[int, ...]
    target_spec: PartitionSpec
    target_memory_kind: str | None

    def _jitted(self, a: Any) -> tuple[Any, Any]:
        mesh = a.sharding.mesh
        devices = np.asarray(mesh.devices).reshape(-1)[list(self.target_positions)]
        target = Mesh(
            devices.reshape(self.target_sizes),
            self.target_names,
            axis_types=tuple(getattr(AxisType, t) for t in self.target_types),
        )
        source = NamedSharding(mesh, a.sharding.spec, memory_kind=self.source_memory_kind)
        out = NamedSharding(target, self.target_spec, memory_kind=self.target_memory_kind)
        return jax.jit(_identity, out_shardings=out), jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=source)

    def trace(self, a: Any) -> Any:
        jitted, arg = self._jitted(a)
        return jitted.trace(arg)

    def lower(self, a: Any) -> Any:
        jitted, arg = self._jitted(a)
        return jitted.lower(arg)

    def __call__(self, a: Any) -> Any:
        jitted, arg = self._jitted(a)
        return jitted(arg)


def _past_local_cpu_devices(array: Any) -> bool:
    devices = array.sharding.device_set
    return len(devices) > CPU_LOCAL_DEVICES and next(iter(devices)).platform == "cpu"


def _compile_in_child(old: Any, new: Any, elsewhere: Elsewhere) -> Program:
    source, target = old.sharding, new.sharding
    if not isinstance(source, NamedSharding) or not isinstance(target, NamedSharding):
        raise ShardingError(
            f"XLA:CPU compiles for at most {CPU_LOCAL_DEVICES:,} devices in this process, and only a "
            "NamedSharding's move can be compiled in a child process"
        )
    position = {d.id: k for k, d in enumerate(np.asarray(source.mesh.devices).reshape(-1))}
    mesh = target.mesh
    fun = MoveInChild(
        source_memory_kind=source.memory_kind,
        target_names=tuple(mesh.axis_names),
        target_sizes=tuple(int(s) for s in mesh.axis_sizes),
        target_types=tuple(t.name for t in mesh.axis_types),
        target_positions=tuple(position[d.id] for d in np.asarray(mesh.devices).reshape(-1)),
        target_spec=target.spec,
        target_memory_kind=target.memory_kind,
    )
    arg = jax.ShapeDtypeStruct(old.shape, old.dtype, sharding=NamedSharding(source.mesh.abstract_mesh, source.spec))
    return elsewhere(fun, (arg,), source.mesh.abstract_mesh)


def move_program(old: Any, new: Any, trace: Trace, elsewhere: Elsewhere | None = None) -> Program:
    """``jax.jit(lambda a: a, out_shardings=new.sharding)`` on ``old``, traced: here (``trace``), or
    past XLA:CPU's devices of one process in a child (``elsewhere``) when one is given."""
    if elsewhere is not None and _past_local_cpu_devices(old):
        return _compile_in_child(old, new, elsewhere)
    return _local_move(jax.ShapeDtypeStruct(old.shape, old.dtype, sharding=old.sharding), new.sharding, trace)


@functools.lru_cache(maxsize=128)
def _local_move(old: jax.ShapeDtypeStruct, target: Any, trace: Trace) -> Program:
    """One trace per pair of layouts: each trace compiles with its own dump folder, so JAX would keep
    one more executable for every edit back and forth. Traced from a ShapeDtypeStruct, so the cache
    holds no user array."""
    return trace(jax.jit(_identity, out_shardings=target), old)


def resharding(
    before: ArrayState, after: ArrayState, *, trace: Trace, elsewhere: Elsewhere | None = None
) -> tuple[Program | None, dict[str, Any]]:
    """What moving the array from ``before``'s layout to ``after``'s costs, as a
    Program and a summary for the front end (``{}`` when nothing moved).

    The summary holds the collectives of the compiled identity and their bytes,
    ``memory`` when the memory kind changed (each device copies its block
    between device and host memory, which no collective shows), or ``error``:
    why no single program moves the array (onto other devices, say); and
    ``needs``, what each device lacked of its new block (read from the layouts).
    """
    old, new = before.array, after.array
    if old is None or new is None or old is new or old.sharding == new.sharding:
        return None, {}
    needs = move_needs(before.layout, after.layout).to_json()
    old_devices, new_devices = old.sharding.device_set, new.sharding.device_set
    if old_devices != new_devices:
        # JAX compiles no program whose input and output live on different devices.
        shared = len(old_devices & new_devices)
        return None, {
            "error": (
                f"the new layout is on {_count(len(new_devices), 'device')}, the array was on "
                f"{len(old_devices)} ({shared} in both); jax.device_put copies it across, and JAX compiles "
                "no one program whose input and output are on different devices"
            ),
            "needs": needs,
        }
    try:
        program = move_program(old, new, trace, elsewhere)
    except ShardingError as err:
        return None, {"error": str(err), "needs": needs}
    summary = _summary(program)
    old_kind, new_kind = old.sharding.memory_kind, new.sharding.memory_kind
    if old_kind != new_kind:
        block = new.sharding.shard_shape(new.shape)
        summary["memory"] = {
            "from": old_kind or "device",
            "to": new_kind or "device",
            "bytes": math.prod(block) * new.dtype.itemsize,
        }
    summary["needs"] = needs
    remats = _rematerializations(program, before, after)
    if remats:
        summary["rematerializations"] = remats
    if program.whatif is not None:
        summary["child"] = {"devices": program.whatif.devices, "seconds": round(program.whatif.child_seconds, 1)}
    return program, summary


def _summary(program: Program) -> dict[str, Any]:
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
    return {"collectives": collectives, "wire_bytes": program.totals.wire_bytes}


def _rematerializations(program: Program, before: ArrayState, after: ArrayState) -> list[dict[str, Any]]:
    """XLA's "Involuntary full rematerialization" warnings its compile of the move logged (caught by the
    program's trace): every device gathers the whole array and cuts its new block. The two layouts are the
    array view's own (the warning's second sharding is on the new mesh's device order, not the old mesh's)."""
    out = []
    for r in getattr(program, "rematerializations", ()):
        old, new = _layout_words(before), _layout_words(after)
        out.append(
            {
                "shape": list(r.shape),
                "dtype": r.dtype,
                "full_bytes": r.full_bytes,
                "before": old,
                "after": new,
                "text": (
                    f"involuntary full rematerialization: XLA cannot move the array from {old} to {new} "
                    f"efficiently, so every device gathers the whole {r.dtype}[{','.join(map(str, r.shape))}] "
                    f"({format_bytes(r.full_bytes)}) and cuts its new block"
                ),
            }
        )
    return out


def _layout_words(state: ArrayState) -> str:
    """``P('y') on x=4, y=3``: the state's spec on its mesh's axes."""
    mesh = state.mesh
    axes = ", ".join(f"{n}={int(k)}" for n, k in zip(mesh.axis_names, mesh.axis_sizes)) if mesh is not None else "?"
    return f"{spec_repr(tuple(trimmed(state.spec)))} on {axes}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
