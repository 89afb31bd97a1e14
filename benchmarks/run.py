"""`make bench`: measure shardviz in one run and print one table.

    .venv/bin/python benchmarks/run.py [--quick] [--only PARTS] [--skip PARTS]
                                       [--devices 8,64,512,4096] [--no-browser] [--no-lab]
                                       [--lab-tcp-nodelay] [--out benchmarks]

Every part is its own script; all but the array view's browser part run as a
child process with their own simulated device count, a timeout, and an
``os._exit`` at the end (tearing thousands of devices down takes seconds).
Each prints a markdown table and one ``BENCH-JSON {...}`` line. The parts:

- ``array``: benchmarks/python_side.py, one process per device count (8, 64,
  512, 4096): describe plus payload against jax.debug.visualize_array_sharding
  and treescope, the payload's size, and (at 8 devices) what-if meshes of 4096
  and 8960 devices.
- ``array-browser``: benchmarks/browser_side.py, in this process: first render
  and re-render of the real widget bundle at 8 to 4096 devices on the
  payloads ``array`` wrote, the JS heap over 100 edits, and the JupyterLab
  round trip from a typed spec to the kernel's answer at 8 and 512 devices.
- ``program``: benchmarks/program_side.py, shardviz.trace against a bare
  compile of a 24-layer scanned MLP and its gradient on 8 devices; payload size.
- ``program-browser``: benchmarks/program_browser.py, the program view's first
  draw and value and collective selection in Chromium.
- ``tree``: benchmarks/tree_side.py, describe_tree plus payload of about 10,000
  leaves on a 4096-device AbstractMesh against the plain per-leaf loop, and a
  small concrete tree against treescope.
- ``tree-browser``: benchmarks/tree_browser.py, the tree view's first render,
  rules edits, selection, scrolling and filtering in Chromium.
- ``local``: benchmarks/local_engine.py, the layout engine in the browser: edits
  on saved pages at 512 and 4096 devices, JupyterLab's local-first redraw at
  512, and the bundles' sizes (it also writes results-local-engine.md/.json).
- ``compare``: benchmarks/compare.py, shardviz.compare of sixteen candidates at 256
  devices against (16 / the children at once) x one candidate's what-if trace, and the
  comparison payload's size.
- ``testing``: benchmarks/testing_side.py, how long a failing ``shardviz.testing``
  assertion takes to build its message after the trace (assert_collectives on a
  24-layer MLP, scanned and unrolled; assert_layout, assert_fits, a snapshot).

One markdown table of targets (figure, limit, PASS/MISS, every figure from
this run), then each part's own tables under a heading, printed and written to
benchmarks/results.md; the raw numbers go to benchmarks/results.json.

Never part of `make test`; nothing here asserts a time. It exits 0 when
every part ran (even with a MISS) and 1 when a part failed to run; the other
parts run all the same.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import platform
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
STATIC = REPO / "src" / "shardviz" / "static"
sys.path.insert(0, str(HERE))

DEVICE_COUNTS = [8, 64, 512, 4096]
SMOKE_DEVICE_COUNTS = [8, 64]
LAB_COUNTS = [8, 512]
FRAME_MS = 1000 / 60
KiB = 1024

# The issue's targets, each checked on figures from this one run.
TARGETS = {
    "ratio_vas_4096": 0.02,
    "ratio_vas_512": 0.05,
    "ratio_treescope_4096": 0.25,
    "linear_devices": 1.25,  # worst-case bytes per device at 4096 over that at 512
    "independent_of_size": 1.05,  # payload bytes, array 10^6 times larger, over the real one's
    "rerender_512_ms": FRAME_MS,
    "rerender_4096_ms": 50.0,
    "lab_512_ms": 100.0,
    "heap_growth_bytes": 64 * KiB,  # after 100 edits; DOM nodes and listeners must not grow at all
    "trace_over_compile": 1.25,  # shardviz.trace over a bare jax.jit(f).lower(*args).compile()
    "whatif_over_bare_256": 1.5,  # what-if trace on 256 devices over a bare compile in a 256-device child
    "estimate_over_peak": 1.0,  # a what-if child's memory estimate over its measured peak: at least
    "testing_message_ms": 50.0,  # a failing assert_collectives' message, after the trace
    "program_payload_bytes": 200_000,  # under 200 KB
    "program_first_draw_ms": 100.0,  # under
    "program_select_ms": FRAME_MS,
    "tree_over_loop": 1.0,  # describe_tree + to_json over the plain per-leaf loop
    "tree_bytes_per_leaf": 150.0,
    "tree_first_render_ms": 100.0,
    "tree_rules_edit_ms": FRAME_MS,
    "local_page_512_ms": FRAME_MS,
    "local_page_4096_ms": 50.0,
    "local_lab_512_ms": FRAME_MS,
    # Issue 41: painted at 512 devices, in frames: spec and rules edits one, mesh edits two, in JupyterLab
    # and on a saved page alike.
    "local_lab_spec_painted_ms": FRAME_MS,
    "local_lab_rules_painted_ms": FRAME_MS,
    "local_lab_mesh_painted_ms": 2 * FRAME_MS,
    "local_page_spec_painted_ms": FRAME_MS,
    "local_page_mesh_painted_ms": 2 * FRAME_MS,
    "compare_over_ideal": 1.25,  # 16 candidates over (16 / children at once) x one candidate's what-if trace
    "compare_payload_bytes": 300_000,  # 16 candidates' comparison payload, under 300 KB
}

# Each part: its script, the heading of its tables, and a timeout (a guard against a hang, not a budget).
PARTS: dict[str, tuple[str, str, int]] = {
    "array": ("python_side.py", "Array view (`python_side.py`, `browser_side.py`)", 600),
    "array-browser": ("browser_side.py", "", 0),  # in this process, under the array view's heading
    "program": ("program_side.py", "Program view: `shardviz.trace` against a bare compile (`program_side.py`)", 900),
    "program-browser": ("program_browser.py", "Program view in Chromium (`program_browser.py`)", 600),
    "tree": ("tree_side.py", "Model view: Python side (`tree_side.py`)", 600),
    "tree-browser": ("tree_browser.py", "Model view in Chromium (`tree_browser.py`, `tree_harness.html`)", 600),
    "local": ("local_engine.py", "Layout engine in the browser (`local_engine.py`)", 900),
    "plan": ("plan_side.py", "Planning a pod: what-if trace against a bare compile in a child (`plan_side.py`)", 600),
    "compare": (
        "compare.py",
        "Comparing plans: 16 candidates (4 in the smoke run) against one what-if trace (`compare.py`)",
        900,
    ),
    "search": ("search.py", "Searching a plan: 256 chips against tracing every candidate (`search.py`)", 900),
    "testing": (
        "testing_side.py",
        "Budgets in tests: a failing assertion's message after the trace (`testing_side.py`)",
        300,
    ),
}
BROWSER_PARTS = {"array-browser", "program-browser", "tree-browser", "local"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="shardviz benchmarks (make bench)")
    parser.add_argument("--quick", action="store_true", help="few repeats: check that everything runs")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every part once, small sizes (8 and 64 devices, one JupyterLab edit, no heap runs): "
        "a broken part fails, no time is checked (make bench-smoke, in make test)",
    )
    parser.add_argument("--devices", default=",".join(map(str, DEVICE_COUNTS)), help="device counts, comma-separated")
    parser.add_argument(
        "--only", default="", help=f"run only these parts, comma-separated ({', '.join(PARTS)}); default: all"
    )
    parser.add_argument("--skip", default="", help="parts to leave out, comma-separated")
    parser.add_argument("--no-browser", action="store_true", help="Python side only (no Chromium, no JupyterLab)")
    parser.add_argument("--no-lab", action="store_true", help="skip the JupyterLab round trip")
    parser.add_argument(
        "--lab-tcp-nodelay",
        action="store_true",
        help="diagnostic: also time the round trip with TCP_NODELAY on jupyter_server's kernel websocket",
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE, help="where results.md and results.json go")
    args = parser.parse_args()
    if args.smoke:
        args.quick = True
        if args.devices == parser.get_default("devices"):
            args.devices = ",".join(map(str, SMOKE_DEVICE_COUNTS))
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    skip = [name.strip() for name in args.skip.split(",") if name.strip()]
    unknown = [name for name in only + skip if name not in PARTS]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)}: the parts are {', '.join(PARTS)}")
    args.parts = [
        name
        for name in PARTS
        if (not only or name in only) and name not in skip and not (args.no_browser and name in BROWSER_PARTS)
    ]
    return args


def load_average() -> str:
    try:
        return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# running the parts


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # each script sets its own device count
    # Measure this checkout's shardviz, whatever the environment has installed.
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_script(script: str, arguments: list[str], timeout: int) -> tuple[dict[str, Any], str]:
    """Runs benchmarks/`script` in a child process: its BENCH-JSON result and its markdown (the rest of stdout).

    Raises when it printed no result or reported an error; a non-zero exit with a result is noted in the
    result's "exit_code" for the caller to report.
    """
    command = [sys.executable, str(HERE / script), *arguments]
    started = time.monotonic()
    # A session of its own, so a timeout ends the browsers and servers it started too.
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(), start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise RuntimeError(f"{script} ran past {timeout} s and was stopped:\n{stderr[-3000:]}") from None
    lines = stdout.splitlines()
    found = [line for line in lines if line.startswith("BENCH-JSON ")]
    if not found:
        raise RuntimeError(f"{script} printed no result (exit {proc.returncode}):\n{stderr[-3000:]}")
    result = json.loads(found[-1][len("BENCH-JSON ") :])
    if "error" in result:
        raise RuntimeError(f"{script} failed: {result['error']}\n{stderr[-3000:]}")
    result["wall_s"] = time.monotonic() - started
    result["exit_code"] = proc.returncode
    markdown = "\n".join(line for line in lines if not line.startswith("BENCH-JSON ")).strip()
    return dict(result), markdown


def run_python_side(n: int, payload_dir: pathlib.Path, quick: bool) -> dict[str, Any]:
    arguments = [str(n), "--payload-dir", str(payload_dir)]
    if n == min(DEVICE_COUNTS):
        arguments.append("--whatif")
    if quick:
        arguments.append("--quick")
    return run_script("python_side.py", arguments, PARTS["array"][2])[0]


def run_browser(args: argparse.Namespace, payload_dir: pathlib.Path, counts: list[int]) -> dict[str, Any]:
    import browser_side

    out: dict[str, Any] = {}
    with browser_side.chromium() as browser:
        log("browser: render harness ...")
        started = time.monotonic()
        out["render"] = browser_side.render_bench(
            browser,
            payload_dir,
            counts,
            first=1 if args.smoke else 3 if args.quick else 9,
            rerenders=2 if args.smoke else 8 if args.quick else 24,
            heap_edits=0 if args.smoke else 100,
        )
        out["render"]["wall_s"] = time.monotonic() - started
        if not args.no_lab:
            lab_counts = [n for n in LAB_COUNTS if n in counts]
            edits = {8: 2, 512: 2} if args.smoke else {8: 10, 512: 30} if args.quick else {8: 30, 512: 100}
            log("browser: JupyterLab round trip ...")
            started = time.monotonic()
            out["lab"] = browser_side.lab_bench(browser, lab_counts, edits, heap_at=512)
            out["lab"]["wall_s"] = time.monotonic() - started
            if args.lab_tcp_nodelay:
                log("browser: JupyterLab round trip, TCP_NODELAY on the kernel websocket ...")
                out["lab_nodelay"] = browser_side.lab_bench(browser, lab_counts, edits, heap_at=0, tcp_nodelay=True)
    return out


# ----------------------------------------------------------------------------
# the table


def ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}x" if value < 0.1 else f"{value:.2f}x"


def size(value: int | None) -> str:
    if value is None:
        return "—"
    return f"{value / KiB:.1f} KiB" if abs(value) >= 10 * KiB else f"{value:.0f} B"


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else "PASS" if ok else "MISS"


def med(stat: dict[str, Any] | None, key: str = "median") -> float | None:
    if not stat:
        return None
    return stat.get(key) if key in stat else stat.get("median_ms")


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target: figure, limit, verdict; for the parts that ran."""
    rows: list[dict[str, Any]] = []
    if results["python"]:
        rows += array_targets(results)
    for key, targets in (
        ("program", program_targets),
        ("program_browser", program_browser_targets),
        ("tree", tree_targets),
        ("tree_browser", tree_browser_targets),
        ("local", local_targets),
        ("plan", plan_targets),
        ("compare", compare_targets),
        ("testing", testing_targets),
    ):
        if key in results:
            rows += targets(results[key])
    return rows


def target_row(target: str, figure: str, limit: str, ok: bool | None) -> dict[str, Any]:
    return {"target": target, "figure": figure, "limit": limit, "ok": ok}


def plan_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    ratio = r["whatif_over_bare_256"]
    pod = r.get("pod_whatif_over_bare_256")
    big = r["whatif_4096"]
    least = r.get("estimate_over_peak_min")
    return [
        target_row(
            "what-if trace, 24-layer scanned model, 256 devices, over a bare compile in a 256-device child",
            f"{ratio:.2f}x ({r['whatif_256_s']:.2f} s vs {r['bare_256_s']:.2f} s)",
            f"<= {TARGETS['whatif_over_bare_256']}x",
            ratio <= TARGETS["whatif_over_bare_256"],
        ),
        target_row(
            "what-if trace, notebook 09's transformer training step (32x8), over a bare compile in a 256-device child",
            "—" if pod is None else f"{pod:.2f}x ({r['pod_whatif_256_s']:.2f} s vs {r['pod_bare_256_s']:.2f} s)",
            f"<= {TARGETS['whatif_over_bare_256']}x",
            None if pod is None else pod <= TARGETS["whatif_over_bare_256"],
        ),
        target_row(
            "a what-if child's memory estimate over its measured peak, lowest of the runs",
            "—" if least is None else f"{least:.2f}x",
            f">= {TARGETS['estimate_over_peak']}x",
            None if least is None else least >= TARGETS["estimate_over_peak"],
        ),
        target_row(
            "what-if trace at 4096 devices finishes and reports its cost",
            big.get("error", f"{big['seconds']:.1f} s, peak RSS {big.get('peak_rss_bytes', 0) / 2**20:.0f} MiB")[:200],
            "finishes",
            "error" not in big,
        ),
    ]


def compare_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    ratio, payload = r["compare_over_ideal"], r["payload_bytes"]
    return [
        target_row(
            f"shardviz.compare, {r['candidates']} candidates at 256 devices, over ({r['candidates']} / "
            f"{r['workers']}) x one what-if trace",
            f"{ratio:.2f}x ({r['compare_s']:.1f} s; one trace {r['one_trace_s']:.2f} s)",
            f"<= {TARGETS['compare_over_ideal']}x",
            ratio <= TARGETS["compare_over_ideal"],
        ),
        target_row(
            f"comparison payload of {r['candidates']} candidates ({r['rows']} rows)",
            f"{size(payload)}",
            f"< {TARGETS['compare_payload_bytes'] // 1000} KB",
            payload < TARGETS["compare_payload_bytes"],
        ),
    ]


def testing_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    worst = r["collectives_message_ms"]
    return [
        target_row(
            f"a failing assert_collectives prints its message after the trace ({r['layers']}-layer MLP, scanned "
            f"and unrolled, worst call)",
            f"{ms(worst)} ms",
            f"< {TARGETS['testing_message_ms']:.0f} ms",
            worst < TARGETS["testing_message_ms"],
        )
    ]


def program_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    program = r["program"]
    what = f"{program['layers']}-layer scanned MLP and its gradient, {r['devices']} devices"
    samples = r["rows"][0]["samples"]
    worst = max(row["ratio"] for row in r["rows"])
    largest = max(row["payload_bytes"] for row in r["rows"])
    unrolled = r.get("unrolled")
    extra = []
    if unrolled:
        extra = [
            target_row(
                f"`shardviz.trace` vs a bare compile, {program['layers']}-layer unrolled forward pass "
                f"({unrolled['values']} values, Auto axes)",
                f"{ratio(unrolled['ratio'])} ({ms(unrolled['trace_ms'])} vs {ms(unrolled['bare_compile_ms'])} ms)",
                f"≤ {TARGETS['trace_over_compile']}x",
                unrolled["ratio"] <= TARGETS["trace_over_compile"],
            ),
            target_row(
                f"`shardviz.trace` vs a bare compile, {program['layers']}-layer unrolled training step "
                f"({unrolled['step_values']} values: gradient and update, Auto axes)",
                f"{ratio(unrolled['step_ratio'])} ({ms(unrolled['step_trace_ms'])} vs "
                f"{ms(unrolled['step_bare_compile_ms'])} ms)",
                f"≤ {TARGETS['trace_over_compile']}x",
                unrolled["step_ratio"] <= TARGETS["trace_over_compile"],
            )
            if "step_ratio" in unrolled
            else None,
            target_row(
                f"program payload of a {program['layers']}-layer unrolled training step "
                f"({unrolled['step_values']} values)",
                f"{size(unrolled['step_payload_bytes'])} ({size(unrolled['step_payload_gzip_bytes'])} gzip)",
                f"< {TARGETS['program_payload_bytes'] // 1000} KB",
                unrolled["step_payload_bytes"] < TARGETS["program_payload_bytes"],
            ),
        ]
    small = r.get("small")
    if small:
        extra.append(
            target_row(
                f"`shardviz.trace` vs a bare compile, small {program['layers']}-layer unrolled forward pass "
                f"(`h = tanh(h @ W[i]) + seed`, h [64, 256], {small['values']} values, Auto axes); "
                "trace's fixed part in ms",
                f"{ratio(small['ratio'])} ({ms(small['trace_ms'])} vs {ms(small['bare_compile_ms'])} ms; "
                f"fixed {ms(small['fixed_ms'])} ms)",
                f"≤ {TARGETS['trace_over_compile']}x",
                small["ratio"] <= TARGETS["trace_over_compile"],
            )
        )
    return [
        *(row for row in extra if row is not None),
        target_row(
            f"`shardviz.trace` vs a bare `jax.jit(f).lower(*args).compile()`, {what} "
            f"(medians of {samples}, a fresh function each)",
            ", ".join(
                f"{ratio(row['ratio'])} {row['axis_type']} ({ms(row['trace_ms'])} vs {ms(row['bare_compile_ms'])} ms)"
                for row in r["rows"]
            ),
            f"≤ {TARGETS['trace_over_compile']}x",
            worst <= TARGETS["trace_over_compile"],
        ),
        target_row(
            f"program payload (`Program.to_json()`, compact JSON), {what}",
            ", ".join(
                f"{size(row['payload_bytes'])} ({size(row['payload_gzip_bytes'])} gzip) {row['axis_type']}"
                for row in r["rows"]
            ),
            f"< {TARGETS['program_payload_bytes'] // 1000} KB",
            largest < TARGETS["program_payload_bytes"],
        ),
    ]


def program_browser_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    programs = r["programs"]
    rows = []
    first = {name: p["first"]["layout_ms"]["median"] for name, p in programs.items()}
    rows.append(
        target_row(
            "program view's first draw in Chromium, the same program (median, script + style and layout)",
            ", ".join(f"{ms(v)} ms {name}" for name, v in first.items()),
            f"< {TARGETS['program_first_draw_ms']:.0f} ms",
            all(v < TARGETS["program_first_draw_ms"] for v in first.values()),
        )
    )
    for key, what in (("select_value", "a value"), ("select_collective", "a collective")):
        stats = {name: p[key]["layout_ms"] for name, p in programs.items()}
        rows.append(
            target_row(
                f"program view: select {what} (a click to its picture drawn; median, script + style and layout)",
                ", ".join(f"{ms(v['median'])} ms (p90 {ms(v['p90'])}) {name}" for name, v in stats.items()),
                f"≤ {TARGETS['program_select_ms']:.4g} ms",
                all(v["median"] <= TARGETS["program_select_ms"] for v in stats.values()),
            )
        )
    return rows


def tree_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    w, c = r["whatif"], r["concrete"]
    what = f"{w['leaves']:,} leaves on a {w['devices']}-device AbstractMesh"
    return [
        target_row(
            f"`describe_tree` + `to_json`, {what}, vs the plain per-leaf loop "
            "(`tree_flatten_with_path`, `keystr`, `str(jax.typeof)`, `shard_shape`; medians)",
            f"{ratio(w['ratio'])} ({ms(w['describe_and_payload']['median_ms'])} vs "
            f"{ms(w['bare_loop']['median_ms'])} ms)",
            f"≤ {TARGETS['tree_over_loop']}x",
            w["ratio"] <= TARGETS["tree_over_loop"],
        ),
        target_row(
            f"`describe_tree` + `to_json`, {r['flat']['leaves']:,} bf16 leaves in one dict, three specs in turn, on a "
            f"{r['flat']['devices']}-device AbstractMesh, vs the same loop (medians)",
            f"{ratio(r['flat']['ratio'])} ({ms(r['flat']['describe_and_payload']['median_ms'])} vs "
            f"{ms(r['flat']['bare_loop']['median_ms'])} ms)",
            f"≤ {TARGETS['tree_over_loop']}x",
            r["flat"]["ratio"] <= TARGETS["tree_over_loop"],
        ),
        target_row(
            f"tree payload bytes per leaf, {what}",
            f"{w['bytes_per_leaf']:.1f} B ({w['payload_gzip_bytes'] / w['leaves']:.1f} B gzip)",
            f"≤ {TARGETS['tree_bytes_per_leaf']:.0f} B",
            w["bytes_per_leaf"] <= TARGETS["tree_bytes_per_leaf"],
        ),
        target_row(
            f"`describe_tree` + payload vs `treescope.render_to_html`, a concrete tree of {c['leaves']} leaves "
            f"on {c['devices']} devices (medians; bytes)",
            f"{ratio(c['ratio'])} ({ms(c['describe_and_payload']['median_ms'])} vs "
            f"{ms(c['treescope']['median_ms'])} ms); bytes {ratio(c['bytes_ratio'])}",
            "no target: for reference",
            None,
        ),
    ]


def tree_browser_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    what = f"{r['leaves'][0]:,} leaves on {r['devices']} devices"
    rows = []
    for key, label, limit in (
        ("first_render", "tree view's first render", TARGETS["tree_first_render_ms"]),
        ("rules_edit", "tree view's redraw after a rules edit", TARGETS["tree_rules_edit_ms"]),
    ):
        stats = r[key]
        value = stats["layout_ms"]["median"]
        rows.append(
            target_row(
                f"{label} in Chromium, {what} (median, script + style and layout)",
                f"{ms(value)} ms (p90 {ms(stats['layout_ms']['p90'])}; widget's measure "
                f"{ms(stats['measure_ms']['median'])})",
                f"≤ {limit:.4g} ms",
                value <= limit,
            )
        )
    return rows


def local_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for n, key in (("512", "local_page_512_ms"), ("4096", "local_page_4096_ms")):
        page = r["page"].get(n)
        if not page:
            continue
        edits = {kind: page[kind]["edit_ms"] for kind in ("spec", "mesh")}
        painted = {kind: page[kind]["frame_ms"] for kind in ("spec", "mesh")}
        rows.append(
            target_row(
                f"saved page, no kernel: an edit to the redrawn picture, {n} devices (median, engine + render + "
                "style and layout; painted: the frame after it drawn)",
                ", ".join(
                    f"{kind} {ms(e['median'])} ms (p90 {ms(e['p90'])}), painted {ms(painted[kind]['median'])} ms"
                    for kind, e in edits.items()
                ),
                f"≤ {TARGETS[key]:.4g} ms"
                + (
                    "; painted "
                    + ", ".join(f"{kind} ≤ {TARGETS[f'local_page_{kind}_painted_ms']:.4g} ms" for kind in painted)
                    if n == "512"
                    else ""
                ),
                all(e["median"] <= TARGETS[key] for e in edits.values())
                and (
                    n != "512"
                    or all(p["median"] <= TARGETS[f"local_page_{kind}_painted_ms"] for kind, p in painted.items())
                ),
            )
        )
    limit = TARGETS["local_lab_512_ms"]
    if "lab" in r:
        floor = r["lab"].get("frame_floor_ms")
        beside = f"; JupyterLab's own frame {ms(floor['median'])} ms" if floor else ""
        for kind in ("spec", "mesh", "rules"):
            entry = r["lab"].get(kind, r["lab"] if kind == "spec" else None)
            if entry is None:
                continue
            first, painted = entry["first_redraw_ms"], entry.get("first_painted_ms")
            painted_limit = TARGETS[f"local_lab_{kind}_painted_ms"]
            what = (
                "rules edit to the first changed tree view"
                if kind == "rules"
                else f"typed {kind} to the first redrawn grid"
            )
            rows.append(
                target_row(
                    f"JupyterLab, {what} (the browser's own answer), 512 devices "
                    "(median): DOM; painted (the frame after it drawn)",
                    f"{ms(first['median'])} ms (p90 {ms(first['p90'])}); painted "
                    + (f"{ms(painted['median'])} ms (p90 {ms(painted['p90'])})" if painted else "—")
                    + beside
                    + f"; kernel's answer {ms(entry['kernel_answer_ms']['median'])} ms"
                    + (
                        ""
                        if entry.get("local_equals_kernel", r["lab"]["local_equals_kernel"])
                        else "; local and kernel DISAGREED"
                    ),
                    f"≤ {limit:.4g} ms; painted ≤ {painted_limit:.4g} ms",
                    first["median"] <= limit
                    and painted is not None
                    and painted["median"] <= painted_limit
                    and entry.get("local_equals_kernel", r["lab"]["local_equals_kernel"]),
                )
            )
    elif "lab_error" in r:
        rows.append(
            target_row(
                "JupyterLab, typed spec to the first redrawn grid, 512 devices",
                f"did not run: {r['lab_error'].splitlines()[0]}",
                f"≤ {limit:.4g} ms",
                None,
            )
        )
    rows.append(
        target_row(
            "bundle growth: the layout engine and its hosts in each bundle (minified bytes)",
            ", ".join(
                f"{size(b['engine_bytes'])} of `{name}`'s {size(b['bytes'])} ({size(b['gzip_bytes'])} gzip)"
                for name, b in r["bundles"].items()
            ),
            "no limit: reported",
            None,
        )
    )
    return rows


def array_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    py = results["python"]
    rows: list[dict[str, Any]] = []

    def vas_ratio(n: int) -> float | None:
        r = py.get(str(n))
        return r["sv_warm"]["median_ms"] / r["vas"]["median_ms"] if r else None

    for n, key in ((4096, "ratio_vas_4096"), (512, "ratio_vas_512")):
        value = vas_ratio(n)
        rows.append(
            {
                "target": f"describe + payload (the widget's data) vs visualize_array_sharding (a terminal table), "
                f"{n} devices (warm medians)",
                "figure": ratio(value),
                "limit": f"≤ {TARGETS[key]}x",
                "ok": None if value is None else value <= TARGETS[key],
            }
        )
    for n in (4096, 512):
        r = py.get(str(n))
        value = r["sv_text"]["median_ms"] / r["vas"]["median_ms"] if r and "sv_text" in r else None
        rows.append(
            {
                "target": f"render_text vs visualize_array_sharding, both a terminal picture as a string "
                f"(80 columns, no colour), {n} devices (warm medians)",
                "figure": ratio(value),
                "limit": "no target: like for like",
                "ok": None,
            }
        )
    r4096 = py.get("4096")
    value = r4096["payload_bytes"] / r4096["ts_html_bytes"] if r4096 else None
    rows.append(
        {
            "target": "payload bytes vs treescope's compressed HTML, 4096 devices",
            "figure": ratio(value)
            + (f" ({size(r4096['payload_bytes'])} vs {size(r4096['ts_html_bytes'])})" if r4096 else ""),
            "limit": f"≤ {TARGETS['ratio_treescope_4096']}x",
            "ok": None if value is None else value <= TARGETS["ratio_treescope_4096"],
        }
    )
    r512 = py.get("512")
    if r512 and r4096:
        per512 = r512["payload_shuffled_bytes"] / 512
        per4096 = r4096["payload_shuffled_bytes"] / 4096
        # Mesh order must never cost more than the worst case.
        regular_ok = all(r["payload_bytes"] <= r["payload_shuffled_bytes"] for r in py.values())
        value = per4096 / per512
        rows.append(
            {
                "target": "payload linear in devices: bytes per device, shuffled device order, 4096 vs 512",
                "figure": f"{value:.2f} ({per4096:.1f} vs {per512:.1f} B/device; "
                f"mesh order {r4096['payload_bytes'] / 4096:.2f} B/device)",
                "limit": f"≤ {TARGETS['linear_devices']}",
                "ok": value <= TARGETS["linear_devices"] and regular_ok,
            }
        )
    growth = []
    for n, r in sorted(py.items(), key=lambda kv: int(kv[0])):
        by = {int(k): v for k, v in r["payload_bytes_by_elements"].items()}
        real = SIDE_ELEMENTS
        largest = max(by)
        if real in by and largest > real:
            growth.append((int(n), by[largest] / by[real], largest // real))
    if growth:
        worst = max(growth, key=lambda g: g[1])
        rows.append(
            {
                "target": "payload independent of the array's size: bytes for a 10^6x larger array over the real one's",
                "figure": ", ".join(f"{g[1]:.2f} at {g[0]}" for g in growth),
                "limit": f"≤ {TARGETS['independent_of_size']}",
                "ok": worst[1] <= TARGETS["independent_of_size"],
            }
        )
    render = results.get("browser", {}).get("render", {}).get("counts", {})
    for n, key in ((512, "rerender_512_ms"), (4096, "rerender_4096_ms")):
        entry = render.get(str(n))
        if not entry:
            continue
        value = med(entry["rerender"]["measure_ms"])
        rows.append(
            {
                "target": f"browser re-render, {n} devices ('shardviz:render' median)",
                "figure": "—"
                if value is None
                else f"{ms(value)} ms (with style+layout {ms(med(entry['rerender']['layout_ms']))} ms)",
                "limit": f"≤ {TARGETS[key]:.4g} ms",
                "ok": None if value is None else value <= TARGETS[key],
            }
        )
    entry = results.get("browser", {}).get("lab", {}).get("counts", {}).get("512")
    if entry:
        value = med(entry["round_trip_ms"])
        rows.append(
            {
                "target": "JupyterLab round trip, typed spec to the kernel's answer in the page (the one message "
                "writing its answer trait), 512 devices (median)",
                "figure": f"{ms(value)} ms (p90 {ms(med(entry['round_trip_ms'], 'p90'))} ms; the browser's own "
                f"answer drawn at {ms(med(entry['breakdown_ms']['first_redraw_ms']))} ms)",
                "limit": f"≤ {TARGETS['lab_512_ms']:.0f} ms",
                "ok": None if value is None else value <= TARGETS["lab_512_ms"],
            }
        )
    heaps = {n: e["heap"] for n, e in render.items() if "heap" in e}
    if heaps:
        worst_growth = max(h["growth_bytes"] for h in heaps.values())
        dom_grew = any(h["dom_grew"] for h in heaps.values())
        runs = len(next(iter(heaps.values())).get("growth_samples_bytes", [0]))
        rows.append(
            {
                "target": f"JS heap growth over 100 edits, widget (after GC; median of {runs} runs, their range "
                "in brackets; DOM nodes and listeners)",
                "figure": ", ".join(f"{size(h['growth_bytes'])} {heap_range(h)} at {n}" for n, h in heaps.items())
                + ("; DOM grew" if dom_grew else "; DOM flat"),
                "limit": f"≤ {size(TARGETS['heap_growth_bytes'])}, DOM flat",
                "ok": worst_growth <= TARGETS["heap_growth_bytes"] and not dom_grew,
            }
        )
    return rows


SIDE_ELEMENTS = 1024 * 1024


def heap_range(heap: dict[str, Any], low: str = "growth_min_bytes", high: str = "growth_max_bytes") -> str:
    return f"[{size(heap[low])} to {size(heap[high])}]" if low in heap else ""


def table(results: dict[str, Any]) -> str:
    out: list[str] = []
    meta = results["meta"]
    out.append(
        f"Measured {meta['date']} on {meta['cpu']} ({meta['cores']} cores), Python {meta['python']}, "
        f"jax {meta.get('jax', '?')}, Chromium {meta.get('chromium', '—')}, JupyterLab {meta.get('jupyterlab', '—')}; "
        f"load average {meta['load_before']} before, {meta['load_after']} after; {meta['wall_s']:.0f} s in all."
    )
    by_part = results.get("wall_s_by_part", {})
    if by_part:
        out.append("")
        out.append("Seconds per part: " + ", ".join(f"{part} {seconds:.0f}" for part, seconds in by_part.items()) + ".")
    out.append("")
    out.append("**Targets** (every figure from this run)")
    out.append("")
    out.append("| target | figure | limit | |")
    out.append("| --- | --- | --- | --- |")
    for row in results["targets"]:
        out.append(f"| {row['target']} | {row['figure']} | {row['limit']} | {verdict(row['ok'])} |")
    failures = results.get("failures", {})
    if failures:
        out.append("")
        out.append("**Parts that failed**: " + "; ".join(f"{part}: {why}" for part, why in failures.items()))
    if results.get("problems"):
        out.append("")
        out.append("**Problems in the pages**: " + "; ".join(results["problems"]))
    if results["python"]:
        out.append("")
        out.append(f"## {PARTS['array'][1]}")
        out.append("")
        out.extend(array_tables(results))
    for part, markdown in results.get("markdown", {}).items():
        out.append("")
        out.append(f"## {PARTS[part][1]}")
        out.append("")
        out.append(markdown)
    return "\n".join(out) + "\n"


def array_tables(results: dict[str, Any]) -> list[str]:
    py = results["python"]
    out: list[str] = []
    out.append(
        "**Python**: float32[1024,1024], one process per device count; medians in ms. "
        "*warm*: a fresh array each call, shardviz's per-mesh device cache filled; "
        "*cold*: that cache cleared before each call; *first*: the process's first call. "
        "visualize_array_sharding's table is captured to a string (80 columns, no colour). Two ratios over it: "
        "*payload ratio*, shardviz's describe + payload (the widget's data, not a picture) over it; *text ratio*, "
        "shardviz's terminal picture `render_text(x, width=80, color=False)` over it, like for like. treescope renders "
        "`render_array_sharding` with `render_to_html(compressed=True)`. *kernel-side edit*: "
        "`ShardingWidget.set_state({'spec_text': ...})` between two specs (parse, `jax.device_put`, describe, "
        "payload). *RSS*: the process's peak once JAX is up with one array described."
    )
    out.append("")
    out.append(
        "| devices | mesh, spec | shardviz warm | cold | first | visualize_array_sharding | payload ratio | "
        "render_text | text ratio | treescope | ratio | payload (gzip) | treescope HTML (gzip) | bytes ratio | "
        "kernel-side edit | RSS |"
    )
    out.append("| ---: | --- |" + " ---: |" * 14)
    for n, r in sorted(py.items(), key=lambda kv: int(kv[0])):
        mesh = "x".join(str(v) for v in r["mesh"].values())
        sv = r["sv_warm"]["median_ms"]
        vas = r["vas"]["median_ms"]
        ts = r["ts"]["median_ms"]
        text = r["sv_text"]["median_ms"] if "sv_text" in r else None
        out.append(
            f"| {n} | {mesh}, `{r['spec']}` | {ms(sv)} | {ms(r['sv_cold']['median_ms'])} | "
            f"{ms(r['sv_first_call_ms'])} | {ms(vas)} | {ratio(sv / vas)} | {ms(text)} | "
            f"{ratio(None if text is None else text / vas)} | {ms(ts)} | {ratio(sv / ts)} | "
            f"{size(r['payload_bytes'])} ({size(r['payload_gzip_bytes'])}) | "
            f"{size(r['ts_html_bytes'])} ({size(r['ts_html_gzip_bytes'])}) | "
            f"{ratio(r['payload_bytes'] / r['ts_html_bytes'])} | {ms(r['widget_edit']['median_ms'])} | "
            f"{r['rss_mib']:.0f} MiB |"
        )
    out.append("")
    out.append(
        "**Payload bytes** by array size (same sharding; past the real array, a hypothetical layout) "
        "and with the devices in random order (the run encoding's worst case)."
    )
    out.append("")
    sizes = sorted({int(k) for r in py.values() for k in r["payload_bytes_by_elements"]})
    out.append("| devices | " + " | ".join(f"{_elements(s)} elements" for s in sizes) + " | shuffled devices |")
    out.append("| ---: | " + " | ".join("---:" for _ in sizes) + " | ---: |")
    for n, r in sorted(py.items(), key=lambda kv: int(kv[0])):
        by = {int(k): v for k, v in r["payload_bytes_by_elements"].items()}
        cells = [size(by.get(s)) for s in sizes]
        out.append(f"| {n} | " + " | ".join(cells) + f" | {size(r['payload_shuffled_bytes'])} |")
    whatif = next((r["whatif"] for r in py.values() if "whatif" in r), None)
    if whatif:
        out.append("")
        out.append("**What-if layouts** on an AbstractMesh (no devices needed): describe plus payload, ms.")
        out.append("")
        out.append("| devices | mesh, spec | shape | warm | cold | first | payload (gzip) |")
        out.append("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
        for n, w in whatif.items():
            mesh = "x".join(str(v) for v in w["mesh"].values())
            out.append(
                f"| {n} | {mesh}, `{w['spec']}` | {w['shape'][0]}x{w['shape'][1]} | {ms(w['warm']['median_ms'])} | "
                f"{ms(w['cold']['median_ms'])} | {ms(w['first_call_ms'])} | "
                f"{size(w['payload_bytes'])} ({size(w['payload_gzip_bytes'])}) |"
            )
    render = results.get("browser", {}).get("render")
    if render:
        out.append("")
        out.append(
            "**Browser** (headless Chromium, the real widget.js with a stand-in model; medians in ms). "
            "*measure*: the widget's `shardviz:render`; *+layout*: the whole change handler "
            "(payload decode included) plus forced style and layout; *frame*: until the next frame "
            "was produced. Re-render: Python's answer to a spec edit, cycling through 4 specs. "
            "Heap: V8 heap after GC, growth over 100 edits once 300 have warmed the JIT: the median of 5 runs "
            "of 100, one after the other, with their range; the first 100 edits of a fresh widget in the next column."
        )
        out.append("")
        out.append(
            "| devices | grid | first: measure | +layout | frame | re-render: measure | +layout | frame | "
            "p90 measure | heap growth, 100 edits | first 100 edits | DOM nodes |"
        )
        out.append("| ---: | --- |" + " ---: |" * 10)
        for n, e in render["counts"].items():
            f, r = e["first"], e["rerender"]
            heap = e.get("heap")
            out.append(
                f"| {n} | {e['render_mode']} | {ms(med(f['measure_ms']))} | {ms(med(f['layout_ms']))} | "
                f"{ms(med(f['frame_ms']))} | {ms(med(r['measure_ms']))} | {ms(med(r['layout_ms']))} | "
                f"{ms(med(r['frame_ms']))} | {ms(med(r['measure_ms'], 'p90'))} | "
                + (
                    f"{size(heap['growth_bytes'])} {heap_range(heap)} | {size(heap['first_growth_bytes'])} | "
                    f"{heap['dom_before']['nodes']} → {heap['dom_after']['nodes']} |"
                    if heap
                    else "— | — | — |"
                )
            )
    for key, title in (("lab", "JupyterLab"), ("lab_nodelay", "JupyterLab, TCP_NODELAY on the kernel websocket")):
        lab = results.get("browser", {}).get(key)
        if not lab:
            continue
        out.append("")
        out.append(
            f"**{title}** (a live kernel; a spec typed into the widget and Enter pressed; medians in ms). "
            "*first redraw*: keydown to the mutation that shows the new type line (the browser's own answer, "
            "drawn before the kernel's in *local first* of the edits); *send*: keydown to the page sending the "
            "edit to the kernel; *round trip*: keydown to the arrival of "
            "the kernel's answer (the one message writing the `answer` trait); *frame*: to the next frame after it; "
            "*payload*: the same message, which carries the payload; *to kernel*, *kernel*, *back*: "
            "page sending to the kernel busy, kernel busy to sending the answer, and that message to the "
            "page (message header dates, 1 ms resolution)."
        )
        out.append("")
        out.append(
            "| devices | edits | first redraw | local first | send | round trip | p90 | frame | payload | to kernel | "
            "kernel | back | kernel peak RSS | page heap growth |"
        )
        out.append("| ---: | ---: |" + " ---: |" * 12)
        notes: list[str] = []
        for n, e in lab["counts"].items():
            b = e["breakdown_ms"]
            heap = e.get("heap")
            out.append(
                f"| {n} | {e['edits']} | {ms(med(b['first_redraw_ms']))} | {e['local_first']} of {e['edits']} | "
                f"{ms(med(b['to_send_ms']))} | {ms(med(e['round_trip_ms']))} | {ms(med(e['round_trip_ms'], 'p90'))} | "
                f"{ms(med(e['frame_ms']))} | {ms(med(b['payload_ms']))} | {ms(med(b['to_kernel_ms']))} | "
                f"{ms(med(b['in_kernel_ms']))} | {ms(med(b['from_kernel_ms']))} | "
                f"{e['kernel']['peak_rss_mib']:.0f} MiB | "
                + (f"{size(heap['growth_bytes'])} over {heap['edits']} edits |" if heap else "— |")
            )
            if heap and "block_median_bytes" in heap:
                notes.append(lab_heap_note(f"The widget's page at {n} devices", heap))
            if heap and "snapshot_growth_by_group_bytes" in heap:
                notes.append(
                    f"Page heap growth at {n} devices, by heap snapshot: "
                    + ", ".join(f"{k} {size(v)}" for k, v in heap["snapshot_growth_by_group_bytes"].items())
                    + "."
                )
        busy = {n: e["breakdown_ms"].get("busy_from_kernel_ms") for n, e in lab["counts"].items()}
        if all(busy.values()):
            notes.append(
                "The way back: the kernel's busy status, sent as it starts on the edit, reached the page "
                + ", ".join(f"{ms(med(v))} ms after its header date at {n} devices" for n, v in busy.items())
                + " (medians; *to kernel* is the way there). The page's long tasks (50 ms or more) between "
                "the keydown and the answer: "
                + ", ".join(
                    f"{ms(med(e['breakdown_ms'].get('long_tasks_ms')))} ms at {n}" for n, e in lab["counts"].items()
                )
                + " (medians)."
            )
        baseline = lab.get("baseline")
        if baseline:
            notes.append(
                lab_heap_note(
                    "Baseline, same run and server: the same keystrokes (fill a spec text, press Enter) into a raw "
                    "cell of a notebook with no widget",
                    baseline,
                )
            )
            widget_heap = next((e["heap"] for e in lab["counts"].values() if "heap" in e), None)
            if widget_heap:
                notes.append(
                    f"Widget minus baseline, medians per {baseline['block']} edits: "
                    f"{size(widget_heap['block_median_bytes'] - baseline['block_median_bytes'])}."
                )
        sockets = lab.get("kernel_socket_tcp_nodelay")
        if sockets is not None:
            notes.append(
                "TCP_NODELAY on the kernel websockets, read back with getsockopt in the server as each opened: "
                + (", ".join(str(v) for v in sockets) if sockets else "none recorded")
                + " (1: Nagle's algorithm off; 0: on)."
            )
        if notes:
            out.append("")
            out.extend(notes)
    return out


def lab_heap_note(what: str, heap: dict[str, Any]) -> str:
    samples = ", ".join(size(g) for g in heap["growth_samples_bytes"])
    return (
        f"{what}: heap after GC grew {size(heap['growth_bytes'])} over {heap['edits']} edits; per "
        f"{heap['block']} edits, median {size(heap['block_median_bytes'])} "
        f"{heap_range(heap, 'block_min_bytes', 'block_max_bytes')} ({samples})."
    )


def _elements(n: int) -> str:
    for unit, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return str(n)


# ----------------------------------------------------------------------------


def page_problems(results: dict[str, Any]) -> list[str]:
    """Errors in the benchmark pages and requests they tried to send anywhere (every one is aborted)."""
    sections = [
        ("array-browser", results.get("browser", {}).get("render", {})),
        ("program-browser", results.get("program_browser", {})),
        ("tree-browser", results.get("tree_browser", {})),
    ]
    sections += [(f"local ({n} devices)", page) for n, page in results.get("local", {}).get("page", {}).items()]
    lab = results.get("local", {}).get("lab", {})
    sections.append(("local (JupyterLab)", {"requests": lab.get("outside_requests", [])}))
    problems: list[str] = []
    for part, section in sections:
        problems += [f"{part}: page error: {e}" for e in section.get("errors", [])]
        outside = section.get("aborted_requests", []) + section.get("aborted", []) + section.get("requests", [])
        problems += [f"{part}: request outside: {url}" for url in outside]
    return problems


def main() -> int:
    args = parse_args()
    counts = [int(c) for c in args.devices.split(",") if c.strip()]
    started = time.monotonic()
    missing = [name for name in ("widget.js", "widget.css") if not (STATIC / name).exists()]
    if missing and set(args.parts) & BROWSER_PARTS:
        log(f"the front end is not built ({', '.join(missing)} missing in {STATIC}): run `make install`")
        return 1
    results: dict[str, Any] = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": load_average(),
            "quick": args.quick,
            "smoke": args.smoke,
            "parts": args.parts,
        },
        "python": {},
        "markdown": {},
        "failures": {},
        "wall_s_by_part": {},
    }

    def failed(part: str, err: BaseException) -> None:
        log(f"{part}: failed: {type(err).__name__}: {err}")
        first = str(err).strip().splitlines()[0].rstrip(":") if str(err).strip() else ""
        results["failures"][part] = f"{type(err).__name__}: {first}"

    with tempfile.TemporaryDirectory(prefix="shardviz-bench-") as tmp:
        payload_dir = pathlib.Path(tmp)
        if "array" in args.parts:
            part_started = time.monotonic()
            for n in counts:
                log(f"array: python_side.py, {n} devices ...")
                try:
                    results["python"][str(n)] = run_python_side(n, payload_dir, args.quick)
                    if results["python"][str(n)]["exit_code"] != 0:
                        raise RuntimeError(f"python_side.py {n} exited {results['python'][str(n)]['exit_code']}")
                except Exception as err:  # report the others all the same
                    failed(f"array ({n} devices)", err)
            results["wall_s_by_part"]["array"] = time.monotonic() - part_started
            if results["python"]:
                results["meta"]["jax"] = next(iter(results["python"].values()))["jax"]
        if "array-browser" in args.parts:
            browser_counts = [n for n in counts if str(n) in results["python"]]
            part_started = time.monotonic()
            if not browser_counts:
                failed("array-browser", RuntimeError("no payloads to draw: the array part did not run"))
            else:
                log("array-browser: browser_side.py ...")
                try:
                    results["browser"] = run_browser(args, payload_dir, browser_counts)
                    results["meta"]["chromium"] = results["browser"]["render"]["chromium"]
                    if "lab" in results["browser"]:
                        results["meta"]["jupyterlab"] = results["browser"]["lab"]["jupyterlab"]
                except Exception as err:
                    failed("array-browser", err)
            results["wall_s_by_part"]["array-browser"] = time.monotonic() - part_started
        for part in args.parts:
            if part in ("array", "array-browser"):
                continue
            script, _, timeout = PARTS[part]
            arguments = ["--smoke"] if args.smoke else ["--quick"] if args.quick else []
            if part == "local":
                arguments += ["--out", str(args.out)] + (["--no-lab"] if args.no_lab else [])
            log(f"{part}: {script} ...")
            part_started = time.monotonic()
            try:
                result, markdown = run_script(script, arguments, timeout)
                results[part.replace("-", "_")] = result
                results["markdown"][part] = markdown
                if result.get("chromium"):
                    results["meta"].setdefault("chromium", result["chromium"])
                if result.get("jax"):
                    results["meta"].setdefault("jax", result["jax"])
                if result["exit_code"] != 0:
                    # Its figures stand, but something in it went wrong (a page error, JupyterLab not starting).
                    raise RuntimeError(f"{script} exited {result['exit_code']}")
            except Exception as err:
                failed(part, err)
            results["wall_s_by_part"][part] = time.monotonic() - part_started
            log(f"{part}: {results['wall_s_by_part'][part]:.0f} s")
    results["meta"]["load_after"] = load_average()
    results["meta"]["wall_s"] = time.monotonic() - started
    results["targets"] = evaluate(results)
    results["problems"] = page_problems(results)
    text = table(results)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text("# make bench\n\n" + text)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    log(f"wrote {args.out / 'results.md'} and {args.out / 'results.json'} in {results['meta']['wall_s']:.0f} s")
    for problem in results["problems"]:
        log(problem)
    return 1 if results["failures"] or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
