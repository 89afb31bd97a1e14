"""``Program``: the public, immutable result of :func:`shardviz.trace`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..text.ranges import format_bytes
from .device_bytes import recounted
from .model import ProgramData
from .payload import program_payload
from .report import plural, render_program

# shardviz.plan registers its estimate here when imported (shardviz.trace lives there): plan
# imports program, never the other way round.
_ESTIMATORS: list[Callable[[Any, Any], Any]] = []
_ESTIMATES_PAYLOADS: list[Callable[[Any], dict[str, Any]]] = []


def register_estimator(estimator: Callable[[Any, Any], Any], payload: Callable[[Any], dict[str, Any]]) -> None:
    """Set the function behind ``Program.estimate`` and the one that writes the payload's
    ``estimates`` (every named hardware in brief), both from shardviz.plan.estimate."""
    _ESTIMATORS[:] = [estimator]
    _ESTIMATES_PAYLOADS[:] = [payload]


class Program(ProgramData):
    """A jitted program as shardviz reads it: its inputs and outputs (one
    ``Layout`` per array), every value with its sharding where known, every
    collective with its mesh axes and bytes, memory per device and flops.

    ``to_json()`` is the compact payload a front end draws
    (docs/program-payload.md); ``str(program)`` the terminal report.
    """

    def to_json(self) -> dict[str, Any]:
        """The compact payload (docs/program-payload.md), with each named hardware's estimate
        when shardviz.plan is loaded (it is whenever shardviz.trace made the program)."""
        payload = program_payload(self)
        if _ESTIMATES_PAYLOADS:
            payload["estimates"] = _ESTIMATES_PAYLOADS[0](self)
        return payload

    def estimate(self, hardware: Any) -> Any:
        """Time one step on ``hardware`` (a name or a ``shardviz.Hardware``): a
        ``shardviz.Estimate`` (docs/planning.md)."""
        if not _ESTIMATORS:
            raise RuntimeError("import shardviz.plan (it registers the estimate) before Program.estimate")
        return _ESTIMATORS[0](self, hardware)

    def with_bytes(self, count: str) -> Program:
        """The same program with its collectives' bytes counted another way: ``"cpu"`` as
        XLA:CPU's module moves them (bfloat16 and float16 widened to float32), ``"device"`` (what
        ``shardviz.trace`` gives) in the program's own dtypes, as a TPU or GPU moves them. The
        report, payload, totals and ``shardviz.testing``'s checks all read the count it holds."""
        return recounted(self, count)  # type: ignore[return-value]  # a Program stays a Program

    def render(self, *, width: int | None = None, color: bool | None = None) -> str:
        """The terminal report at ``width`` columns; ``color`` as in ``render_text``."""
        return render_program(self, width=width, color=color)

    def __str__(self) -> str:
        return render_program(self)

    def __repr__(self) -> str:
        mesh = (
            "no mesh"
            if self.mesh is None
            else "mesh " + " ".join(f"{n}={s}" for n, s in zip(self.mesh.axis_names, self.mesh.axis_sizes))
        )
        return (
            f"Program({self.name}, {mesh}, {plural(len(self.values), 'value')}, "
            f"{plural(len(self.collectives), 'collective')}, "
            f"{format_bytes(self.totals.wire_bytes)} sent per device per call)"
        )
