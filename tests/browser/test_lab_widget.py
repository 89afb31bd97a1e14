"""The live widget in JupyterLab 4 with a real kernel (8 simulated CPU devices).

One notebook, opened once for the module; its cells are run with Run > Run
All Cells, then edited through the widget's own controls like a user would.
The kernel side is read back by re-running a probe cell and parsing what it
prints. The first tests also take the README screenshots (docs/images/).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import IMAGES, KERNEL_WATCH, UI_TIMEOUT_MS, JupyterLab, LabNotebook, open_notebook, png_size
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

HOSTILE_A = "<img src=x onerror=window.__pwned=1>"
HOSTILE_B = "</script><script>window.__pwned=2</script>"

SETUP, PROBE, THREE_AXES, REPLICATED, HOSTILE = range(5)
CELLS = [
    # SETUP: also records every warning or error logged in the kernel
    # (ipykernel logs an exception raised by a comm handler there).
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz

{KERNEL_WATCH}
mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
w = shardviz.show(x)

# Count the spec edits that reach the kernel: each is one numbered edit message (widgets/base.py).
_received = []
_numbers = []  # each message's edit number, to tell when the last is answered
_take_edit = w._take_edit
def _recording_take_edit(message):
    if message.get('control') == 'spec_text':
        _received.append(message.get('text'))
    _numbers.append(message.get('seq'))
    return _take_edit(message)
w._take_edit = _recording_take_edit""",
    # PROBE: the kernel's view of the widget, one JSON line per run
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'type': w.layout.type_str, 'memory_kind': w.memory_kind, 'spec_text': w.spec_text,
    'error': w.error, 'error_source': w.error_source, 'array_type': str(jax.typeof(w.array)),
    'x_type': str(jax.typeof(x)), 'x_deleted': x.is_deleted(), 'problems': _problems.records,
    'received': _received, 'answered_last': bool(_numbers) and w.answered_seq == max(_numbers),
}))""",
    # THREE_AXES
    """mesh3 = jax.make_mesh((2, 2, 2), ('a', 'b', 'c'))
x3 = jax.device_put(jnp.arange(64.0).reshape(4, 4, 4), NamedSharding(mesh3, P('a', 'b', 'c')))
w3 = shardviz.show(x3)""",
    # REPLICATED: summing over the x-sharded dim leaves each y block on 2 devices
    """total = jax.jit(lambda a: a.sum(axis=0))(x)
ws = shardviz.show(total)""",
    # HOSTILE: axis names that are HTML and a script end tag
    f"""A = {HOSTILE_A!r}
B = {HOSTILE_B!r}
hostile_mesh = jax.make_mesh((2, 4), (A, B))
hostile = shardviz.show(jax.device_put(jnp.zeros((4, 8)), NamedSharding(hostile_mesh, P(A, B))))""",
]


class Session:
    """The open notebook plus a counter of probe runs."""

    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1  # Run All ran the probe once

    def widget(self, cell: int = SETUP) -> Any:
        return self.nb.output(cell)

    def spec_input(self) -> Any:
        return self.widget().locator('[data-role="spec-input"]')

    def type_line(self, cell: int = SETUP) -> Any:
        return self.widget(cell).locator('[data-role="type"]')

    def commit_spec(self, text: str) -> None:
        """Type a spec the way a user does: replace the text, press Enter."""
        field = self.spec_input()
        field.fill(text)
        field.press("Enter")
        # Enter belongs to the widget: JupyterLab must not take it (e.g. to edit the cell).
        expect(field).to_be_focused()

    def kernel_state(self) -> dict[str, Any]:
        """Re-run the probe cell and parse the line it prints."""
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)

    def screenshot(self, cell: int, name: str, hover: Any = None) -> None:
        """The widget's own element, light theme, the pointer on `hover` or parked away; checked for size."""
        element = self.widget(cell)
        element.scroll_into_view_if_needed()
        if hover is None:
            self.page.mouse.move(1, 1)
        else:
            hover.hover()
        IMAGES.mkdir(parents=True, exist_ok=True)
        path = IMAGES / name
        element.screenshot(path=str(path), animations="disabled", caret="hide", scale="css")
        width, height = png_size(path)
        assert 300 <= width <= 1600 and 200 <= height <= 1600, f"{name} is {width}x{height}"
        assert path.stat().st_size < 300_000, f"{name} is {path.stat().st_size} bytes"


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-live.ipynb", CELLS) as nb:
        # Collapse the file browser so the notebook (and the screenshots) get the width.
        nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        nb.run_all(len(CELLS))
        for cell in (SETUP, THREE_AXES, REPLICATED, HOSTILE):
            expect(nb.output(cell)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield Session(nb)


def device_ids(widget: Any) -> list[int]:
    return sorted(
        int(v)
        for v in widget.locator("[data-device-id]").evaluate_all(
            "els => els.map((e) => e.getAttribute('data-device-id'))"
        )
    )


def wait_stable_type(session: Session, expected: str) -> None:
    expect(session.type_line()).to_have_text(expected, timeout=UI_TIMEOUT_MS)


# ----------------------------------------------------------------------------
# the first pictures (and the README screenshots)


def test_first_picture_2x4(session: Session) -> None:
    widget = session.widget()
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    assert device_ids(widget) == list(range(8))
    expect(session.type_line()).to_have_text("float32[4@x,8@y]")
    expect(widget.locator('[data-device-count="8"]')).to_have_count(1)
    expect(widget.locator('[data-tile-count="8"]')).to_have_count(1)
    expect(widget.locator("[data-tile]")).to_have_count(8)
    expect(widget.locator('[data-role="spec-input"]')).to_have_value("x, y")
    expect(widget.locator('[data-role="mesh-input"]')).to_have_value("x=2, y=4")
    expect(widget.locator('[data-role="memory-kind"]')).to_have_value("device")
    expect(widget.locator('[role="alert"]')).to_have_count(0)
    session.screenshot(SETUP, "mesh-2x4.png")
    session.nb.assert_healthy()


def test_first_picture_three_axes(session: Session) -> None:
    widget = session.widget(THREE_AXES)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(session.type_line(THREE_AXES)).to_have_text("float32[4@a,4@b,4@c]")
    expect(widget.locator('[data-device-count="8"]')).to_have_count(1)
    # A 3-D array is drawn one 2-D slice at a time: 2 x 2 of its 2 x 2 x 2 tiles.
    expect(widget.locator('[data-tile-count="4"]')).to_have_count(1)
    expect(widget.locator("[data-tile]")).to_have_count(4)
    expect(widget.locator('[data-role="spec-input"]')).to_have_value("a, b, c")
    session.screenshot(THREE_AXES, "mesh-3axis.png")
    session.nb.assert_healthy()


def test_first_picture_replicated_sum(session: Session) -> None:
    widget = session.widget(REPLICATED)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(session.type_line(REPLICATED)).to_have_text("float32[8@y]")
    expect(widget.locator('[data-tile-count="4"]')).to_have_count(1)
    expect(widget.locator("[data-tile]")).to_have_count(4)
    # CPU k and CPU k+4 hold the same block: the tile that lists CPU 0 also lists CPU 4.
    first = widget.locator("[data-tile]", has_text=re.compile(r"CPU 0\b"))
    expect(first).to_have_count(1)
    expect(first).to_contain_text("CPU 0,4")
    session.screenshot(REPLICATED, "replicated-sum.png", hover=first)
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# editing through the widget


def test_spec_edit_comes_back_from_the_kernel(session: Session) -> None:
    session.commit_spec("y, x")
    wait_stable_type(session, "float32[4@y,8@x]")
    expect(session.widget().locator("[data-device-id]")).to_have_count(8)
    state = session.kernel_state()
    assert state["type"] == "float32[4@y,8@x]"
    assert state["array_type"] == "float32[4@y,8@x]"
    assert state["spec_text"] == "y, x"
    assert state["error"] == ""
    assert (state["x_type"], state["x_deleted"]) == ("float32[4@x,8@y]", False)  # the user's array untouched
    session.nb.assert_healthy()


def test_bad_spec_shows_an_alert_beside_the_spec_and_keeps_the_picture(session: Session) -> None:
    session.commit_spec("y, x")
    wait_stable_type(session, "float32[4@y,8@x]")
    widget = session.widget()

    session.commit_spec("z, x")
    alert = widget.locator('[role="alert"]')
    expect(alert).to_have_count(1)
    expect(alert).to_contain_text(re.compile(r"\bz\b"))
    # Beside the control that caused it: the smallest box holding the alert and the
    # spec input holds neither the mesh input nor the memory-kind select.
    shared = alert.evaluate(
        """(alert) => {
            const spec = alert.closest('.jp-OutputArea-output').querySelector('[data-role="spec-input"]');
            let box = alert.parentElement;
            while (box && !box.contains(spec)) box = box.parentElement;
            return {
                mesh: !!box.querySelector('[data-role="mesh-input"]'),
                memory: !!box.querySelector('[data-role="memory-kind"]'),
            };
        }"""
    )
    assert shared == {"mesh": False, "memory": False}, "the spec error is not placed beside the spec input"
    # The last good picture stays.
    expect(session.type_line()).to_have_text("float32[4@y,8@x]")
    expect(widget.locator("[data-device-id]")).to_have_count(8)

    state = session.kernel_state()
    assert state["type"] == "float32[4@y,8@x]"
    assert state["error_source"] == "spec"
    assert re.search(r"\bz\b", state["error"]), state["error"]

    # A good edit clears the alert.
    session.commit_spec("x, y")
    wait_stable_type(session, "float32[4@x,8@y]")
    expect(alert).to_have_count(0)
    session.nb.assert_healthy()


def test_memory_kind_pinned_host(session: Session) -> None:
    session.commit_spec("x, y")
    wait_stable_type(session, "float32[4@x,8@y]")
    widget = session.widget()
    select = widget.locator('[data-role="memory-kind"]')
    options = select.locator("option").evaluate_all("els => els.map((e) => e.value)")
    assert {"device", "pinned_host", "unpinned_host"} <= set(options), options

    select.select_option("pinned_host")
    wait_stable_type(session, "float32<host>[4@x,8@y]")
    expect(select).to_have_value("pinned_host")
    expect(session.type_line().locator("xpath=..")).to_contain_text("pinned_host")  # the type line's row
    state = session.kernel_state()
    assert (state["type"], state["memory_kind"], state["error"]) == ("float32<host>[4@x,8@y]", "pinned_host", "")
    assert state["array_type"] == "float32<host>[4@x,8@y]"

    select.select_option("device")
    wait_stable_type(session, "float32[4@x,8@y]")
    session.nb.assert_healthy()


def test_burst_of_200_spec_edits_ends_in_the_last_one(session: Session) -> None:
    """Issue "robustness": 200 edits typed within about a second end in the last edit's state."""
    session.commit_spec("x, y")
    wait_stable_type(session, "float32[4@x,8@y]")
    texts = ["x, y", "y, x", "None, (x, y)"]
    edits = [texts[i % 3] for i in range(199)] + ["None, (x, y)"]
    assert edits[-2] != edits[-1]

    received_before = len(session.kernel_state()["received"])
    field = session.spec_input()
    field.focus()
    started = time.monotonic()
    # Each edit replaces the text and presses Enter; edit i goes out 5 ms * i
    # after the start (1 s in all), so the kernel's answers to earlier edits
    # arrive while the user is still typing.
    field.evaluate(
        """async (input, edits) => {
            const start = performance.now();
            let i = 0;
            while (i < edits.length) {
                for (; i < edits.length && performance.now() - start >= i * 5; i++) {
                    input.value = edits[i];
                    input.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: edits[i] }));
                    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', code: 'Enter', bubbles: true, cancelable: true }));
                }
                await new Promise((resolve) => setTimeout(resolve, 1));
            }
        }""",
        edits,
    )
    # How long the burst took to type is printed, not asserted: no test asserts
    # a time (make bench measures the round trip).
    typed_in = time.monotonic() - started

    # The widget manager sends one update at a time: while the kernel is busy
    # with one, later edits wait in a buffer that goes out, merged into the last
    # state, once the kernel says idle. And JupyterLab runs widget messages on a
    # kernel subshell, a thread beside the cells'. So a probe cell run now may
    # run before the last edit arrives, or while it is being answered: probe
    # until it has been answered (one that never is fails below after a minute).
    deadline = time.monotonic() + 60
    state = session.kernel_state()
    while not (state["received"][-1:] == [edits[-1]] and state["answered_last"]) and time.monotonic() < deadline:
        time.sleep(0.5)
        state = session.kernel_state()
    burst = state["received"][received_before:]
    print(f"burst typed in {typed_in:.2f} s; the kernel received {len(burst)} of {len(edits)} edits")
    assert burst and burst[-1] == "None, (x, y)", burst[-5:]
    assert set(burst) <= set(texts), set(burst)
    assert state["problems"] == [], state["problems"]
    assert (state["type"], state["spec_text"], state["error"]) == ("float32[4,8@(x,y)]", "None, (x, y)", "")
    assert state["array_type"] == "float32[4,8@(x,y)]"
    widget = session.widget()
    wait_stable_type(session, "float32[4,8@(x,y)]")
    expect(field).to_have_value("None, (x, y)")
    expect(widget.locator('[role="alert"]')).to_have_count(0)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(widget.locator('[data-tile-count="8"]')).to_have_count(1)
    # Still the same after the DOM settles: nothing late overwrites the last edit.
    session.kernel_state()
    expect(session.type_line()).to_have_text("float32[4,8@(x,y)]")
    expect(field).to_have_value("None, (x, y)")
    session.nb.assert_healthy()


def test_mesh_edit_and_bad_mesh(session: Session) -> None:
    session.commit_spec("x, y")
    wait_stable_type(session, "float32[4@x,8@y]")
    widget = session.widget()
    mesh_input = widget.locator('[data-role="mesh-input"]')

    mesh_input.fill("x=4, y=2")
    mesh_input.press("Enter")
    expect(widget.locator('[data-tile-count="8"]')).to_have_count(1)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    state = session.kernel_state()
    assert (state["type"], state["error"]) == ("float32[4@x,8@y]", "")
    assert state["array_type"] == "float32[4@x,8@y]"

    # 12 devices asked for, 8 present: an alert beside the mesh input, the picture kept.
    mesh_input.fill("x=3, y=4")
    mesh_input.press("Enter")
    alert = widget.locator('[role="alert"]')
    expect(alert).to_have_count(1)
    beside = alert.evaluate(
        """(alert) => {
            const mesh = alert.closest('.jp-OutputArea-output').querySelector('[data-role="mesh-input"]');
            let box = alert.parentElement;
            while (box && !box.contains(mesh)) box = box.parentElement;
            return !box.querySelector('[data-role="spec-input"]') && !box.querySelector('[data-role="memory-kind"]');
        }"""
    )
    assert beside, "the mesh error is not placed beside the mesh input"
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    state = session.kernel_state()
    assert state["error_source"] == "mesh" and state["error"], state

    mesh_input.fill("x=2, y=4")
    mesh_input.press("Enter")
    expect(alert).to_have_count(0)
    expect(mesh_input).to_have_value("x=2, y=4")
    session.nb.assert_healthy()


def test_jupyterlab_styles_do_not_leak_into_the_inspector(session: Session) -> None:
    """JupyterLab styles `.jp-OutputArea-output dt` (float, width 20%, bold): the
    inspector's labels must still sit on one line, left of their values."""
    widget = session.widget(REPLICATED)
    widget.locator("[data-tile]").first.hover()
    inspector = widget.locator('[data-role="inspector"]')
    expect(inspector.locator("dt")).not_to_have_count(0)
    boxes = inspector.evaluate(
        """(panel) => [...panel.querySelectorAll('dt')].map((dt) => {
            const r = dt.getBoundingClientRect();
            const v = dt.nextElementSibling.getBoundingClientRect();
            const line = parseFloat(getComputedStyle(dt).lineHeight) || 1.4 * parseFloat(getComputedStyle(dt).fontSize);
            return { label: dt.textContent, lines: r.height / line, right: r.right, valueLeft: v.left };
        })"""
    )
    wrapped = [b["label"] for b in boxes if b["lines"] > 1.5 or b["right"] > b["valueLeft"]]
    assert not wrapped, f"inspector labels wrap or run into their values in JupyterLab: {wrapped}"
    session.page.mouse.move(1, 1)


# ----------------------------------------------------------------------------
# hostile strings


def test_hostile_axis_names_show_as_text(session: Session) -> None:
    widget = session.widget(HOSTILE)
    expect(widget.locator("[data-device-id]")).to_have_count(8)
    expect(session.type_line(HOSTILE)).to_have_text(f"float32[4@{HOSTILE_A},8@{HOSTILE_B}]")
    expect(widget).to_contain_text(HOSTILE_A)
    expect(widget).to_contain_text(HOSTILE_B)
    mesh_text = widget.locator('[data-role="mesh-input"]').input_value()
    assert HOSTILE_A in mesh_text and HOSTILE_B in mesh_text, mesh_text
    assert session.page.evaluate("typeof window.__pwned") == "undefined"
    assert widget.locator("img").count() == 0
    assert widget.locator("script").count() == 0
    assert (
        session.page.evaluate(
            "[...document.querySelectorAll('img')].filter((i) => i.getAttribute('src') === 'x').length"
        )
        == 0
    )
    session.nb.assert_healthy()


# ----------------------------------------------------------------------------
# many widgets in one real kernel

MANY_SETUP, MANY_OPEN, MANY_SHOW_REST, MANY_CLOSE, MANY_PROBE = range(5)
MANY_CELLS = [
    """import gc, json, os
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from ipywidgets.widgets.widget import _instances
import shardviz

mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))""",
    # JupyterLab shows at most 50 outputs of a cell: 50 here, 50 in the next.
    """ws = [shardviz.ShardingWidget(x) for _ in range(100)]
for i, w in enumerate(ws):
    w.set_state({'spec_text': 'y, x' if i % 2 else 'x, y'})
for w in ws[:50]:
    display(w)""",
    """for w in ws[50:]:
    display(w)""",
    """for w in ws:
    w.close()
del ws, w
gc.collect()""",
    """_many = globals().get('_many', 0) + 1
_rss = int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20
print(f'PROBE {_many} ' + json.dumps({'instances': len(_instances), 'x_deleted': x.is_deleted(), 'rss_mib': _rss}))""",
]
MANY_ROUNDS = 2


def test_closing_100_widgets_leaves_no_comm_open(jupyter_lab: JupyterLab, browser: Any) -> None:
    """100 widgets shown and closed in a real kernel, twice: the kernel's open comms
    (asked over the Jupyter protocol) and the page's pictures come back to where they were."""
    name = "shardviz-many.ipynb"
    with open_notebook(jupyter_lab, browser, name, MANY_CELLS) as nb:
        pictures = nb.page.locator(".jp-Notebook [data-device-count]")
        nb.run_cell(MANY_SETUP)
        kernel = jupyter_lab.kernel_of(name)
        before = jupyter_lab.open_comms(kernel)
        probes = 1
        rss = [nb.probe(MANY_PROBE, probes)["rss_mib"]]
        for _round in range(MANY_ROUNDS):
            nb.run_cell(MANY_OPEN)
            nb.run_cell(MANY_SHOW_REST)
            expect(pictures).to_have_count(100, timeout=120_000)
            opened = jupyter_lab.open_comms(kernel)
            new = {k: v for k, v in opened.items() if k not in before}
            assert len(new) == 100 and set(new.values()) == {"jupyter.widget"}, new

            nb.run_cell(MANY_CLOSE)
            expect(pictures).to_have_count(0, timeout=120_000)  # the page removed every view
            assert jupyter_lab.open_comms(kernel) == before
            probes += 1
            state = nb.probe(MANY_PROBE, probes)
            rss.append(state.pop("rss_mib"))
            assert state == {"instances": 0, "x_deleted": False}, state
        print(
            f"open comms: {len(before)} before, 100 more while shown, {len(before)} after closing, "
            f"{MANY_ROUNDS} rounds; kernel RSS before and after each round (MiB): {', '.join(f'{r:.0f}' for r in rss)}"
        )
        nb.assert_healthy()
