"""One trace, lower and compile of ``f`` in this process, read back as a Program.

The steps: check the arguments (a tracer, a deleted array), trace with
``jax.jit`` (or ``f``'s own jit), lower, and compile once. Under Auto axes
the compile also dumps XLA's module just before SPMD partitioning into a
temporary folder, removed at once; that is where the partitioner's
shardings are read (:mod:`shardviz.program.xla_shardings`). Nothing runs on
a device and nothing the user passed is changed: tracing, lowering and
compiling never donate or move a buffer. :mod:`.assemble` reads the result.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import jax
from jax.sharding import AxisType, Mesh, NamedSharding

from ..errors import ShardingError
from . import hlo
from .arguments import argument_paths, argument_summary, check_leaves, function_name, is_jitted, tracing_error
from .assemble import assemble, read_jaxpr
from .program import Program

# Dump only the module around the partitioner; the folder is private and removed after the compile.
_DUMP_OPTIONS = {"xla_dump_hlo_pass_re": "spmd-partitioning"}


_BEFORE_PARTITIONING = "*before_spmd-partitioning.txt"

T = TypeVar("T")


def trace_here(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Program:
    """Trace, lower and compile ``fun(*args, **kwargs)`` once in this process and read what it does.

    ``fun`` is any callable or a ``jax.jit``-wrapped one (its own static
    arguments, shardings and donations are kept; nothing is run, so nothing
    is donated). ``args`` are arrays, ``ShapeDtypeStruct``s (with shardings),
    Python scalars or NumPy arrays, in any pytree. Raises
    :class:`ShardingError` naming the argument or the failing step, with
    JAX's own message attached.
    """
    if not callable(fun):
        raise ShardingError(f"trace needs a function to trace, got a {type(fun).__name__}")
    path_leaves, tree = jax.tree_util.tree_flatten_with_path((args, kwargs))
    paths = argument_paths(fun, [p for p, _ in path_leaves])
    leaves = [leaf for _, leaf in path_leaves]
    check_leaves(leaves, paths)
    jitted: Any = fun if is_jitted(fun) else jax.jit(fun)
    name = function_name(fun)
    try:
        traced = jitted.trace(*args, **kwargs)
    except Exception as err:
        raise tracing_error(name, err, leaves, paths) from err
    guessed_mesh = _guess_mesh(leaves, traced.jaxpr)
    read_partitioner = guessed_mesh is not None and any(t != AxisType.Explicit for t in guessed_mesh.axis_types)
    try:
        lowered = traced.lower()
    except Exception as err:
        raise ShardingError(f"{name} traced but did not lower: {type(err).__name__}: {err}") from err
    _check_compilable_meshes(lowered, name)
    with collections_held():
        return _compile_and_read(fun, name, tree, leaves, paths, traced, lowered, read_partitioner)


def _compile_and_read(
    fun: Callable[..., Any],
    name: str,
    tree: Any,
    leaves: Sequence[Any],
    paths: Sequence[str],
    traced: Any,
    lowered: Any,
    read_partitioner: bool,
) -> Program:
    # XLA's compile lets go of Python's lock: the jaxpr is read meanwhile on another thread.
    reading = _in_background(read_jaxpr, fun, name, traced, leaves, paths)
    try:
        compiled, dumps = _compile(lowered, read_partitioner)
    except Exception as err:
        raise ShardingError(
            f"{name} traced but did not compile for arguments {argument_summary(leaves, paths)}: "
            f"{type(err).__name__}: {err}"
        ) from err
    kept = _kept_inputs(lowered)
    try:
        return assemble(fun, name, tree, leaves, traced, compiled, dumps, kept, reading.result())
    except ShardingError:
        raise
    except Exception as err:  # shardviz's own failure, never the user's program's
        raise ShardingError(
            f"{name} compiled, but shardviz failed to read the compiled program (a bug in shardviz, not in "
            f"{name}; please report it): {type(err).__name__}: {err}"
        ) from err


@contextlib.contextmanager
def collections_held() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a program is read, then let be as before.

    Reading a program makes thousands of small objects, most of which live on in the Program. Every
    few hundred of them start a collection, and now and then a full one over the whole heap, JAX's
    included, which cost more than the reading itself (docs/performance.md). Held, the new objects
    are looked at once, in the first collection after the reading. Nested and threaded reads share
    one hold; the collector is enabled again only if it was when the first began.
    """
    global _HELD, _ENABLED_BEFORE
    with _HOLD_LOCK:
        if _HELD == 0:
            _ENABLED_BEFORE = gc.isenabled()
            gc.disable()
        _HELD += 1
    try:
        yield
    finally:
        with _HOLD_LOCK:
            _HELD -= 1
            if _HELD == 0 and _ENABLED_BEFORE:
                gc.enable()


_HOLD_LOCK = threading.Lock()
_HELD = 0
_ENABLED_BEFORE = True


def _in_background(work: Callable[..., T], *args: Any) -> Future[T]:
    """``work(*args)`` on the module's one worker thread (started on first use)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shardviz-read")
    return _WORKER.submit(work, *args)


_WORKER: ThreadPoolExecutor | None = None


def _kept_inputs(lowered: Any) -> list[int] | None:
    """The array inputs the compiled module takes as parameters, in order (JAX drops unused ones)."""
    kept = getattr(getattr(lowered, "_lowering", None), "compile_args", {}).get("kept_var_idx")
    return None if kept is None else sorted(int(k) for k in kept)


def _check_compilable_meshes(lowered: Any, name: str) -> None:
    """Refuse a module whose mesh axis names XLA's compiler aborts on.

    In jax 0.10.2 XLA aborts the whole process (a failed CHECK in its string
    unescaping) on a mesh axis name with a non-ASCII character or a
    backslash, which the module text carries escaped. A kernel must not die
    of an axis name, so such a program is refused before it is compiled.
    """
    try:
        text = lowered.as_text()
    except Exception:  # no text to read: the compile itself says what is wrong, if anything
        return
    names = hlo.declared_mesh_axis_names(text)
    odd = [n for n in dict.fromkeys(names) if b"\\" in n or any(c >= 0x80 for c in n)]
    if odd:
        shown = ", ".join(repr(n.decode("utf-8", "backslashreplace")) for n in odd)
        raise ShardingError(
            f"{name} uses the mesh axis name{'s' if len(odd) > 1 else ''} {shown}, which XLA's compiler cannot "
            "take: it aborts the process on a non-ASCII character or a backslash in an axis name (seen with "
            "jax 0.10.2); rename those axes to plain ASCII to trace it"
        )


def _guess_mesh(leaves: Sequence[Any], closed_jaxpr: Any) -> Any:
    """The mesh the program runs on, before compiling: the arguments', the context's, or a shard_map's."""
    for leaf in leaves:
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    for getter in (jax.sharding.get_mesh, jax.sharding.get_abstract_mesh):
        try:
            mesh: Any = getter()
        except Exception:
            continue
        if mesh is not None and not getattr(mesh, "empty", False) and mesh.axis_names:
            return mesh
    for eqn in _all_eqns(closed_jaxpr.jaxpr):
        for value in eqn.params.values():
            mesh = getattr(value, "mesh", None) if isinstance(value, NamedSharding) else value
            if isinstance(mesh, (Mesh, jax.sharding.AbstractMesh)) and mesh.axis_names:
                return mesh
    return None


def _all_eqns(jaxpr: Any) -> Any:
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from _all_eqns(sub)


def _dump_parent() -> str | None:
    """A memory-backed folder for XLA's dump when there is one: XLA writes dozens
    of files per compile, and writing them to a disk-backed /tmp slows the compile down."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _compile(lowered: Any, read_partitioner: bool) -> tuple[Any, dict[str, str]]:
    """Compile once, with XLA dumping into a private folder what shardviz reads: its buffer assignment
    and live ranges (memory over the program) and, under Auto axes, the module just before SPMD
    partitioning (the partitioner's shardings). A backend that refuses dumps compiles plainly."""
    options = {"xla_dump_hlo_pass_re": _DUMP_OPTIONS["xla_dump_hlo_pass_re"] if read_partitioner else "^$"}
    try:
        private = tempfile.TemporaryDirectory(prefix="shardviz-", dir=_dump_parent())
    except OSError:  # no folder to write in: the program is read without XLA's dumps
        return lowered.compile(), {}
    with private as folder:
        try:
            compiled = lowered.compile(compiler_options={"xla_dump_to": folder, **options})
        except Exception as err:
            if "xla_dump" not in str(err):
                raise
            return lowered.compile(), {}
        texts = {}
        patterns = {
            "before_partitioning": _BEFORE_PARTITIONING,
            "buffer_assignment": "*after_optimizations-buffer-assignment.txt",
            "live_range": "*after_optimizations-live-range.txt",
        }
        for key, pattern in patterns.items():
            if key == "before_partitioning" and not read_partitioner:
                continue
            found = sorted(glob.glob(os.path.join(folder, pattern)))
            if found:
                with open(found[0], encoding="utf-8", errors="replace") as f:
                    texts[key] = f.read()
    return compiled, texts
