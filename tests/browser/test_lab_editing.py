"""The array widget used for a while, in JupyterLab 4 with a live kernel
(8 simulated CPU devices): what the inspector and the editors show after
each answer from the kernel, edits that commit on Enter only, a confirmation
before a large array is replicated, no layout jumps, the copy-code button,
and the large pictures (issue 10; issue 11 points 3-5).

One notebook for the module, run once with Run All; the widgets are then
driven through their own controls like a user would, and the kernel's side is
read back by re-running a probe cell. The last tests switch JupyterLab to its
dark theme. README screenshots go to docs/images/.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from browser_support import IMAGES, KERNEL_WATCH, UI_TIMEOUT_MS, JupyterLab, LabNotebook, open_notebook, png_size
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP, BIG, THREE, THIN, POD, POD512, PASTE, PROBE, BUSY = range(9)
CELLS = [
    # SETUP: every warning or error logged in the kernel is recorded (a comm handler's exception lands there).
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
import shardviz

{KERNEL_WATCH}
mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
w = shardviz.show(x)""",
    # BIG: float32[8192, 8192], 32 MiB a device; replicated it would be 256 MiB on each.
    """make_big = jax.jit(lambda: jnp.zeros((8192, 8192), jnp.float32), out_shardings=NamedSharding(mesh, P('x', 'y')))
big = shardviz.show(make_big(), name='big_array')""",
    # THREE: a rank-3 array whose dim 1 is split by (b, c)
    """mesh3 = jax.make_mesh((2, 2, 2), ('a', 'b', 'c'))
x3 = jax.device_put(jnp.zeros((8, 8, 4)), NamedSharding(mesh3, P('a', ('b', 'c'))))
w3 = shardviz.show(x3)""",
    # THIN: issue 10's what-if with thin tiles
    """thin = shardviz.show(shardviz.ShardingWidget(shape=(64, 256), spec='x'))""",
    # POD: the 4096-device what-if of issue 11
    """pod = shardviz.ShardingWidget(NamedSharding(AbstractMesh((16, 16, 16), ('a', 'b', 'c')), P('a', ('b', 'c'))),
                            shape=(256, 4096))
shardviz.show(pod)""",
    # POD512: issue 11's 8x8x8 mesh with P('data', 'tensor'), its map labels cut to "CPU ×8" before
    """pod512 = shardviz.ShardingWidget(
    NamedSharding(AbstractMesh((8, 8, 8), ('data', 'tensor', 'pipe')), P('data', 'tensor')), shape=(64, 64), platform='cpu')
shardviz.show(pod512)""",
    # PASTE: copied code replaces this and runs
    "pass",
    # PROBE: the kernel's view, one JSON line per run
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'type': w.layout.type_str, 'spec_text': w.spec_text, 'mesh_text': w.mesh_text,
    'error': w.error, 'error_source': w.error_source, 'notice': w.notice,
    'array_spec': str(w.array.sharding.spec), 'big_spec': big.spec_text, 'big_error': big.error,
    'x_matches_widget': x.sharding.is_equivalent_to(w.array.sharding, x.ndim),
    'mesh_is_ours': mesh.axis_names == ('x', 'y'),
    'problems': _problems.records,
}))""",
    # BUSY: from its second run on, holds w's edits back for 8 s (ipykernel 7 may answer them on a thread of
    # their own while a cell runs, but never while the widget's lock is held)
    """import time
_busy = globals().get('_busy', 0) + 1
with w._lock:
    print(f'BUSY {_busy}', flush=True)
    time.sleep(8 if _busy > 1 else 0)""",
]


class Session:
    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1  # Run All ran the probe once
        self.busy_runs = 1  # and the busy cell once, without sleeping

    def widget(self, cell: int = SETUP) -> Any:
        """The cell's shardviz output (found by the widget root: large meshes have no device cells)."""
        return self.nb.cell(cell).locator(".jp-OutputArea-output").filter(has=self.page.locator("[data-shardviz]"))

    def role(self, role: str, cell: int = SETUP) -> Any:
        return self.widget(cell).locator(f'[data-role="{role}"]')

    def type_line(self, cell: int = SETUP) -> Any:
        return self.role("type", cell)

    def commit(self, role: str, text: str, cell: int = SETUP) -> None:
        field = self.role(role, cell)
        field.fill(text)
        field.press("Enter")

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)

    def inspector_facts(self, cell: int = SETUP) -> dict[str, str]:
        pairs = self.role("inspector", cell).evaluate(
            "(panel) => [...panel.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])"
        )
        return dict(pairs)

    def park_pointer(self) -> None:
        self.page.mouse.move(1, 1)

    def screenshot(self, cell: int, name: str) -> None:
        """The widget's own element; the window grows for a widget taller than it (the notebook clips)."""
        element = self.widget(cell)
        viewport = self.page.viewport_size
        height = element.bounding_box()["height"]
        if height + 300 > viewport["height"]:
            self.page.set_viewport_size({"width": viewport["width"], "height": int(height) + 300})
        try:
            element.scroll_into_view_if_needed()
            self.park_pointer()
            IMAGES.mkdir(parents=True, exist_ok=True)
            path = IMAGES / name
            element.screenshot(path=str(path), animations="disabled", caret="hide", scale="css")
        finally:
            self.page.set_viewport_size(viewport)
        width, height = png_size(path)
        assert 300 <= width <= 1600 and 200 <= height <= 1700, f"{name} is {width}x{height}"
        assert path.stat().st_size < 400_000, f"{name} is {path.stat().st_size} bytes"


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-editing.ipynb", CELLS) as nb:
        nb.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=jupyter_lab.base_url)
        nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        nb.run_all(len(CELLS))
        s = Session(nb)
        for cell in (SETUP, BIG, THREE, THIN, POD, POD512):
            expect(s.widget(cell)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield s
        # The server outlives this module, and the theme is a user setting: put it back, saved.
        set_theme(nb.page, "JupyterLab Light")
        wait_until(lambda: saved_theme(jupyter_lab) in ("JupyterLab Light", None), seconds=30)


def saved_theme(lab: JupyterLab) -> str | None:
    """The theme in the server's user settings (None when none was ever saved)."""
    request = urllib.request.Request(
        f"{lab.base_url}/lab/api/settings/@jupyterlab/apputils-extension:themes",
        headers={"Authorization": f"token {lab.token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read()).get("settings", {}).get("theme")


def wait_until(condition: Callable[[], bool], *, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting after {seconds} s"
        time.sleep(0.1)


def set_theme(page: Any, theme: str) -> None:
    """Settings > Theme > `theme`, from the menu bar (nothing when it is the theme already)."""
    if page.evaluate("document.body.dataset.jpThemeName") == theme:
        return
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme$")).first.hover()
    page.locator(".lm-Menu-item", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    light = "true" if theme == "JupyterLab Light" else "false"
    expect(page.locator(f"body[data-jp-theme-light='{light}']")).to_have_count(1, timeout=UI_TIMEOUT_MS)


def reset(session: Session) -> None:
    """Back to x, y on x=2, y=4 with no error, notice or pin (tests may run alone or in any order)."""
    session.park_pointer()
    mesh_input = session.role("mesh-input")
    mesh_input.press("Escape")
    if mesh_input.input_value() != "x=2, y=4":
        session.commit("mesh-input", "x=2, y=4")
        expect(mesh_input).to_have_value("x=2, y=4")
    # Two good spec edits: whatever the last answer said (an error, a notice) is replaced by nothing.
    session.commit("spec-input", "y, x")
    expect(session.type_line()).to_have_text("float32[4@y,8@x]")
    session.commit("spec-input", "x, y")
    expect(session.type_line()).to_have_text("float32[4@x,8@y]")
    expect(session.widget().locator('[role="alert"], [data-role="notice"]')).to_have_count(0)
    # The type line shows the browser's prediction at once: the kernel's answer comes after it.
    expect(session.widget().locator('[data-role="move"][data-pending]')).to_have_count(0, timeout=20_000)
    unpin = session.role("unpin")
    if unpin.count():
        unpin.click()
    expect(session.widget().locator(".sv-pinned")).to_have_count(0)
    session.park_pointer()


# ----------------------------------------------------------------------------
# 10.1 the inspector follows every answer


def test_a_pinned_device_is_described_anew_after_each_edit(session: Session) -> None:
    reset(session)
    session.widget().locator('[data-device-id="5"]').click()
    session.park_pointer()
    assert session.inspector_facts()["tile"] == "t5 [2:4, 2:4]"
    session.role("preview").click()
    expect(session.role("preview-table")).to_have_count(1)

    session.commit("spec-input", "x, None")
    expect(session.type_line()).to_have_text("float32[4@x,8]")
    # Device 5 (x=1, y=1) now holds rows 2:4 whole, the second (y=1) of the four copies on x=1.
    expect(session.role("inspector").locator("h3")).to_contain_text("Device 5")
    facts = session.inspector_facts()
    assert (facts["tile"], facts["replica"], facts["shard shape"]) == ("t1 [2:4, 0:8]", "2 of 4 copies", "(2, 8)")
    expect(session.role("preview-table")).to_have_count(0)  # values of the old layout are gone
    expect(session.widget().locator('[data-device-id="5"].sv-pinned')).to_have_count(1)

    session.widget().locator('[data-role="memory-kind"]').select_option("pinned_host")
    expect(session.type_line()).to_have_text("float32<host>[4@x,8]")
    assert session.inspector_facts()["memory kind"] == "pinned_host"
    session.widget().locator('[data-role="memory-kind"]').select_option("device")
    expect(session.type_line()).to_have_text("float32[4@x,8]")
    assert session.kernel_state()["error"] == ""
    session.nb.assert_healthy()


def test_a_pinned_tile_goes_when_its_block_does(session: Session) -> None:
    reset(session)
    session.widget().locator('[data-tile="6"]').click()
    session.park_pointer()
    expect(session.role("inspector").locator("h3")).to_contain_text("Tile t6")
    session.commit("spec-input", "")
    expect(session.type_line()).to_have_text("float32[4,8]")
    expect(session.role("inspector")).to_have_attribute("data-showing", "none")
    expect(session.role("inspector")).not_to_contain_text("t6")
    expect(session.widget().locator(".sv-pinned")).to_have_count(0)
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# 10.3 / 10.4 the editors show Python's state


def test_after_a_refused_rename_every_editor_shows_the_kernels_mesh(session: Session) -> None:
    """Issue 10.3: rename y to model from its row (refused), then make x Auto."""
    reset(session)
    widget = session.widget()
    name = widget.locator('[data-role="axis-name"]').nth(1)
    name.fill("model")
    name.press("Enter")
    # The mesh and the spec change together (the spec follows the rename), said as a notice; the rename is
    # the kernel's answer, which a loaded machine can take more than expect's 5 s default to give.
    expect(session.type_line()).to_have_text("float32[4@x,8@model]", timeout=20_000)
    expect(session.role("notice")).to_contain_text("axis 'y' is now 'model'")
    expect(session.role("notice")).to_have_attribute("role", "status")
    expect(widget.locator('[role="alert"]')).to_have_count(0)
    expect(session.role("spec-input")).to_have_value("x, model")

    # A refused edit: a mesh the spec cannot use is adapted too, so refuse by size instead.
    session.commit("mesh-input", "x=3, model=4")
    alert = widget.locator('[role="alert"][data-source="mesh"]')
    expect(alert).to_have_count(1)
    expect(session.role("mesh-input")).to_have_value("x=3, model=4")  # the typed text stays beside its error
    names = widget.locator('[data-role="axis-name"]')
    expect(names).to_have_count(2)
    # The rows show the kernel's mesh (polled: they follow the kernel's answer, which may come later).
    for i, axis in enumerate(["x", "model"]):
        expect(names.nth(i)).to_have_value(axis)
    sizes = widget.locator('[data-role="axis-size"]')
    for i, size in enumerate(["2", "4"]):
        expect(sizes.nth(i)).to_have_value(size)

    widget.locator('[data-role="axis-type"]').first.select_option("Auto")
    expect(session.role("mesh-input")).to_have_value("x=2:auto, model=4")
    expect(alert).to_have_count(0)
    state = session.kernel_state()
    assert (state["mesh_text"], state["error"], state["spec_text"]) == ("x=2:auto, model=4", "", "x, model")
    session.commit("mesh-input", "x=2, y=4")
    expect(session.role("spec-input")).to_have_value("x, y")
    session.nb.assert_healthy()


def test_typing_in_an_axis_row_outlives_a_kernel_answer_that_comes_later(session: Session) -> None:
    """The kernel answers a spec edit while the user types a new axis name: the name typed stays."""
    reset(session)
    busy = session.nb.cell(BUSY)
    busy.locator(".jp-InputArea-editor .cm-content").click()
    session.page.keyboard.press("Control+Enter")
    session.busy_runs += 1
    # Its output says the cell holds the widget's lock for 8 s: the edit below is answered after that.
    expect(busy.locator(".jp-OutputArea-output", has_text=f"BUSY {session.busy_runs}")).to_have_count(1)
    # An edit whose move differs from the last one's: its answer changes what the widget shows, and the
    # editors follow it (an answer the same as the browser's prediction changes nothing).
    session.commit("spec-input", "None, y")
    expect(session.type_line()).to_have_text("float32[4,8@y]")  # the browser's prediction
    pending = session.widget().locator('[data-role="move"][data-pending]')
    expect(pending).to_have_count(1)
    name = session.widget().locator('[data-role="axis-name"]').nth(1)
    name.fill("model")
    expect(busy.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]"), timeout=30_000)
    expect(pending).to_have_count(0, timeout=30_000)  # the kernel's answer came while "model" was in the box
    expect(name).to_have_value("model")
    name.press("Enter")
    expect(session.type_line()).to_have_text("float32[4,8@model]", timeout=20_000)
    expect(session.role("notice")).to_contain_text("axis 'y' is now 'model'")
    session.commit("mesh-input", "x=2, y=4")
    expect(session.role("spec-input")).to_have_value("None, y")
    session.nb.assert_healthy()


def test_a_mesh_edit_that_drops_spec_axes_says_so_as_a_notice(session: Session) -> None:
    reset(session)
    session.commit("mesh-input", "x=8")
    notice = session.role("notice")
    expect(notice).to_contain_text("dropped axis 'y', which the new mesh lacks")
    expect(session.widget().locator('[role="alert"]')).to_have_count(0)
    expect(session.type_line()).to_have_text("float32[4,8]")
    expect(session.role("spec-input")).to_have_value("P()")
    state = session.kernel_state()
    assert state["error"] == "" and "dropped axis 'y'" in state["notice"], state
    session.commit("mesh-input", "x=2, y=4")
    # The spec the user set comes back whole on a mesh it fits again, and says so (docs/payload.md, user_spec).
    expect(notice).to_contain_text("The spec is P('x', 'y') again, as you set it")
    expect(session.role("spec-input")).to_have_value("x, y")
    session.nb.assert_healthy()


def test_the_move_line_says_what_each_move_is(session: Session) -> None:
    """Issue 19.3: a host transfer, a permute's pairs, and a move onto other devices, each said plainly."""
    reset(session)
    move = session.role("move")
    session.widget().locator('[data-role="memory-kind"]').select_option("pinned_host")
    expect(move).to_contain_text("host transfer: each device copies its 16 B block from device memory to pinned_host")
    expect(move).not_to_contain_text("needed no collective")
    session.widget().locator('[data-role="memory-kind"]').select_option("device")
    expect(move).to_contain_text("from pinned_host back to device memory")
    session.commit("spec-input", "y, x")
    permute = session.widget().locator('[data-role="move-collective"][data-kind="collective-permute"]')
    expect(permute).to_contain_text("to one other device")
    expect(permute).to_contain_text("sender\u2192receiver pairs")
    expect(move).not_to_contain_text("no set of whole mesh axes")
    session.commit("spec-input", "x, y")
    session.commit("mesh-input", "data=3")
    expect(session.type_line()).to_have_text("float32[4,8]")
    expect(move).to_contain_text("the new layout is on 3 devices, the array was on 8")
    expect(move).not_to_contain_text("traced but did not lower")
    expect(move).not_to_contain_text("_identity")
    session.commit("mesh-input", "x=2, y=4")
    session.commit("spec-input", "x, y")
    session.nb.assert_healthy()


def test_a_replicated_spec_shows_as_P_and_reads_back_as_itself(session: Session) -> None:
    """Issue 19.5: the box of a fully replicated spec says P(), not an empty box with a placeholder."""
    reset(session)
    spec = session.role("spec-input")
    session.commit("spec-input", "")
    expect(session.type_line()).to_have_text("float32[4,8]")
    expect(spec).to_have_value("P()")
    state = session.kernel_state()
    assert (state["spec_text"], state["array_spec"], state["error"]) == ("", "P()", ""), state
    spec.press("Enter")  # what the box shows is read back as the same spec
    expect(session.widget().locator('[role="alert"]')).to_have_count(0)
    assert session.kernel_state()["array_spec"] == "P()"
    session.commit("spec-input", "P()")
    expect(spec).to_have_value("P()")
    expect(session.widget().locator('[role="alert"]')).to_have_count(0)
    session.nb.assert_healthy()


def test_a_refused_texts_error_goes_once_the_box_holds_another_text(session: Session) -> None:
    """Issue 19.2: the status line judges what is in the box now, not the text Python refused."""
    reset(session)
    spec = session.role("spec-input")
    alert = session.widget().locator('[role="alert"][data-source="spec"]')
    session.commit("spec-input", "zz")
    expect(alert).to_have_count(1)
    expect(spec).to_have_attribute("aria-invalid", "true")
    spec.fill("None, x")  # a valid text, not yet applied: the draft line speaks of it
    expect(alert).to_have_count(0)
    expect(spec).not_to_have_attribute("aria-invalid", "true")
    hint = session.widget().locator('[data-status-for="spec-input"] [data-role="draft-hint"]')
    expect(hint).to_contain_text("Enter applies")
    spec.fill("zz")  # the refused text again: its error describes the box again
    expect(alert).to_have_count(1)
    spec.press("Escape")  # Python's text back: no error describes it
    expect(spec).to_have_value("x, y")
    expect(alert).to_have_count(0)
    expect(spec).not_to_have_attribute("aria-invalid", "true")
    expect(session.type_line()).to_have_text("float32[4@x,8@y]")
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# 10.5 edits commit on Enter only


def test_typing_and_leaving_the_box_commits_nothing(session: Session) -> None:
    reset(session)
    before = session.kernel_state()
    spec = session.role("spec-input")
    spec.fill("")  # a cleared box would replicate the array at once on a typing pause
    hint = session.widget().locator('[data-status-for="spec-input"] [data-role="draft-hint"]')
    expect(hint).to_contain_text("per device: 128 B (now 16 B)")
    expect(hint).to_contain_text("Enter applies")
    size = session.widget().locator('[data-role="axis-size"]').first
    size.fill("4")
    size.press("Tab")  # leaves both fields: nothing may commit
    # The probe runs after everything the page sent before it (one channel, in order).
    after = session.kernel_state()
    assert (after["spec_text"], after["mesh_text"], after["type"]) == (
        before["spec_text"],
        before["mesh_text"],
        before["type"],
    )
    expect(session.type_line()).to_have_text("float32[4@x,8@y]")
    expect(spec).to_have_value("")  # the draft waits for Enter
    spec.press("Escape")
    expect(spec).to_have_value("x, y")
    expect(hint).to_have_count(0)
    size = session.widget().locator('[data-role="axis-size"]').first
    size.fill("4")
    size.press("Enter")  # x=4, y=4 needs 16 devices: refused, and the rows show the kernel's mesh again
    expect(session.widget().locator('[role="alert"][data-source="mesh"]')).to_contain_text("16 devices")
    expect(session.role("mesh-input")).to_have_value("x=2, y=4")
    expect(session.widget().locator('[data-role="axis-size"]').first).to_have_value("2")
    session.nb.assert_healthy()


def test_replicating_a_large_array_asks_first(session: Session) -> None:
    reset(session)
    spec = session.role("spec-input", BIG)
    spec.fill("")
    spec.press("Enter")
    confirm = session.role("confirm", BIG)
    expect(confirm).to_contain_text("Each device would hold 256 MiB (now 32 MiB, 8\u00d7)")
    state = session.kernel_state()
    assert (state["big_spec"], state["big_error"]) == ("x, y", "")  # nothing moved
    spec.press("Escape")
    expect(confirm).to_have_count(0)
    expect(spec).to_have_value("x, y")
    # An edit that keeps the share needs no confirmation.
    spec.fill("y, x")
    spec.press("Enter")
    expect(session.type_line(BIG)).to_have_text("float32[8192@y,8192@x]")
    assert session.kernel_state()["big_spec"] == "y, x"
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# 10.6 no layout jumps


def boxes(widget: Any, selectors: list[str]) -> list[dict[str, float]]:
    return [
        widget.locator(s).first.evaluate("(e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y}; }")
        for s in selectors
    ]


def test_errors_and_hovers_move_nothing(session: Session) -> None:
    reset(session)
    widget = session.widget()
    widget.scroll_into_view_if_needed()
    controls = [
        '[data-role="mesh-input"]',
        '[data-role="spec-input"]',
        '[data-role="memory-kind"]',
        '[data-role="axis-add"]',
        '[data-dim-row="1"]',
    ]
    before = boxes(widget, controls)
    height = widget.bounding_box()["height"]
    session.commit("spec-input", "z")  # a one-line error
    expect(widget.locator('[role="alert"]')).to_have_count(1)
    assert boxes(widget, controls) == before, "a short error moved the editors"
    assert widget.bounding_box()["height"] == height
    session.commit("spec-input", "an_axis_name_long_enough_to_fill_a_line_" * 4)  # a long error
    expect(widget.locator('[role="alert"]')).to_contain_text("an_axis_name_long")
    assert boxes(widget, controls[:3]) == before[:3], "a long error moved an editor onto a new row"
    session.commit("spec-input", "x, y")
    expect(widget.locator('[role="alert"]')).to_have_count(0)

    heights = []
    for target in ('[data-device-id="2"]', '[data-tile="3"]', '[data-device-id="7"]'):
        widget.locator(target).hover()
        expect(session.role("inspector")).not_to_have_attribute("data-showing", "none")
        heights.append((widget.bounding_box()["height"], session.role("inspector").bounding_box()["height"]))
    session.park_pointer()
    expect(session.role("inspector")).to_have_attribute("data-showing", "none")
    heights.append((widget.bounding_box()["height"], session.role("inspector").bounding_box()["height"]))
    assert len(set(heights)) == 1, f"the widget's height changes with what the inspector shows: {heights}"
    session.nb.assert_healthy()


def test_pinned_and_hovered_look_different_and_leaving_returns_to_the_pin(session: Session) -> None:
    reset(session)
    widget = session.widget()
    widget.locator('[data-device-id="2"]').click()
    widget.locator('[data-device-id="6"]').hover()
    styles = [
        widget.locator(f'[data-device-id="{i}"]').evaluate(
            "(c) => { const s = getComputedStyle(c); return [s.boxShadow, s.outlineStyle, s.outlineWidth]; }"
        )
        for i in (2, 6)
    ]
    assert styles[0] != styles[1], styles
    assert styles[0][0] != "none"  # the pin's frame
    session.park_pointer()
    expect(session.role("inspector").locator("h3")).to_contain_text("Device 2")
    lit = widget.locator(".sv-mesh .sv-partner")
    expect(lit).to_have_count(1)
    expect(lit).to_have_attribute("data-device-id", "2")
    session.role("unpin").click()
    expect(widget.locator(".sv-partner")).to_have_count(0)


# ----------------------------------------------------------------------------
# 10.2 copy code that runs as pasted


def test_copy_copies_the_code_shown_and_it_runs_as_pasted(session: Session) -> None:
    reset(session)
    session.commit("spec-input", "y, x")
    expect(session.type_line()).to_have_text("float32[4@y,8@x]")
    widget = session.widget()
    widget.locator("details.sv-code-block > summary").click()
    code = session.role("code")
    expect(code).to_contain_text("P('y', 'x')")
    session.role("copy-code").click()
    expect(widget.locator(".sv-code-bar")).to_contain_text("Copied.")
    copied = session.page.evaluate("navigator.clipboard.readText()")
    assert copied == code.inner_text()
    assert copied.startswith("# Defines layout_mesh, layout_sharding; re-places x on this layout.")

    # Paste it into an empty cell and run it: it re-places the notebook's x and clobbers nothing.
    session.nb.cell(PASTE).locator(".jp-InputArea-editor .cm-content").click()
    session.page.keyboard.press("Control+A")
    session.page.keyboard.press("Control+V")
    expect(session.nb.cell(PASTE).locator(".cm-content")).to_contain_text("layout_sharding")
    session.nb.run_cell(PASTE)
    state = session.kernel_state()
    assert state["x_matches_widget"] and state["mesh_is_ours"], state
    assert not session.nb.error_outputs()
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# 10.7, 10.8, 11.3, 11.4: the pictures


def tile_labels(widget: Any) -> list[dict[str, Any]]:
    """For every tile of the map: its height, the label lines it shows, and those cut by its edges."""
    return widget.locator(".sv-map-area").evaluate(
        """(area) => [...area.querySelectorAll('[data-tile]')].map((tile) => {
            const box = tile.getBoundingClientRect();
            const lines = [...tile.querySelectorAll('.sv-tile-name, .sv-badge, .sv-tile-index, .sv-tile-devices')]
                .filter((l) => getComputedStyle(l).display !== 'none' && l.getClientRects().length > 0);
            const cut = lines.filter((l) => {
                const r = l.getBoundingClientRect();
                return r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5 || r.left < box.left - 0.5
                    || r.right > box.right + 0.5 || l.scrollWidth > l.clientWidth + 0.5;
            }).map((l) => l.textContent);
            return { height: box.height, shown: lines.map((l) => l.textContent), cut };
        })"""
    )


def test_thin_tiles_show_whole_lines_only(session: Session) -> None:
    widget = session.widget(THIN)
    expect(widget.locator("[data-tile]")).to_have_count(8)
    expect(session.role("what-if", THIN)).to_contain_text("what-if")
    report = tile_labels(widget)
    assert all(t["height"] < 20 for t in report), report  # the thin strips of issue 10.7
    assert [t["cut"] for t in report] == [[]] * 8, report
    assert all(any("CPU" in s or re.fullmatch(r"\d+", s) for s in t["shown"]) for t in report), report


def crowded_labels(widget: Any) -> list[list[str]]:
    """Neighbouring labels of a ruler along the top closer than 2 px (or overlapping): numbers run together."""
    return widget.locator(".sv-ruler-across").evaluate_all(
        """(rulers) => rulers.flatMap((ruler) => {
            const boxes = [...ruler.querySelectorAll('.sv-ruler-label')].map((l) => [l.textContent, l.getBoundingClientRect()]);
            const close = [];
            for (let i = 1; i < boxes.length; i++)
                if (boxes[i][1].left < boxes[i - 1][1].right + 2) close.push([boxes[i - 1][0], boxes[i][0]]);
            return close;
        })"""
    )


def side_by_side(session: Session, cell: int) -> dict[str, float]:
    """Where the map and the inspector are, against the grid."""
    widget = session.widget(cell)
    # The side column sticks while the grid scrolls past: compare them with the grid's top in view.
    widget.locator(".sv-pictures").evaluate("(e) => e.scrollIntoView({ block: 'start' })")
    mesh = widget.locator(".sv-mesh-slot").bounding_box()
    area = widget.locator(".sv-map-slot").bounding_box()
    inspector = session.role("inspector", cell).bounding_box()
    return {
        "map_left_of_grid_end": area["x"] - (mesh["x"] + mesh["width"]),
        "inspector_top_below_grid_top": inspector["y"] - mesh["y"],
        "inspector_top_below_map_bottom": inspector["y"] - (area["y"] + area["height"]),
        "grid_height": mesh["height"],
        "inspector_left_of_grid_end": inspector["x"] - (mesh["x"] + mesh["width"]),
    }


def test_large_meshes_keep_map_and_inspector_beside_the_grid(session: Session) -> None:
    """Issue 19.4: at 512 and 4096 devices the map and the inspector sit beside the grid, the
    inspector right under the map, and the top rulers' numbers never run together."""
    for cell in (POD512, POD):
        widget = session.widget(cell)
        place = side_by_side(session, cell)
        assert place["map_left_of_grid_end"] >= 0 and place["inspector_left_of_grid_end"] >= 0, place
        assert 0 <= place["inspector_top_below_map_bottom"] < 40, place
        assert place["inspector_top_below_grid_top"] < place["grid_height"] * 0.6, place
        assert crowded_labels(widget) == [], crowded_labels(widget)


def test_512_devices_map_labels_are_whole_lines(session: Session) -> None:
    widget = session.widget(POD512)
    expect(widget.locator("[data-tile]")).to_have_count(64)
    # As a user sees it: in view (JupyterLab skips the layout of cells out of view, and the map
    # fits its labels again once it is laid out).
    widget.locator(".sv-pictures").evaluate("(e) => e.scrollIntoView({ block: 'start' })")
    session.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    report = tile_labels(widget)
    assert [t["cut"] for t in report] == [[]] * 64, [t for t in report if t["cut"]]
    # Each tile still says where it lives: its eight devices (ids alone where "CPU" does not fit).
    assert all(any(re.search(r"\d+-\d+", s) for s in t["shown"]) for t in report), [
        t for t in report if not any(re.search(r"\d+-\d+", s) for s in t["shown"])
    ]
    # Past 256 devices the grid is one canvas, each device's id drawn in its square where it fits
    # (js/components/meshGrid.test.ts checks where each is drawn; the screenshot is looked at).
    expect(widget.locator(".sv-mesh")).to_have_attribute("data-render", "canvas")
    session.screenshot(POD512, "pod-512.png")


def test_the_stepper_takes_arrow_keys_and_dims_devices_outside_the_slice(session: Session) -> None:
    widget = session.widget(THREE)
    widget.locator('[data-role="col-dim"]').select_option("2")  # draw dims 0 and 2; step dim 1
    stepper = widget.locator('[data-role="step"][data-dim="1"]')
    expect(stepper).to_have_count(1)
    outside = widget.locator(".sv-cell.sv-outside")
    expect(outside).to_have_count(6)  # block 0 of dim 1 lives on devices 0 and 4 only
    stepper.focus()
    session.page.keyboard.press("ArrowRight")
    expect(widget.locator(".sv-stepper output")).to_contain_text("block 2 of 4")
    expect(widget.locator('[data-device-id="1"].sv-outside')).to_have_count(0)
    expect(widget.locator('[data-device-id="0"].sv-outside')).to_have_count(1)
    session.page.keyboard.press("ArrowRight")
    expect(widget.locator(".sv-stepper output")).to_contain_text("block 3 of 4")
    session.page.keyboard.press("ArrowLeft")
    expect(widget.locator(".sv-stepper output")).to_contain_text("block 2 of 4")
    session.nb.assert_healthy()


def test_4096_devices_read_as_dim_1_split_by_b_then_c(session: Session) -> None:
    widget = session.widget(POD)
    expect(widget.locator('[data-device-count="4096"]')).to_have_count(1)
    expect(session.role("what-if", POD)).to_contain_text("virtual devices")
    expect(session.role("colour-by", POD)).to_have_value("dim:1")
    legend = session.role("colour-legend", POD)
    expect(legend).to_contain_text("split by b\u00a0(16) then c\u00a0(16)")
    rulers = widget.locator('[data-role="ruler"]')
    assert rulers.evaluate_all("rs => rs.map((r) => r.getAttribute('data-axis'))") == ["b", "c", "a"]
    b_labels = widget.locator('[data-role="ruler"][data-axis="b"] .sv-ruler-label')
    expect(b_labels).to_have_count(16)
    session.screenshot(POD, "pod-4096.png")
    session.nb.assert_healthy()


def pinned_and_shown(session: Session) -> tuple[str, str]:
    """The device named by the pin bar and the one the inspector describes."""
    pin = session.role("pin-bar", POD).inner_text()
    shown = session.role("inspector", POD).locator("h3").inner_text()
    return re.search(r"Device (\d+)", pin).group(1), re.search(r"Device (\d+)", shown).group(1)


def test_pinning_on_the_canvas_grid_shows_the_pinned_device(session: Session) -> None:
    """Issue 19.1: click two devices of the 4096-device canvas, move away: the inspector shows the pin."""
    canvas = session.widget(POD).locator(".sv-mesh canvas")
    inspector = session.role("inspector", POD)

    def on_a_device(fx: float, fy: float) -> tuple[float, float]:
        """A point near (fx, fy) of the canvas over a device (not a gap or a caption): the hover says so."""
        canvas.evaluate("(c) => c.scrollIntoView({ block: 'start' })")
        box = canvas.bounding_box()
        for step in range(40):
            x, y = box["x"] + box["width"] * fx + step % 7, box["y"] + box["height"] * fy + step // 7
            session.page.mouse.move(x, y)
            if inspector.get_attribute("data-showing") == "device":
                return x, y
        at = session.page.evaluate(f"document.elementFromPoint({x}, {y})?.outerHTML.slice(0, 200)")
        raise AssertionError(f"no device near ({fx}, {fy}) {box} {session.page.viewport_size} {at}")

    pins = []
    for fx, fy in ((0.3, 0.2), (0.7, 0.6)):
        session.page.mouse.click(*on_a_device(fx, fy))
        session.park_pointer()
        pinned, shown = pinned_and_shown(session)
        assert shown == pinned, f"the pin bar says device {pinned}, the inspector shows device {shown}"
        pins.append(pinned)
    assert pins[0] != pins[1] and "0" not in pins, pins
    session.page.keyboard.press("Escape")
    session.park_pointer()
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# 10.12 the dark theme's buttons


def contrast(a: list[float], b: list[float]) -> float:
    def lum(rgb: list[float]) -> float:
        def channel(v: float) -> float:
            v /= 255
            return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

        r, g, b_ = (channel(c) for c in rgb[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_buttons_keep_a_visible_border_in_the_dark_theme(session: Session) -> None:
    set_theme(session.page, "JupyterLab Dark")
    reset(session)
    session.widget().locator('[data-device-id="5"]').click()
    session.park_pointer()
    button = session.role("preview")
    expect(button).to_have_count(1)
    colours = button.evaluate(
        """(b) => {
            // "rgb(r, g, b)" in 0..255, or "color(srgb r g b)" in 0..1 (what color-mix() computes to)
            const rgb = (c) => { const m = c.match(/[\\d.]+/g).map(Number).slice(0, 3);
                                 return c.startsWith('color(') ? m.map((v) => v * 255) : m; };
            const behind = (e) => { for (let n = e.parentElement; n; n = n.parentElement) {
                const c = getComputedStyle(n).backgroundColor;
                if (!/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') return c; } return 'rgb(255, 255, 255)'; };
            return { border: rgb(getComputedStyle(b).borderTopColor), behind: rgb(behind(b)),
                     fill: rgb(getComputedStyle(b).backgroundColor) };
        }"""
    )
    print("dark theme Preview button:", json.dumps(colours))
    assert contrast(colours["border"], colours["behind"]) >= 3, colours
    assert contrast(colours["border"], colours["fill"]) >= 3, colours
    session.screenshot(SETUP, "dark-theme.png")
    session.role("unpin").click()
    session.nb.assert_healthy()
