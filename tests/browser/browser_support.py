"""Helpers of the real-browser tests (the fixtures are in conftest.py).

- Debian's Chromium driven by Playwright: where it is and how to launch it,
  and `PageWatch`, which collects a page's console errors, page errors and
  requests;
- `OfflineContext`: a browser context cut off from every network;
- `JupyterLab`: a server on a free 127.0.0.1 port with a random token, its
  news feed, update check and extension manager off (no network), kernels
  with 8 simulated CPU devices; started and stopped here, its kernels ended
  by pid if the server leaves any;
- `server_only_context`: a browser context that reaches the server and
  nothing else; `LabNotebook` / `open_notebook`: a notebook open in
  JupyterLab, driven like a user would (menus, keyboard).

Nothing here downloads anything. benchmarks/browser_side.py uses the Chromium
and JupyterLab parts too, so they raise RuntimeError (the fixtures turn it into
a test failure) and pytest is imported only where a test needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
SRC = REPO / "src"
IMAGES = REPO / "docs" / "images"
STATIC = SRC / "shardviz" / "static"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]

# Wait limits (milliseconds for Playwright, seconds otherwise). Generous for a
# loaded 2-core machine; every wait is on a condition, never a fixed sleep.
UI_TIMEOUT_MS = 30_000
LAB_START_S = 90
KERNEL_DEVICES = 8

# Part of the first cell of every live-kernel notebook (it needs `logging`, `jax` and `shardviz`
# imported): records every warning or error logged in the kernel in `_problems` (ipykernel logs
# an exception raised by a comm handler there), and checks the kernel runs this repository's
# shardviz on KERNEL_DEVICES devices.
KERNEL_WATCH = f"""class _Problems(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []
    def emit(self, record):
        self.records.append(self.format(record))

_problems = _Problems()
logging.getLogger().addHandler(_problems)
get_ipython().kernel.log.addHandler(_problems)
assert shardviz.__file__.startswith({str(SRC)!r}), shardviz.__file__
assert jax.device_count() == {KERNEL_DEVICES}, jax.devices()
"""
# The comparison both JupyterLab comparison tests draw: the step of tests/compare_steps.py's mlp on two
# Explicit meshes, compared on an H100 (needs jax, jnp, AbstractMesh, AxisType, P, reshard and shardviz).
COMPARE_MLP_CELL = """def mlp(w1, w2, x):
    h = jax.nn.gelu(x @ reshard(w1, P(None, 'model')))
    return jnp.matmul(h, reshard(w2, P('model', None)), out_sharding=P('data', None))

def mesh(data, model):
    return AbstractMesh((data, model), ('data', 'model'), axis_types=(AxisType.Explicit,) * 2)

args = tuple(jax.ShapeDtypeStruct(s, jnp.bfloat16) for s in ((256, 256), (256, 256), (64, 256)))
RULES = '0 = data, model\\n1 = model, data\\n2 = data, None'
cmp = shardviz.compare(mlp, [('a', mesh(4, 2), RULES), ('b', mesh(2, 4), RULES)], args=args, hardware='h100')
"""

KERNEL_IDLE = re.compile(r"Python 3 \(ipykernel\) \| Idle")


# ----------------------------------------------------------------------------
# small helpers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def png_size(path: pathlib.Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def check_front_end_built() -> None:
    import pytest  # here, not at the top: the benchmark imports this module without pytest

    missing = [name for name in ("widget.js", "widget.css", "standalone.js") if not (STATIC / name).exists()]
    if missing:
        pytest.fail(
            f"the shardviz front end is not built ({', '.join(missing)} missing in {STATIC}); "
            "run `npm run build` (or `make install`) in the repository first"
        )


@dataclass
class PageWatch:
    """Console errors, page errors and requests seen by one page."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> PageWatch:
        page.on("console", lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: self.page_errors.append(f"{err.name}: {err.message}\n{err.stack}"))
        page.on("request", lambda req: self.requests.append(req.url))
        return self

    def problems(self, ignore: Callable[[str], bool] = lambda _text: False) -> list[str]:
        return [f"page error: {e}" for e in self.page_errors] + [
            f"console error: {e}" for e in self.console_errors if not ignore(e)
        ]

    def assert_clean(self, ignore: Callable[[str], bool] = lambda _text: False) -> None:
        problems = self.problems(ignore)
        assert not problems, "the browser reported errors:\n" + "\n".join(problems)


# ----------------------------------------------------------------------------
# the browser


def require_chromium() -> None:
    """Raises RuntimeError, saying what to install, when Chromium or Playwright is missing."""
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(
            f"{CHROMIUM} is missing: install Debian's Chromium (`apt-get install chromium`); "
            "nothing here downloads a browser"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as err:
        raise RuntimeError("Playwright for Python is missing: `pip install -e .[test]` installs it") from err


@contextlib.contextmanager
def launch_chromium(extra_args: Sequence[str] = ()) -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright's sync API; closed on leaving."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args], headless=True, timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class OfflineContext:
    """A browser context with every request aborted except the pages it was told to allow."""

    context: Any
    allowed: set[str] = field(default_factory=set)
    aborted: list[str] = field(default_factory=list)

    def allow(self, path: pathlib.Path) -> str:
        """Lets the page at `path` load (a file://, like the one opened)."""
        url = path.resolve().as_uri()
        self.allowed.add(url)
        return url

    def open(self, path: pathlib.Path) -> tuple[Any, PageWatch]:
        url = self.allow(path)
        page = self.context.new_page()
        watch = PageWatch().attach(page)
        page.goto(url, wait_until="load")
        return page, watch


# ----------------------------------------------------------------------------
# JupyterLab


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children first found by /proc's parent links)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces
        fields = stat[stat.rfind(")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == current]
        found.extend(kids)
        frontier.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie counts as gone
    with contextlib.suppress(OSError):
        if pathlib.Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _alive(p)]
    return left


@dataclass
class JupyterLab:
    """A running JupyterLab server (see the `jupyter_lab` fixture)."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    root_dir: pathlib.Path
    log_path: pathlib.Path
    kernel_pids: set[int] = field(default_factory=set)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 10) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log()[-chars:]

    def note_kernels(self) -> None:
        """Remember the pids of the kernels the server started, to be sure they end."""
        self.kernel_pids.update(_descendants(self.process.pid))

    def kernel_problems(self) -> list[str]:
        """Failures in the server log since the first kernel started (kernels write their stderr there).

        Lines before that are JupyterLab's own start-up (its optional build
        check runs node and may complain); they say nothing about shardviz.
        """
        log = self.log()
        start = log.find("Kernel started:")
        if start < 0:
            return []
        bad = re.compile(r"Traceback|Exception|\bERROR\b|^\[E ")
        return [line for line in log[start:].splitlines() if bad.search(line)]

    def kernel_of(self, notebook: str) -> str:
        """The id of the kernel of the open notebook `notebook` (its path under the root)."""
        ids = [s["kernel"]["id"] for s in self.api("sessions") if s.get("path") == notebook]
        if len(ids) != 1:
            raise RuntimeError(f"expected one kernel for {notebook}, found {ids}")
        return str(ids[0])

    def open_comms(self, kernel_id: str, timeout: float = 30) -> dict[str, str]:
        """The comms the kernel says are open ({comm id: target name}), asked over the
        Jupyter protocol (comm_info_request) on a client of our own, not from inside the kernel."""
        from jupyter_client import BlockingKernelClient

        client = BlockingKernelClient(
            connection_file=str(self.root_dir.parent / "runtime" / f"kernel-{kernel_id}.json")
        )
        client.load_connection_file()
        client.start_channels(hb=False)  # no heartbeat thread: one question, one answer
        try:
            msg_id = client.comm_info()
            deadline = time.monotonic() + timeout
            while True:
                reply = client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        finally:
            client.stop_channels()
        content = reply["content"]
        if content.get("status") != "ok":
            raise RuntimeError(f"comm_info_request failed: {content}")
        return {comm_id: info.get("target_name", "") for comm_id, info in content["comms"].items()}


def _settings_dir(base: pathlib.Path) -> pathlib.Path:
    """User settings: no news, no update check (offline and quiet), and the
    notebook's own kernel starts without a "Select Kernel" dialog."""
    settings = base / "user-settings"
    files = {
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
        "notebook-extension/tracker": {"autoStartDefaultKernel": True},
    }
    for name, values in files.items():
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return settings


def start_jupyter_lab(
    base: pathlib.Path,
    *,
    kernel_devices: int | None = KERNEL_DEVICES,
    server_config: str = "",
    start_s: float = LAB_START_S,
    app: str = "lab",
    python: str | None = None,
    path: str | None = None,
) -> JupyterLab:
    """JupyterLab with its config, data, settings and workspaces under `base` (a fresh folder).

    Kernels see `kernel_devices` simulated CPU devices, or set their own count
    when it is None. `server_config` is written as jupyter_server_config.py.
    `app="notebook"` starts Jupyter Notebook 7 instead (the same jupyter_server,
    settings and offline switches; it serves /tree and /notebooks/<path>).
    `python` runs the server (and so its kernels) from another environment,
    with this repository's source kept off its path and PATH set to `path`:
    the installed wheel's test (tests/browser/test_wheel_lab.py).
    Raises RuntimeError with the log's tail when the server does not answer
    within `start_s` seconds.
    """
    if app not in ("lab", "notebook"):
        raise ValueError(f"app is 'lab' or 'notebook', not {app!r}")
    root = base / "root"
    root.mkdir()
    for name in ("config", "data", "runtime", "workspaces"):
        (base / name).mkdir()
    if server_config:
        (base / "config" / "jupyter_server_config.py").write_text(server_config)
    token = secrets.token_hex(24)
    env = dict(os.environ)
    env.update(
        JAX_PLATFORMS="cpu",
        # the kernel imports this repository's shardviz, installed or not
        PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])]),
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTER_DATA_DIR=str(base / "data"),
        IPYTHONDIR=str(base / "ipython"),
        PYTHONUNBUFFERED="1",
    )
    if kernel_devices is None:
        env.pop("XLA_FLAGS", None)
    else:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={kernel_devices}"
    env.pop("JUPYTER_TOKEN", None)
    if python is not None:  # another environment's own install, never this checkout
        env.pop("PYTHONPATH")
        env.pop("VIRTUAL_ENV", None)
        if path is not None:
            env["PATH"] = path
    log_path = base / ("jupyter-lab.log" if app == "lab" else "jupyter-notebook.log")
    command = [
        python or sys.executable,
        "-m",
        "jupyterlab" if app == "lab" else "notebook",
        "--no-browser",
        # Jupyter refuses to run as root without it (containers)
        *(["--allow-root"] if os.geteuid() == 0 else []),
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.terminals_enabled=False",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        f"--LabApp.user_settings_dir={_settings_dir(base)}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
    ]
    if app == "notebook":
        # Notebook 7's own app reads its settings and workspaces from traits of its own.
        command += [
            f"--JupyterNotebookApp.user_settings_dir={base / 'user-settings'}",
            f"--JupyterNotebookApp.workspaces_dir={base / 'workspaces'}",
        ]
    name = "JupyterLab" if app == "lab" else "Jupyter Notebook"

    def answers(port: int) -> bool:
        status = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {token}"}
        )
        with urllib.request.urlopen(status, timeout=2) as response:
            return bool(response.status == 200)

    process, port = launch_on_free_port(
        lambda port: [*command, f"--ServerApp.port={port}"],
        cwd=root,
        env=env,
        log_path=log_path,
        ready=answers,
        start_s=start_s,
        name=name,
    )
    return JupyterLab(process, port, token, root, log_path)


def serve_from_memory(context: Any, origin: str, files: dict[str, tuple[str, bytes]]) -> list[str]:
    """Answer a Playwright context's requests for `origin` + a path in `files` ((content type, body)
    by path) and abort every other one; returns the list the aborted URLs are added to."""
    aborted: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        path = url[len(origin) :].split("?")[0] if url.startswith(origin) else None
        if path in files:
            kind, body = files[path]
            r.fulfill(status=200, content_type=kind, body=body)
        else:
            aborted.append(url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    return aborted


def launch_on_free_port(
    command: Callable[[int], list[str]],
    *,
    cwd: pathlib.Path,
    env: dict[str, str],
    log_path: pathlib.Path,
    ready: Callable[[int], bool],
    start_s: float,
    name: str,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `command(port)` on a free 127.0.0.1 port in its own process group,
    logging to `log_path`, and wait until `ready(port)`.

    Another process may take the free port between the probe and the bind, so
    a start that fails on the address is tried again (three times in all). A
    server that never gets ready is killed with its group, and RuntimeError
    carries the end of its log.
    """
    last_log = ""
    for _attempt in range(3):
        port = free_port()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command(port),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + start_s
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if ready(port):
                    return process, port
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
        last_log = log_path.read_text(errors="replace")[-4000:]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # nothing it started is worth a clean stop
        process.wait(timeout=10)
        if "already in use" not in last_log and "Address already" not in last_log:
            break
    raise RuntimeError(f"{name} did not start within {start_s} s; its log ends with:\n{last_log}")


def stop_jupyter_lab(lab: JupyterLab) -> None:
    """Shut the server down through its API (which ends its kernels), then end what is left, by pid."""
    lab.note_kernels()
    if lab.process.poll() is None:
        with contextlib.suppress(Exception):
            lab.api("shutdown", method="POST", timeout=5)
        try:
            lab.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.process.send_signal(signal.SIGTERM)
            try:
                lab.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                lab.process.kill()
                lab.process.wait(timeout=10)
    left = _wait_gone(sorted(lab.kernel_pids), 10)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in _wait_gone(left, 5):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def write_notebook(path: pathlib.Path, cells: list[str], cell_types: Sequence[str] | None = None) -> None:
    """A notebook of code cells (or the `cell_types` given: "code", "raw", "markdown"),
    with the python3 kernel named so Lab asks no question."""

    def cell(i: int, src: str, kind: str) -> dict[str, Any]:
        out: dict[str, Any] = {"cell_type": kind, "id": f"cell-{i}", "metadata": {}, "source": src}
        if kind == "code":
            out.update(execution_count=None, outputs=[])
        return out

    kinds = list(cell_types) if cell_types is not None else ["code"] * len(cells)
    notebook = {
        "cells": [cell(i, src, kind) for i, (src, kind) in enumerate(zip(cells, kinds, strict=True))],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))


# ----------------------------------------------------------------------------
# a notebook open in JupyterLab


class LabNotebook:
    """One notebook open in JupyterLab in its own browser context, driven like a user would."""

    def __init__(self, lab: JupyterLab, context: Any, page: Any, watch: PageWatch, outside: list[str]) -> None:
        self.lab = lab
        self.context = context
        self.page = page
        self.watch = watch
        self.outside = outside  # requests to anywhere but the server, all aborted

    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Any:
        """The output element of cell `index` that holds a shardviz picture."""
        return self.cell(index).locator(".jp-OutputArea-output").filter(has=self.page.locator("[data-device-id]"))

    def prompts(self) -> list[str]:
        return [t.strip() for t in self.page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").all_inner_texts()]

    def probe(self, cell: int, count: int) -> dict[str, Any]:
        """Re-run a probe cell that prints `PROBE <count> {json}` and parse that line.

        `count` is how many times the cell will have run, so a stale output
        from an earlier run can never be read by mistake.
        """
        from playwright.sync_api import expect

        self.run_cell(cell)
        marker = f"PROBE {count} "
        out = self.cell(cell).locator(".jp-OutputArea-output", has_text=marker)
        expect(out).to_have_count(1)
        text = out.inner_text()
        return json.loads(text[text.index(marker) + len(marker) :].strip().splitlines()[0])

    def wait_all_executed(self, cells: int) -> None:
        """Every code cell shows an execution count (not `[*]` or `[ ]`) and the kernel is idle."""
        self.page.wait_for_function(
            """(n) => {
                const prompts = [...document.querySelectorAll('.jp-Notebook .jp-Cell .jp-InputPrompt')];
                return prompts.length === n && prompts.every((p) => /\\[\\d+\\]/.test(p.textContent));
            }""",
            arg=cells,
            timeout=120_000,
        )
        self.page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']:visible").first.wait_for()

    def run_all(self, cells: int) -> None:
        """Run > Run All Cells, from the menu bar."""
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        # Park the pointer on the menu bar's edge: pictures drawn under a resting
        # pointer would take it for a hover.
        self.page.mouse.move(1, 1)
        self.wait_all_executed(cells)

    def run_cell(self, index: int) -> None:
        """Put the cursor in the cell's editor and press Ctrl+Enter (run, stay on the cell)."""
        before = self.cell(index).locator(".jp-InputPrompt").inner_text().strip()
        self.cell(index).locator(".jp-InputArea-editor .cm-content").click()
        self.page.keyboard.press("Control+Enter")
        self.page.wait_for_function(
            """([cell, before]) => {
                const p = document.querySelectorAll('.jp-Notebook .jp-Cell')[cell]?.querySelector('.jp-InputPrompt');
                return p && /\\[\\d+\\]/.test(p.textContent) && p.textContent.trim() !== before;
            }""",
            arg=[index, before],
            timeout=60_000,
        )

    def cell_text_outputs(self, index: int) -> list[str]:
        return self.cell(index).locator(".jp-OutputArea-output").all_inner_texts()

    def error_outputs(self) -> list[str]:
        """Tracebacks and stderr text shown under any cell."""
        selector = (
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"
        )
        return self.page.locator(selector).all_inner_texts()

    def assert_healthy(self) -> None:
        """No browser error, no request outside the server, no traceback in a cell or the kernel's log."""
        self.watch.assert_clean()
        assert not self.outside, f"the page tried to reach beyond the server: {self.outside}"
        assert not self.error_outputs(), "a cell shows an error:\n" + "\n".join(self.error_outputs())
        problems = self.lab.kernel_problems()
        assert not problems, "the server/kernel log reports failures:\n" + "\n".join(problems)


def lab_path(notebook: str) -> str:
    """JupyterLab's URL path that opens `notebook` in a workspace of its own.

    In the shared default workspace, a page would also reopen every notebook an
    earlier page of the same server had open, as hidden tabs.
    """
    workspace = re.sub(r"[^A-Za-z0-9-]", "-", notebook.rsplit(".", 1)[0])
    return f"lab/workspaces/{workspace}/tree/{notebook}"


def server_only_context(lab: JupyterLab, browser: Any) -> tuple[Any, list[str]]:
    """A fresh light-theme context whose requests anywhere but the server are aborted, and the list of them."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, color_scheme="light")
    outside: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith((lab.base_url + "/", "blob:", "data:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    return context, outside


@contextlib.contextmanager
def open_notebook(
    server: JupyterLab, browser: Any, name: str, cells: list[str], *, app: str = "lab"
) -> Iterator[LabNotebook]:
    """Writes `name` with `cells` into the server's root and opens it in a fresh light-theme context.

    `app="notebook"` opens Jupyter Notebook 7's own page (/notebooks/<name>) on a
    server started with `start_jupyter_lab(..., app="notebook")`. Its cells, prompts,
    menus, outputs and kernel indicator use JupyterLab's classes, so LabNotebook
    drives it as it is; its `assert_healthy` knows nothing of NOTEBOOK7_START_UP_ERROR
    (see notebook7_problems).
    """
    write_notebook(server.root_dir / name, cells)
    context, outside = server_only_context(server, browser)
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        watch = PageWatch().attach(page)
        if app == "lab":
            page.goto(server.url(lab_path(name)))
            page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
            # The status bar names the kernel and says Idle once it is connected.
            page.locator(".jp-StatusBar-Widget", has_text=KERNEL_IDLE).first.wait_for(timeout=90_000)
        else:
            page.goto(server.url(f"notebooks/{name}"))
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
            # The toolbar names the kernel, and its indicator says idle once the kernel is connected.
            page.locator(".jp-Toolbar-kernelName", has_text="Python 3 (ipykernel)").first.wait_for(timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']:visible").first.wait_for(timeout=90_000)
        yield LabNotebook(server, context, page, watch, outside)
    finally:
        server.note_kernels()
        context.close()


# ----------------------------------------------------------------------------
# Jupyter Notebook 7's page (open_notebook with app="notebook")


# Notebook 7.6's shortcuts plugin reads the settings of a plugin that a sibling
# loads first, during start-up, before its own are in: a page error that the
# bare page shows with no widget and no cell run. Matched by message and place.
NOTEBOOK7_START_UP_ERROR = re.compile(
    r"Cannot read properties of undefined \(reading 'schema'\)\n.*/static/notebook/notebook_core\."
)


def notebook7_problems(watch: PageWatch) -> list[str]:
    """`watch.problems()` less Notebook 7's own start-up page error (NOTEBOOK7_START_UP_ERROR)."""
    return [p for p in watch.problems() if not NOTEBOOK7_START_UP_ERROR.search(p)]


TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def widget_screenshot(page: Any, element: Any, name: str) -> None:
    """The widget's own element into docs/images; the window grows for a widget taller than it (the notebook clips)."""
    viewport = page.viewport_size
    height = element.bounding_box()["height"]
    if height + 300 > viewport["height"]:
        page.set_viewport_size({"width": viewport["width"], "height": int(height) + 300})
    try:
        element.scroll_into_view_if_needed()
        page.mouse.move(1, 1)
        page.evaluate(TWO_FRAMES)
        element.screenshot(path=str(IMAGES / name), animations="disabled", caret="hide", scale="css")
    finally:
        page.set_viewport_size(viewport)
