"""`make bench`: measure shardviz in one run and print one table.

    .venv/bin/python benchmarks/run.py [--quick] [--devices 8,64,512,4096]
                                       [--no-browser] [--no-lab] [--lab-tcp-nodelay]
                                       [--out benchmarks]

1. One process per device count (8, 64, 512, 4096 simulated CPU devices):
   benchmarks/python_side.py times describe plus payload against
   jax.debug.visualize_array_sharding and treescope, sizes the payload, and
   (in the 8-device process) lays out what-if meshes of 4096 and 8960 devices.
   Each process ends with os._exit: tearing 4096 devices down takes seconds.
2. Headless Chromium (benchmarks/browser_side.py): first render and
   re-render of the real widget bundle at 8 to 4096 devices, the JS heap
   over 100 edits, and the JupyterLab round trip from a typed spec to the
   redrawn grid at 8 and 512 devices, with the kernel's peak RSS.
3. One markdown table with medians, ratios and PASS/MISS per target, printed
   and written to benchmarks/results.md; the raw numbers go to
   benchmarks/results.json.

Never part of `make test`; nothing here asserts a time. It exits 0 when
every part ran (even with a MISS) and 1 when a part failed to run.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
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
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="shardviz benchmarks (make bench)")
    parser.add_argument("--quick", action="store_true", help="few repeats: check that everything runs")
    parser.add_argument("--devices", default=",".join(map(str, DEVICE_COUNTS)), help="device counts, comma-separated")
    parser.add_argument("--no-browser", action="store_true", help="Python side only")
    parser.add_argument("--no-lab", action="store_true", help="skip the JupyterLab round trip")
    parser.add_argument(
        "--lab-tcp-nodelay",
        action="store_true",
        help="diagnostic: also time the round trip with TCP_NODELAY on jupyter_server's kernel websocket",
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE, help="where results.md and results.json go")
    return parser.parse_args()


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


def run_python_side(n: int, payload_dir: pathlib.Path, quick: bool) -> dict[str, Any]:
    command = [sys.executable, str(HERE / "python_side.py"), str(n), "--payload-dir", str(payload_dir)]
    if n == min(DEVICE_COUNTS):
        command.append("--whatif")
    if quick:
        command.append("--quick")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # python_side.py sets its own
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH-JSON ")]
    if not lines:
        raise RuntimeError(f"python_side.py {n} printed no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("BENCH-JSON ") :])
    if "error" in result:
        raise RuntimeError(f"python_side.py {n} failed: {result['error']}\n{proc.stderr[-3000:]}")
    result["wall_s"] = time.monotonic() - started
    return dict(result)


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
            first=3 if args.quick else 9,
            rerenders=8 if args.quick else 24,
            heap_edits=100,
        )
        out["render"]["wall_s"] = time.monotonic() - started
        if not args.no_lab:
            lab_counts = [n for n in LAB_COUNTS if n in counts]
            edits = {8: 10, 512: 30} if args.quick else {8: 30, 512: 100}
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
    """One row per target: figure, limit, verdict."""
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
        value = med(entry["rerender"]["measure_ms"]) if entry else None
        rows.append(
            {
                "target": f"browser re-render, {n} devices ('shardviz:render' median)",
                "figure": "—"
                if value is None
                else f"{ms(value)} ms (with style+layout {ms(med(entry['rerender']['layout_ms']))} ms)",
                "limit": f"≤ {TARGETS[key]:.1f} ms",
                "ok": None if value is None else value <= TARGETS[key],
            }
        )
    lab = results.get("browser", {}).get("lab", {}).get("counts", {})
    entry = lab.get("512")
    value = med(entry["round_trip_ms"]) if entry else None
    rows.append(
        {
            "target": "JupyterLab round trip, typed spec to redrawn grid, 512 devices (median)",
            "figure": "—" if value is None else f"{ms(value)} ms (p90 {ms(med(entry['round_trip_ms'], 'p90'))} ms)",
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
    py = results["python"]
    out: list[str] = []
    meta = results["meta"]
    out.append(
        f"Measured {meta['date']} on {meta['cpu']} ({meta['cores']} cores), Python {meta['python']}, "
        f"jax {meta.get('jax', '?')}, Chromium {meta.get('chromium', '—')}, JupyterLab {meta.get('jupyterlab', '—')}; "
        f"load average {meta['load_before']} before, {meta['load_after']} after; {meta['wall_s']:.0f} s in all."
    )
    out.append("")
    out.append("**Targets** (every figure from this run)")
    out.append("")
    out.append("| target | figure | limit | |")
    out.append("| --- | --- | --- | --- |")
    for row in results["targets"]:
        out.append(f"| {row['target']} | {row['figure']} | {row['limit']} | {verdict(row['ok'])} |")
    out.append("")
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
            "*round trip*: keydown to the mutation that shows the kernel's answer; *frame*: to the next frame; "
            "*kernel*: from the kernel taking the message to its sending the payload (message header dates, "
            "1 ms resolution); *back*: kernel to page; *draw*: page receiving the payload to the DOM updated."
        )
        out.append("")
        out.append(
            "| devices | edits | round trip | p90 | frame | to kernel | kernel | back | draw | "
            "kernel peak RSS | page heap growth |"
        )
        out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        notes: list[str] = []
        for n, e in lab["counts"].items():
            b = e["breakdown_ms"]
            heap = e.get("heap")
            out.append(
                f"| {n} | {e['edits']} | {ms(med(e['round_trip_ms']))} | {ms(med(e['round_trip_ms'], 'p90'))} | "
                f"{ms(med(e['frame_ms']))} | {ms(med(b['to_kernel_ms']))} | {ms(med(b['in_kernel_ms']))} | "
                f"{ms(med(b['from_kernel_ms']))} | {ms(med(b['to_dom_ms']))} | "
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
    return "\n".join(out) + "\n"


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


def main() -> int:
    args = parse_args()
    counts = [int(c) for c in args.devices.split(",") if c.strip()]
    started = time.monotonic()
    missing = [name for name in ("widget.js", "widget.css") if not (STATIC / name).exists()]
    if missing:
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
        },
        "python": {},
    }
    failed = False
    with tempfile.TemporaryDirectory(prefix="shardviz-bench-") as tmp:
        payload_dir = pathlib.Path(tmp)
        for n in counts:
            log(f"python: {n} devices ...")
            try:
                results["python"][str(n)] = run_python_side(n, payload_dir, args.quick)
            except Exception as err:  # report the others all the same
                log(f"  failed: {err}")
                failed = True
        if results["python"]:
            results["meta"]["jax"] = next(iter(results["python"].values()))["jax"]
        if not args.no_browser:
            browser_counts = [n for n in counts if str(n) in results["python"]]
            try:
                results["browser"] = run_browser(args, payload_dir, browser_counts)
                results["meta"]["chromium"] = results["browser"]["render"]["chromium"]
                if "lab" in results["browser"]:
                    results["meta"]["jupyterlab"] = results["browser"]["lab"]["jupyterlab"]
            except Exception as err:
                log(f"browser: failed: {type(err).__name__}: {err}")
                failed = True
    results["meta"]["load_after"] = load_average()
    results["meta"]["wall_s"] = time.monotonic() - started
    if not results["python"]:
        return 1
    results["targets"] = evaluate(results)
    text = table(results)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text("# make bench\n\n" + text)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    log(f"wrote {args.out / 'results.md'} and {args.out / 'results.json'} in {results['meta']['wall_s']:.0f} s")
    problems = [
        f"{part}: {issue}"
        for part, section in (("render", results.get("browser", {}).get("render", {})),)
        for issue in section.get("errors", []) + [f"request outside: {u}" for u in section.get("aborted_requests", [])]
    ]
    for problem in problems:
        log(problem)
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
