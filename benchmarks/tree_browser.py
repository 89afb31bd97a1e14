"""The tree (model) view in Chromium: ``python benchmarks/tree_browser.py [--quick]``.

The payloads are Python's: a decoder's parameters and Adam state as
ShapeDtypeStructs on a 16x16x16 AbstractMesh (4096 virtual devices, 9,997
leaves, the tree of benchmarks/tree_side.py), as the TreeWidget syncs them,
with no rules and under two rule sets. benchmarks/tree_harness.html loads
the widget's real ES module (src/shardviz/static/widget.js) with a stand-in
model in headless Debian Chromium and measures:

- **first render**: a new widget on the 10,000-leaf payload (decode, table,
  heat map on a canvas, audit, rules), timed by the widget's own
  ``performance.measure('shardviz:render')``, by the whole script task, with
  style and layout forced, and to the next frame. Target: 100 ms;
- **rules edit**: Python's answer to a rules edit replayed as anywidget
  applies it (the rules, then the payload, then the notice, one message
  each), alternating between the rule sets. Target: one frame (16.7 ms);
- **selecting a leaf**: its layout worked out in the browser on 4096 devices
  and drawn (mesh grid and array map); and a rules edit while a leaf is
  selected (the leaf laid out again and its pictures redrawn);
- **scrolling**: one screenful of the virtualised table per step;
- **filtering**: one keystroke of a path filter over 10,000 paths.

Nothing leaves the machine: the harness is served from memory through
Playwright's router and every other request is aborted. Nothing asserts a
time: a MISS is reported. Prints a markdown table and ``BENCH-JSON {...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
STATIC = REPO / "src" / "shardviz" / "static"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "browser"))

from browser_support import launch_chromium, serve_from_memory  # noqa: E402

from shardviz.tree.describe import describe_tree  # noqa: E402
from shardviz.widgets.tree import TreeState  # noqa: E402
from tree_side import LAYER, RULES, what_if_state  # noqa: E402  (sets XLA_FLAGS for 8 devices before JAX starts)

ORIGIN = "http://shardviz-tree-bench.invalid"
FRAME_MS = 1000 / 60
TARGETS = {"first_render_ms": 100.0, "rules_edit_ms": FRAME_MS}
# A second rule set, so consecutive edits always change the picture.
OTHER_RULES = "*layers.*.attention.*.kernel = data, (model, seq)\n*embed = (data, seq), model\n"


def summary(values: list[float | None]) -> dict[str, float]:
    present = sorted(v for v in values if v is not None)
    if not present:
        return {}
    return {
        "median": statistics.median(present),
        "min": present[0],
        "max": present[-1],
        "p90": present[min(len(present) - 1, int(0.9 * len(present) + 0.5) - 1)],
        "n": len(present),
    }


def widget_payloads() -> list[dict[str, Any]]:
    """What the TreeWidget answers: no rules, then each rule set (the payload and the rules text it shows)."""
    tree = what_if_state((10_000 - 4) // (3 * len(LAYER)))
    plain = TreeState(original=tree, rules_text="", applied=None, tree_layout=describe_tree(tree))
    states = [plain] + [plain.with_rules(rules)[0] for rules in (RULES, OTHER_RULES)]
    return [{"payload": state.payload, "rules_text": state.rules_text} for state in states]


def run(quick: bool, smoke: bool = False) -> dict[str, Any]:
    payloads = widget_payloads()
    files = {
        "/": ("text/html", (HERE / "tree_harness.html").read_bytes()),
        "/widget.js": ("text/javascript", (STATIC / "widget.js").read_bytes()),
        "/widget.css": ("text/css", (STATIC / "widget.css").read_bytes()),
        "/tree-payloads.json": ("application/json", json.dumps(payloads, separators=(",", ":")).encode()),
    }
    firsts, edits, picks, steps = (1, 2, 2, 2) if smoke else (3, 8, 8, 20) if quick else (9, 24, 20, 60)
    errors: list[str] = []
    with launch_chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
        aborted = serve_from_memory(context, ORIGIN, files)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"{err.name}: {err.message}"))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(ORIGIN + "/")
        page.wait_for_function("window.bench && window.bench.ready")
        leaves = page.evaluate("bench.load()")
        page.evaluate("bench.firstRender(2)")  # warm the JIT, as a notebook session would be
        first = page.evaluate("(k) => bench.firstRender(k)", firsts)
        page.evaluate("bench.mount()")
        page.evaluate("bench.rulesEdits(6)")
        edit = page.evaluate("(k) => bench.rulesEdits(k)", edits)
        pick = page.evaluate("(k) => bench.selections(k)", picks)
        # A leaf stays selected: each edit lays it out again under its new sharding and redraws its pictures.
        edit_selected = page.evaluate("(k) => bench.rulesEdits(k)", edits)
        scroll = page.evaluate("(k) => bench.scrollSteps(k)", steps)
        typed = page.evaluate("(t) => bench.filterKeys(t)", "mlp.gate")
        page.evaluate("bench.unmount()")
        version = browser.version
        context.close()
    keys = ("measure_ms", "script_ms", "layout_ms", "frame_ms")
    return {
        "chromium": version,
        "leaves": leaves,
        "devices": first[0]["heat_devices"],
        "heat_render": first[0]["heat_render"],
        "rows_in_dom": first[0]["rows_in_dom"],
        "first_render": {k: summary([s.get(k) for s in first]) for k in keys},
        "rules_edit": {k: summary([s.get(k) for s in edit]) for k in keys},
        "rules_edit_leaf_selected": {k: summary([s.get(k) for s in edit_selected]) for k in keys},
        "select_leaf": {k: summary([s.get(k) for s in pick]) for k in keys},
        "select_leaf_tiles": sorted({s["tiles"] for s in pick}),
        "scroll_step": {k: summary([s.get(k) for s in scroll]) for k in keys if k != "frame_ms"},
        "scroll_rows_in_dom": max(s["rows_in_dom"] for s in scroll),
        "filter_key": {k: summary([s.get(k) for s in typed]) for k in keys if k != "frame_ms"},
        "errors": errors,
        "aborted_requests": aborted,
        "load_average": os.getloadavg(),
    }


def table(r: dict[str, Any]) -> str:
    def ms(stat: dict[str, float] | None) -> str:
        return f"{stat['median']:.1f} (p90 {stat['p90']:.1f})" if stat else "-"

    def line(label: str, stats: dict[str, Any], target: str = "") -> str:
        cells = " | ".join(ms(stats.get(k)) for k in ("measure_ms", "script_ms", "layout_ms", "frame_ms"))
        return f"| {label} | {cells} | {target} |"

    def verdict(stats: dict[str, Any], target: float) -> str:
        return f"{target:.4g}: {'ok' if stats['layout_ms']['median'] <= target else 'MISS'}"

    first, edit = r["first_render"], r["rules_edit"]
    lines = [
        f"Tree view in Chromium {r['chromium']}: {r['leaves'][0]:,} leaves on {r['devices']:,} devices "
        f"(heat map drawn as {r['heat_render']}, {r['rows_in_dom']} table rows in the DOM); "
        f"load average {r['load_average'][0]:.2f}",
        "",
        "| measure (ms, median) | widget's own measure | script | with style and layout | to next frame | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        line("first render", first, verdict(first, TARGETS["first_render_ms"])),
        line("rules edit redraw", edit, verdict(edit, TARGETS["rules_edit_ms"])),
        line("rules edit redraw, a leaf on 4096 devices selected", r["rules_edit_leaf_selected"]),
        line(f"select a leaf (laid out in the browser, {r['select_leaf_tiles']} tiles)", r["select_leaf"]),
        line(f"scroll the table a screenful ({r['scroll_rows_in_dom']} rows in the DOM at most)", r["scroll_step"]),
        line("one keystroke of a path filter", r["filter_key"]),
    ]
    if r["errors"] or r["aborted_requests"]:
        lines.append(f"\nproblems: {r['errors']} {r['aborted_requests']}")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument(
        "--smoke", action="store_true", help="one sample of each, small sizes: checks that it runs (make bench-smoke)"
    )
    args = parser.parse_args()
    try:
        result = run(args.quick, args.smoke)
        print(table(result), flush=True)
        print("BENCH-JSON " + json.dumps(result), flush=True)
        code = 0 if not result["errors"] else 1
    except BaseException:  # report, then leave without tearing JAX down
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    os._exit(code)
