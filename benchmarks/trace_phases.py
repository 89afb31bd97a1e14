"""Where an edit's frame goes, per phase, in Chromium's traces (a diagnostic; reads `lab_css.py --trace`).

    .venv/bin/python benchmarks/lab_css.py --rounds 1 --edits 10 --trace /tmp/traces
    .venv/bin/python benchmarks/trace_phases.py /tmp/traces/lab-css-as-built.json

For each edit (a keydown dispatched on the page's main thread) it sums the main
thread's tasks from the keydown to the end of the first frame that paints, and
splits them into the keydown's scripts, style, layout, the synthetic mouse move's
hit test, the frame's animation callbacks (the canvases' paints), pre-paint, paint,
layerizing and the commit. Durations are thread time (Chromium's ``tdur``) where
the trace has it: a busy machine stretches wall time, much less the thread time a
phase took, so variants traced minutes apart can be compared by it. Prints the
median of each phase and every edit's figure; nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import statistics
from typing import Any

# The outermost trace event of each phase, as Chromium names it.
PHASES = {
    "EventDispatch": "keydown scripts",
    "UpdateLayoutTree": "style",
    "Layout": "layout",
    "EventHandler::handleMouseMoveEvent": "hit test",
    "FireAnimationFrame": "animation frames",
    "PrePaint": "pre-paint",
    "Paint": "paint",
    "Layerize": "layerize",
    "Commit": "commit",
}
SHOWN = ["wall", "thread", *dict.fromkeys(PHASES.values())]


def main_thread_events(path: pathlib.Path) -> list[dict[str, Any]]:
    """The complete events of the busiest renderer main thread, in time order."""
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    mains = {key for key, name in names.items() if name == "CrRendererMain"}
    counts = collections.Counter((e.get("pid"), e.get("tid")) for e in events if (e.get("pid"), e.get("tid")) in mains)
    main = counts.most_common(1)[0][0]
    chosen = [e for e in events if (e.get("pid"), e.get("tid")) == main and e.get("ph") == "X"]
    return sorted(chosen, key=lambda e: (e["ts"], -e.get("dur", 0)))


def edit_phases(events: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Each keydown's milliseconds per phase, to the end of the first frame after it that paints."""
    keydowns = [
        e for e in events if e["name"] == "EventDispatch" and e.get("args", {}).get("data", {}).get("type") == "keydown"
    ]
    starts: list[float] = []
    for k in keydowns:  # a keydown dispatched through nested targets is one edit
        if not starts or k["ts"] - starts[-1] > 50_000:
            starts.append(k["ts"])
    tasks = [e for e in events if e["name"] == "RunTask"]
    found = []
    for t0 in starts:
        phases: collections.Counter[str] = collections.Counter()
        thread = 0.0
        for task in (t for t in tasks if t["ts"] + t.get("dur", 0) > t0 and t["ts"] < t0 + 200_000):
            end = task["ts"] + task.get("dur", 0)
            inside = [e for e in events if task["ts"] <= e["ts"] < end]
            thread += task.get("tdur", task.get("dur", 0))
            outer_end: dict[str, float] = {}
            for e in inside:
                phase = PHASES.get(e["name"])
                if phase is None or e["ts"] < outer_end.get(phase, -1):
                    continue
                outer_end[phase] = e["ts"] + e.get("dur", 0)
                phases[phase] += e.get("tdur", e.get("dur", 0))
            painted = any(e["name"] == "Paint" for e in inside)
            if painted and any(e["name"] == "ProxyMain::BeginMainFrame" for e in inside):
                found.append(
                    {"wall": (end - t0) / 1000, "thread": thread / 1000} | {k: v / 1000 for k, v in phases.items()}
                )
                break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("traces", nargs="+", type=pathlib.Path, help="Chromium trace files (JSON)")
    args = parser.parse_args(argv)
    for path in args.traces:
        rows = edit_phases(main_thread_events(path))
        print(f"{path}: {len(rows)} edits (ms; wall to the end of the frame, the rest thread time)")
        for phase in SHOWN:
            values = [row.get(phase, 0.0) for row in rows]
            if values:
                each = " ".join(f"{v:5.1f}" for v in values)
                print(f"  {phase:17s} median {statistics.median(values):6.2f}   {each}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
