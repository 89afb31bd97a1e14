"""``shardviz.search``: explore meshes and strategies analytically, trace the best few with ``compare``.

1. The space (:mod:`.space`): every factorization of ``devices`` into
   ``data`` x ``fsdp`` x ``model`` (in the orders the torus distinguishes),
   each parameter's strategy on it, the batch over ``data`` and ``fsdp``,
   the optimizer state with its parameter or ZeRO-1.
2. Pruning (:mod:`.cost`): a batch that does not split, arguments alone over
   the chip's HBM, then all but the ``top_k`` fastest by the analytic step.
3. The rest are traced in what-if children by :func:`shardviz.compare`; the
   best plan is the fastest traced row that fits, and among rows within
   ``TIE`` of it (the estimate cannot tell them apart: both compute-bound),
   the one that holds least per device, then the least tensor parallelism
   (its collectives are on the critical path; FSDP's gathers can run ahead,
   training.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

import jax

from ..compare.candidates import Candidate, LogicalRules
from ..compare.comparison import Comparison, ranked
from ..compare.rows import Row
from ..compare.run import DEFAULT_HARDWARE, compare
from ..errors import ShardingError
from ..plan.hardware import Hardware, hardware_named
from ..text.ranges import format_bytes
from .batch import MaxBatch, largest_batch
from .cost import Cost, cost, step_flops
from .regime import Regime, regime
from .space import Leaf, Plan, leaves_of, logical_rules_of, plans, residual_width

TIE = 0.02  # traced steps within 2% of the fastest count as equal (the estimate is no finer)
DEFAULT_TOP_K = 4


@dataclass(frozen=True)
class Considered:
    """One candidate of the space with its analytic cost (None where it was dropped before pricing)."""

    name: str
    axes: tuple[tuple[str, int], ...]
    rules: str
    analytic: Cost | None
    status: str  # "traced", "pruned"
    reason: str = ""
    # with names=: the plan as logical-axis rules (name, mesh axes); None where no rules say it
    logical_rules: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        a = self.analytic
        return {
            "name": self.name,
            "mesh": [[n, s] for n, s in self.axes],
            "rules": self.rules,
            "status": self.status,
            "reason": self.reason,
            "logical_rules": None if self.logical_rules is None else [[n, list(a)] for n, a in self.logical_rules],
            "analytic": None if a is None else {
                "step_s": a.step_s, "compute_s": a.compute_s, "network_s": a.network_s,
                "bound": a.bound, "device_bytes": a.device_bytes,
            },
        }  # fmt: skip


@dataclass(frozen=True)
class SearchSpace:
    """What a search explored: every candidate (traced or pruned, and why), the best plan and its rules."""

    devices: int
    hardware: str
    candidates: tuple[Considered, ...]
    best: str | None  # the best traced plan's name
    best_rules: str
    best_mesh: tuple[tuple[str, int], ...]
    network_bound: bool  # every traced plan is network-bound
    verdict: str
    # with names=: the best plan as logical-axis rules (name, mesh axes); None where no rules say it
    best_logical_rules: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    max_batch: tuple[MaxBatch, ...] = ()  # with batch="max": each traced plan's largest batch that fits
    regime: Regime | None = None  # the book's bound and what the link model finds of its slice

    @property
    def network_bound_mixes(self) -> bool | None:
        """The book's claim: every FSDP/tensor mix is network-bound (tokens per chip below
        ``4 alpha^2 / (F M_X M_Y)``, training.md); None where the bound does not apply (GPUs)."""
        return None if self.regime is None else self.regime.network_bound_mixes

    @property
    def book_bound(self) -> float | None:
        """The book's lower bound on tokens per chip for an FSDP/tensor mix to be compute-bound."""
        return None if self.regime is None else self.regime.book_bound

    @property
    def considered(self) -> int:
        return len(self.candidates)

    @property
    def traced(self) -> int:
        return sum(c.status == "traced" for c in self.candidates)

    @property
    def pruned(self) -> int:
        return sum(c.status == "pruned" for c in self.candidates)

    def pruned_by(self) -> dict[str, int]:
        """How many candidates each kind of reason pruned."""
        out: dict[str, int] = {}
        for c in self.candidates:
            if c.status == "pruned":
                key = c.reason.split(":", 1)[0]
                out[key] = out.get(key, 0) + 1
        return out

    def code(self) -> str:
        """The best plan as code: the mesh, the rules, ``jax.device_put`` of the tree."""
        if self.best is None:
            return ""
        shape = tuple(n for _, n in self.best_mesh)
        names = tuple(a for a, _ in self.best_mesh)
        rules = "\n".join(self.best_rules.splitlines())
        return (
            "import jax\n"
            "import shardviz\n\n"
            f"mesh = jax.make_mesh({shape!r}, {names!r}, axis_types=(jax.sharding.AxisType.Auto,) * {len(shape)})\n"
            f'rules = """\n{rules}\n"""\n'
            "# args: the step's arguments (arrays); each leaf's sharding from the rules, then one device_put\n"
            "shardings = jax.tree.map(lambda a: a.sharding, shardviz.apply_rules(args, rules, mesh=mesh).tree)\n"
            "args = jax.device_put(args, shardings)\n"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "devices": self.devices,
            "hardware": self.hardware,
            "considered": self.considered,
            "pruned": self.pruned,
            "traced": self.traced,
            "pruned_by": self.pruned_by(),
            "best": self.best,
            "best_rules": self.best_rules,
            "best_mesh": [[n, s] for n, s in self.best_mesh],
            "network_bound": self.network_bound,
            "network_bound_mixes": self.network_bound_mixes,
            "regime": None if self.regime is None else self.regime.to_json(),
            "verdict": self.verdict,
            "code": self.code(),
            "candidates": [c.to_json() for c in self.candidates],
            "max_batch": [m.to_json() for m in self.max_batch],
            "best_logical_rules": None
            if self.best_logical_rules is None
            else [[name, list(axes)] for name, axes in self.best_logical_rules],
        }

    def report(self) -> str:
        by = ", ".join(f"{n} by {why}" for why, n in self.pruned_by().items()) or "none"
        lines = [
            f"search on {self.devices} devices of {self.hardware}: {self.considered} candidates considered, "
            f"{self.pruned} pruned ({by}), {self.traced} traced",
            self.verdict,
        ]
        for m in self.max_batch:
            held = "unknown" if m.device_bytes is None else format_bytes(m.device_bytes)
            verdict = {True: "fits", False: "does NOT fit", None: "unknown"}[m.fits]
            lines.append(f"largest batch of {m.plan}: {m.batch} rows ({m.per_device} per device), {held} per "
                         f"device {verdict} in {format_bytes(int(m.hbm_bytes))} ({m.traces} traces)")  # fmt: skip
        if self.best_logical_rules is not None:
            pairs = ", ".join(f"{n} -> {'+'.join(a) or 'None'}" for n, a in self.best_logical_rules)
            lines.append(f"best plan's logical-axis rules: {pairs}")
        if self.best is not None:
            lines.append("best plan's rules:")
            lines.extend("  " + line for line in self.best_rules.splitlines() or ["(everything replicated)"])
        return "\n".join(lines)


def _argnums(value: Any, name: str, count: int) -> tuple[int, ...]:
    items = (value,) if isinstance(value, int) else tuple(value or ())
    for i in items:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < count:
            raise ShardingError(f"search's {name}= names argument {i!r}; the step has {count} arguments")
    return items


def _check(step: Any, args: Any, devices: Any) -> tuple[Any, ...]:
    if not callable(step):
        raise ShardingError(f"search needs the step function first, got a {type(step).__name__}")
    if not isinstance(args, (tuple, list)):
        raise ShardingError(f"search's args are the step's positional arguments as a tuple, got a "
                            f"{type(args).__name__}")  # fmt: skip
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ShardingError(f"search's devices= is a positive number of devices, got {devices!r}")
    if not any(isinstance(x, jax.ShapeDtypeStruct) or hasattr(x, "shape") for x in jax.tree.leaves(tuple(args))):
        raise ShardingError("search: the step has no array arguments (give them as jax.ShapeDtypeStructs)")
    return tuple(args)


def _check_devices(devices: int, hw: Hardware) -> None:
    """Devices the hardware can hold as whole nodes (GPUs) or as slices of its torus (TPUs)."""
    if hw.switch and hw.node_size and devices > hw.node_size and devices % hw.node_size:
        raise ShardingError(f"{devices} GPUs are no whole number of {hw.name} nodes of {hw.node_size}; no mesh "
                            "factors them onto the hardware")  # fmt: skip
    if not hw.switch and hw.torus:
        from ..plan.topology import slice_shape

        per = hw.node_size or devices
        if hw.topology is not None and devices % math.prod(hw.topology):
            raise ShardingError(f"{devices} chips are no multiple of the {hw.name} slice "
                                f"{'x'.join(map(str, hw.topology))}")  # fmt: skip
        if hw.topology is None and devices <= per and slice_shape(devices, hw.torus) is None:
            raise ShardingError(f"no {hw.name} slice has {devices} chips; no mesh factors them onto its torus")


def _tokens(leaves: Sequence[Leaf], width: int | None) -> float:
    """Tokens per step: the batch's leading dimensions (a trailing feature dimension of d_model left out)."""
    batch = [leaf for leaf in leaves if leaf.role == "batch" and leaf.shape]
    if not batch:
        return 1.0
    first = max(batch, key=lambda leaf: leaf.nbytes)
    shape = first.shape[:-1] if len(first.shape) > 1 and first.shape[-1] == width else first.shape
    return float(math.prod(shape))


def _row_tiebreak(row: Row, bytes_of: dict[str, int], tensor: dict[str, int], fastest: float) -> tuple:
    tied = row.step_s <= fastest * (1 + TIE)
    return (
        row.fits is False,
        0.0 if tied else row.step_s,
        bytes_of.get(row.candidate, 0) if tied else 0,
        tensor.get(row.candidate, 0) if tied else 0,
        row.network_s,
        row.candidate,
    )


def search(
    step: Callable[..., Any],
    args: Sequence[Any],
    *,
    devices: int,
    hardware: Any = DEFAULT_HARDWARE,
    params: Any = 0,
    optimizer: Any = (),
    top_k: int = DEFAULT_TOP_K,
    timeout: float = 600.0,
    workers: int | None = None,
    executor: Executor | None = None,
    batch: Any = None,
    names: Any = None,
) -> Comparison:
    """Search the plans of ``step`` on ``devices`` of ``hardware`` and trace the best ``top_k``.

    ``args``: the step's positional arguments (``jax.ShapeDtypeStruct``\\ s); ``params``: the
    argument numbers holding parameters (the rest are the batch, leading dimension split);
    ``optimizer``: those holding optimizer state (laid out with its parameter, or ZeRO-1).
    ``executor``: a ``concurrent.futures.Executor`` to run the traces on (as in ``compare``).
    ``batch="max"``: for each traced plan, the largest batch that fits the chip's HBM, confirmed by
    a trace at that batch (``search.max_batch``). ``names``: each argument leaf's logical axis names
    (as :class:`shardviz.LogicalRules` takes them), to give the best plan as logical-axis rules
    (``search.best_logical_rules``).
    Returns a :class:`~shardviz.compare.Comparison` of the traced candidates, ranked, with
    ``search`` the :class:`SearchSpace` it explored.
    """
    arguments = _check(step, args, devices)
    hw = hardware_named(hardware)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ShardingError(f"search's top_k= is a positive int, got {top_k!r}")
    param_nums = _argnums(params, "params", len(arguments))
    opt_nums = _argnums(optimizer, "optimizer", len(arguments))
    _check_devices(devices, hw)
    if executor is not None and not isinstance(executor, Executor):
        raise ShardingError(f"search's executor= is a concurrent.futures.Executor, got a {type(executor).__name__}")
    if batch not in (None, "max"):
        raise ShardingError(f"search's batch= is None or 'max', got {batch!r}")
    leaves = leaves_of(arguments, param_nums, opt_nums)
    batch_nums = {leaf.argnum for leaf in leaves if leaf.role == "batch"}
    rows = {leaf.shape[0] for leaf in leaves if leaf.role == "batch" and leaf.shape}
    if batch == "max" and len(rows) != 1:
        raise ShardingError("batch='max' needs batch arguments that share one leading dimension (the batch); "
                            f"they have {sorted(rows) or 'none'}")  # fmt: skip
    if not any(leaf.role == "param" for leaf in leaves):
        raise ShardingError(f"search: argument(s) {list(param_nums)} named by params= hold no arrays")
    space, dropped = plans(leaves, devices, hw)
    width = residual_width(leaves)
    flops = step_flops(step, arguments)
    tokens = _tokens(leaves, width)
    costs = {p.name: cost(p, hw, flops, tokens, width) for p in space}
    by_path = None if names is None else LogicalRules((), names).names_by_path()
    logical = {} if by_path is None else {p.name: logical_rules_of(p, by_path) for p in space}
    considered: list[Considered] = [Considered(d.name, d.axes, "", None, "pruned", f"does not split: {d.reason}")
                                    for d in dropped]  # fmt: skip
    hbm = hw.hbm_bytes
    fitting = []
    for p in space:
        c = costs[p.name]
        if hbm is not None and c.device_bytes > hbm:
            reason = f"over HBM: its arguments alone take {format_bytes(c.device_bytes)} per device"
            considered.append(Considered(p.name, p.axes, p.rules, c, "pruned", reason, logical.get(p.name)))
        else:
            fitting.append(p)
    order = sorted(fitting, key=lambda p: (costs[p.name].step_s, p.device_bytes(), p.tensor_devices, p.name))
    chosen, rest = order[:top_k], order[top_k:]
    for p in rest:
        considered.append(Considered(p.name, p.axes, p.rules, costs[p.name], "pruned",
                                     f"analytic step: {costs[p.name].step_s * 1e6:.1f} us, "
                                     f"{costs[p.name].bound}-bound, not among the best {top_k}",
                                     logical.get(p.name)))  # fmt: skip
    if not chosen:
        raise ShardingError(f"search: every candidate on {devices} devices is pruned before tracing "
                            f"({considered[0].reason if considered else 'none left'})")  # fmt: skip
    candidates = [Candidate(p.name, _mesh(p), p.rules) for p in chosen]
    result = compare(step, candidates, args=arguments, hardware=hw, timeout=timeout, workers=workers,
                     executor=executor)  # fmt: skip
    traced = {p.name for p in chosen}
    considered.extend(Considered(p.name, p.axes, p.rules, costs[p.name], "traced", "", logical.get(p.name))
                      for p in chosen)  # fmt: skip
    finished = _finish(result, considered, chosen, devices, hw, traced)
    bounds = {r.candidate: r.bound for r in finished.rows}
    found = regime(space, costs, bounds, leaves, width, tokens, devices, hw)
    verdict = "\n".join([finished.search.verdict, *found.sentences()])
    finished = replace(finished, search=replace(finished.search, regime=found, verdict=verdict))
    if finished.search.best is not None and logical:
        finished = replace(finished, search=replace(finished.search, best_logical_rules=logical[finished.search.best]))
    if batch != "max":
        return finished
    largest = tuple(
        largest_batch(step, p, arguments, batch_nums, next(iter(rows)), r.device_bytes, hw, timeout, executor)
        for p in chosen
        for r in finished.rows
        if r.candidate == p.name and r.device_bytes is not None
    )
    return replace(finished, search=replace(finished.search, max_batch=largest))


def _mesh(plan: Plan) -> jax.sharding.AbstractMesh:
    return jax.sharding.AbstractMesh(tuple(n for _, n in plan.axes), tuple(a for a, _ in plan.axes))


def _finish(result: Comparison, considered: list[Considered], chosen: Sequence[Plan], devices: int, hw: Hardware,
            traced: set[str]) -> Comparison:  # fmt: skip
    bytes_of = {p.name: p.device_bytes() for p in chosen}
    tensor = {p.name: p.tensor_devices for p in chosen}
    fits = [r for r in result.rows if r.fits is not False] or list(result.rows)
    fastest = min((r.step_s for r in fits), default=0.0)
    rows = ranked(result.rows, "best", None, key=lambda r: _row_tiebreak(r, bytes_of, tensor, fastest))
    best = rows[0] if rows else None
    plan = next((p for p in chosen if best is not None and p.name == best.candidate), None)
    network_bound = bool(rows) and all(r.bound == "network" for r in rows)
    if best is None:
        verdict = "no candidate could be traced"
    elif network_bound:
        verdict = (f"every plan is network-bound: the best, {best.candidate}, spends {best.network_s * 1e6:.1f} us "
                   f"on collectives against {(best.compute_s or 0) * 1e6:.1f} us of compute; a larger batch per "
                   "device would hide them")  # fmt: skip
    else:
        verdict = f"best plan: {best.candidate} ({best.mesh_label}), {best.bound}-bound, {best.step_s * 1e6:.1f} us"
    order = {"traced": 0, "pruned": 1}
    listed = tuple(sorted(considered, key=lambda c: (order[c.status], c.analytic.step_s if c.analytic else math.inf,
                                                     c.name)))  # fmt: skip
    space = SearchSpace(
        devices,
        hw.name,
        listed,
        None if plan is None else plan.name,
        "" if plan is None else plan.rules,
        () if plan is None else plan.axes,
        network_bound,
        verdict,
    )
    return replace(result, rows=rows, search=space)


__all__ = ["Considered", "SearchSpace", "search"]
