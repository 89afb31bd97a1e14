"""Issue 39's smaller things, live in JupyterLab 4 at 1280 px with the file browser open (8 CPU devices).

One notebook, one kernel: a comparison of two candidates, a tree on an Auto mesh, and an array whose
kernel answers can be held back. Each test reads the page as a user sees it and checks it against JAX's
own objects in the kernel (through the probe cell) or against a hand count written out in the test.
The group list of a program's collective is read on a saved page (no kernel needed).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import (
    COMPARE_MLP_CELL,
    IMAGES,
    KERNEL_WATCH,
    TWO_FRAMES,
    JupyterLab,
    LabNotebook,
    OfflineContext,
    check_front_end_built,
    open_notebook,
    widget_screenshot,
)
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

import shardviz

pytestmark = pytest.mark.browser

SETUP, COMPARE, TREE, ARRAY, HOLD_ON, HOLD_OFF, PROBE = range(7)
CELLS = [
    f"""import json, logging, threading, time
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P, reshard
import shardviz
{KERNEL_WATCH}""",
    f"""{COMPARE_MLP_CELL}cw = shardviz.ComparisonWidget(cmp)
cw""",
    """auto = jax.make_mesh((2, 4), ('data', 'model'), axis_types=(AxisType.Auto,) * 2)
SPECS = {'embed': P('data', 'model'), 'w': P(None, 'model'), 'bias': P('model',), 'scale': P(), 'both': P(('data', 'model'),)}
SHAPES = {'embed': (64, 32), 'w': (32, 16), 'bias': (16,), 'scale': (), 'both': (64,)}
params = jax.jit(
    lambda: {k: jnp.zeros(s) for k, s in SHAPES.items()},
    out_shardings={k: NamedSharding(auto, s) for k, s in SPECS.items()},
)()
tw = shardviz.TreeWidget(params)
tw""",
    """grid = jax.make_mesh((2, 4), ('a', 'b'), axis_types=(AxisType.Explicit,) * 2)
x = jax.device_put(jnp.zeros((8, 8)), NamedSharding(grid, P('a', 'b')))
aw = shardviz.ShardingWidget(x)
# Holds the kernel's answer to an edit back while HOLD is set: the page must not show an older answer meanwhile.
HOLD = threading.Event()
_accepted = aw._accepted
def _held(before, after):
    if HOLD.is_set():
        RELEASED.wait(20)
    _accepted(before, after)
RELEASED = threading.Event()
aw._accepted = _held
aw""",
    "HOLD.set(); RELEASED.clear()",
    "RELEASED.set(); HOLD.clear()",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'leaf_specs': {k: str(v.sharding.spec) for k, v in params.items()},
    'array_spec': str(aw.array.sharding.spec), 'move': aw.move,
    'problems': _problems.records,
}))""",
]


class Session:
    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def widget(self, cell: int) -> Any:
        return self.nb.cell(cell).locator(".jp-OutputArea-output").filter(has=self.page.locator("[data-shardviz]"))

    def role(self, cell: int, role: str) -> Any:
        return self.widget(cell).locator(f'[data-role="{role}"]')

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-small-things.ipynb", CELLS) as nb:
        nb.page.set_viewport_size({"width": 1280, "height": 1000})
        # The file browser is open, as a user's would be: the output area is that much narrower.
        expect(nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")).to_have_count(1)
        nb.run_all(len(CELLS))
        for cell in (COMPARE, TREE, ARRAY):
            expect(Session(nb).widget(cell)).to_have_count(1, timeout=120_000)
        nb.assert_healthy()
        yield Session(nb)


def test_the_comparison_tables_time_bars_fit_the_output_area_at_1280_px(session: Session) -> None:
    out = session.widget(COMPARE)
    out.scroll_into_view_if_needed()
    session.page.evaluate(TWO_FRAMES)
    edges = out.evaluate(
        """(out) => ({
            output: out.getBoundingClientRect().right,
            bars: [...out.querySelectorAll('[data-role="time-bar"]')].map((b) => b.getBoundingClientRect()),
            table: out.querySelector('[data-role="compare-table"]').getBoundingClientRect().right,
        })"""
    )
    assert len(edges["bars"]) == 2
    for bar in edges["bars"]:
        assert bar["width"] >= 40, bar  # still a bar to read, not squeezed to nothing
        assert bar["right"] <= edges["output"] + 0.5, (bar, edges["output"])
    assert edges["table"] <= edges["output"] + 0.5, edges


def test_the_comparisons_side_by_side_fills_mesh_tiles_neutrally(session: Session) -> None:
    """No array is drawn beside a candidate's mesh: every device cell has the one neutral fill
    (compareSides.ts's #d8dee4), not the tile colours of an array's blocks."""
    out = session.widget(COMPARE)
    rows = out.locator('[data-role="compare-row"]')
    rows.nth(0).click()
    rows.nth(1).click()
    meshes = out.locator(".sv-compare-side-meshes .sv-mesh")
    expect(meshes).to_have_count(2)
    fills = out.evaluate(
        """(out) => [...out.querySelectorAll('.sv-compare-side-meshes .sv-mesh .sv-cell')].map(
            (c) => c.dataset.fill || getComputedStyle(c).backgroundColor)"""
    )
    # Two meshes of 8 devices each (4x2 and 2x4).
    assert len(fills) == 16, fills
    assert set(fills) <= {"#d8dee4", "rgb(216, 222, 228)"}, set(fills)
    IMAGES.mkdir(parents=True, exist_ok=True)
    widget_screenshot(session.page, out, "compare-1280.png")


def test_the_leaf_table_shows_each_leafs_spec_on_an_auto_mesh(session: Session) -> None:
    out = session.widget(TREE)
    out.scroll_into_view_if_needed()
    # The types name no axis on an Auto mesh (float32[64,32]): only the spec column says how a leaf is split.
    state = session.kernel_state()
    rows = out.locator('[data-role="leaf"]')
    expect(rows).to_have_count(len(state["leaf_specs"]))
    shown = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        path = row.locator(".sv-cell-path").inner_text()
        shown[path] = row.locator('[data-role="leaf-spec"]').inner_text()
        assert "@" not in row.locator(".sv-cell-type").inner_text()
    assert shown == state["leaf_specs"], (shown, state["leaf_specs"])
    IMAGES.mkdir(parents=True, exist_ok=True)
    widget_screenshot(session.page, out, "tree-auto-spec-1280.png")


def test_the_copies_column_writes_every_row_as_xn(session: Session) -> None:
    """By hand on the 2x4 mesh: embed (data, model) has 1 copy, w (None, model) 2, bias (model) 2,
    scale () 8 and both ((data, model)) 1."""
    out = session.widget(TREE)
    copies = {}
    rows = out.locator('[data-role="leaf"]')
    for i in range(rows.count()):
        row = rows.nth(i)
        copies[row.locator(".sv-cell-path").inner_text()] = row.locator(".sv-cell-copies").inner_text()
    assert copies == {"embed": "\u00d71", "w": "\u00d72", "bias": "\u00d72", "scale": "\u00d78", "both": "\u00d71"}


def test_the_inspector_counts_copies_from_one(session: Session) -> None:
    """x over (a, b) on the 2x4 mesh, spec edited to (a, None): device 0 holds rows 0:4 whole, the first
    of the four copies on a=0; device 3 (a=0, b=3) the fourth."""
    out = session.widget(ARRAY)
    spec = out.locator('[data-role="spec-input"]')
    spec.fill("a, None")
    spec.press("Enter")
    expect(out.locator('[data-role="type"]')).to_have_text("float32[8@a,8]")
    for device, replica in (("0", "1 of 4 copies"), ("3", "4 of 4 copies")):
        out.locator(f'[data-device-id="{device}"]').first.click()
        session.page.mouse.move(1, 1)
        expect(out.locator('[data-role="inspector"]')).to_contain_text(f"Device {device}")
        facts = dict(
            out.locator('[data-role="inspector"]').evaluate(
                "(p) => [...p.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])"
            )
        )
        assert facts["replica"] == replica, facts
    out.locator('[data-device-id="3"]').first.click()  # unpin
    session.page.mouse.move(1, 1)


def test_the_hint_under_a_refused_draft_says_what_esc_returns_to(session: Session) -> None:
    out = session.widget(ARRAY)
    spec = out.locator('[data-role="spec-input"]')
    spec.fill("a, nope")
    spec.press("Enter")
    expect(out.locator('[role="alert"][data-source="spec"]')).to_contain_text("nope")
    spec.press("End")
    spec.press_sequentially("e")  # the refused text, changed: a draft again
    hint = out.locator('[data-role="draft-hint"]')
    expect(hint).to_contain_text('"a, nope" was refused')
    # (a, None) in force, which the box writes as Python's spec_text does: "a".
    expect(hint).to_contain_text('Esc reverts to "a"')
    spec.press("Escape")
    expect(spec).to_have_value("a")
    expect(hint).to_have_count(0)


def test_the_move_line_waits_for_the_answer_to_the_latest_edit(session: Session) -> None:
    """(a, b) -> (a, None) gathered over b; (a, None) -> (None, None) gathers over a. While the kernel
    works on the second edit, the first one's all-gather over b must not be shown as its move."""
    out = session.widget(ARRAY)
    spec = out.locator('[data-role="spec-input"]')
    for text in ("a, b", "a, None"):
        spec.fill(text)
        spec.press("Enter")
    move = out.locator('[data-role="move"]')
    expect(move).not_to_have_attribute("data-pending", "")
    expect(move.locator('[data-role="move-collective"]')).to_have_count(1)
    expect(move).to_contain_text("over b")
    # Hold the kernel's next answer: the page predicts the layout at once, the move must wait.
    session.nb.run_cell(HOLD_ON)
    spec.fill("None, None")
    spec.press("Enter")
    expect(out.locator('[data-role="type"]')).to_have_text("float32[8,8]")
    session.page.wait_for_timeout(500)  # the kernel has the edit; its answer is held
    expect(move).to_have_attribute("data-pending", "")
    expect(move.locator('[data-role="move-collective"]')).to_have_count(0)
    expect(move).not_to_contain_text("over b")
    # Released, the kernel answers that edit, and the move line shows its all-gather over a.
    session.nb.run_cell(HOLD_OFF)
    expect(move).not_to_have_attribute("data-pending", "", timeout=30_000)
    expect(move).to_contain_text("over a")
    state = session.kernel_state()
    assert state["array_spec"] == "P(None, None)" and state["problems"] == [], state
    assert [c["kind"] for c in state["move"]["collectives"]] == ["all-gather"], state["move"]
    session.nb.assert_healthy()


def test_a_group_of_four_evenly_spaced_devices_is_named_whole(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """Rows over x of a 4x2 mesh (device 2x + y) summed: an all-reduce over x in two groups, by hand
    {0, 2, 4, 6} and {1, 3, 5, 7}. Four ids are all written out, never "0, 2, 4, ..., 6 (step 2)"."""
    check_front_end_built()
    mesh = jax.make_mesh((4, 2), ("x", "y"), devices=jax.devices()[:8], axis_types=(AxisType.Auto,) * 2)
    a = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("x", None)))
    prog = shardviz.trace(lambda v: jnp.sum(v, axis=0), a)
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(prog, tmp_path / "groups.html")))
    rows = page.locator('[data-role="collective"]')
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-kind") == "all-reduce"
    rows.first.click()
    members = page.locator('[data-role="group-legend"] [data-role="group"] .sv-group-members')
    expect(members).to_have_count(2)
    assert members.all_inner_texts() == ["group 0: devices 0, 2, 4, 6", "group 1: devices 1, 3, 5, 7"]
    watch.assert_clean()
