"""The payload's ``memory_timeline`` (docs/program-payload.md): what a memory strip along the program draws."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...array.runs import encode_runs
from ..model import SourceLocation
from .timeline import KINDS, MemoryTimeline

# Buffers smaller than this share of the peak are left out of ``buffers`` (they still count in
# ``step_bytes``): a strip cannot show them, and a big step has thousands.
SMALL_SHARE = 1e-4


def xla_memory(program: Any) -> Any:
    """``memory_analysis()``'s own figures, the payload's ``memory`` (a second figure, beside the
    timeline's peak in the program's dtypes, never the one ``fits`` uses)."""
    counts = getattr(program, "memory_counts", None)
    return counts["xla"][0] if counts is not None and "xla" in counts else program.memory


def memory_timeline_payload(
    timeline: MemoryTimeline | None, line_of: Callable[[SourceLocation | None], int]
) -> dict[str, Any] | None:
    """The timeline as columns; ``line_of`` gives the ``lines`` index of a source line (-1 for none)."""
    if timeline is None:
        return None
    import numpy as np

    smallest = timeline.peak_bytes * SMALL_SHARE
    shown = [b for b in timeline.buffers if b.bytes >= smallest]
    groups = timeline.groups
    return {
        "steps": len(timeline.steps),
        "step_bytes": list(timeline.step_bytes),
        "step_lines": encode_runs(np.asarray([line_of(s) for s in timeline.step_sources], dtype=np.int64)),
        "peak_bytes": timeline.peak_bytes,
        "peak_step": timeline.peak_step,
        "backward_step": timeline.backward_step,
        "xla_peak_bytes": timeline.xla_peak_bytes,
        "kinds": list(KINDS),
        "groups": {
            "kind": [KINDS.index(g.kind) for g in groups],
            "label": [g.label for g in groups],
            "line": [line_of(g.source) for g in groups],
            "scope": [g.scope for g in groups],
            "peak_bytes": [g.peak_bytes for g in groups],
            "most_bytes": [g.most_bytes for g in groups],
            "type": [g.type_str for g in groups],
            "category": [g.category for g in groups],
        },
        "buffers": {
            "group": [b.group for b in shown],
            "start": [b.start for b in shown],
            "end": [b.end for b in shown],
            "bytes": [b.bytes for b in shown],
        },
        "buffers_left_out": len(timeline.buffers) - len(shown),
    }
