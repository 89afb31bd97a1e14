"""What-if tracing, the parent's side: compile a program for a mesh larger than this machine.

The parent describes the mesh and the abstract arguments, starts a child
Python (``shardviz.program.whatif.child``) whose JAX has one simulated CPU device per
mesh device, and reads back the Program. The child is bounded in time
(``timeout``), is killed on timeout, on KeyboardInterrupt or any error in
the parent, and dies with the parent (Linux ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import io
import linecache
import os
import pickle
import subprocess
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import jax
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec

from ...errors import ShardingError
from ...memory_guard import host_available_bytes
from ..model import TraceOrigin
from ..program import Program

MAX_DEVICES = 8192
MiB, KiB = 2**20, 2**10
# What a child needs, each part rounded up from what it was measured to take (docs/planning.md has the
# figures), so that a trace this machine cannot hold is refused before it starts rather than killed midway:
# JAX and XLA started, its simulated CPU devices, then the compile, which grows with the program's
# equations and, a little, with the devices.
JAX_BYTES = 256 * MiB
BYTES_PER_DEVICE = 128 * KiB
COMPILE_BYTES = 320 * MiB
COMPILE_BYTES_PER_EQUATION = 32 * KiB
COMPILE_BYTES_PER_DEVICE = 64 * KiB


@dataclass(frozen=True)
class WhatIf:
    """How a what-if Program was made: its devices are virtual (ids 0..N-1)."""

    devices: int
    child_seconds: float
    devices_seconds: float
    trace_seconds: float
    peak_rss_bytes: int
    estimated_bytes: int  # the child's, once it had traced the program (before it compiled it)

    def to_json(self) -> dict[str, Any]:
        return {
            "devices": self.devices,
            "child_seconds": self.child_seconds,
            "devices_seconds": self.devices_seconds,
            "trace_seconds": self.trace_seconds,
            "peak_rss_bytes": self.peak_rss_bytes,
            "estimated_bytes": self.estimated_bytes,
        }


def estimated_child_bytes(devices: int) -> int:
    """Memory a child with ``devices`` simulated CPU devices is expected to need before it has
    traced the program: what :func:`compile_bytes` adds to a traced program of no equations."""
    return JAX_BYTES + BYTES_PER_DEVICE * devices + compile_bytes(0, devices)


def compile_bytes(equations: int, devices: int) -> int:
    """Memory compiling a traced program of ``equations`` (its jaxpr's, nested ones counted) for
    ``devices`` adds to the child's resident memory."""
    return COMPILE_BYTES + COMPILE_BYTES_PER_EQUATION * equations + COMPILE_BYTES_PER_DEVICE * devices


def available_bytes() -> int:
    """The host memory this process can still take (:func:`shardviz.memory_guard.host_available_bytes`)."""
    return host_available_bytes()


def _check_mesh(mesh: Any) -> AbstractMesh:
    if isinstance(mesh, jax.sharding.Mesh):
        mesh = mesh.abstract_mesh
    if not isinstance(mesh, AbstractMesh):
        raise ShardingError(f"trace's mesh= takes a jax.sharding.AbstractMesh, got a {type(mesh).__name__}")
    if mesh.size > MAX_DEVICES:
        raise ShardingError(f"a what-if mesh may have at most {MAX_DEVICES} devices; this one has {mesh.size}")
    return mesh


def _check_same_mesh(other: Any, mesh: AbstractMesh, what: str) -> None:
    if tuple(other.axis_names) != tuple(mesh.axis_names) or tuple(other.axis_sizes) != tuple(mesh.axis_sizes):
        raise ShardingError(
            f"{what} is sharded on a mesh with axes {dict(zip(other.axis_names, other.axis_sizes))}, "
            f"not trace's mesh= {dict(zip(mesh.axis_names, mesh.axis_sizes))}"
        )


def _describe_leaf(leaf: Any, mesh: AbstractMesh, index: int) -> tuple[Any, ...]:
    """``("array", shape, dtype, spec, memory_kind, is_ref, weak_type)`` for a ShapeDtypeStruct (the
    child lays it out on its own mesh), ``("other", leaf)`` for what passes as it is."""
    if isinstance(leaf, jax.ShapeDtypeStruct):
        # A spec alone: ShapeDtypeStruct.sharding would lay it on the context's concrete mesh (and raise
        # without one), so the spec it was given is read as given.
        given = getattr(leaf, "_sharding", None)
        sharding = given if isinstance(given, PartitionSpec) else leaf.sharding
        spec: PartitionSpec | None
        memory_kind = getattr(sharding, "memory_kind", None)
        if sharding is None:
            spec = None
        elif isinstance(sharding, NamedSharding):
            _check_same_mesh(sharding.mesh, mesh, f"argument {index}")
            spec = sharding.spec
        elif isinstance(sharding, PartitionSpec):
            spec = sharding
        else:
            raise ShardingError(
                f"argument {index} has a {type(sharding).__name__}; a what-if trace takes NamedShardings on "
                "trace's mesh= or PartitionSpecs"
            )
        return ("array", tuple(leaf.shape), str(leaf.dtype), spec, memory_kind, bool(leaf.is_ref), leaf.weak_type)
    if isinstance(leaf, jax.Ref):
        raise ShardingError(
            f"argument {index} is a Ref holding an array of this machine's devices; for Ref state a what-if "
            "trace takes jax.ShapeDtypeStruct(shape, dtype, sharding=..., is_ref=True)"
        )
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not isinstance(leaf, (int, float, complex, bool)):
        raise ShardingError(
            f"argument {index} is a {type(leaf).__name__}; a what-if trace takes jax.ShapeDtypeStructs "
            "(arrays live on this machine's devices, not the what-if mesh)"
        )
    return ("other", leaf)


@dataclass(frozen=True)
class Jitted:
    """A ``jax.jit``-wrapped function as a child can rebuild it: the function and jit's options.

    A jitted function pickles without the attributes JAX sets on it (cloudpickle
    restores a bare ``PjitFunction`` that cannot trace), so the function itself
    travels and the child jits it again with the same options.
    """

    fun: Any
    options: dict[str, Any]

    def rebuild(self, mesh: jax.sharding.Mesh) -> Any:
        """The jitted function again, its NamedShardings put on ``mesh`` (the child's)."""
        options = dict(self.options)
        for key in ("in_shardings", "out_shardings"):
            if key in options:
                options[key] = jax.tree.map(lambda s: _on_mesh(s, mesh), options[key])
        return jax.jit(self.fun, **options)


def _on_mesh(sharding: Any, mesh: jax.sharding.Mesh) -> Any:
    if isinstance(sharding, NamedSharding):
        return NamedSharding(mesh, sharding.spec, memory_kind=sharding.memory_kind)
    return sharding


def jit_options(fun: Any, mesh: AbstractMesh) -> dict[str, Any]:
    """The options ``fun`` was jitted with (JAX keeps them as ``_jit_info``), shardings on ``mesh``."""
    info = fun._jit_info
    options: dict[str, Any] = {
        "static_argnums": info.static_argnums,
        "static_argnames": info.static_argnames,
        "donate_argnums": info.donate_argnums,
        "donate_argnames": info.donate_argnames,
        "keep_unused": info.keep_unused,
        "inline": info.inline,
    }
    if info.compiler_options_kvs:
        options["compiler_options"] = dict(info.compiler_options_kvs)
    for key, treedef, leaves in (
        ("in_shardings", info.in_shardings_treedef, info.in_shardings_leaves),
        ("out_shardings", info.out_shardings_treedef, info.out_shardings_leaves),
    ):
        if all(type(leaf).__name__ == "UnspecifiedValue" for leaf in leaves):
            continue  # jit's default: no sharding named
        for leaf in leaves:
            if not (leaf is None or isinstance(leaf, (NamedSharding, PartitionSpec))):
                raise ShardingError(f"{key} of the jitted function holds a {type(leaf).__name__}; a what-if trace "
                                    "takes NamedShardings on trace's mesh=, PartitionSpecs or None there")  # fmt: skip
            if isinstance(leaf, NamedSharding):
                _check_same_mesh(leaf.mesh, mesh, f"{key} of the jitted function")
        portable = [NamedSharding(mesh, s.spec, memory_kind=s.memory_kind) if isinstance(s, NamedSharding) else s
                    for s in leaves]  # fmt: skip
        options[key] = jax.tree_util.tree_unflatten(treedef, portable)
    return options


def _sendable(fun: Any, mesh: AbstractMesh) -> Any:
    """``fun`` as the child can load it: a jitted function as a :class:`Jitted`."""
    if hasattr(fun, "_jit_info") and hasattr(fun, "_fun"):
        return Jitted(fun._fun, jit_options(fun, mesh))
    return fun


def _pickle_function(fun: Any) -> bytes:
    """``fun`` as bytes the child can load: by reference when it lives in an importable module,
    else by value with cloudpickle (a notebook cell's or a script's function: ``__main__`` in the
    child is shardviz's own, so a reference to it would name the wrong module)."""
    try:
        data = pickle.dumps(fun)
        pickle.loads(data)
        if b"__main__" not in data:
            return data
        reason = f"{getattr(fun, '__qualname__', type(fun).__name__)} is defined in __main__ (a notebook or a script)"
    except Exception as by_reference:
        reason = f"{type(by_reference).__name__}: {by_reference}"
    try:
        import cloudpickle
    except ImportError:
        raise ShardingError(
            f"a what-if trace runs the function in a child process and could not send it there ({reason}); "
            "install cloudpickle (pip install cloudpickle), or define the function at the top level of a module"
        ) from None
    return _by_value(cloudpickle, fun)


def _by_value(cloudpickle: Any, fun: Any) -> bytes:
    """cloudpickle's bytes of ``fun``, each code object keeping its file name.

    cloudpickle writes ``<dynamic-code>`` for every file so that its bytes do
    not depend on where code was defined; the child needs the real names to
    put collectives on the user's lines (a script's file, a notebook cell's).
    Through a private function of cloudpickle: if that changes, the plain
    bytes are sent and lines show ``<dynamic-code>``.
    """
    code_reduce = getattr(getattr(cloudpickle, "cloudpickle", None), "_code_reduce", None)

    class KeepFileNames(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.CodeType) and code_reduce is not None:
                rebuild, args = code_reduce(obj)
                return rebuild, tuple(obj.co_filename if a == "<dynamic-code>" else a for a in args)
            return super().reducer_override(obj)

    out = io.BytesIO()
    KeepFileNames(out, protocol=pickle.DEFAULT_PROTOCOL).dump(fun)
    return out.getvalue()


def _unsaved_sources() -> dict[str, Any]:
    """linecache's entries for code that is in no file (notebook cells): the child reads their lines too."""
    return {
        name: entry
        for name, entry in list(linecache.cache.items())
        if len(entry) == 4 and entry[1] is None and not os.path.exists(name)
    }


def trace_in_child(
    fun: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    mesh: Any,
    timeout: float,
    retrace_with: Callable[..., Program],
) -> Program:
    """Trace ``fun(*args, **kwargs)`` on ``mesh`` in a child with ``mesh.size`` CPU devices; the
    Program's origin traces an edit of its inputs again with ``retrace_with`` (a new child)."""
    mesh = _check_mesh(mesh)
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    described = [_describe_leaf(leaf, mesh, i) for i, leaf in enumerate(leaves)]
    needed = estimated_child_bytes(mesh.size)
    available = available_bytes()
    if needed > available:
        raise ShardingError(
            f"a what-if trace on {mesh.size} devices needs about {needed / 2**30:.1f} GiB "
            f"(simulated CPU devices); this machine has {available / 2**30:.1f} GiB available"
        )
    request = _request(fun, tree, described, mesh)
    started = time.perf_counter()
    ok = _run_child(request, mesh, timeout)
    origin = None
    if ok.get("array_leaf") is not None:  # what an edit of the inputs traces again with, in a new child
        origin = TraceOrigin(fun, tree, tuple(leaves), tuple(ok["array_leaf"]), mesh, retrace_with=retrace_with)
    info = WhatIf(
        devices=mesh.size,
        child_seconds=time.perf_counter() - started,
        devices_seconds=ok["devices_seconds"],
        trace_seconds=ok["trace_seconds"],
        peak_rss_bytes=ok["peak_rss_bytes"],
        estimated_bytes=ok.get("estimated_bytes") or needed,
    )
    return replace(ok["program"], origin=origin, whatif=info)


def _request(fun: Any, tree: Any, described: list[tuple[Any, ...]], mesh: AbstractMesh) -> bytes:
    """What the child reads on stdin: the function, the arguments' tree and leaves, the mesh, unsaved sources."""
    return pickle.dumps(
        {
            "fun_bytes": _pickle_function(_sendable(fun, mesh)),
            "tree": tree,
            "leaves": described,
            "axis_names": tuple(mesh.axis_names),
            "axis_sizes": tuple(mesh.axis_sizes),
            "axis_types": tuple(t.name for t in mesh.axis_types),
            "linecache": _unsaved_sources(),
        }
    )


def _child_env(devices: int) -> dict[str, str]:
    """The child's environment: as many simulated CPU devices as the mesh has (the parent's other XLA
    flags kept), this interpreter's import path, and the parent's pid, which the child dies with."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p])
    env["SHARDVIZ_WHATIF_PARENT"] = str(os.getpid())
    return env


def _run_child(request: bytes, mesh: AbstractMesh, timeout: float) -> dict[str, Any]:
    """Runs the child on ``request`` and returns its answer; it is killed on timeout or on any error here."""
    child = subprocess.Popen(
        [sys.executable, "-m", "shardviz.program.whatif.child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_env(mesh.size),
    )
    try:
        out, err = child.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise ShardingError(
            f"the what-if trace on {mesh.size} devices took longer than timeout={timeout:g} s and was stopped"
        ) from None
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    try:
        reply = pickle.loads(out)
    except Exception:
        tail = err.decode(errors="replace")[-2000:]
        raise ShardingError(
            f"the what-if child on {mesh.size} devices ended without a result (exit {child.returncode}): {tail}"
        ) from None
    if "error" in reply:
        raise ShardingError(f"what-if trace on {mesh.size} devices: {reply['error']}")
    return dict(reply["ok"])
