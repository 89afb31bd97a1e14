"""The browser half of `make bench`: headless Debian Chromium through Playwright.

Two parts:

- ``render_bench``: benchmarks/harness.html loads the widget's real ES module
  (src/shardviz/static/widget.js) with a stand-in model and draws the payloads
  python_side.py wrote, at 8 to 4096 devices: first render of a fresh widget,
  and re-renders as Python's answers to spec edits arrive. Each render is
  timed by the widget's own ``performance.measure('shardviz:render')``, by the
  whole script task (decode included), with style and layout forced, and to
  the next frame. The JS heap after garbage collection is read over CDP before
  and after 100 edits.
- ``lab_bench``: JupyterLab with a live kernel. A notebook shows the widget on
  8 or 512 devices; a spec is typed into ``[data-role="spec-input"]`` and
  Enter pressed (real key events), and the page times, from that keydown,
  the first redraw (the mutation that puts the new type line in the DOM: the
  widget's own engine draws it before the kernel answers) and the round trip
  (the arrival of the kernel's answer: one message writing the ``answer``
  trait); then to the next frame. The kernel's peak RSS comes from /proc,
  the page's heap from CDP.

Nothing leaves 127.0.0.1: the harness is served from memory through
Playwright's router, JupyterLab runs on a free loopback port with a token and
its news and update checks off, and every other request is aborted. Every
process started here is ended by its id.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import pathlib
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
STATIC = REPO / "src" / "shardviz" / "static"
# The browser tests' helpers launch Chromium and run JupyterLab for us too.
sys.path.insert(0, str(REPO / "tests" / "browser"))
from browser_support import (  # noqa: E402
    JupyterLab,
    lab_path,
    launch_chromium,
    serve_from_memory,
    server_only_context,
    start_jupyter_lab,
    stop_jupyter_lab,
    write_notebook,
)

ORIGIN = "http://shardviz-bench.invalid"
MiB = 1024 * 1024


def summary(values: list[float]) -> dict[str, float]:
    values = sorted(v for v in values if v is not None)
    if not values:
        return {}
    return {
        "median": statistics.median(values),
        "min": values[0],
        "max": values[-1],
        "p90": values[min(len(values) - 1, int(0.9 * len(values) + 0.5) - 1)],
        "n": len(values),
    }


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    # exact performance.memory figures (Chromium rounds them otherwise)
    with launch_chromium(extra_args=["--enable-precise-memory-info"]) as browser:
        yield browser


# What grows in a JupyterLab page over edits, by heap-snapshot node (type, name).
HEAP_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # V8 compiling and re-optimising JupyterLab's and the widget's code.
    (
        "code",
        (
            "code:",
            "native:system / WeakArrayList",
            "native:system / ProtectedFixedArray",
            "native:system / SharedFunctionInfoWrapper",
        ),
    ),
    # The text input's native undo history (Blink keeps up to 1000 steps).
    (
        "undo history",
        (
            "native:blink::UndoStep",
            "native:blink::InsertIntoTextNodeCommand",
            "native:blink::DeleteFromTextNodeCommand",
            "native:blink::RemoveNodeCommand",
            "native:blink::AppendNodeCommand",
            "native:blink::HeapVectorBacking<cppgc::internal::BasicMember<blink::SimpleEditCommand",
            "native:blink::SimpleEditCommand",
            "native:Text",
        ),
    ),
    # Keydown events that lumino's CommandRegistry keeps in _holdKeyBindingPromises.
    (
        "key events",
        (
            "native:KeyboardEvent",
            "native:blink::EventPath",
            "native:blink::TreeScopeEventContext",
            "native:blink::WindowEventContext",
            "native:blink::HeapVectorBacking<blink::NodeEventContext>",
        ),
    ),
    # DevTools' buffers for the Network domain Playwright turns on.
    ("devtools network", ("native:blink::NetworkResourcesData",)),
    # User timing marks and measures (the widget's shardviz:render), resource timing, and the
    # entries Chromium buffers for every page (layout shifts with their rects, paints, events,
    # long animation frames and their scripts, long tasks), each buffer bounded.
    (
        "performance timeline",
        (
            "native:PerformanceMark",
            "native:PerformanceMeasure",
            "native:PerformanceResourceTiming",
            "native:LayoutShift",
            "native:DOMRectReadOnly",
            "native:LargestContentfulPaint",
            "native:InteractionContentfulPaint",
            "native:PerformanceEventTiming",
            "native:PerformanceLongAnimationFrameTiming",
            "native:blink::ScriptTimingInfo",
            "native:PerformanceScriptTiming",
            "native:PerformanceLongTaskTiming",
        ),
    ),
)


def heap_by_kind(cdp: Any) -> dict[str, list[int]]:
    """A heap snapshot after GC, summed by node `type:name`: {key: [bytes, count]}."""
    chunks: list[str] = []

    def on_chunk(event: dict[str, Any]) -> None:
        chunks.append(event["chunk"])

    cdp.on("HeapProfiler.addHeapSnapshotChunk", on_chunk)
    try:
        cdp.send("HeapProfiler.collectGarbage")
        cdp.send("HeapProfiler.takeHeapSnapshot", {"reportProgress": False})
    finally:
        cdp.remove_listener("HeapProfiler.addHeapSnapshotChunk", on_chunk)
    snap = json.loads("".join(chunks))
    meta = snap["snapshot"]["meta"]
    fields = meta["node_fields"]
    width = len(fields)
    kinds, strings, nodes = meta["node_types"][0], snap["strings"], snap["nodes"]
    t_at, n_at, s_at = fields.index("type"), fields.index("name"), fields.index("self_size")
    out: dict[str, list[int]] = {}
    for i in range(0, len(nodes), width):
        key = f"{kinds[nodes[i + t_at]]}:{strings[nodes[i + n_at]][:80]}"
        entry = out.setdefault(key, [0, 0])
        entry[0] += nodes[i + s_at]
        entry[1] += 1
    return out


def heap_growth_by_group(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, int]:
    grown: dict[str, int] = {name: 0 for name, _ in HEAP_GROUPS}
    grown["other"] = 0
    for key in set(before) | set(after):
        delta = after.get(key, [0, 0])[0] - before.get(key, [0, 0])[0]
        group = next((name for name, prefixes in HEAP_GROUPS if key.startswith(prefixes)), "other")
        grown[group] += delta
    return grown


def heap_growth_other(before: dict[str, list[int]], after: dict[str, list[int]], top: int = 8) -> dict[str, int]:
    """The largest growths outside HEAP_GROUPS, by node `type:name`."""
    grown = {
        key: after.get(key, [0, 0])[0] - before.get(key, [0, 0])[0]
        for key in set(before) | set(after)
        if not any(key.startswith(prefixes) for _, prefixes in HEAP_GROUPS)
    }
    return dict(sorted(grown.items(), key=lambda kv: -kv[1])[:top])


def heap_after_gc(cdp: Any) -> int:
    """Bytes of JS heap in use after a full garbage collection."""
    for _ in range(2):  # a second pass collects what the first one's finalizers released
        cdp.send("HeapProfiler.collectGarbage")
    return int(cdp.send("Runtime.getHeapUsage")["usedSize"])


# ----------------------------------------------------------------------------
# the render harness

# Edits before the heap is read: V8 compiles and re-optimises the render code
# for a few hundred renders (about 200 KiB of code and feedback, then flat).
HEAP_WARM_EDITS = 300


# Heap growth is read over this many runs of `edits` edits each, one after the
# other: one before/after pair is mostly the collector's noise (tens of KiB
# either way), the median of several says whether the heap grows.
HEAP_SAMPLES = 5


def heap_check(page: Any, cdp: Any, edits: int, *, warm: int, samples: int = HEAP_SAMPLES) -> dict[str, Any]:
    """The same widget, `samples` runs of `edits` more edits (one a frame): heap after GC
    and DOM counts at the start and after each run."""

    def state() -> tuple[int, dict[str, int]]:
        return heap_after_gc(cdp), cdp.send("Memory.getDOMCounters")

    cold_heap, cold_dom = state()
    page.evaluate("(k) => bench.plainEdits(k, {frames: true})", edits)
    first_heap, _ = state()
    page.evaluate("(k) => bench.plainEdits(k)", max(0, warm - edits))
    h0, dom0 = state()
    heaps, doms = [h0], [dom0]
    for _ in range(samples):
        page.evaluate("(k) => bench.plainEdits(k, {frames: true})", edits)
        h, dom = state()
        heaps.append(h)
        doms.append(dom)
    growths = [b - a for a, b in itertools.pairwise(heaps)]
    return {
        "edits": edits,
        "warm_edits": warm,
        "first_growth_bytes": first_heap - cold_heap,
        "heap_bytes": heaps,
        "growth_samples_bytes": growths,
        "growth_bytes": statistics.median(growths),
        "growth_min_bytes": min(growths),
        "growth_max_bytes": max(growths),
        "dom_before": dom0,
        "dom_after": doms[-1],
        "dom_samples": doms,
        # Counted at the end: a listener or node alive at one reading and gone by the next is not a leak.
        "dom_grew": any(doms[-1][k] > dom0[k] for k in ("nodes", "jsEventListeners", "documents")),
        "timeline_entries": page.evaluate("bench.timelineEntries()"),
        "cold_dom": cold_dom,
    }


def render_bench(
    browser: Any, payload_dir: pathlib.Path, counts: list[int], *, first: int, rerenders: int, heap_edits: int
) -> dict[str, Any]:
    files = {
        "/": ("text/html", (HERE / "harness.html").read_bytes()),
        "/widget.js": ("text/javascript", (STATIC / "widget.js").read_bytes()),
        "/widget.css": ("text/css", (STATIC / "widget.css").read_bytes()),
    }
    for n in counts:
        files[f"/payloads-{n}.json"] = ("application/json", (payload_dir / f"payloads-{n}.json").read_bytes())
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")

    aborted = serve_from_memory(context, ORIGIN, files)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"{err.name}: {err.message}"))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(ORIGIN + "/")
        page.wait_for_function("window.bench && window.bench.ready")
        cdp = context.new_cdp_session(page)
        out: dict[str, Any] = {"chromium": browser.version, "counts": {}}
        for n in counts:
            page.evaluate("(n) => bench.load(n)", n)
            # Warm the JIT with a couple of renders of this size, as a notebook session would be.
            page.evaluate("(n) => bench.firstRender(n, 2)", n)
            firsts = page.evaluate("([n, k]) => bench.firstRender(n, k)", [n, first])
            page.evaluate("(n) => bench.mount(n)", n)
            page.evaluate("(k) => bench.rerender(k)", 8)  # every variant twice: warm
            again = page.evaluate("(k) => bench.rerender(k)", rerenders)
            entry: dict[str, Any] = {
                "render_mode": firsts[0].get("render_mode"),
                "device_count_in_dom": firsts[0].get("device_count"),
                "first": {
                    key: summary([s[key] for s in firsts])
                    for key in ("measure_ms", "script_ms", "layout_ms", "frame_ms")
                },
                "rerender": {
                    key: summary([s[key] for s in again])
                    for key in ("measure_ms", "script_ms", "layout_ms", "frame_ms")
                },
                "rerender_measures_per_edit": summary([s["measures"] for s in again]),
                "rerender_all_changed_type": all(s["type_changed"] for s in again),
            }
            if heap_edits:
                entry["heap"] = heap_check(page, cdp, heap_edits, warm=HEAP_WARM_EDITS)
            page.evaluate("bench.unmount()")
            out["counts"][str(n)] = entry
        out["errors"] = errors
        out["aborted_requests"] = aborted
        return out
    finally:
        context.close()


# ----------------------------------------------------------------------------
# JupyterLab


def proc_memory(pid: int) -> dict[str, float]:
    """Peak and current resident memory of a process, from /proc (MiB)."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = int(value.split()[0]) / 1024
    return {"peak_rss_mib": fields.get("VmHWM", float("nan")), "rss_mib": fields.get("VmRSS", float("nan"))}


# jupyter_server_config.py for the benchmark's server: on each kernel websocket
# it opens, optionally turn Nagle's algorithm off (--lab-tcp-nodelay, a
# diagnostic), and in either case write down the socket's TCP_NODELAY as the
# kernel sees it (getsockopt), so the table says what was measured.
SOCKET_CONFIG = """
import builtins
import json
import socket

from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

NODELAY = {nodelay!r}
RECORD = {record!r}
_open = KernelWebsocketHandler.open


async def open_recording(self, *args, **kwargs):
    if NODELAY:
        self.set_nodelay(True)
    sock = self.ws_connection.stream.socket
    value = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    with builtins.open(RECORD, "a") as f:
        f.write(json.dumps({{"kernel": self.kernel_id, "tcp_nodelay": value}}) + "\\n")
    return await _open(self, *args, **kwargs)


KernelWebsocketHandler.open = open_recording
"""


def kernel_socket_options(record: pathlib.Path) -> list[int]:
    """TCP_NODELAY of each kernel websocket the server opened, as the config wrote it down."""
    if not record.exists():
        return []
    return [int(json.loads(line)["tcp_nodelay"]) for line in record.read_text().splitlines() if line.strip()]


LAB_HEAP_WARM_EDITS = 40
LAB_HEAP_BLOCK = 20  # edits between two heap readings: 100 edits give 5 samples
BREAKDOWN = (
    "first_redraw_ms",
    "to_send_ms",
    "server_kernel_ms",
    "payload_ms",
    "to_kernel_ms",
    "in_kernel_ms",
    "from_kernel_ms",
    "busy_from_kernel_ms",
    "payload_in_kernel_ms",
    "busy_arrival_ms",
    "long_tasks_ms",
    "long_task_end_ms",
)
SPECS = {8: ["x, y", "y, x"], 512: ["a, (b, c)", "(a, b), c"]}
MESH_SETUP = {
    8: ("jax.make_mesh((2, 4), ('x', 'y'))", "P('x', 'y')"),
    512: ("jax.make_mesh((8, 8, 8), ('a', 'b', 'c'))", "P('a', ('b', 'c'))"),
}


def _setup_cell(n: int, pid_file: pathlib.Path) -> str:
    mesh, spec = MESH_SETUP[n]
    return f"""import os, jax
jax.config.update("jax_num_cpu_devices", {n})
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz
assert jax.device_count() == {n}, jax.device_count()
open({str(pid_file)!r}, "w").write(str(os.getpid()))
mesh = {mesh}
x = jax.device_put(np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024), NamedSharding(mesh, {spec}))
w = shardviz.show(x)"""


# Installed before JupyterLab loads: notes when the page sends a kernel message,
# when the kernel's answer comes back (one write of the answer trait: payload,
# edit number and texts in one message).
WS_SPY_JS = """(() => {
    const log = { sent: [], busy: [], payloads: [], answered: [], longTasks: [] };
    window.__svWs = log;
    // The page's own long tasks (50 ms or more): a message from the kernel waits behind them.
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) log.longTasks.push({ start: e.startTime, end: e.startTime + e.duration });
    }).observe({ type: 'longtask' });
    const decoder = new TextDecoder();
    const text = (data) => typeof data === 'string' ? data
        : data instanceof ArrayBuffer ? decoder.decode(new Uint8Array(data)) : '';
    // header.date comes first in a message; wall-clock milliseconds.
    const firstDate = (s) => { const m = /"date":\\s*"([^"]+)"/.exec(s); return m ? Date.parse(m[1]) : null; };
    const epoch = () => performance.timeOrigin + performance.now();
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
        const s = text(data);
        if (s.includes('"spec_text"')) log.sent.push({ t: performance.now(), epoch: epoch() });
        return send.call(this, data);
    };
    const add = WebSocket.prototype.addEventListener;
    const spy = (socket) => {
        if (socket.__svSpied) return;
        socket.__svSpied = true;
        add.call(socket, 'message', (event) => {
            const t = performance.now();
            const s = text(event.data);
            // The kernel's answer is one update of the answer trait, payload and edit number together.
            if (s.includes('"answer"') && s.includes('"seq"') && s.includes('"payload"')) {
                const entry = { t, epoch: epoch(), date: firstDate(s), frame: null };
                log.answered.push(entry);
                log.payloads.push({ t, epoch: entry.epoch, date: entry.date });
                requestAnimationFrame(() => { entry.frame = performance.now(); });
            }
            else if (s.includes('"execution_state":"busy"') || s.includes('"execution_state": "busy"'))
                log.busy.push({ t, epoch: epoch(), date: firstDate(s) });
        });
    };
    WebSocket.prototype.addEventListener = function (type, fn, options) {
        spy(this);
        return add.call(this, type, fn, options);
    };
    const onmessage = Object.getOwnPropertyDescriptor(WebSocket.prototype, 'onmessage');
    Object.defineProperty(WebSocket.prototype, 'onmessage', {
        configurable: true,
        get() { return onmessage.get.call(this); },
        set(fn) { spy(this); onmessage.set.call(this, fn); },
    });
})()"""

# Installed before each edit. The widget draws its own engine's answer in the
# keystroke's task (the first redraw); the round trip ends when the kernel's
# answer has arrived (the one message of the answer trait) and the type
# line shows the new layout. Resolves with the in-page times.
ARM_JS = """(output) => {
    const input = output.querySelector('[data-role="spec-input"]');
    const typeText = () => output.querySelector('[data-role="type"]')?.textContent ?? '';
    const before = typeText();
    const ws = window.__svWs;
    for (const list of Object.values(ws)) list.length = 0;
    window.__sv = new Promise((resolve) => {
        let t0 = null, t1 = null;
        const onKey = (event) => { if (event.key === 'Enter' && t0 === null) t0 = performance.now(); };
        input.addEventListener('keydown', onKey, { capture: true });
        const alertNow = () => output.querySelector('[role="alert"]');
        const observer = new MutationObserver(() => {
            if (t0 === null || t1 !== null) return;
            if (typeText() === before && !alertNow()) return;
            t1 = performance.now();
        });
        observer.observe(output, { subtree: true, childList: true, characterData: true });
        const poll = () => {
            const answer = t0 === null ? undefined : ws.answered.find((m) => m.t >= t0);
            if (!answer || answer.frame === null || t1 === null) { setTimeout(poll, 2); return; }
            observer.disconnect();
            input.removeEventListener('keydown', onKey, { capture: true });
            const sent = ws.sent.find((m) => m.t >= t0);
            const busy = sent ? ws.busy.find((m) => m.t >= sent.t) : undefined;
            const back = ws.payloads.find((m) => m.t >= t0);
            const ms = (a, b) => (a === undefined || b === undefined || a === null || b === null ? null : b - a);
            const alert = alertNow();
            resolve({
                round_trip_ms: answer.t - t0, frame_ms: answer.frame - t0, type: typeText(),
                first_redraw_ms: t1 - t0,
                // the first redraw came before the kernel's answer: the browser drew its own
                local_first: t1 < answer.t,
                to_send_ms: ms(t0, sent?.t),
                server_kernel_ms: ms(sent?.t, answer.t),
                payload_ms: ms(t0, back?.t),
                // wall clock, millisecond dates in Jupyter's message headers:
                to_kernel_ms: ms(sent?.epoch, busy?.date),
                in_kernel_ms: ms(busy?.date, answer.date),
                from_kernel_ms: ms(answer.date, answer.epoch),
                busy_from_kernel_ms: ms(busy?.date, busy?.epoch),
                busy_arrival_ms: ms(t0, busy?.t),
                // the page's long tasks between the keydown and the kernel's answer
                long_tasks_ms: ws.longTasks.reduce(
                    (sum, e) => sum + Math.max(0, Math.min(e.end, answer.t) - Math.max(e.start, t0)), 0),
                long_task_end_ms: ws.longTasks.length ? Math.max(...ws.longTasks.map((e) => e.end)) - t0 : null,
                payload_in_kernel_ms: ms(busy?.date, back?.date),
                alert: alert ? alert.textContent : null,
                cells: output.querySelectorAll('[data-device-id]').length,
                grid_devices: Number(output.querySelector('[data-device-count]')?.getAttribute('data-device-count')),
            });
        };
        poll();
    });
    return before;
}"""


def lab_bench(
    browser: Any, counts: list[int], edits: dict[int, int], heap_at: int, *, tcp_nodelay: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {"counts": {}, "tcp_nodelay": tcp_nodelay}
    with tempfile.TemporaryDirectory(prefix="shardviz-bench-lab-") as tmp:
        record = pathlib.Path(tmp) / "kernel-sockets.jsonl"
        (pathlib.Path(tmp) / "lab").mkdir()
        lab = start_jupyter_lab(
            pathlib.Path(tmp) / "lab",
            kernel_devices=None,  # each notebook sets its own device count before JAX starts
            # Diagnostic only: jupyter_server leaves Nagle's algorithm on for the kernel
            # websocket, and a message written behind another small one can wait for the
            # browser's delayed ACK (40 ms on Linux).
            server_config=SOCKET_CONFIG.format(nodelay=tcp_nodelay, record=str(record)),
            start_s=120,
        )
        try:
            out["jupyterlab"] = _lab_version()
            for n in counts:
                out["counts"][str(n)] = _lab_one(lab, browser, n, edits[n], heap=(n == heap_at))
            if heap_at in counts:
                out["baseline"] = _lab_baseline(lab, browser, edits[heap_at], SPECS[heap_at])
        finally:
            stop_jupyter_lab(lab)
        out["kernel_socket_tcp_nodelay"] = kernel_socket_options(record)
    return out


def _lab_version() -> str:
    import jupyterlab

    return str(jupyterlab.__version__)


def open_idle(page: Any, lab: JupyterLab, path: str) -> None:
    """Opens JupyterLab's URL `path` and waits for its notebook's kernel to be idle."""
    page.goto(lab.url(path))
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    # Reopened workspaces can hold another notebook's (hidden) indicator too.
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']:visible").first.wait_for(timeout=90_000)
    # JupyterLab may still ask which kernel to use: the notebook names python3.
    dialog = page.locator(".jp-Dialog .jp-mod-accept")
    with contextlib.suppress(Exception):
        dialog.wait_for(timeout=3_000)
        dialog.click()


def run_all_cells(page: Any) -> None:
    """Run > Run All Cells, from the menu bar."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _lab_one(lab: JupyterLab, browser: Any, n: int, edits: int, *, heap: bool) -> dict[str, Any]:
    pid_file = lab.root_dir / f"kernel-{n}.pid"
    name = f"bench-{n}.ipynb"
    write_notebook(lab.root_dir / name, [_setup_cell(n, pid_file)])
    context, outside = server_only_context(lab, browser)
    context.set_default_timeout(60_000)
    context.add_init_script(WS_SPY_JS)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"{err.name}: {err.message}"))
        open_idle(page, lab, lab_path(name))
        started = time.monotonic()
        run_all_cells(page)
        output = page.locator(".jp-OutputArea-output").filter(has=page.locator("[data-device-count]")).first
        failure = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
        output.or_(failure).first.wait_for(timeout=120_000)
        if failure.count():
            raise RuntimeError(f"the benchmark notebook ({n} devices) failed:\n" + failure.first.inner_text())
        first_picture_s = time.monotonic() - started
        field = output.locator('[data-role="spec-input"]')
        specs = SPECS[n]
        cdp = context.new_cdp_session(page)
        samples: list[dict[str, Any]] = []
        heap_bytes: list[int] = []

        def one_edit(i: int) -> dict[str, Any]:
            before = output.evaluate(ARM_JS)
            field.fill(specs[(i + 1) % 2])
            field.press("Enter")
            result = page.evaluate("window.__sv")
            result["before"] = before
            return dict(result)

        # Warm: JAX caches each reshard, V8 compiles the render path; longer where the heap is read.
        for i in range(LAB_HEAP_WARM_EDITS if heap else 4):
            one_edit(i)
        dom: list[dict[str, int]] = []

        def checkpoint() -> None:
            heap_bytes.append(heap_after_gc(cdp))
            dom.append(cdp.send("Memory.getDOMCounters"))

        if heap:
            snapshot_before = heap_by_kind(cdp)
            checkpoint()
        for i in range(edits):
            samples.append(one_edit(i))
            if heap and (i + 1) % LAB_HEAP_BLOCK == 0:
                checkpoint()
        if heap:
            snapshot_after = heap_by_kind(cdp)
            grown_by_group = heap_growth_by_group(snapshot_before, snapshot_after)
            grown_other = heap_growth_other(snapshot_before, snapshot_after)
        bad = [s for s in samples if s.get("alert")]
        pid = int(pid_file.read_text())
        result: dict[str, Any] = {
            "edits": len(samples),
            "first_picture_s": first_picture_s,
            "round_trip_ms": summary([s["round_trip_ms"] for s in samples]),
            "round_trip_samples_ms": [round(s["round_trip_ms"], 1) for s in samples],
            "breakdown_ms": {key: summary([s[key] for s in samples]) for key in BREAKDOWN},
            "breakdown_samples_ms": [[None if s[k] is None else round(s[k], 1) for k in BREAKDOWN] for s in samples],
            "frame_ms": summary([s["frame_ms"] for s in samples]),
            "local_first": sum(1 for s in samples if s["local_first"]),
            "grid_devices": samples[-1]["grid_devices"] if samples else None,
            "alerts": [s["alert"] for s in bad][:3],
            "kernel": proc_memory(pid),
            "errors": errors,
            "outside_requests": outside,
        }
        if heap:
            result["heap"] = heap_samples(heap_bytes, dom, len(samples))
            result["heap"]["snapshot_growth_by_group_bytes"] = grown_by_group
            result["heap"]["snapshot_growth_other_top_bytes"] = grown_other
        return result
    finally:
        lab.note_kernels()
        context.close()
        with contextlib.suppress(Exception):  # end this notebook's kernel now: the next one needs the memory
            for session in lab.api("sessions"):
                lab.api(f"kernels/{session['kernel']['id']}", method="DELETE")


def heap_samples(heap_bytes: list[int], dom: list[dict[str, int]], edits: int) -> dict[str, Any]:
    """Heap growth between readings taken every LAB_HEAP_BLOCK edits: median and spread."""
    growths = [b - a for a, b in itertools.pairwise(heap_bytes)]
    return {
        "edits": edits,
        "block": LAB_HEAP_BLOCK,
        "heap_bytes": heap_bytes,
        "growth_samples_bytes": growths,
        "growth_bytes": heap_bytes[-1] - heap_bytes[0],
        "block_median_bytes": statistics.median(growths) if growths else None,
        "block_min_bytes": min(growths, default=None),
        "block_max_bytes": max(growths, default=None),
        "dom_counters": [dom[0], dom[-1]] if dom else [],
    }


def _lab_baseline(lab: JupyterLab, browser: Any, edits: int, specs: list[str]) -> dict[str, Any]:
    """The same keystrokes as the widget's edits (fill a spec text, press Enter), typed
    into a raw cell of a notebook with no widget: what JupyterLab's page grows by anyway."""
    name = "bench-baseline.ipynb"
    write_notebook(lab.root_dir / name, ["x, y"], cell_types=["raw"])
    context, outside = server_only_context(lab, browser)
    context.set_default_timeout(60_000)
    context.add_init_script(WS_SPY_JS)  # as in the widget's page
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"{err.name}: {err.message}"))
        page.goto(lab.url(lab_path(name)))
        page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']:visible").first.wait_for(timeout=90_000)
        editor = page.locator(".jp-Notebook .jp-RawCell .cm-content").first
        editor.click()
        cdp = context.new_cdp_session(page)

        def one_edit(i: int) -> None:
            editor.fill(specs[(i + 1) % 2])
            editor.press("Enter")

        for i in range(LAB_HEAP_WARM_EDITS):
            one_edit(i)
        heap_bytes: list[int] = [heap_after_gc(cdp)]
        dom: list[dict[str, int]] = [cdp.send("Memory.getDOMCounters")]
        for i in range(edits):
            one_edit(i)
            if (i + 1) % LAB_HEAP_BLOCK == 0:
                heap_bytes.append(heap_after_gc(cdp))
                dom.append(cdp.send("Memory.getDOMCounters"))
        result = heap_samples(heap_bytes, dom, edits)
        result["text_after"] = editor.inner_text()
        result["errors"] = errors
        result["outside_requests"] = outside
        return result
    finally:
        lab.note_kernels()
        context.close()
        with contextlib.suppress(Exception):
            for session in lab.api("sessions"):
                lab.api(f"kernels/{session['kernel']['id']}", method="DELETE")
