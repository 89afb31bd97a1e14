"""The live widget in two hosts besides JupyterLab, in Debian's Chromium:
Jupyter Notebook 7 and marimo ("works where anywidget works").

Each host gets the same array, `x` on a 2x4 mesh with P('x', 'y') over 8
simulated CPU devices, and the same checks: the page draws 8 device cells and
the type line `float32[4@x,8@y]`; typing `y, x` + Enter in the spec editor
brings back `float32[4@y,8@x]`, drawn from what the kernel sent, and the
kernel's widget says the same. The page reaches nothing but its own server on
127.0.0.1, and every process started here is ended by id.

Screenshots of each host's widget go to pytest's temporary folder (see
`--basetemp`), never into the repository.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from browser_support import (
    KERNEL_DEVICES,
    NOTEBOOK7_START_UP_ERROR,
    SRC,
    UI_TIMEOUT_MS,
    JupyterLab,
    LabNotebook,
    PageWatch,
    _descendants,
    _wait_gone,
    check_front_end_built,
    launch_on_free_port,
    notebook7_problems,
    open_notebook,
    server_only_context,
    start_jupyter_lab,
    stop_jupyter_lab,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

TYPE_BEFORE = "float32[4@x,8@y]"
TYPE_AFTER = "float32[4@y,8@x]"


def screenshot(element: Any, folder: pathlib.Path, name: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    element.scroll_into_view_if_needed()
    element.screenshot(path=str(path), animations="disabled", caret="hide", scale="css")
    return path


# ----------------------------------------------------------------------------
# Jupyter Notebook 7

SETUP, PROBE = range(2)
NB_CELLS = [
    f"""import json
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz

assert shardviz.__file__.startswith({str(SRC)!r}), shardviz.__file__
assert jax.device_count() == {KERNEL_DEVICES}, jax.devices()
mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
w = shardviz.show(x)""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'type': w.layout.type_str, 'spec_text': w.spec_text, 'error': w.error,
    'array_type': str(jax.typeof(w.array)), 'x_type': str(jax.typeof(x)),
}))""",
]


@pytest.fixture(scope="module")
def jupyter_notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """Jupyter Notebook 7 (the JupyterLab fixture's server, settings and offline switches; app="notebook")."""
    check_front_end_built()
    try:
        server = start_jupyter_lab(tmp_path_factory.mktemp("jupyter-notebook"), app="notebook")
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield server
    finally:
        stop_jupyter_lab(server)


@dataclass
class NotebookSession:
    nb: LabNotebook
    start_up_errors: list[str]  # NOTEBOOK7_START_UP_ERROR seen while the page opened, before any cell ran
    probes: int = 1  # Run All ran the probe once

    def widget(self) -> Any:
        return self.nb.output(SETUP)

    def kernel_state(self) -> dict[str, Any]:
        """Re-run the probe cell (Ctrl+Enter in its editor) and parse the line it prints."""
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)

    def assert_healthy(self) -> None:
        problems = notebook7_problems(self.nb.watch)
        assert not problems, "the browser reported errors:\n" + "\n".join(problems)
        # Notebook 7's own start-up error is let through only from before the first cell ran.
        known = [p for p in self.nb.watch.problems() if NOTEBOOK7_START_UP_ERROR.search(p)]
        assert known == self.start_up_errors, "Notebook 7's start-up error came back later:\n" + "\n".join(known)
        assert not self.nb.outside, f"the page tried to reach beyond the server: {self.nb.outside}"
        errors = self.nb.error_outputs()
        assert not errors, "a cell shows an error:\n" + "\n".join(errors)
        log_problems = self.nb.lab.kernel_problems()
        assert not log_problems, "the server/kernel log reports failures:\n" + "\n".join(log_problems)


@pytest.fixture(scope="module")
def notebook_session(jupyter_notebook: JupyterLab, browser: Any) -> Iterator[NotebookSession]:
    with open_notebook(jupyter_notebook, browser, "shardviz-notebook7.ipynb", NB_CELLS, app="notebook") as nb:
        start_up_errors = [p for p in nb.watch.problems() if NOTEBOOK7_START_UP_ERROR.search(p)]
        nb.run_all(len(NB_CELLS))
        yield NotebookSession(nb, start_up_errors)


def test_notebook7_renders_the_widget(notebook_session: NotebookSession, tmp_path_factory: Any) -> None:
    s = notebook_session
    page = s.nb.page
    assert page.url.split("?")[0].endswith("/notebooks/shardviz-notebook7.ipynb"), page.url
    # Notebook 7's own page, not JupyterLab's.
    config = json.loads(page.locator("#jupyter-config-data").text_content())
    assert config["appName"] == "Jupyter Notebook" and config["appVersion"].startswith("7."), config
    expect(page.locator("body[data-notebook='notebooks']")).to_have_count(1)
    widget = s.widget()
    expect(widget, "no shardviz picture under the first cell").to_have_count(1)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(widget.locator('[data-role="type"]')).to_have_text(TYPE_BEFORE)
    expect(widget.locator('[role="alert"]:visible')).to_have_count(0)
    state = s.kernel_state()
    assert state["type"] == TYPE_BEFORE and state["error"] == "", state
    shot = screenshot(widget, tmp_path_factory.getbasetemp() / "screens", "notebook7-before.png")
    assert shot.stat().st_size > 5_000
    s.assert_healthy()


def test_notebook7_spec_edit_round_trip(notebook_session: NotebookSession, tmp_path_factory: Any) -> None:
    s = notebook_session
    widget = s.widget()
    field = widget.locator('[data-role="spec-input"]')
    field.fill("y, x")
    field.press("Enter")
    # The new type line is drawn from the payload the kernel sends back.
    expect(widget.locator('[data-role="type"]')).to_have_text(TYPE_AFTER)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(widget.locator('[role="alert"]:visible')).to_have_count(0)
    expect(field, "Enter belongs to the widget; Notebook 7 must not take the focus").to_be_focused()
    state = s.kernel_state()
    assert state == {
        "type": TYPE_AFTER,
        "spec_text": "y, x",
        "error": "",
        "array_type": TYPE_AFTER,
        "x_type": TYPE_BEFORE,
    }, state
    screens = tmp_path_factory.getbasetemp() / "screens"
    screenshot(widget, screens, "notebook7-after.png")
    s.nb.page.screenshot(path=str(screens / "notebook7-page.png"))
    s.assert_healthy()


# ----------------------------------------------------------------------------
# marimo

MARIMO_START_S = 90

# The KERNEL cell reads `w.value`, so marimo runs it again after each edit
# that reaches the kernel: the page then shows the kernel's view of the widget.
MARIMO_APP = f"""import marimo

app = marimo.App()


@app.cell
def _():
    import json

    import jax

    jax.config.update("jax_num_cpu_devices", {KERNEL_DEVICES})  # before JAX starts its backends
    import jax.numpy as jnp
    import marimo as mo
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    assert shardviz.__file__.startswith({str(SRC)!r}), shardviz.__file__
    assert jax.device_count() == {KERNEL_DEVICES}, jax.devices()
    return NamedSharding, P, jax, jnp, json, mo, shardviz


@app.cell
def _(NamedSharding, P, jax, jnp, mo, shardviz):
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
    w = mo.ui.anywidget(shardviz.ShardingWidget(x))
    w
    return w, x


@app.cell
def _(jax, json, mo, w, x):
    _seen = w.value  # a dependency on the widget's value: re-run on each edit
    mo.plain_text("KERNEL " + json.dumps({{
        "type": w.widget.layout.type_str, "spec_text": w.widget.spec_text, "error": w.widget.error,
        "array_type": str(jax.typeof(w.widget.array)), "x_type": str(jax.typeof(x)),
    }}))
    return


if __name__ == "__main__":
    app.run()
"""


@dataclass
class Marimo:
    process: subprocess.Popen[bytes]
    port: int
    log_path: pathlib.Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _marimo_env(base: pathlib.Path) -> dict[str, str]:
    home = base / "home"
    home.mkdir()
    env = dict(os.environ)
    env.update(
        JAX_PLATFORMS="cpu",
        PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])]),
        PYTHONUNBUFFERED="1",
        # no update check, and marimo's config, cache and state in a fresh home
        MARIMO_SKIP_UPDATE_CHECK="1",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    env.pop("XLA_FLAGS", None)  # the app sets its own device count
    return env


def stop_marimo(server: Marimo) -> None:
    """SIGTERM to the server (its own session), then SIGKILL to whatever is left, by pid."""
    pids = [server.process.pid, *_descendants(server.process.pid)]
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)
    for pid in _wait_gone(pids, 5):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_marimo(base: pathlib.Path) -> Marimo:
    """`marimo run` of MARIMO_APP on a free 127.0.0.1 port, headless, no token, no sandbox."""
    app = base / "shardviz_app.py"
    app.write_text(MARIMO_APP)
    env = _marimo_env(base)
    marimo = [sys.executable, "-m", "marimo", "-y"]
    log_path = base / "marimo.log"

    def healthy(port: int) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(response.status == 200)

    process, port = launch_on_free_port(
        lambda port: [
            *marimo,
            "run",
            str(app),
            "--headless",
            "--host=127.0.0.1",
            f"--port={port}",
            "--no-token",
            "--no-sandbox",
        ],
        cwd=base,
        env=env,
        log_path=log_path,
        ready=healthy,
        start_s=MARIMO_START_S,
        name="marimo",
    )
    return Marimo(process, port, log_path)


@dataclass
class MarimoPage:
    server: Marimo
    page: Any
    watch: PageWatch
    outside: list[str]

    def kernel_state(self, type_str: str) -> dict[str, Any]:
        """The KERNEL line, once it shows `type_str` (marimo re-runs its cell after an edit)."""
        line = self.page.get_by_text(re.compile(r"^KERNEL "))
        expect(line).to_have_count(1, timeout=60_000)
        expect(line).to_contain_text(f'"type": "{type_str}"', timeout=60_000)
        text = line.inner_text().strip()
        return json.loads(text[len("KERNEL ") :])

    def assert_healthy(self) -> None:
        self.watch.assert_clean()
        assert not self.outside, f"the page tried to reach beyond the server: {self.outside}"
        log = self.server.log()
        bad = [line for line in log.splitlines() if re.search(r"Traceback|Exception|\bERROR\b", line)]
        assert not bad, "marimo's log reports failures:\n" + log[-4000:]


@pytest.fixture(scope="module")
def marimo_page(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[MarimoPage]:
    check_front_end_built()
    try:
        server = start_marimo(tmp_path_factory.mktemp("marimo"))
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        context, outside = server_only_context(server, browser)  # type: ignore[arg-type]
        context.set_default_timeout(UI_TIMEOUT_MS)
        try:
            page = context.new_page()
            watch = PageWatch().attach(page)
            page.goto(f"{server.base_url}/")
            yield MarimoPage(server, page, watch, outside)
        finally:
            context.close()
    finally:
        stop_marimo(server)


def _marimo_widget(mp: MarimoPage) -> Any:
    """The widget's root element (Playwright's CSS locators pierce the shadow root marimo may use)."""
    return mp.page.locator(".shardviz").filter(has=mp.page.locator("[data-device-id]")).first


def test_marimo_renders_the_widget(marimo_page: MarimoPage, tmp_path_factory: Any) -> None:
    mp = marimo_page
    # First run: JAX starts and compiles in marimo's kernel; allow for a loaded machine.
    mp.page.locator("[data-device-id]").first.wait_for(timeout=120_000)
    expect(mp.page.locator("[data-device-id]")).to_have_count(8)
    expect(mp.page.locator('[data-role="type"]')).to_have_text(TYPE_BEFORE)
    expect(mp.page.locator('[role="alert"]:visible')).to_have_count(0)
    state = mp.kernel_state(TYPE_BEFORE)
    assert state["type"] == TYPE_BEFORE and state["error"] == "", state
    shot = screenshot(_marimo_widget(mp), tmp_path_factory.getbasetemp() / "screens", "marimo-before.png")
    assert shot.stat().st_size > 5_000
    mp.assert_healthy()


def test_marimo_spec_edit_round_trip(marimo_page: MarimoPage, tmp_path_factory: Any) -> None:
    mp = marimo_page
    field = mp.page.locator('[data-role="spec-input"]')
    expect(field).to_have_count(1)
    field.fill("y, x")
    field.press("Enter")
    expect(mp.page.locator('[data-role="type"]')).to_have_text(TYPE_AFTER)
    expect(mp.page.locator("[data-device-id]")).to_have_count(8)
    expect(mp.page.locator('[role="alert"]:visible')).to_have_count(0)
    state = mp.kernel_state(TYPE_AFTER)
    assert state == {
        "type": TYPE_AFTER,
        "spec_text": "y, x",
        "error": "",
        "array_type": TYPE_AFTER,
        "x_type": TYPE_BEFORE,
    }, state
    screens = tmp_path_factory.getbasetemp() / "screens"
    screenshot(_marimo_widget(mp), screens, "marimo-after.png")
    mp.page.screenshot(path=str(screens / "marimo-page.png"), full_page=True)
    mp.assert_healthy()
