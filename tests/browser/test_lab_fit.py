"""Nothing clipped at a notebook's width: JupyterLab 4 at 1280 px with the file browser open.

What-if layouts (an AbstractMesh: no devices needed) of 8, 256 (16x16 and 4x4x16), 512 and 4096
devices. For each, no part of the widget reaches past the output area's right edge and nothing in
it scrolls sideways; the screenshots go to docs/images (fit-<devices>-1280.png).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import IMAGES, KERNEL_WATCH, TWO_FRAMES, JupyterLab, LabNotebook, open_notebook, widget_screenshot
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


MESHES = {
    "8": ("(2, 4), ('a', 'b')", "P('a', 'b')"),
    "256": ("(16, 16), ('a', 'b')", "P('a', 'b')"),
    "256-3axis": ("(4, 4, 16), ('a', 'b', 'c')", "P('a', ('b', 'c'))"),
    "512": ("(8, 8, 8), ('a', 'b', 'c')", "P('a', ('b', 'c'))"),
    "4096": ("(16, 16, 16), ('a', 'b', 'c')", "P('a', ('b', 'c'))"),
}
CELLS = [
    f"""import logging
import jax
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P
import shardviz
{KERNEL_WATCH}
def what_if(sizes, names, spec):
    mesh = AbstractMesh(sizes, names, axis_types=(AxisType.Explicit,) * len(sizes))
    return shardviz.ShardingWidget(NamedSharding(mesh, spec), shape=(256, 4096))""",
    *[f"what_if({mesh}, {spec})" for mesh, spec in MESHES.values()],
]


def output(nb: LabNotebook, cell: int) -> Any:
    """Cell ``cell``'s output holding a widget (a canvas grid has no device elements to find it by)."""
    return nb.cell(cell).locator(".jp-OutputArea-output").filter(has=nb.page.locator("[data-shardviz]"))


@pytest.fixture(scope="module")
def notebook(jupyter_lab: JupyterLab, browser: Any) -> Iterator[LabNotebook]:
    with open_notebook(jupyter_lab, browser, "shardviz-fit.ipynb", CELLS) as nb:
        nb.page.set_viewport_size({"width": 1280, "height": 1000})
        expect(nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")).to_have_count(1)
        nb.run_all(len(CELLS))
        for i in range(1, len(CELLS)):
            expect(output(nb, i)).to_have_count(1, timeout=60_000)
        yield nb


OVERFLOW = """(out) => {
    const edge = out.getBoundingClientRect().right + 0.5;
    const past = [], scrolled = [];
    for (const el of out.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > edge) past.push(`${el.tagName}.${el.className} right ${r.right} > ${edge}`);
        const style = getComputedStyle(el);
        if (/(auto|scroll)/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1)
            scrolled.push(`${el.tagName}.${el.className} ${el.scrollWidth} > ${el.clientWidth}`);
    }
    return {past: past.slice(0, 5), scrolled: scrolled.slice(0, 5)};
}"""


@pytest.mark.parametrize("name", list(MESHES))
def test_nothing_reaches_past_the_output_area_at_1280_px(notebook: LabNotebook, name: str) -> None:
    cell = 1 + list(MESHES).index(name)
    out = output(notebook, cell)
    out.scroll_into_view_if_needed()
    notebook.page.evaluate(TWO_FRAMES)
    found = out.evaluate(OVERFLOW)
    IMAGES.mkdir(parents=True, exist_ok=True)
    if name in ("8", "256", "512", "4096"):
        widget_screenshot(notebook.page, out, f"fit-{name}-1280.png")
    assert found == {"past": [], "scrolled": []}, found
    notebook.assert_healthy()


@pytest.mark.parametrize("name", ["256", "256-3axis"])
def test_every_tile_says_its_devices_or_none_does(notebook: LabNotebook, name: str) -> None:
    """At 256 tiles the map's tiles 0-99 had room for their ids and 100-255 had not: tiles that
    said their devices beside tiles that said nothing. Every tile now does the same."""
    out = output(notebook, 1 + list(MESHES).index(name))
    out.scroll_into_view_if_needed()
    notebook.page.evaluate(TWO_FRAMES)
    tiles = out.locator(".sv-map .sv-tile")
    count = tiles.count()
    assert count == 256
    saying = out.locator(".sv-map .sv-tile:not(.sv-no-devices)").count()
    assert saying in (0, count), f"{saying} of {count} tiles show their devices"
    # The mesh grid: every cell shows its id, whole inside the cell, or no cell does.
    cells = out.evaluate(
        """(out) => [...out.querySelectorAll('.sv-mesh .sv-cell')].map((c) => ({
            shown: getComputedStyle(c).color !== 'rgba(0, 0, 0, 0)', fits: c.scrollWidth <= c.clientWidth + 0.5,
            text: c.textContent }))"""
    )
    assert len(cells) == 256
    assert len({c["shown"] for c in cells}) == 1
    if cells[0]["shown"]:
        assert all(c["fits"] for c in cells), [c["text"] for c in cells if not c["fits"]][:5]
