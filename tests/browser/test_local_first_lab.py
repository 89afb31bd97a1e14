"""In JupyterLab with a live kernel: an edit is drawn from the browser's own engine
in the same task as the keystroke, before the kernel answers, and the kernel's
answer (made from real JAX objects) then leaves the very same picture: nothing
is redrawn and the console reports no disagreement. Edits only the kernel can
judge are waited for.

The kernel is made to answer late (each edit waits 1.5 s in the kernel), so the
browser's answer is seen alone first; JAX's answer for each edit is computed
here, with real JAX objects.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import (
    SRC,
    JupyterLab,
    LabNotebook,
    check_front_end_built,
    open_notebook,
    start_jupyter_lab,
    stop_jupyter_lab,
)
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

KERNEL_DELAY_S = 1.5


def answer_late(widget: str) -> str:
    """Cell source that makes the kernel answer `widget`'s edits late, so that the browser's own answer is seen alone first."""
    return f"""_apply_edit = {widget}.apply_edit
def _late_apply_edit(**edits):
    time.sleep({KERNEL_DELAY_S})
    return _apply_edit(**edits)
{widget}.apply_edit = _late_apply_edit"""


SETUP, PROBE = range(2)
CELLS = [
    f"""import json, time
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz

assert shardviz.__file__.startswith({str(SRC)!r}), shardviz.__file__
mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
w = shardviz.show(x)
{answer_late("w")}""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'type': w.layout.type_str, 'error': w.error, 'error_source': w.error_source, 'spec_text': w.spec_text,
    'devices': w.layout.device_count, 'answered': w.answered_seq, 'payload': w.payload,
}))""",
]

# Records every change of the type line, and what the page has drawn, from now on.
INSTRUMENT = """(root) => {
    window.__typeLog = [];
    const typeText = () => root.querySelector('[data-role="type"]')?.textContent ?? null;
    new MutationObserver(() => window.__typeLog.push(typeText())).observe(root, {
        subtree: true, childList: true, characterData: true,
    });
    window.__renders = () => performance.getEntriesByName('shardviz:render').length;
}"""

# Commits an edit the way the editors take it, and reads the widget in the same task.
COMMIT = """(root, [role, value]) => {
    const control = root.querySelector(`[data-role="${role}"]`);
    const before = window.__renders();
    window.__typeLog = [];
    if (control.tagName === 'SELECT') {
        control.value = value;
        control.dispatchEvent(new Event('change', { bubbles: true }));
    } else {
        control.focus();
        control.value = value;
        control.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: value }));
        control.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', code: 'Enter', bubbles: true, cancelable: true }));
    }
    return {
        type: root.querySelector('[data-role="type"]').textContent,
        devices: root.querySelector('.sv-mesh').getAttribute('data-device-count'),
        alert: root.querySelector('[role="alert"]')?.textContent ?? null,
        renders: window.__renders() - before,
        rendersTotal: window.__renders(),
    };
}"""


class LiveSession:
    """A notebook with a widget whose kernel answers late: its setup and probe cells are these."""

    setup_cell, probe_cell = SETUP, PROBE

    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1
        self.committed = 0  # edits sent, each answered in turn by an answer carrying its number
        self.warnings: list[str] = []
        self.page.on("console", lambda msg: self.warnings.append(msg.text) if msg.type == "warning" else None)
        self.widget = nb.output(self.setup_cell)
        self.root = self.widget.locator(".shardviz")
        self.root.evaluate(INSTRUMENT)

    def commit(self, role: str, value: str) -> dict[str, Any]:
        self.committed += 1
        return dict(self.root.evaluate(COMMIT, [role, value]))

    def kernel_state(self) -> dict[str, Any]:
        """The kernel's view once it has answered every edit committed so far (the probe is re-run
        until then: the kernel may run a cell while a late edit is still being answered)."""
        deadline = time.monotonic() + 60
        while True:
            self.probes += 1
            state = self.nb.probe(self.probe_cell, self.probes)
            if state["answered"] >= self.committed or time.monotonic() > deadline:
                return state

    def drawn(self) -> dict[str, Any]:
        return dict(
            self.root.evaluate(
                """(root) => ({
                    type: root.querySelector('[data-role="type"]').textContent,
                    devices: root.querySelector('.sv-mesh').getAttribute('data-device-count'),
                    tiles: root.querySelector('.sv-map').getAttribute('data-total-tiles'),
                    alert: root.querySelector('[role="alert"]')?.textContent ?? null,
                    renders: window.__renders(),
                    typeLog: window.__typeLog,
                })"""
            )
        )

    def renders(self) -> int:
        return int(self.root.evaluate("() => window.__renders()"))

    def disagreements(self) -> list[str]:
        """What the hosts log when the browser's answer and the kernel's differ (either view's words)."""
        return [w for w in self.warnings if "from the kernel's" in w]


@pytest.fixture(scope="module")
def own_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """A JupyterLab of this module's own: a shared one reopens the other tests' notebooks
    (its workspace remembers them), and Run All could run one of those."""
    check_front_end_built()
    try:
        lab = start_jupyter_lab(tmp_path_factory.mktemp("jupyter-lab-local-first"))
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield lab
    finally:
        stop_jupyter_lab(lab)


@pytest.fixture(scope="module")
def live(own_lab: JupyterLab, browser: Any) -> Iterator[LiveSession]:
    with open_notebook(own_lab, browser, "shardviz-local-first.ipynb", CELLS) as nb:
        nb.run_all(len(CELLS))
        expect(nb.output(SETUP)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield LiveSession(nb)


def jax_answer(spec: P, device_count: int = 8) -> tuple[str, int]:
    """JAX's type and number of tiles for the notebook's array under `spec` (its first 8 devices, 2 x 4)."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:device_count])
    placed = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, spec))
    blocks = {
        tuple(s.indices(n)[:2] for s, n in zip(i, placed.shape))
        for i in placed.sharding.devices_indices_map(placed.shape).values()
    }
    return str(jax.typeof(placed)), len(blocks)


def test_the_local_picture_comes_first_and_the_kernel_keeps_it(live: LiveSession) -> None:
    expected_type, expected_tiles = jax_answer(P("y", "x"))
    at_keystroke = live.commit("spec-input", "y, x")
    # Drawn in the keystroke's own task: no kernel message can have arrived yet (it waits 1.5 s).
    assert at_keystroke["type"] == expected_type, at_keystroke
    assert at_keystroke["renders"] == 1, at_keystroke
    assert at_keystroke["alert"] is None

    state = live.kernel_state()
    assert state["type"] == expected_type and state["error"] == "" and state["answered"] >= 1, state
    after = live.drawn()
    assert after["type"] == expected_type and after["tiles"] == str(expected_tiles)
    # The kernel's answer left the picture as it was: nothing redrawn, the type never changed back.
    assert after["renders"] == at_keystroke["rendersTotal"], after
    assert set(after["typeLog"]) <= {expected_type}, after["typeLog"]
    assert live.disagreements() == [], live.disagreements()
    live.nb.assert_healthy()


def test_a_refusal_shows_at_once_in_the_kernel_words(live: LiveSession) -> None:
    at_keystroke = live.commit("spec-input", "x, x")
    assert at_keystroke["alert"] and "used twice" in at_keystroke["alert"], at_keystroke
    assert at_keystroke["renders"] == 0  # the last good picture stays
    state = live.kernel_state()
    assert state["error"] == at_keystroke["alert"] and state["error_source"] == "spec", state
    after = live.drawn()
    assert after["alert"] == state["error"]
    assert after["renders"] == at_keystroke["rendersTotal"]
    assert live.disagreements() == []
    live.commit("spec-input", "x, y")
    live.kernel_state()
    live.nb.assert_healthy()


def test_edits_only_the_kernel_can_judge_are_waited_for(live: LiveSession) -> None:
    before = live.drawn()
    # Moving the real array to host memory is the kernel's to do.
    at_keystroke = live.commit("memory-kind", "pinned_host")
    assert at_keystroke["type"] == before["type"] and at_keystroke["renders"] == 0, at_keystroke
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    on_host = NamedSharding(mesh, P("x", "y"), memory_kind="pinned_host")
    expected = str(jax.typeof(jax.device_put(jnp.zeros((4, 8)), on_host)))
    assert live.kernel_state()["type"] == expected
    expect(live.root.locator('[data-role="type"]')).to_have_text(expected)
    live.commit("memory-kind", "device")
    assert live.kernel_state()["type"] == before["type"]

    # A mesh of 4 devices takes devices of the machine, which only the kernel knows.
    at_keystroke = live.commit("mesh-input", "x=4")
    assert at_keystroke["devices"] == "8" and at_keystroke["renders"] == 0, at_keystroke
    state = live.kernel_state()
    assert state["devices"] == 4 and state["error"] == "", state
    expect(live.root.locator(".sv-mesh")).to_have_attribute("data-device-count", "4")

    # The kernel's answer is where the next edit starts: drawn at once again, and kept.
    four = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4])
    expected = str(jax.typeof(jax.device_put(jnp.zeros((4, 8)), NamedSharding(four, P(None, "x")))))
    at_keystroke = live.commit("spec-input", "None, x")
    assert at_keystroke["type"] == expected and at_keystroke["renders"] == 1, at_keystroke
    assert live.kernel_state()["type"] == expected
    assert live.drawn()["renders"] == at_keystroke["rendersTotal"]
    assert live.disagreements() == []
    live.nb.assert_healthy()


# --------------------------------------------------------------------------
# the model (tree) view: rules answered in the browser first

TREE_SETUP, TREE_PROBE = range(2)
TREE_CELLS = [
    f"""import json, time
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz

mesh = jax.make_mesh((2, 4), ('data', 'model'))
rep = NamedSharding(mesh, P())
params = {{'embed': jax.device_put(jnp.ones((512, 64)), rep),
          'layers': [{{'w': jax.device_put(jnp.ones((64, 256)), rep),
                       'b': jax.device_put(jnp.ones((256,)), NamedSharding(mesh, P('model')))}} for _ in range(3)]}}
t = shardviz.show(params)
{answer_late("t")}""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'rules_text': t.rules_text, 'error': t.error, 'error_source': t.error_source, 'notice': t.notice,
    'answered': t.answered_seq,
}))""",
]

# Commits rules as the editor takes them (Ctrl+Enter) and reads the widget in the same task.
TREE_COMMIT = """(root, text) => {
    const before = performance.getEntriesByName('shardviz:render').length;
    const input = root.querySelector('[data-role="rules-input"]');
    input.focus();
    input.value = text;
    input.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: text }));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', code: 'Enter', ctrlKey: true, bubbles: true, cancelable: true }));
    const typeOf = (path) => [...root.querySelectorAll('[data-role="leaf"]')]
        .find((row) => row.children[0].textContent === path)?.querySelector('.sv-cell-type')?.textContent ?? null;
    return {
        notice: root.querySelector('[data-role="notice"]')?.textContent ?? null,
        alert: root.querySelector('[role="alert"]')?.textContent ?? null,
        w: typeOf('layers.1.w'),
        embed: typeOf('embed'),
        renders: performance.getEntriesByName('shardviz:render').length - before,
        rendersTotal: performance.getEntriesByName('shardviz:render').length,
    };
}"""


class TreeSession(LiveSession):
    setup_cell, probe_cell = TREE_SETUP, TREE_PROBE

    def commit_rules(self, text: str) -> dict[str, Any]:
        self.committed += 1
        return dict(self.root.evaluate(TREE_COMMIT, text))


@pytest.fixture(scope="module")
def live_tree(own_lab: JupyterLab, browser: Any) -> Iterator[TreeSession]:
    with open_notebook(own_lab, browser, "shardviz-local-first-tree.ipynb", TREE_CELLS) as nb:
        nb.run_all(len(TREE_CELLS))
        expect(nb.output(TREE_SETUP)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield TreeSession(nb)


def test_a_rules_edit_is_drawn_at_once_and_the_kernel_keeps_it(live_tree: TreeSession) -> None:
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    replicated = NamedSharding(mesh, P())
    ruled = NamedSharding(mesh, P(None, "model"))
    w = jax.device_put(jnp.ones((64, 256)), replicated)
    moved = jax.device_put(w, ruled)
    # JAX's own answers: the new type, and the notice counts leaves whose layout really changed.
    changed = sum(not replicated.is_equivalent_to(ruled, 2) for _ in range(3))
    rules = "layers.*.w = None, model"
    at_keystroke = live_tree.commit_rules(rules)
    # Drawn in the keystroke's own task: the kernel waits 1.5 s before it answers.
    assert at_keystroke["w"] == str(jax.typeof(moved)), at_keystroke
    assert at_keystroke["notice"] == f"{changed} leaves re-sharded by 1 rule.", at_keystroke
    assert at_keystroke["renders"] >= 1 and at_keystroke["alert"] is None, at_keystroke

    state = live_tree.kernel_state()
    assert (state["rules_text"], state["error"], state["notice"]) == (rules, "", at_keystroke["notice"]), state
    # The kernel's answer left the picture as the browser drew it: nothing redrawn, no disagreement.
    expect(live_tree.root.locator('[data-role="notice"]')).to_have_text(state["notice"])
    assert live_tree.renders() == at_keystroke["rendersTotal"]
    assert live_tree.disagreements() == [], live_tree.disagreements()
    live_tree.nb.assert_healthy()


def test_a_refused_rule_shows_at_once_in_the_kernel_words(live_tree: TreeSession) -> None:
    at_keystroke = live_tree.commit_rules("layers.*.w = None, model\nembed = nope")
    assert at_keystroke["alert"] and at_keystroke["alert"].startswith("line 2: "), at_keystroke
    assert at_keystroke["renders"] == 0, at_keystroke  # the last good picture stays
    state = live_tree.kernel_state()
    assert state["error"] == at_keystroke["alert"] and state["error_source"] == "rules", state
    expect(live_tree.root.locator('[role="alert"]')).to_have_text(state["error"])
    # The same bad text sent again is judged again, by both sides: it is still wrong.
    again = live_tree.commit_rules("layers.*.w = None, model\nembed = nope")
    assert again["alert"] == state["error"], again
    state = live_tree.kernel_state()
    assert (state["error"], state["rules_text"]) == (again["alert"], "layers.*.w = None, model"), state
    expect(live_tree.root.locator('[role="alert"]')).to_have_text(state["error"])
    assert live_tree.disagreements() == []
    live_tree.nb.assert_healthy()
