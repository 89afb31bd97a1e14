"""Issue 30 on saved pages (file://, every network cut off): the pictures at pod
scale and the small things that cost trust.

- the map and the inspector stay in view of the pointer over a grid of 8,
  256, 512 and 4096 devices, beside the grid or raised over it from below
  (item 2);
- a program's device groups at 256 devices: the grid fits its column whole
  and the legend's device lists stay in theirs (item 3);
- an axis used twice is named as such, not as a dimension's divisibility
  (item 5), and the spec the user set comes back when the mesh fits it again,
  as Python answers (item 6);
- the tree table's sort arrow stays on its header's line (item 7).
"""

from __future__ import annotations

import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import IMAGES, OfflineContext, check_front_end_built
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect
from test_offline_editing import EditedPage, saved

import shardviz
from shardviz import ShardingWidget

pytestmark = pytest.mark.browser

POD_MESHES = {8: (2, 4), 256: (4, 8, 8), 512: (8, 8, 8), 4096: (16, 16, 16)}


def open_saved(cut: OfflineContext, tmp_path: pathlib.Path, thing: Any, name: str) -> tuple[Any, Any]:
    check_front_end_built()
    page, watch = cut.open(pathlib.Path(shardviz.save_html(thing, tmp_path / f"{name}.html")))
    expect(page.locator("[data-shardviz]").first).to_be_visible()
    return page, watch


def pod_widget(devices: int) -> ShardingWidget:
    sizes = POD_MESHES[devices]
    names = ("a", "b", "c")[: len(sizes)]
    mesh = AbstractMesh(sizes, names, axis_types=(AxisType.Auto,) * len(sizes))
    spec = P("a", "b") if len(sizes) == 2 else P("a", ("b", "c"))
    return ShardingWidget(NamedSharding(mesh, spec), shape=(256, 4096))


# ----------------------------------------------------------------------------
# item 2: the inspector in view of the pointer


def hover_a_device_at(page: Any, grid: Any, fy: float) -> dict[str, float]:
    """Scrolls the grid's row at height fraction `fy` to the window's middle, points at a device
    there (the inspector says which), and returns the pointer's and the inspector's boxes."""
    page.evaluate(
        """([grid, fy]) => { const r = grid.getBoundingClientRect();
            window.scrollBy(0, r.top + r.height * fy - window.innerHeight / 2); }""",
        [grid.element_handle(), fy],
    )
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    box = grid.bounding_box()
    inspector = page.locator('[data-role="inspector"]')
    for step in range(300):
        # Across, then a little further in: past captions, headers and gaps.
        x = box["x"] + 20 + 11 * (step % 25)
        y = box["y"] + box["height"] * fy + 10 * (step // 25) * (1 if fy < 0.5 else -1)
        page.mouse.move(x, y)
        if inspector.get_attribute("data-showing") == "device":
            break
    else:
        raise AssertionError(f"no device under the pointer at {fy} of the grid")
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return {"pointer_y": y, **{f"inspector_{k}": v for k, v in inspector.bounding_box().items()}}


@pytest.mark.parametrize("devices", [8, 256, 512, 4096])
def test_the_inspector_stays_in_view_of_the_pointer(
    offline_context: OfflineContext, tmp_path: pathlib.Path, devices: int
) -> None:
    """Issue 30.2: over the top, the middle and the bottom of the grid, the inspector is wholly in
    the window, in a window too narrow for it beside the 4096-device grid and too short for it."""
    page, watch = open_saved(offline_context, tmp_path, pod_widget(devices), f"pod{devices}")
    page.set_viewport_size({"width": 1000, "height": 700})
    grid = page.locator(".sv-mesh").first
    for fy in (0.05, 0.5, 0.95):
        seen = hover_a_device_at(page, grid, fy)
        top, bottom = seen["inspector_y"], seen["inspector_y"] + seen["inspector_height"]
        assert 0 <= top and bottom <= 700, (devices, fy, seen)
    watch.assert_clean()


# ----------------------------------------------------------------------------
# item 3: a collective's device groups at 256 devices


def sums_over_data(w: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.sum(x @ w, axis=0)


def test_the_group_grid_fits_its_column_and_the_legend_wraps(offline_context: OfflineContext, tmp_path) -> None:
    """Issue 30.3: a 16x16 mesh's groups (16 of 16, devices 0, 16, ..., 240 and so on): every cell
    of the grid is inside the grid's column, and no group's line runs over its neighbour."""
    mesh = AbstractMesh((16, 16), ("data", "tensor"), axis_types=(AxisType.Auto, AxisType.Auto))
    w = jax.ShapeDtypeStruct((512, 512), jnp.float32, sharding=NamedSharding(mesh, P("tensor", None)))
    x = jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=NamedSharding(mesh, P("data", "tensor")))
    prog = shardviz.trace(sums_over_data, w, x, mesh=mesh)
    over_data = next(i for i, c in enumerate(prog.collectives) if c.axes == ("data",))
    page, watch = open_saved(offline_context, tmp_path, prog, "groups256")
    page.set_viewport_size({"width": 1100, "height": 900})
    page.locator(f'[data-role="collective"][data-collective="{over_data}"]').click()
    slot = page.locator(".sv-group-grid-slot")
    cells = page.locator('[data-role="group-grid"] [data-device-id]')
    expect(cells).to_have_count(256)
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    room = slot.bounding_box()
    outside = cells.evaluate_all(
        """(cells, room) => cells.filter((c) => { const b = c.getBoundingClientRect();
              return b.left < room.x - 0.5 || b.right > room.x + room.width + 0.5 ||
                     b.top < room.y - 0.5 || b.bottom > room.y + room.height + 0.5; })
            .map((c) => c.getAttribute('data-device-id'))""",
        room,
    )
    assert outside == [], f"cells outside the grid's column: {outside[:20]}"
    items = page.locator('[data-role="group"]')
    expect(items).to_have_count(16)
    boxes = items.evaluate_all(
        """(items) => items.map((li) => { const text = li.querySelector('.sv-group-members') ?? li;
              const b = li.getBoundingClientRect(); const r = document.createRange(); r.selectNodeContents(text);
              const t = r.getBoundingClientRect();
              return {left: b.left, right: b.right, top: b.top, bottom: b.bottom, textRight: t.right,
                      text: li.textContent}; })"""
    )
    for b in boxes:
        assert b["textRight"] <= b["right"] + 0.5, f"{b['text']!r} runs past its column: {b}"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5 and (
                min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
            )
            assert not overlap, (a["text"], b["text"])
    # Each group names its devices as JAX's compiled module groups them (16 evenly spaced ids).
    groups = sorted(sorted(g) for g in prog.collectives[over_data].groups)
    assert groups[0] == list(range(0, 256, 16))
    expect(items.first).to_contain_text("group 0: devices 0, 16, 32, \u2026, 240 (step 16)")
    page.locator('[data-role="group-grid"]').screenshot(path=str(IMAGES / "program-groups-256.png"))
    watch.assert_clean()


# ----------------------------------------------------------------------------
# items 5 and 6: the spec, in the page's words and Python's


def test_an_axis_used_twice_is_named_not_a_dimension(offline_context: OfflineContext, tmp_path) -> None:
    """Issue 30.5: P(('x', 'y'), 'x') on float32[4, 8]: dimension 0 cannot take x × y either, but the
    axis used twice is what is wrong, as JAX says when it refuses the spec."""
    widget = ShardingWidget(shape=(4, 8), mesh=AbstractMesh((2, 4), ("x", "y")), spec="x")
    edited = EditedPage(offline_context, saved(tmp_path, "twice", widget), widget)
    edited.commit("spec-input", "(x, y), x")
    assert widget.error.startswith("axis 'x' is used twice")
    edited.assert_like_python()
    edited.assert_offline_and_clean()


def test_the_spec_the_user_set_comes_back_in_the_page(offline_context: OfflineContext, tmp_path) -> None:
    """Issue 30.6 where the page answers: the same 8 devices reshaped drop an axis, and the mesh
    the spec was set on brings it back, with Python's notice."""
    widget = ShardingWidget(shape=(8, 16), mesh=AbstractMesh((2, 4), ("x", "y")), spec="x, y")
    edited = EditedPage(offline_context, saved(tmp_path, "back", widget), widget)
    for text in ("x=8", "x=2, y=4", "y=8", "x=2, y=4"):
        edited.commit("mesh-input", text)
        edited.assert_like_python()
    assert widget.spec == P("x", "y") and widget.notice.startswith("The spec is P('x', 'y') again")
    edited.assert_offline_and_clean()


# ----------------------------------------------------------------------------
# item 7: the tree table's sort arrow


def test_the_sort_arrow_stays_on_its_header_line(offline_context: OfflineContext, tmp_path) -> None:
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    tree = {
        "layers": [
            {"w": jax.device_put(jnp.zeros((64, 256)), NamedSharding(mesh, P(None, "model")))} for _ in range(3)
        ],
        "count": jax.device_put(jnp.zeros(()), NamedSharding(mesh, P())),
    }
    page, watch = open_saved(offline_context, tmp_path, tree, "sorted")
    button = page.locator('[data-role="sort-bytes"]')
    header = page.locator(".sv-head-row")
    first_value = page.locator('[data-role="leaf"]').first.locator(".sv-cell-bytes")
    for label in ("per device \u2193", "per device \u2191", "per device"):
        button.click()
        expect(button).to_have_text(label)
        lines = button.evaluate(
            "(b) => { const r = document.createRange(); r.selectNodeContents(b); return r.getClientRects().length; }"
        )
        head, own, value = header.bounding_box(), button.bounding_box(), first_value.bounding_box()
        assert lines == 1, f"{label!r} is on {lines} lines"
        assert head["y"] <= own["y"] and own["y"] + own["height"] <= head["y"] + head["height"] + 0.5, (
            label,
            own,
            head,
        )
        assert own["y"] + own["height"] <= value["y"], (label, own, value)
    watch.assert_clean()
