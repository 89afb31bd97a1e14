"""One trace, lower and compile of ``f`` in this process, read back as a Program.

The steps: check the arguments (a tracer, a deleted array), trace with
``jax.jit`` (or ``f``'s own jit), lower, and compile once. The compile has
XLA dump into a private temporary folder, removed at once, what shardviz
reads: the optimized module, its buffer assignment and live ranges and,
under Auto axes, the module just before SPMD partitioning (the
partitioner's shardings, :mod:`shardviz.program.values.xla_shardings`).

XLA's compile lets go of Python's lock, so the reading overlaps it on one
worker thread: first the jaxpr (every value's name, line, scope and pass,
:func:`.assemble.read_jaxpr`), then the optimized module and the dumps as
soon as XLA has written them, while it generates the device code
(:mod:`.module_reading`). A dump read early counts only if its file has not
grown since; otherwise, or where nothing was dumped, the module is read
after the compile from the executable's own text. Python's garbage
collector is held while a program is read. Nothing runs on a device and
nothing the user passed is changed: tracing, lowering and compiling never
donate or move a buffer. :mod:`.assemble` puts the Program together.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import jax
from jax.sharding import AxisType, Mesh, NamedSharding

from ...errors import ShardingError
from .. import hlo
from ..program import Program
from ..why.remat import captured_stderr
from .arguments import argument_paths, argument_summary, check_leaves, function_name, is_jitted, tracing_error
from .assemble import assemble, read_jaxpr
from .module_reading import ModuleReading, read_module

# Dump only the module around the partitioner; the folder is private and removed after the compile.
_DUMP_OPTIONS = {"xla_dump_hlo_pass_re": "spmd-partitioning"}
# XLA:CPU expands the optimization barriers that keep a jax.checkpoint's recomputation apart from the
# forward pass, and its CSE then merges the two, keeping every activation; TPU and GPU keep them
_KEEP_BARRIERS = {"xla_disable_hlo_passes": "cse_barrier_expander"}


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
    # XLA's compile lets go of Python's lock: the jaxpr is read meanwhile on another thread, and then the
    # optimized module, once XLA has written it and is generating code. The reading starts once the dump
    # folder is made, as the compile begins: started sooner, it holds the lock the folder's calls wait for.
    readings: list[Future[Any]] = []

    def module_early(folder: str, compile_ended: threading.Event) -> Future[ModuleReading | None]:
        readings.append(_in_background(read_jaxpr, fun, name, traced, leaves, paths))

        def read_and_check() -> ModuleReading | None:
            found = _read_module_early(folder, compile_ended, read_partitioner)
            compile_ended.wait()
            return found[0] if found is not None and _read_whole(found[1]) else None

        return _in_background(read_and_check)

    try:
        with captured_stderr() as logged:  # XLA's C++ warnings (involuntary rematerialization) go to fd 2
            compiled, dumps, module_reading = _compile(lowered, read_partitioner, module_early)
    except Exception as err:
        raise ShardingError(
            f"{name} traced but did not compile for arguments {argument_summary(leaves, paths)}: "
            f"{type(err).__name__}: {err}"
        ) from err
    # Compiled without a dump folder: the jaxpr is read now.
    reading = readings[0] if readings else _in_background(read_jaxpr, fun, name, traced, leaves, paths)
    kept = _kept_inputs(lowered)
    try:
        read = module_reading.result() if module_reading is not None else None
        return assemble(
            fun, name, tree, leaves, traced, compiled, kept, reading.result(), read, dumps,
            remat_reading=lambda: _barriers_kept(lowered), xla_log="".join(logged),
        )  # fmt: skip
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


def _after_fork_in_child() -> None:
    """A forked child (multiprocessing's default on Linux, a fork server) has none of the parent's
    threads: a worker inherited from the parent would take work and never run it, and a hold on the
    collector from a read in another thread would never end. The child starts both afresh."""
    global _WORKER, _HOLD_LOCK, _HELD
    _WORKER = None
    _HOLD_LOCK = threading.Lock()
    if _HELD and _ENABLED_BEFORE:
        gc.enable()
    _HELD = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


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
        text = _mesh_declarations(lowered)
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


def _mesh_declarations(lowered: Any) -> str:
    """The lowered module's mesh declarations as its text prints them: its top-level ``sdy.mesh``
    operations printed one by one (the whole module's text costs milliseconds), or the whole text."""
    try:
        operations = lowered.compiler_ir().body.operations
    except Exception:  # a lowering without its MLIR module: read the declarations from its text
        return str(lowered.as_text())
    return "\n".join(str(op) for op in operations if op.operation.name == "sdy.mesh")


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


def _compile(
    lowered: Any, read_partitioner: bool, while_compiling: Callable[[str, threading.Event], Future[Any]] | None = None
) -> tuple[Any, dict[str, str], Future[Any] | None]:
    """Compile once, with XLA dumping into a private folder what shardviz reads: its buffer assignment
    and live ranges (memory over the program) and, under Auto axes, the module just before SPMD
    partitioning (the partitioner's shardings). A backend that refuses dumps compiles plainly.

    ``while_compiling(folder, compiled)`` starts work that may read the folder until the event
    ``compiled`` is set; the folder is removed only once that work has ended, and its future is the
    third item. The dumps are read after the compile only where it had none to read."""
    options = {"xla_dump_hlo_pass_re": _DUMP_OPTIONS["xla_dump_hlo_pass_re"] if read_partitioner else "^$"}
    try:
        private = tempfile.TemporaryDirectory(prefix="shardviz-", dir=_dump_parent())
    except OSError:  # no folder to write in: the program is read without XLA's dumps
        return lowered.compile(), {}, None
    with private as folder:
        compiled_event = threading.Event()
        early = while_compiling(folder, compiled_event) if while_compiling is not None else None
        try:
            compiled = lowered.compile(compiler_options={"xla_dump_to": folder, **options})
        except Exception as err:
            if "xla_dump" not in str(err):
                raise
            return lowered.compile(), {}, None
        finally:
            compiled_event.set()
            if early is not None:
                wait([early])  # the work reads the folder: it ends before the folder goes
        if early is not None and (early.exception() is not None or early.result() is not None):
            return compiled, {}, early
        return compiled, _read_dumps(folder, read_partitioner), None


def _read_module_early(
    folder: str, compile_ended: threading.Event, read_partitioner: bool
) -> tuple[ModuleReading, dict[str, int]] | None:
    """The optimized module and XLA's dumps, read as soon as XLA has written them (its HLO passes are
    over; on XLA:CPU the device code, generated next, takes most of the compile), with the size of each
    file as read: the compile checks those against the files' final sizes before the reading counts.
    None where the compile ends first or a file cannot be read yet."""
    wanted = [k for k in _DUMPED if read_partitioner or k != "before_partitioning"]
    while not compile_ended.is_set():
        paths = {key: sorted(glob.glob(os.path.join(folder, _DUMPED[key]))) for key in wanted}
        if all(paths.values()):
            texts, sizes = {}, {}
            for key, found in paths.items():
                with open(found[0], "rb") as f:
                    raw = f.read()
                texts[key], sizes[found[0]] = raw.decode("utf-8", errors="replace"), len(raw)
            try:
                return read_module(texts["optimized_module"], texts), sizes
            except hlo.HloParseError:  # a file still being written: read after the compile instead
                return None
        compile_ended.wait(0.002)
    return None


def _read_whole(sizes: dict[str, int]) -> bool:
    """Whether every file read early was whole then: its size as read is its size now, the compile over."""
    try:
        return all(os.path.getsize(path) == size for path, size in sizes.items())
    except OSError:
        return False


def _barriers_kept(lowered: Any) -> ModuleReading | None:
    """The module compiled once more with jax.checkpoint's barriers kept, read for its memory only
    (its buffer assignment and live ranges); None where that compile or its dumps fail."""
    try:
        private = tempfile.TemporaryDirectory(prefix="shardviz-", dir=_dump_parent())
    except OSError:
        return None
    with private as folder:
        try:
            compiled = lowered.compile(
                compiler_options={"xla_dump_to": folder, "xla_dump_hlo_pass_re": "^$", **_KEEP_BARRIERS}
            )
            return read_module(str(compiled.as_text()), _read_dumps(folder, False))
        except Exception:  # best-effort: the memory is then read from the program's own compile
            return None


def _read_dumps(folder: str, read_partitioner: bool) -> dict[str, str]:
    """XLA's dumps after the compile (the optimized module is the executable's own text then)."""
    texts = {}
    for key, pattern in _DUMPED.items():
        if (key == "before_partitioning" and not read_partitioner) or key == "optimized_module":
            continue
        found = sorted(glob.glob(os.path.join(folder, pattern)))
        if found:
            with open(found[0], encoding="utf-8", errors="replace") as f:
                texts[key] = f.read()
    return texts


_DUMPED = {
    "before_partitioning": _BEFORE_PARTITIONING,
    "buffer_assignment": "*after_optimizations-buffer-assignment.txt",
    "live_range": "*after_optimizations-live-range.txt",
    "optimized_module": "*after_optimizations.txt",
}
