"""``shardviz.compare`` and ``shardviz.diff``: trace candidates in parallel what-if children, rank them.

Each candidate is one what-if trace (:func:`shardviz.plan.whatif.trace`), a
child process with as many simulated CPU devices as its mesh. A thread per
running child waits on it (the children do the work), and no more children
run at once than the machine has cores, nor than its available memory holds
by the what-if trace's own estimate of a child's memory
(:func:`shardviz.plan.whatif.estimated_child_bytes`). A candidate that fails
to lay out, trace or compile becomes a failure with its error; the rest go on.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ShardingError
from ..program.program import Program
from ..program.trace import trace
from ..program.whatif.parent import Jitted, _pickle_function, _sendable, available_bytes, estimated_child_bytes
from .candidates import Candidate, as_candidate, resolve_arguments
from .comparison import Comparison, Failure, build_comparison, hardware_list

DEFAULT_HARDWARE = "tpu-v5p"


@dataclass(frozen=True)
class CompareOrigin:
    """What ``compare`` traced: enough to trace one candidate again with other shardings."""

    step: Callable[..., Any]
    args: tuple[Any, ...] | None
    candidates: tuple[Candidate, ...]
    timeout: float


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(meshes_devices: Sequence[int], workers: int | None = None) -> int:
    """How many children run at once: the cores, less where the available memory holds fewer
    children of the largest mesh (each as the what-if trace estimates it); at least one."""
    if workers is not None:
        if not isinstance(workers, int) or workers < 1:
            raise ShardingError(f"workers= must be a positive int, got {workers!r}")
    largest = max(meshes_devices, default=1)
    each = estimated_child_bytes(largest)
    available = available_bytes()
    by_memory = available // each
    if workers is not None:
        running = min(workers, len(meshes_devices) or 1)
        if running > 1 and running > by_memory:
            raise ShardingError(
                f"workers={workers} would run {running} what-if children of up to {largest} devices at once, "
                f"about {running * each / 2**30:.1f} GiB, and this machine has {available / 2**30:.1f} GiB "
                f"available: workers={max(1, int(by_memory))} fits"
            )
        return workers
    return max(1, min(usable_cores(), int(by_memory), len(meshes_devices) or 1))


def _mesh_of(candidate: Candidate) -> tuple[tuple[str, int], ...]:
    mesh = candidate.abstract_mesh
    return tuple(zip(mesh.axis_names, mesh.axis_sizes))


def _trace_one(step: Callable[..., Any], candidate: Candidate, args: Any, timeout: float) -> Program:
    arguments = resolve_arguments(candidate, args)
    return trace(step, *arguments, mesh=candidate.abstract_mesh, whatif_timeout=timeout)


def traced_elsewhere(step_bytes: bytes, arguments: tuple[Any, ...], mesh: Any, timeout: float) -> Program:
    """One candidate's what-if trace where an executor runs it (another process or machine): the
    step arrives as the what-if child takes it (by reference, or by value with cloudpickle), and the
    Program goes back without its origin (what tracing again needs stays with the caller)."""
    step = pickle.loads(step_bytes)
    if isinstance(step, Jitted):
        step = step.rebuild(mesh)
    return replace(trace(step, *arguments, mesh=mesh, whatif_timeout=timeout), origin=None)


def submit_trace(executor: Executor, step: Any, candidate: Candidate, args: Any, timeout: float) -> Future[Program]:
    """The candidate laid out here (a bad layout fails at once) and traced by ``executor``."""
    try:
        arguments = resolve_arguments(candidate, args)
        mesh = candidate.abstract_mesh
        step_bytes = _pickle_function(_sendable(step, mesh))
    except Exception as err:
        failed: Future[Program] = Future()
        failed.set_exception(err)
        return failed
    return executor.submit(traced_elsewhere, step_bytes, arguments, mesh, timeout)


def _error_text(err: BaseException) -> str:
    return str(err) if isinstance(err, ShardingError) else f"{type(err).__name__}: {err}"


def _step_name(step: Any) -> str:
    inner = getattr(step, "_fun", None) or getattr(step, "func", None) or step
    return str(getattr(inner, "__name__", type(step).__name__))


def _check_names(candidates: Sequence[Candidate]) -> None:
    seen: set[str] = set()
    for c in candidates:
        if c.name in seen:
            raise ShardingError(f"two candidates are named {c.name!r}; each needs its own name")
        seen.add(c.name)


def compare(
    step: Callable[..., Any],
    candidates: Sequence[Any],
    *,
    args: tuple[Any, ...] | None = None,
    hardware: Any = DEFAULT_HARDWARE,
    timeout: float = 600.0,
    workers: int | None = None,
    executor: Executor | None = None,
) -> Comparison:
    """Trace ``step`` once per candidate (a what-if child each, in parallel) and rank them on ``hardware``.

    ``candidates``: :class:`Candidate`\\ s, or ``(name, mesh, shardings)`` tuples. ``args``: the
    step's positional arguments (``jax.ShapeDtypeStruct``\\ s; their shardings are replaced by each
    candidate's), needed unless every candidate's shardings is a function of the mesh returning
    the arguments. ``hardware``: a name, a ``shardviz.Hardware`` or a list of them: one row per
    candidate and hardware. ``timeout``: seconds per child. ``workers``: children at once (by
    default the cores, fewer where memory holds fewer). ``executor``: any
    ``concurrent.futures.Executor`` (a Dask ``Client.get_executor()``, Ray's) to run the traces on
    instead of this machine's threads; a candidate its executor loses (a worker that died and was
    not retried) is a failure with the executor's error.
    """
    if not callable(step):
        raise ShardingError(f"compare needs the step function first, got a {type(step).__name__}")
    if not isinstance(candidates, Iterable):
        raise ShardingError(f"compare's candidates are a list of candidates, got a {type(candidates).__name__}")
    chosen = [as_candidate(c, i) for i, c in enumerate(candidates)]
    if not chosen:
        raise ShardingError("compare needs at least one candidate")
    _check_names(chosen)
    hws = hardware_list(hardware)
    if executor is not None and not isinstance(executor, Executor):
        raise ShardingError(f"compare's executor= is a concurrent.futures.Executor, got a {type(executor).__name__}")
    count = worker_count([c.abstract_mesh.size for c in chosen], workers)
    started = time.perf_counter()
    if executor is not None:
        outcomes = _outcomes([submit_trace(executor, step, c, args, timeout) for c in chosen])
    else:
        with ThreadPoolExecutor(max_workers=count) as pool:
            outcomes = _outcomes([pool.submit(_trace_one, step, c, args, timeout) for c in chosen])
    seconds = time.perf_counter() - started
    programs = {c.name: p for c, p in zip(chosen, outcomes) if isinstance(p, Program)}
    failures = [Failure(c.name, "", _mesh_of(c), _error_text(p)) for c, p in zip(chosen, outcomes)
                if not isinstance(p, Program)]  # fmt: skip
    origin = CompareOrigin(step, args, tuple(chosen), timeout)
    names = [c.name for c in chosen]
    return build_comparison(_step_name(step), programs, failures, hws, names, "best", count, seconds, origin)


def _outcomes(futures: Sequence[Future[Program]]) -> list[Program | BaseException]:
    """Each future's Program, or the error it ended with (the others go on)."""
    out: list[Program | BaseException] = []
    for future in futures:
        try:
            out.append(future.result())
        except Exception as err:
            out.append(err)
    return out


def diff(
    before: Program, after: Program, *, hardware: Any = DEFAULT_HARDWARE, names: tuple[str, str] = ("before", "after")
) -> Comparison:
    """Two traces of one function side by side (e.g. before and after a spec edit): a Comparison of
    two rows per hardware, ``after``'s changes against ``before``, line by line."""
    for what, program in (("before", before), ("after", after)):
        if not isinstance(program, Program):
            raise ShardingError(f"diff takes two shardviz Programs (from shardviz.trace); {what} is a "
                                f"{type(program).__name__}")  # fmt: skip
    if (
        not isinstance(names, (tuple, list))
        or len(names) != 2
        or names[0] == names[1]
        or not all(isinstance(n, str) for n in names)
    ):
        raise ShardingError(f"diff's names= are two different strings, got {names!r}")
    hws = hardware_list(hardware)
    programs = {names[0]: before, names[1]: after}
    return build_comparison(before.name, programs, [], hws, list(names), "first", 1, 0.0)


def retrace(comparison: Comparison, candidate: str, shardings: Any) -> Comparison:
    """``comparison`` with one candidate traced again with new ``shardings`` (rules text, specs or a
    function of the mesh); the other candidates' programs are kept as they are. A ShardingError
    (the comparison unchanged) when the candidate is unknown or cannot be laid out, traced or compiled."""
    origin = comparison.origin
    if not isinstance(origin, CompareOrigin):
        raise ShardingError("only a comparison made by shardviz.compare can trace a candidate again")
    found = next((c for c in origin.candidates if c.name == candidate), None)
    if found is None:
        raise ShardingError(f"no candidate named {candidate!r}; candidates: {', '.join(comparison.candidates)}")
    edited = replace(found, shardings=shardings)
    started = time.perf_counter()
    program = _trace_one(origin.step, edited, origin.args, origin.timeout)
    seconds = time.perf_counter() - started
    programs = {name: program if name == candidate else p for name, p in comparison.programs.items()}
    programs.setdefault(candidate, program)
    failures = [f for f in comparison.failures if f.candidate != candidate and not f.hardware]
    candidates = tuple(edited if c.name == candidate else c for c in origin.candidates)
    hws = comparison.hardware_used
    return build_comparison(comparison.step, programs, failures, hws, comparison.candidates, comparison.baseline,
                            1, seconds, replace(origin, candidates=candidates))  # fmt: skip
