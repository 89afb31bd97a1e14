"""``assert_step_time``: a traced program's estimated time per step on named hardware, under a budget.

The estimate is :func:`shardviz.estimate` (docs/planning.md): compute,
memory and each collective on the hardware's links, the step bound by the
largest. A failure names the budget, the estimate and the collectives that
take the most time, each on its line.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ShardingError
from ..plan.estimate import Estimate, estimate
from ..program.program import Program
from .errors import FailurePage, StepTimeExceeded
from .messages import format_seconds

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_TIME = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(s|ms|us|µs|ns)\s*")
_BOUNDS = ("compute", "memory", "network")
LISTED = 5


def parse_seconds(value: Any, what: str) -> float:
    """Seconds from a number (seconds) or a string such as ``'80 ms'``, ``'1.5 s'``, ``'250 us'``."""
    if isinstance(value, str):
        match = _TIME.fullmatch(value)
        if match is None:
            raise ShardingError(f"{what} {value!r} is not a time: write a number and s, ms, us or ns (e.g. '80 ms')")
        return float(match.group(1)) * _UNITS[match.group(2)]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ShardingError(f"{what} must be a positive number of seconds or a string such as '80 ms', not {value!r}")
    return float(value)


def _ms(seconds: float) -> str:
    return format_seconds(seconds)


def assert_step_time(program: Any, hardware: Any, max_step: float | str, *, bound: str | None = None) -> Estimate:
    """Check that ``program``'s estimated step on ``hardware`` takes at most ``max_step``
    (and, with ``bound``, that the step is bound by ``'compute'``, ``'memory'`` or ``'network'``);
    return the :class:`shardviz.Estimate`."""
    __tracebackhide__ = True
    if not isinstance(program, Program):
        raise ShardingError(
            f"assert_step_time checks a program traced with shardviz.trace(f, *args), not {type(program).__name__}"
        )
    budget = parse_seconds(max_step, "max_step")
    if bound is not None and bound not in _BOUNDS:
        raise ShardingError(f"bound must be one of {', '.join(_BOUNDS)}, not {bound!r}")
    est = estimate(program, hardware)  # a hardware name it does not know is its ShardingError
    problems = []
    if est.step_s > budget:
        over = f"over the budget of {_ms(budget)} by {_ms(est.step_s - budget)}"
        problems.append(f"estimated {_ms(est.step_s)} per step on {est.hardware.name}, {over}")
    if bound is not None and est.bound != bound:
        problems.append(f"the step is {est.bound}-bound, not {bound}-bound")
    if problems:
        raise StepTimeExceeded(_message(program, est, problems), subject=program, page=_page(est, budget, bound))
    return est


def _message(program: Program, est: Estimate, problems: list[str]) -> str:
    parts = {"compute": est.compute_s, "memory": est.memory_s, "network": est.network_s}
    out = [f"{program.name}: " + "; ".join(problems)]
    out.append("  " + "  ".join(f"{k} {'unknown' if v is None else _ms(v)}" for k, v in parts.items()))
    slowest = sorted(est.collectives, key=lambda c: -c.seconds)[:LISTED]
    if slowest:
        out.append("the collectives that take longest:")
        for c in slowest:
            axes = ",".join(c.axes or ("?",))
            out.append(f"  {_ms(c.seconds):>10}  {c.kind} over {axes} on {c.link} at {c.line or 'no line of yours'}")
    if len(est.collectives) > LISTED:
        out.append(f"  ... and {len(est.collectives) - LISTED} more")
    out.append(f"if this is intended, raise max_step (the estimate is {_ms(est.step_s)}) or change bound")
    return "\n".join(out)


def _page(est: Estimate, budget: float, bound: str | None) -> FailurePage:
    slowest = sorted(est.collectives, key=lambda c: -c.seconds)
    return FailurePage(
        budget=f"at most {_ms(budget)} per step on {est.hardware.name}" + (f", {bound}-bound" if bound else ""),
        figure=f"{_ms(est.step_s)} per step, {est.bound}-bound",
        columns=("time", "collective", "axes", "link", "line"),
        rows=tuple(
            (_ms(c.seconds), c.kind, ",".join(c.axes or ("?",)), c.link, c.line or "no line of yours") for c in slowest
        ),
        marked=tuple(k < LISTED for k in range(len(slowest))),
    )
