"""Saved pages edited offline: file:// pages with every network cut off, edited
through their own controls, each answer checked against JAX.

The page answers with the engine it carries (js/engine/). A Python widget in
this process takes the same edits: its refusals and notices must be the page's,
word for word, and its placed array (or sharding, for a what-if) is what JAX is
asked about: ``jax.typeof`` for the type line, ``devices_indices_map`` (or
``shard_shape`` on an AbstractMesh) for the number of tiles.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from browser_support import REPO, SRC, OfflineContext, check_front_end_built
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

import shardviz
from shardviz import ShardingWidget

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=window.__pwned=1>"
COURSE_NOTEBOOK = REPO / "notebooks" / "02-jit-propagation.ipynb"


# ----------------------------------------------------------------------------
# JAX's answers


def jax_picture(widget: ShardingWidget) -> tuple[str, int]:
    """(type line, tile count) as JAX gives them for what the Python widget holds."""
    layout = widget.layout
    shape = layout.shape
    sharding = widget.array.sharding if widget.array is not None else layout.sharding
    if widget.array is not None:
        type_str = str(jax.typeof(widget.array))
    else:
        aval = jax.typeof(jax.ShapeDtypeStruct(shape, layout.dtype, sharding=sharding))
        if sharding.memory_kind == "pinned_host":
            aval = aval.update(memory_space=jax.memory.Space.Host)
        type_str = str(aval)
    if isinstance(sharding.mesh, AbstractMesh):  # JAX lays out no devices: count blocks from the shard shape
        tiles = math.prod(n // s if n else 1 for n, s in zip(shape, sharding.shard_shape(shape)))
    else:
        blocks = sharding.devices_indices_map(shape).values()
        tiles = len({tuple(s.indices(n)[:2] for s, n in zip(index, shape)) for index in blocks})
    return type_str, tiles


# ----------------------------------------------------------------------------
# the page


class EditedPage:
    """One saved page, opened offline, and the Python widget that takes the same edits."""

    def __init__(
        self,
        cut: OfflineContext,
        path: pathlib.Path,
        widget: ShardingWidget,
        *,
        same_machine: bool = True,
    ) -> None:
        check_front_end_built()
        self.cut = cut
        self.page, self.watch = cut.open(path)
        self.root = self.page.locator("[data-shardviz-root]").first
        self.widget = widget
        # "Copy code" names the machine's device count, which is the one that made the page.
        self.same_machine = same_machine
        # The text last typed into a box, and the box: while Python refuses it, it stays there.
        self.typed: tuple[str, str] | None = None
        expect(self.root.locator('[data-role="type"]')).to_have_text(widget.layout.type_str)

    def control(self, role: str) -> Any:
        return self.root.locator(f'[data-role="{role}"]')

    def commit(self, role: str, text: str) -> None:
        field = self.control(role)
        field.fill(text)
        field.press("Enter")
        self.typed = (role, text)
        self.python({"mesh-input": "mesh_text", "spec-input": "spec_text"}[role], text)

    def select(self, role: str, value: str, trait: str | None = None, text: str | None = None) -> None:
        """Choose in a select of the page; the widget gets the text the page composes (read back)."""
        self.control(role).first.select_option(value)
        self.typed = None
        if trait is not None:
            self.python(trait, text if text is not None else value)

    def python(self, trait: str, text: str) -> None:
        self.widget.set_state({trait: text})

    def assert_like_python(self) -> None:
        """The page shows what the widget shows: picture (checked against JAX), texts, refusal, notice."""
        w = self.widget
        type_str, tiles = jax_picture(w)
        assert type_str == w.layout.type_str
        expect(self.root.locator('[data-role="type"]')).to_have_text(type_str)
        expect(self.root.locator(".sv-map")).to_have_attribute("data-total-tiles", str(tiles))
        expect(self.root.locator(".sv-mesh")).to_have_attribute("data-device-count", str(w.layout.device_count))
        # A box shows Python's text, but a typed text Python refused stays in its box beside the error.
        refused = {"mesh-input": "mesh", "spec-input": "spec"}
        for role, text in (("spec-input", w.spec_text), ("mesh-input", w.mesh_text)):
            if w.error and self.typed is not None and self.typed[0] == role and w.error_source == refused[role]:
                text = self.typed[1]
            elif role == "spec-input" and text == "":
                text = "P()"  # a replicated spec, as the box writes it (issue 19.5)
            expect(self.control(role)).to_have_value(text)
        expect(self.control("memory-kind")).to_have_value(w.memory_kind)
        if self.same_machine:
            expect(self.control("code")).to_have_text(w.payload["code"])
        alerts = self.root.locator('[role="alert"]')
        if w.error:
            expect(alerts).to_have_count(1)
            # The page knows the machine it was saved on, not the one it is read on (issue 19.6).
            expect(alerts).to_have_text(
                w.error.replace("but this machine has", "but the machine this page was saved on has")
            )
            self.assert_beside(alerts, w.error_source)
        else:
            expect(alerts).to_have_count(0)
        notice = self.root.locator('[data-role="notice"]')
        if w.notice:
            expect(notice).to_have_text(w.notice)
        else:
            expect(notice).to_have_count(0)

    def assert_beside(self, alert: Any, source: str) -> None:
        """The smallest editor box holding the alert holds the control it names, and no other."""
        role = {"mesh": "mesh-input", "spec": "spec-input", "memory_kind": "memory-kind"}[source]
        expect(alert).to_have_attribute("data-source", source)
        box = alert.locator("xpath=ancestor::*[contains(concat(' ', @class, ' '), ' sv-editor ')][1]")
        expect(box.locator(f'[data-role="{role}"]')).to_have_count(1)
        others = {"mesh-input", "spec-input", "memory-kind"} - {role}
        for other in others:
            expect(box.locator(f'[data-role="{other}"]')).to_have_count(0)

    def assert_offline_and_clean(self) -> None:
        assert self.cut.aborted == [], f"the page tried to load: {self.cut.aborted}"
        assert [u for u in self.watch.requests if u != self.page.url] == [], self.watch.requests
        assert self.page.evaluate("typeof window.__pwned") == "undefined"
        self.watch.assert_clean()


def saved(tmp_path: pathlib.Path, name: str, widget: ShardingWidget) -> pathlib.Path:
    """The widget's picture as a saved page (its array's name included, for "Copy code")."""
    return pathlib.Path(shardviz.save_html(widget, tmp_path / f"{name}.html"))


# ----------------------------------------------------------------------------
# a real array's page


def real_array() -> jax.Array:
    # Devices in an order of their own: the page must follow the mesh, not the ids.
    order = [3, 1, 0, 2, 7, 5, 4, 6]
    mesh = Mesh(np.array([jax.devices()[i] for i in order]).reshape(2, 4), ("x", "y"))
    return jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))


def test_real_array_page_edits_offline(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    x = real_array()
    widget = ShardingWidget(x, name="x")
    view = EditedPage(offline_context, saved(tmp_path, "real", widget), widget)
    expect(view.control("local-note")).to_contain_text("Computed in this page, no kernel")
    view.assert_like_python()  # an Auto mesh: no annotations in the type

    view.root.locator('[data-role="explicit-view"]').click()
    view.python("mesh_text", "x=2, y=4")
    view.assert_like_python()

    view.commit("spec-input", "P('y', 'x')")
    view.assert_like_python()
    view.commit("mesh-input", "a=4, b=2")  # the same devices, renamed in place: the spec follows, with a notice
    view.assert_like_python()
    assert view.widget.notice
    view.commit("mesh-input", "a=2, b=2, c=2:auto")
    view.assert_like_python()
    view.select("memory-kind", "pinned_host", "memory_kind")
    view.assert_like_python()

    # Per-axis rows and per-dimension pickers compose the same texts.
    view.select("axis-type", "Auto")
    view.python("mesh_text", view.control("mesh-input").input_value())
    view.assert_like_python()
    picker = view.root.locator('[data-role="spec-axis"][data-dim="1"]')
    picker.select_option(view.widget.layout.mesh.axis_names[-1])  # type: ignore[union-attr]
    view.python("spec_text", view.control("spec-input").input_value())
    view.assert_like_python()

    # Refusals, beside their controls, in Python's words; the last good picture stays.
    for role, text in [
        ("spec-input", "q, None"),
        ("spec-input", "(a, b, c)"),  # 4 rows cannot be cut into 8 blocks
        ("spec-input", "a, b, c"),  # longer than the rank
        ("spec-input", "P(a"),
        ("mesh-input", "a=2, a=4"),
        ("mesh-input", "x=4, y=4"),  # 16 devices: more than the machine
        ("mesh-input", "big=2048, bigger=1024"),
    ]:
        view.commit(role, text)
        view.assert_like_python()
        if text == "x=4, y=4":
            machine = len(jax.devices())
            expect(view.root.locator('[role="alert"]')).to_contain_text(
                f"needs 16 devices but the machine this page was saved on has {machine}"
            )
            expect(view.root.locator('[role="alert"]')).not_to_contain_text("this machine has")
    view.select("memory-kind", "device", "memory_kind")
    view.assert_like_python()

    # Another number of devices is for a kernel to take: the page says so, beside the mesh.
    before = view.widget.payload
    view.control("mesh-input").fill("x=4")
    view.control("mesh-input").press("Enter")
    alert = view.root.locator('[role="alert"]')
    expect(alert).to_contain_text("this page can re-mesh only its own 8 devices")
    view.assert_beside(alert, "mesh")
    expect(view.root.locator('[data-role="type"]')).to_have_text(before["type_str"])

    # "Copy code" rebuilds the edited layout: run it on the array, ask JAX.
    code = view.control("code").text_content() or ""
    assert code == view.widget.payload["code"] and "jax.device_put(x, layout_sharding)" in code
    namespace: dict[str, Any] = {"x": x}
    exec(code, namespace)
    placed = namespace["x"]
    assert str(jax.typeof(placed)) == view.widget.layout.type_str
    assert placed.sharding.devices_indices_map(placed.shape) == view.widget.array.sharding.devices_indices_map(
        placed.shape
    )
    assert not x.is_deleted()
    view.assert_offline_and_clean()


# ----------------------------------------------------------------------------
# a 4096-device what-if


def test_4096_device_what_if_page_edits_offline(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    pod = AbstractMesh((16, 16, 16), ("a", "b", "c"), axis_types=(AxisType.Explicit,) * 3)
    widget = ShardingWidget(NamedSharding(pod, P("a", ("b", "c"))), shape=(256, 4096), dtype="bfloat16")
    view = EditedPage(offline_context, saved(tmp_path, "pod", widget), widget)
    view.assert_like_python()
    expect(view.root.locator(".sv-mesh")).to_have_attribute("data-render", "canvas")

    view.commit("spec-input", "(a, b), c")
    view.assert_like_python()
    view.commit("mesh-input", "a=64, b=64")  # c is gone: the spec drops it, with a notice
    view.assert_like_python()
    assert view.widget.notice
    view.commit("mesh-input", "a=64, b=64:auto")
    view.assert_like_python()
    view.commit("spec-input", "None, (a, b)")
    view.assert_like_python()
    view.select("memory-kind", "pinned_host", "memory_kind")
    view.assert_like_python()
    for role, text in [
        ("spec-input", "(a, b)"),  # 256 rows cannot be cut into 4096 blocks
        ("spec-input", "a, a"),
        ("spec-input", f"'{HOSTILE}'"),
        ("mesh-input", "x=1024, y=1025"),
        ("mesh-input", ", ".join(f"a{i}=1" for i in range(17))),
        ("mesh-input", "x=2:sideways"),
    ]:
        view.commit(role, text)
        view.assert_like_python()
    # Any mesh stays a virtual what-if: 8,960 devices, or 8 (which a kernel would put on its
    # real devices; the page answers as Python does on a machine without devices to take).
    for text in ["x=35, y=256", "x=8", "x=4096:auto"]:
        view.commit("mesh-input", text)
        view.assert_like_python()
    view.assert_offline_and_clean()


# ----------------------------------------------------------------------------
# where the cells are drawn

# For each DOM cell, whether it is drawn where its coordinates say: inside the leaf grid whose
# blocks' captions name its outer coordinates, centred on the headers of its row and column.
CELLS_OFF_THEIR_COORDINATES_JS = """([coords]) => {
    const grid = document.querySelector('[data-shardviz-root] .sv-mesh');
    const centre = (r) => [(r.left + r.right) / 2, (r.top + r.bottom) / 2];
    const leaves = [...grid.querySelectorAll('.sv-leaf')].map((leaf) => {
        const outer = {};
        for (let b = leaf.closest('.sv-block'); b; b = b.parentElement.closest('.sv-block'))
            outer[b.dataset.axis] = Number(b.dataset.axisIndex);
        return { leaf, outer };
    });
    const off = [];
    for (const cell of grid.querySelectorAll('[data-device-id]')) {
        const at = coords[cell.dataset.deviceId];
        const names = Object.keys(at);
        const [rowAxis, colAxis] = names.length >= 2 ? names.slice(-2) : [null, names[0]];
        const home = leaves.find(({ outer }) => Object.entries(outer).every(([n, i]) => at[n] === i));
        const box = cell.getBoundingClientRect();
        const leafBox = home.leaf.getBoundingClientRect();
        const header = (axis) => [...home.leaf.querySelectorAll('.sv-coord')]
            .find((h) => h.dataset.axis === axis && h.textContent === String(at[axis]));
        const [x, y] = centre(box);
        const inside = box.left >= leafBox.left && box.right <= leafBox.right + 0.5
            && box.top >= leafBox.top && box.bottom <= leafBox.bottom + 0.5;
        const column = colAxis === undefined || Math.abs(centre(header(colAxis).getBoundingClientRect())[0] - x) <= 1;
        const row = rowAxis === null || Math.abs(centre(header(rowAxis).getBoundingClientRect())[1] - y) <= 1;
        if (!inside || !column || !row) off.push({ id: cell.dataset.deviceId, at, inside, column, row });
    }
    return off;
}"""


def device_coordinates(widget: ShardingWidget) -> dict[str, dict[str, int]]:
    """Each device's mesh coordinates, from JAX's mesh (virtual devices are numbered in mesh order)."""
    mesh = widget.array.sharding.mesh if widget.array is not None else widget.layout.sharding.mesh
    names = list(mesh.axis_names)
    if isinstance(mesh, AbstractMesh):
        ids = np.arange(math.prod(mesh.axis_sizes)).reshape(mesh.axis_sizes)
    else:
        ids = np.vectorize(lambda d: d.id)(mesh.devices)
    return {str(ids[c]): dict(zip(names, map(int, c))) for c in np.ndindex(ids.shape)}


def cells_off_their_coordinates(view: EditedPage) -> list[dict[str, Any]]:
    view.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return view.page.evaluate(CELLS_OFF_THEIR_COORDINATES_JS, [device_coordinates(view.widget)])


@pytest.mark.parametrize("what", ["real", "what-if"])
def test_cells_are_drawn_at_their_coordinates(
    what: str, offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """The cells are one layer placed over the blocks: after mesh edits (devices in an order of
    their own included) and as the page narrows and the blocks wrap anew, each cell is drawn in
    its block at its row and column, as JAX's mesh places the device."""
    if what == "real":
        widget, meshes = ShardingWidget(real_array(), name="x"), ["x=2, y=2, z=2", "z=2, y=2, x=2", "x=8", "x=2, y=4"]
    else:
        # The largest DOM grid: past 256 devices the grid is one canvas.
        pod = AbstractMesh((4, 8, 8), ("a", "b", "c"), axis_types=(AxisType.Explicit,) * 3)
        widget = ShardingWidget(NamedSharding(pod, P("a", ("b", "c"))), shape=(1024, 4096))
        meshes = ["a=4, b=64", "a=2, b=2, c=4, d=16", "a=4, b=8, c=8"]
    view = EditedPage(offline_context, saved(tmp_path, what, widget), widget)
    expect(view.root.locator(".sv-mesh")).to_have_attribute("data-render", "dom")
    assert cells_off_their_coordinates(view) == []
    for text in meshes:
        view.commit("mesh-input", text)
        view.assert_like_python()
        assert cells_off_their_coordinates(view) == [], text
    view.page.set_viewport_size({"width": 700, "height": 900})
    assert cells_off_their_coordinates(view) == []
    view.assert_offline_and_clean()


# Past 64 devices a cell's fill is drawn on a canvas under it. For each DOM cell: its inline
# background (none expected), and the canvas's colour at the cell's centre as "r,g,b,a".
CELL_FILLS_JS = """() => {
    const grid = document.querySelector('[data-shardviz-root] .sv-mesh');
    const canvas = grid.querySelector('canvas.sv-cell-fills');
    if (!canvas) return null;
    const box = canvas.getBoundingClientRect();
    const scale = canvas.width / box.width;
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const out = {};
    for (const cell of grid.querySelectorAll('[data-device-id]')) {
        const r = cell.getBoundingClientRect();
        const x = Math.floor(((r.left + r.right) / 2 - box.left) * scale);
        const y = Math.floor(((r.top + r.bottom) / 2 - box.top) * scale);
        const at = 4 * (y * canvas.width + x);
        out[cell.dataset.deviceId] = {
            background: getComputedStyle(cell).backgroundColor,
            drawn: [...pixels.slice(at, at + 4)].join(','),
        };
    }
    return out;
}"""

# The map's tiles (DOM at these tile counts): the colour each is filled with, as "r,g,b,255".
MAP_FILLS_JS = """() => [...document.querySelectorAll('[data-shardviz-root] .sv-map [data-tile]')].map((tile) => {
    const probe = document.createElement('canvas').getContext('2d');
    probe.fillStyle = getComputedStyle(tile).backgroundColor;
    probe.fillRect(0, 0, 1, 1);
    return [...probe.getImageData(0, 0, 1, 1).data].join(',');
})"""


def jax_blocks(widget: ShardingWidget) -> dict[str, tuple[int, ...]]:
    """The block of the array each virtual device holds (ids in mesh order), from XLA's tile
    assignment for the what-if's sharding."""
    sharding = widget.layout.sharding
    ndim = len(widget.layout.shape)
    count = math.prod(sharding.mesh.axis_sizes)
    hlo = sharding._to_xla_hlo_sharding(ndim)
    if hlo.is_replicated():
        return {str(d): () for d in range(count)}
    dims = hlo.tile_assignment_dimensions()
    devices = np.asarray(hlo.tile_assignment_devices()).reshape(dims)
    return {str(int(devices[at])): at[:ndim] for at in np.ndindex(*dims)}


def assert_fills_like_jax(view: EditedPage) -> None:
    """Devices holding the same block of the array are drawn in one colour, others in another,
    and each colour is one of the map's tiles'; the cells themselves have no background."""
    view.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    fills = view.page.evaluate(CELL_FILLS_JS)
    assert fills is not None, "no fills canvas under the cells"
    blocks = jax_blocks(view.widget)
    assert sorted(fills, key=int) == sorted(blocks, key=int)
    assert {cell["background"] for cell in fills.values()} == {"rgba(0, 0, 0, 0)"}
    colour_of_block: dict[tuple[int, ...], str] = {}
    for device, cell in fills.items():
        colour_of_block.setdefault(blocks[device], cell["drawn"])
        assert cell["drawn"] == colour_of_block[blocks[device]], (device, blocks[device])
    assert len(set(colour_of_block.values())) == len(colour_of_block), "two blocks share a colour"
    assert set(colour_of_block.values()) <= set(view.page.evaluate(MAP_FILLS_JS))


def test_large_grids_fill_their_cells_as_jax_places_the_blocks(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """Past 64 devices the cells' fills are one canvas under them: after spec and mesh edits each
    device is drawn in the colour of the block XLA's tile assignment gives it, and a hovered
    device's block stays bright while the rest dims."""
    pod = AbstractMesh((4, 8, 8), ("a", "b", "c"), axis_types=(AxisType.Explicit,) * 3)
    widget = ShardingWidget(NamedSharding(pod, P("a")), shape=(1024, 4096))
    view = EditedPage(offline_context, saved(tmp_path, "fills", widget), widget)
    expect(view.root.locator(".sv-mesh")).to_have_attribute("data-render", "dom")
    assert_fills_like_jax(view)
    for role, text in [("spec-input", "None, c"), ("mesh-input", "a=4, b=4, c=16"), ("spec-input", "a, b")]:
        view.commit(role, text)
        view.assert_like_python()
        assert_fills_like_jax(view)
    before = view.page.evaluate(CELL_FILLS_JS)
    blocks = jax_blocks(view.widget)
    view.root.locator('.sv-mesh [data-device-id="0"]').hover()
    hovered = view.page.evaluate(CELL_FILLS_JS)
    for device, cell in hovered.items():
        same = blocks[device] == blocks["0"]
        assert (cell["drawn"] == before[device]["drawn"]) == same, (device, same)
    view.page.mouse.move(0, 0)
    view.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert view.page.evaluate(CELL_FILLS_JS) == before
    view.assert_offline_and_clean()


# An edit committed in one task: the map's tiles' classes as that task leaves them (before any
# layout), then once two frames have laid the map out and fitted its labels to it.
MAP_CLASSES_BEFORE_AND_AFTER_LAYOUT_JS = """async ([role, text]) => {
    const root = document.querySelector('[data-shardviz-root]');
    const input = root.querySelector(`[data-role="${role}"]`);
    input.value = text;
    input.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: text }));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    const classes = () => [...root.querySelectorAll('.sv-map [data-tile]')].map((tile) => tile.className);
    const before = classes();
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    return { before, after: classes() };
}"""


def test_a_new_map_fits_its_labels_before_it_is_laid_out(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """A new array map chooses which label lines its tiles show before it is laid out (from its
    texts' widths), so the frame lays it out once; the lines it chose are the ones that fit once
    laid out, and each shown line is whole (the tight tiles of 64 blocks at 512 devices)."""
    pod = AbstractMesh((8, 8, 8), ("a", "b", "c"), axis_types=(AxisType.Explicit,) * 3)
    widget = ShardingWidget(NamedSharding(pod, P("a", ("b", "c"))), shape=(1024, 4096))
    view = EditedPage(offline_context, saved(tmp_path, "fit", widget), widget)
    for text in ["a, b", "b, c", "(a, b)", "None, a"]:
        fitted = view.page.evaluate(MAP_CLASSES_BEFORE_AND_AFTER_LAYOUT_JS, ["spec-input", text])
        view.python("spec_text", text)
        view.assert_like_python()
        assert fitted["before"] == fitted["after"], text
        # Something was left out or set tight: the fit did work before layout.
        assert any(c != "sv-tile" for c in fitted["before"]), (text, fitted["before"][:3])
        cut = view.root.locator(".sv-map-area").evaluate(
            """(area) => [...area.querySelectorAll('[data-tile]')].flatMap((tile) => {
                const box = tile.getBoundingClientRect();
                return [...tile.querySelectorAll('.sv-tile-name, .sv-badge, .sv-tile-index, .sv-tile-devices')]
                    .filter((l) => getComputedStyle(l).display !== 'none' && l.getClientRects().length > 0)
                    .filter((l) => {
                        const r = l.getBoundingClientRect();
                        return r.right > box.right + 0.5 || r.bottom > box.bottom + 0.5 || l.scrollWidth > l.clientWidth + 0.5;
                    }).map((l) => l.textContent);
            })"""
        )
        assert cut == [], (text, cut[:5])
    view.assert_offline_and_clean()


# ----------------------------------------------------------------------------
# hostile names, edited


def test_hostile_names_stay_text_while_editing(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    mesh = jax.make_mesh((2, 4), (HOSTILE, "</script>"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P(HOSTILE, "</script>")))
    widget = ShardingWidget(x, name="x")
    view = EditedPage(offline_context, saved(tmp_path, "hostile", widget), widget)
    view.commit("spec-input", f"'</script>', '{HOSTILE}'")
    view.assert_like_python()
    view.commit("mesh-input", f"'{HOSTILE}'=4, '</script>'=2")
    view.assert_like_python()
    view.commit("spec-input", "'<b>bold</b>'")
    view.assert_like_python()
    assert view.page.locator("img, b").count() == 0
    view.assert_offline_and_clean()


# ----------------------------------------------------------------------------
# an exported course page


@pytest.fixture(scope="module")
def course_page(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The course export of one tour notebook (as `make course` runs it), in a temporary folder."""
    check_front_end_built()
    base = tmp_path_factory.mktemp("course-edit")
    (base / "notebooks").mkdir()
    shutil.copy(COURSE_NOTEBOOK, base / "notebooks" / COURSE_NOTEBOOK.name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update(JUPYTER_RUNTIME_DIR=str(base / "runtime"), IPYTHONDIR=str(base / "ipython"), JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-m", "shardviz.export.course", "notebooks", "site", "--timeout", "120"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"the course export failed:\n{done.stdout}\n{done.stderr}"
    return base / "site" / f"{COURSE_NOTEBOOK.stem}.html"


def widget_for_payload(payload: dict[str, Any]) -> ShardingWidget:
    """A widget over real JAX objects built from what an inline payload says (devices by id, in mesh order)."""
    by_id = {d.id: d for d in jax.devices()}
    ids = [start + i * step for start, step, count in payload["devices"]["id"] for i in range(count)]
    mesh_info = payload["mesh"]
    mesh = Mesh(
        np.array([by_id[i] for i in ids]).reshape(mesh_info["sizes"]),
        tuple(mesh_info["names"]),
        axis_types=tuple(AxisType[t] for t in mesh_info["types"]),
    )
    spec = P(*[None if not a else a[0] if len(a) == 1 else tuple(a) for a in payload["spec"]])
    sharding = NamedSharding(mesh, spec, memory_kind=payload["memory_kind"])
    x = jax.device_put(jnp.zeros(payload["shape"], payload["dtype"]), sharding)
    return ShardingWidget(x, name=payload["array_name"])


def test_course_page_edits_offline(course_page: pathlib.Path, offline_context: OfflineContext) -> None:
    check_front_end_built()
    page, watch = offline_context.open(course_page)
    scripts = page.locator("script[data-shardviz-payload]")
    expect(scripts.first).to_be_attached()
    payload = json.loads(scripts.first.text_content() or "null")
    page.close()
    watch.assert_clean()
    # The course ran on 8 devices and this process has 12: "Copy code" differs in the device count it names.
    view = EditedPage(offline_context, course_page, widget_for_payload(payload), same_machine=False)
    types = view.page.locator("[data-shardviz-root] [data-role='type']")
    others = types.all_inner_texts()[1:]
    assert len(others) >= 3
    expect(view.control("local-note")).to_contain_text("Computed in this page, no kernel")
    view.root.locator('[data-role="explicit-view"]').click()
    view.python("mesh_text", view.control("mesh-input").input_value())
    view.assert_like_python()
    for role, text in [
        ("spec-input", "y, x"),
        ("mesh-input", "x=4, y=2"),
        ("spec-input", "None, (x, y)"),
        ("spec-input", "x, x"),
        ("mesh-input", "x=8:auto"),
    ]:
        view.commit(role, text)
        view.assert_like_python()
    assert types.all_inner_texts()[1:] == others, "another picture of the page changed"
    view.assert_offline_and_clean()
