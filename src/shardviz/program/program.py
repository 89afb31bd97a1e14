"""``Program``: the public, immutable result of :func:`shardviz.trace`."""

from __future__ import annotations

import importlib
from typing import Any

from ..plan.estimate import Estimate, estimate, estimates_payload
from ..text.ranges import format_bytes
from .memory.device_bytes import recounted
from .model import ProgramData, replaced
from .result.payload import program_payload
from .result.report import plural, render_program
from .why.explain import explain_text
from .why.reasons_payload import reasons_payload

# A collective's fixes are traced again and diffed against this program, which is compare's work, a
# layer above this one: the finder is named here and imported on a program's first build, as kinds.py
# names each view's widget.
FIX_FINDER = "shardviz.compare.fixes:FixFinder"
FIX_HARDWARE = "tpu-v5p"  # what the fixes are ranked on: shardviz.diff's default


class Program(ProgramData):
    """A jitted program as shardviz reads it: its inputs and outputs (one
    ``Layout`` per array), every value with its sharding where known, every
    collective with its mesh axes and bytes, memory per device and flops.

    ``to_json()`` is the compact payload a front end draws
    (docs/program-payload.md); ``str(program)`` the terminal report.
    """

    def _attach(self) -> None:
        # Each collective reads its fixes through one finder that knows this program (compare/fixes.py).
        module, _, name = FIX_FINDER.partition(":")
        finder = getattr(importlib.import_module(module), name)(self, FIX_HARDWARE)
        object.__setattr__(self, "collectives", tuple(replaced(c, finder=finder) for c in self.collectives))

    def rematerialization_fixes(self, k: int = 0) -> tuple[Any, ...]:
        """Up to three changes that may end the k-th involuntary full rematerialization, each traced."""
        finder = next((c.finder for c in self.collectives if c.finder is not None), None)
        return () if finder is None else tuple(finder.fixes_of_rematerialization(k))

    def explain(self, *, fixes: bool = False, hardware: str = FIX_HARDWARE) -> str:
        """Why each collective is there, one "because ..." per collective, and XLA's involuntary full
        rematerializations; with ``fixes=True`` each collective's fixes too (each traced: a compile apiece)."""
        return explain_text(self, fixes=fixes, hardware=hardware)

    def to_json(self) -> dict[str, Any]:
        """The compact payload (docs/program-payload.md), with each named hardware's estimate."""
        payload = program_payload(self)
        payload["estimates"] = estimates_payload(self)
        payload["reasons"] = reasons_payload(self)
        return payload

    def estimate(self, hardware: Any) -> Estimate:
        """Time one step on ``hardware`` (a name or a ``shardviz.Hardware``): a
        ``shardviz.Estimate`` (docs/planning.md)."""
        return estimate(self, hardware)

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
