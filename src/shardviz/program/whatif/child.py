"""The child process of a what-if trace.

Run as ``python -m shardviz.program.whatif.child``: it reads one pickled request on
stdin, starts JAX with as many simulated CPU devices as the mesh needs (the
parent set ``XLA_FLAGS`` before this process started), builds a concrete
mesh with the request's axis names, sizes and types, traces the function
there and writes the pickled Program (without its origin, which holds
objects tied to this process's devices) on stdout. Above 2,048 devices it
first starts a one-process distributed runtime on 127.0.0.1 (see
``_one_process_runtime``). It leaves with
``os._exit`` because tearing down thousands of CPU devices takes seconds.
"""

from __future__ import annotations

import ctypes
import dataclasses
import linecache
import math
import os
import pickle
import resource
import signal
import socket
import sys
import time
from typing import Any

import jax
from jax.sharding import AxisType, NamedSharding

from ...errors import ShardingError
from ..compiling.trace_here import trace_here
from .parent import Jitted, available_bytes, compile_bytes


def _rebuild_leaf(leaf: Any, mesh: jax.sharding.Mesh) -> Any:
    """A leaf as :func:`shardviz.program.whatif.parent._describe_leaf` sent it, laid out on ``mesh``."""
    if isinstance(leaf, tuple) and leaf and leaf[0] == "array":
        _, shape, dtype, spec, memory_kind, is_ref, weak_type = leaf
        sharding = None if spec is None else NamedSharding(mesh, spec, memory_kind=memory_kind)
        return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding, weak_type=weak_type, is_ref=is_ref)
    return leaf[1]


def portable(obj: Any) -> Any:
    """``obj`` with every concrete NamedSharding put on its AbstractMesh.

    Concrete shardings hold this process's devices, which cannot be pickled;
    the mesh's axis names, sizes and types and the spec are what the parent
    needs (its devices are virtual anyway).
    """
    if isinstance(obj, NamedSharding):
        if isinstance(obj.mesh, jax.sharding.Mesh):
            return NamedSharding(obj.mesh.abstract_mesh, obj.spec, memory_kind=obj.memory_kind)
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            new = portable(value)
            if new is not value:
                changes[f.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        items = tuple(portable(v) for v in obj)
        return items if any(a is not b for a, b in zip(items, obj)) else obj
    if isinstance(obj, dict):
        return {k: portable(v) for k, v in obj.items()}
    return obj


# XLA:CPU packs a process index into device ids above this many local devices, and without
# collectives it refuses to compile for devices it takes to be another process's.
CPU_LOCAL_DEVICE_IDS = 2048


def _one_process_runtime() -> None:
    """A distributed runtime of this one process, with gloo collectives, so that XLA:CPU
    compiles for more than 2,048 devices (it checks device ids only when it has no collectives).
    Nothing runs: the child only compiles."""
    with socket.socket() as probe:  # a free port on the loopback for the one-process coordinator
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=1, process_id=0)


def run(request: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    names, sizes, types = request["axis_names"], request["axis_sizes"], request["axis_types"]
    if math.prod(sizes) > CPU_LOCAL_DEVICE_IDS:
        _one_process_runtime()
    linecache.cache.update(request.get("linecache", {}))  # the parent's notebook cells, by file name
    mesh = jax.make_mesh(tuple(sizes), tuple(names), axis_types=tuple(getattr(AxisType, t) for t in types))
    devices_started = time.perf_counter() - started
    leaves = [_rebuild_leaf(leaf, mesh) for leaf in request["leaves"]]
    args, kwargs = jax.tree_util.tree_unflatten(request["tree"], leaves)
    # Code written for Explicit axes runs under jax.set_mesh, which takes no AbstractMesh in the
    # parent: the child sets its concrete twin, as the user would on the real machine.
    fun = pickle.loads(request["fun_bytes"])
    if isinstance(fun, Jitted):
        jitted = fun.rebuild(mesh)
    else:  # a callable that traces and lowers itself (the array view's move) is taken as it is
        traces_itself = callable(getattr(fun, "trace", None)) and callable(getattr(fun, "lower", None))
        jitted = fun if traces_itself else jax.jit(fun)
    with jax.set_mesh(mesh):
        estimated = _check_compile_memory(jitted, args, kwargs, mesh.size)
        program = trace_here(jitted, *args, **kwargs)
    array_leaf = program.origin.array_leaf if program.origin is not None else None
    program = portable(dataclasses.replace(program, origin=None))
    return {
        "program": program,
        "array_leaf": array_leaf,
        "device_count": jax.device_count(),
        "devices_seconds": devices_started,
        "trace_seconds": time.perf_counter() - started - devices_started,
        "peak_rss_bytes": _peak_resident_bytes(),
        "estimated_bytes": estimated,
    }


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _peak_resident_bytes() -> int:
    """This process's peak resident memory since it started Python. Not ``ru_maxrss``: Linux keeps that
    across exec, so a child of a large parent starts with the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _equations(jaxpr: Any) -> int:
    return sum(1 + sum(_equations(sub) for sub in jax.extend.core.jaxprs_in_params(e.params)) for e in jaxpr.eqns)


def _check_compile_memory(jitted: Any, args: Any, kwargs: Any, devices: int) -> int | None:
    """What this child will hold once it has compiled the program: its memory now plus what
    compiling a program of that many equations adds; a ShardingError if the machine has not that
    much available. JAX keeps the trace, so ``trace`` below does not trace again. None where the
    function does not trace: ``trace`` says why, in its words."""
    try:
        equations = _equations(jitted.trace(*args, **kwargs).jaxpr.jaxpr)
    except Exception:
        return None
    now = _resident_bytes()
    needed = now + compile_bytes(equations, devices)
    available = available_bytes()
    if needed - now > available:
        raise ShardingError(
            f"compiling this program of {equations} equations for {devices} devices needs about "
            f"{needed / 2**30:.1f} GiB; this machine has {available / 2**30:.1f} GiB available"
        )
    return needed


def die_with_parent() -> None:
    """Get SIGKILL when the parent dies (Linux); leave at once if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != int(os.environ.get("SHARDVIZ_WHATIF_PARENT", os.getppid())):
        os._exit(1)


def main() -> None:
    die_with_parent()
    out = sys.stdout.buffer
    try:
        request = pickle.load(sys.stdin.buffer)
        reply: dict[str, Any] = {"ok": run(request)}
    except ShardingError as err:
        reply = {"error": str(err)}
    except BaseException as err:
        reply = {"error": f"{type(err).__name__}: {err}"}
    try:
        data = pickle.dumps(reply)
    except Exception as err:
        data = pickle.dumps({"error": f"the result could not be sent back: {type(err).__name__}: {err}"})
    out.write(data)
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
