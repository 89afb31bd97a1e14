"""`shardviz.save_html(tree, ...)` pages opened from file:// with every network cut off.

The page draws the whole tree from what it carries inline: the leaf table,
the memory heat map and the audit; a leaf on a mesh is laid out in the page
itself, and what it shows is checked against JAX computed here.
"""

from __future__ import annotations

import itertools
import math
import pathlib
import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import IMAGES, OfflineContext, check_front_end_built, png_size
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

import shardviz

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from tree_js_fixtures import concrete_tree, what_if_tree

pytestmark = pytest.mark.browser


def open_tree(cut: OfflineContext, tmp_path: pathlib.Path, tree: Any, name: str) -> tuple[Any, Any]:
    check_front_end_built()
    path = pathlib.Path(shardviz.save_html(tree, tmp_path / f"{name}.html"))
    return cut.open(path)


def leaf_row(page: Any, path: str) -> Any:
    page.locator('[data-role="leaf-filter"]').fill(path)
    return page.locator('[data-role="leaf"]').filter(has=page.locator(".sv-cell-path", has_text=path)).first


def flat_paths(tree: Any) -> list[tuple[str, Any]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    out = []
    for key_path, x in flat:
        out.append((".".join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in key_path), x))
    return out


def distinct_blocks(x: Any) -> int:
    """JAX's number of distinct blocks: from its index map on real devices, its shard shape on virtual ones."""
    if isinstance(x.sharding.mesh, jax.sharding.AbstractMesh):
        shard = x.sharding.shard_shape(x.shape)
        return math.prod(n // s for n, s in zip(x.shape, shard))
    index_map = x.sharding.devices_indices_map(x.shape)
    return len({tuple(s.indices(n)[:2] for s, n in zip(idx, x.shape)) for idx in index_map.values()})


def assert_offline(cut: OfflineContext, watch: Any, page: Any) -> None:
    assert cut.aborted == [], f"the page tried to load: {cut.aborted}"
    others = [url for url in watch.requests if url != page.url]
    assert others == [], f"the page made requests besides itself: {others}"
    watch.assert_clean()


def test_a_concrete_tree_page(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    tree = concrete_tree()
    leaves = flat_paths(tree)
    page, watch = open_tree(offline_context, tmp_path, tree, "concrete")
    expect(page.locator('[data-role="leaf-count"]')).to_have_text(f"{len(leaves)} leaves")
    expect(page.locator('[data-role="heat-map"] .sv-mesh')).to_have_attribute("data-render", "dom")
    expect(page.locator('[data-role="heat-map"] [data-device-id]')).to_have_count(8)
    expect(page.locator('[data-role="audit"]')).to_contain_text("is replicated over")
    expect(page.locator('[data-role="rules-input"]')).to_be_enabled()
    # Every heat cell really drawn, and labelled with what JAX's shards put on that device.
    per_device = {d.id: 0 for d in jax.devices()[:8]}
    for _, x in leaves:
        if isinstance(x, jax.Array):
            for shard in x.addressable_shards:
                per_device[shard.device.id] += shard.data.nbytes
    for device, nbytes in per_device.items():
        cell = page.locator(f'[data-role="heat-map"] [data-device-id="{device}"]')
        box = cell.bounding_box()
        assert box and box["width"] >= 20 and box["height"] >= 20
        expect(cell).to_have_attribute("aria-label", re.compile(f"^Device {device}, "))
        cell.click()
        expect(page.locator('[data-role="device-holdings"]')).to_contain_text(f"{nbytes:,} B")
        cell.click()
    path, x = next((p, x) for p, x in leaves if p == "params.layers.1.mlp.w")
    leaf_row(page, path).click()
    detail = page.locator('[data-role="leaf-detail"]')
    expect(detail.locator('[data-role="type"]')).to_have_text(str(jax.typeof(x)))
    expect(detail.locator("[data-total-tiles]")).to_have_attribute("data-total-tiles", str(distinct_blocks(x)))
    expect(detail.locator("[data-device-id]")).to_have_count(8)
    # The counter lives on one device: only a kernel lays it out.
    leaf_row(page, "opt_state.count").click()
    expect(page.locator('[data-role="leaf-unavailable"]')).to_contain_text("not available offline")

    # Rules are applied in the page, with no kernel: the leaf's new type is JAX's for the same move.
    moved = jax.device_put(x, NamedSharding(x.sharding.mesh, P("model", "data")))
    page.locator('[data-role="rules-input"]').fill("params.layers.*.mlp.w = model, data")
    page.locator('[data-role="rules-input"]').press("Control+Enter")
    expect(page.locator('[data-role="notice"]')).to_have_text("3 leaves re-sharded by 1 rule.")
    leaf_row(page, path).click()
    expect(detail.locator('[data-role="type"]')).to_have_text(str(jax.typeof(moved)))
    expect(detail.locator("[data-total-tiles]")).to_have_attribute("data-total-tiles", str(distinct_blocks(moved)))
    # What needs JAX is refused beside the editor, and the picture stays.
    page.locator('[data-role="rules-input"]').fill("opt_state.count = None")
    page.locator('[data-role="rules-input"]').press("Control+Enter")
    expect(page.locator('[role="alert"][data-source="rules"]')).to_contain_text("needs a live kernel")
    expect(detail.locator('[data-role="type"]')).to_have_text(str(jax.typeof(moved)))
    assert_offline(offline_context, watch, page)


def test_devices_off_the_first_mesh_are_a_row_of_their_own(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    """A tree on two meshes of eight devices, four shared: the heat map's grid is the first leaf's
    mesh, and the other mesh's own devices are cells in a row beside it, each drawn whole and
    apart, holding what JAX put there."""
    devices = jax.devices()
    tree = {
        "stage": jax.device_put(
            jnp.ones((8, 32)), NamedSharding(jax.make_mesh((8,), ("pipe",), devices=devices[4:12]), P("pipe"))
        ),
        "w": jax.device_put(
            jnp.ones((8, 16)),
            NamedSharding(jax.make_mesh((2, 4), ("data", "model"), devices=devices[:8]), P("data", "model")),
        ),
    }
    leaves = jax.tree_util.tree_leaves(tree)
    first = {d.id for d in leaves[0].sharding.mesh.devices.flat}
    held: dict[int, int] = {}
    for leaf in leaves:
        for shard in leaf.addressable_shards:
            held[shard.device.id] = held.get(shard.device.id, 0) + shard.data.nbytes
    off_first = sorted(set(held) - first)
    assert len(off_first) == 4
    page, watch = open_tree(offline_context, tmp_path, tree, "two-meshes")
    grid = page.locator('[data-role="heat-map"] .sv-mesh')
    expect(grid.locator("[data-device-id]")).to_have_count(8)
    extra = page.locator('[data-role="heat-map"] [data-place]')
    expect(extra).to_have_count(4)
    assert sorted(int(i) for i in extra.evaluate_all("(cs) => cs.map((c) => c.dataset.deviceId)")) == off_first
    grid_box = grid.bounding_box()
    boxes = [extra.nth(i).bounding_box() for i in range(4)]
    for box in boxes:
        assert box["width"] >= 20 and box["height"] >= 20, box
        # outside the grid (below or beside it), not stacked on its cells
        assert box["y"] >= grid_box["y"] + grid_box["height"] or box["x"] >= grid_box["x"] + grid_box["width"], box
    for a, b in itertools.pairwise(boxes):
        assert b["x"] >= a["x"] + a["width"] or b["y"] >= a["y"] + a["height"], (a, b)
    for device in off_first:
        page.locator(f'[data-role="heat-map"] [data-place][data-device-id="{device}"]').click()
        expect(page.locator('[data-role="device-holdings"]')).to_contain_text(f"{held[device]:,} B")
    assert_offline(offline_context, watch, page)


def test_ten_thousand_leaves_on_4096_virtual_devices(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    tree = what_if_tree()
    leaves = flat_paths(tree)
    assert len(leaves) > 9_900
    page, watch = open_tree(offline_context, tmp_path, tree, "what-if")
    expect(page.locator('[data-role="leaf-count"]')).to_have_text(f"{len(leaves):,} leaves")
    grid = page.locator('[data-role="heat-map"] .sv-mesh')
    expect(grid).to_have_attribute("data-render", "canvas")
    expect(grid).to_have_attribute("data-device-count", "4096")
    assert page.locator('[data-role="leaf"]').count() <= 30  # only the rows in view exist
    expect(page.locator('[data-role="audit"]')).to_contain_text("saves")
    # Scroll to the end: the last leaf's row, with JAX's type.
    body = page.locator(".sv-grid-body")
    body.evaluate("(b) => { b.scrollTop = b.scrollHeight; b.dispatchEvent(new Event('scroll')); }")
    last_path, last = leaves[-1]
    last_row = page.locator(f'[data-role="leaf"][data-leaf="{len(leaves) - 1}"]')
    expect(last_row.locator(".sv-cell-path")).to_have_text(last_path)
    expect(last_row.locator(".sv-cell-type")).to_have_text(str(jax.typeof(last)))
    for path in ("params.embed", "opt_state.mu.layers.332.mlp.gate.kernel"):
        x = dict(leaves)[path]
        leaf_row(page, path).click()
        detail = page.locator('[data-role="leaf-detail"]')
        expect(detail.locator('[data-role="type"]')).to_have_text(str(jax.typeof(x)))
        expect(detail.locator("[data-total-tiles]")).to_have_attribute("data-total-tiles", str(distinct_blocks(x)))
        expect(detail.locator(".sv-mesh")).to_have_attribute("data-device-count", "4096")
    page.locator('[data-role="leaf-filter"]').fill("")
    page.mouse.move(1, 1)
    IMAGES.mkdir(parents=True, exist_ok=True)
    shot = IMAGES / "tree-whatif-4096.png"
    # The top of the page: summary, leaf table and memory heat map.
    page.locator('[data-role="leaf-filter"]').blur()
    box = page.locator("[data-shardviz-root]").bounding_box()
    assert box is not None
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 560)}
    page.screenshot(path=str(shot), clip=clip, animations="disabled", caret="hide", scale="css")
    width, height = png_size(shot)
    assert 600 <= width <= 1600 and 400 <= height <= 600, (width, height)
    assert shot.stat().st_size < 300_000, f"{shot.name} is {shot.stat().st_size} bytes"
    assert_offline(offline_context, watch, page)


def test_an_empty_tree_page(offline_context: OfflineContext, tmp_path: pathlib.Path) -> None:
    page, watch = open_tree(offline_context, tmp_path, {"nothing": None, "lr": jnp.float32(0.1).item()}, "empty")
    expect(page.locator('[data-role="leaf-count"]')).to_have_text("2 leaves")
    expect(page.locator('[data-role="heat-map"]')).to_contain_text("No device holds any of this tree.")
    expect(page.locator('[role="alert"]')).to_have_count(0)
    assert_offline(offline_context, watch, page)
