"""The model (tree) view live in JupyterLab 4 with a real kernel (8 simulated CPU devices).

A notebook shows a small model's parameters and Adam state with
``shardviz.show(tree)``; the tests type rules into the widget like a user
(Ctrl+Enter), select leaves and devices, and compare what the page shows with
JAX's own answers, computed here from real JAX objects of the same shapes.
The kernel side is read back through a probe cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import (
    IMAGES,
    KERNEL_WATCH,
    JupyterLab,
    LabNotebook,
    check_front_end_built,
    open_notebook,
    png_size,
    start_jupyter_lab,
    stop_jupyter_lab,
)
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP, PROBE = range(2)
CELLS = [
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, SingleDeviceSharding, PartitionSpec as P
import shardviz

{KERNEL_WATCH}
mesh = jax.make_mesh((2, 4), ('data', 'model'))
rep = NamedSharding(mesh, P())
def put(shape, dtype=jnp.float32):
    return jax.device_put(jnp.ones(shape, dtype), rep)
params = {{
    'embed': put((512, 64)),
    'layers': [{{'w': put((64, 256)), 'b': put((256,)), 'scale': put((64,), jnp.bfloat16)}} for _ in range(4)],
}}
state = {{
    'params': params,
    'mu': jax.tree.map(jnp.zeros_like, params),
    'count': jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[0])),
}}
w = shardviz.show(state)""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'rules_text': w.rules_text, 'error': w.error, 'error_source': w.error_source, 'notice': w.notice,
    'w_type': str(jax.typeof(w.tree['params']['layers'][0]['w'])),
    'original_w_type': str(jax.typeof(state['params']['layers'][0]['w'])),
    'original_deleted': any(x.is_deleted() for x in jax.tree.leaves(state)),
    'total_bytes': w.tree_layout.total_bytes, 'problems': _problems.records,
    # What JAX's shards put on each device: leaves with a shard there, and their bytes.
    'held': {str(d.id): [sum(1 for x in jax.tree.leaves(w.tree) for s in x.addressable_shards if s.device == d),
                         sum(s.data.nbytes for x in jax.tree.leaves(w.tree) for s in x.addressable_shards if s.device == d)]
             for d in jax.devices()},
}))""",
]

RULES = "params.layers.*.w = data, model\n*embed = None, model"
BAD_RULES = "params.layers.*.w = data, model\n*embed = None, nope"


def jax_answer(shape: tuple[int, ...], spec: P, dtype: Any = jnp.float32) -> tuple[str, int]:
    """JAX's type string and number of distinct blocks for an array on a 2x4 (data, model) mesh."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.ones(shape, dtype), NamedSharding(mesh, spec))
    blocks = {
        tuple(s.indices(n)[:2] for s, n in zip(idx, shape)) for idx in x.sharding.devices_indices_map(shape).values()
    }
    return str(jax.typeof(x)), len(blocks)


class Session:
    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def widget(self) -> Any:
        return self.nb.output(SETUP)

    def rules(self) -> Any:
        return self.widget().locator('[data-role="rules-input"]')

    def commit_rules(self, text: str) -> None:
        field = self.rules()
        field.fill(text)
        field.press("Control+Enter")
        expect(field).to_be_focused()

    def row(self, path: str) -> Any:
        self.filter(path)
        return self.widget().locator(
            '[data-role="leaf"]', has=self.page.locator(".sv-cell-path", has_text=re.compile(f"^{re.escape(path)}$"))
        )

    def filter(self, text: str) -> None:
        self.widget().locator('[data-role="leaf-filter"]').fill(text)

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)


def screenshot(session: Session, name: str) -> None:
    """The widget whole, light theme, the pointer parked away: the page made tall enough to hold it."""
    page = session.page
    before = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 2400})
    try:
        widget = session.widget()
        widget.locator('[data-role="leaf-filter"]').blur()
        widget.scroll_into_view_if_needed()
        page.mouse.move(1, 1)
        IMAGES.mkdir(parents=True, exist_ok=True)
        path = IMAGES / name
        widget.screenshot(path=str(path), animations="disabled", caret="hide", scale="css")
        width, height = png_size(path)
        assert 600 <= width <= 1600 and 400 <= height <= 2400, (width, height)
        assert path.stat().st_size < 300_000, f"{name} is {path.stat().st_size} bytes"
    finally:
        if before:
            page.set_viewport_size(before)


@pytest.fixture(scope="module")
def tree_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """A JupyterLab of this module's own: the server keeps its workspace (open notebooks, side bar),
    which must not leak into the other modules' notebooks on the shared server."""
    check_front_end_built()
    try:
        lab = start_jupyter_lab(tmp_path_factory.mktemp("jupyter-lab-tree"))
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield lab
    finally:
        stop_jupyter_lab(lab)


@pytest.fixture(scope="module")
def session(tree_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(tree_lab, browser, "shardviz-tree.ipynb", CELLS) as nb:
        nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        nb.run_all(len(CELLS))
        expect(nb.output(SETUP)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield Session(nb)


def test_first_picture(session: Session) -> None:
    widget = session.widget()
    expect(widget.locator('[data-view="tree"]')).to_have_count(1)
    leaves = 3 * 4 * 2 + 2 + 1  # w, b, scale per layer, embed, in params and mu; the counter
    expect(widget.locator('[data-role="leaf-count"]')).to_have_text(f"{leaves} leaves")
    expect(widget.locator('[data-role="heat-map"] [data-device-id]')).to_have_count(8)
    expect(widget.locator('[data-role="audit"]')).to_contain_text("mu.embed is replicated over model;")
    expect(widget.locator('[data-role="audit"]')).not_to_contain_text("`")
    embed_type, _ = jax_answer((512, 64), P())
    expect(session.row("params.embed").locator(".sv-cell-type")).to_have_text(embed_type)
    session.nb.assert_healthy()


def test_a_rules_edit_redraws_and_a_leaf_shows_its_layout(session: Session) -> None:
    prompt = session.nb.cell(SETUP).locator(".jp-InputPrompt").inner_text()
    session.commit_rules(RULES)
    widget = session.widget()
    expect(widget.locator('[data-role="notice"]')).to_have_text(re.compile(r"^6 leaves re-sharded by 2 rules"))
    # Ctrl+Enter belonged to the widget: the cell did not run again.
    assert session.nb.cell(SETUP).locator(".jp-InputPrompt").inner_text() == prompt

    w_type, w_tiles = jax_answer((64, 256), P("data", "model"))
    embed_type, embed_tiles = jax_answer((512, 64), P(None, "model"))
    expect(session.row("params.layers.2.w").locator(".sv-cell-type")).to_have_text(w_type)
    expect(session.row("mu.embed").locator(".sv-cell-type")).to_have_text(embed_type)
    session.row("params.layers.2.w").click()
    detail = widget.locator('[data-role="leaf-detail"]')
    expect(detail.locator('[data-role="type"]')).to_have_text(w_type)
    expect(detail.locator("[data-total-tiles]")).to_have_attribute("data-total-tiles", str(w_tiles))
    session.row("mu.embed").click()
    expect(detail.locator('[data-role="type"]')).to_have_text(embed_type)
    expect(detail.locator("[data-total-tiles]")).to_have_attribute("data-total-tiles", str(embed_tiles))
    # The counter sits on one device: the kernel lays it out.
    session.row("count").click()
    expect(detail.locator('[data-role="type"]')).to_have_text(str(jax.typeof(jnp.zeros((), jnp.int32))))
    expect(detail).to_contain_text("laid out by the kernel")

    session.row("params.layers.2.w").click()
    session.filter("")
    screenshot(session, "tree-view.png")

    state = session.kernel_state()
    assert (state["rules_text"], state["error"], state["w_type"]) == (RULES, "", w_type)
    assert state["original_w_type"] == jax_answer((64, 256), P())[0] and not state["original_deleted"]
    assert state["problems"] == []
    session.nb.assert_healthy()


def test_a_bad_rule_names_its_line_and_the_last_picture_stays(session: Session) -> None:
    session.commit_rules(RULES)
    widget = session.widget()
    embed_type, _ = jax_answer((512, 64), P(None, "model"))
    expect(session.row("params.embed").locator(".sv-cell-type")).to_have_text(embed_type)
    session.commit_rules(BAD_RULES)
    alert = widget.locator('[role="alert"][data-source="rules"]')
    expect(alert).to_have_count(1)
    expect(alert).to_have_text(re.compile(r"^line 2: .*'nope'"))
    expect(session.rules()).to_have_value(BAD_RULES)  # the user's text, to fix
    expect(session.rules()).to_have_attribute("aria-invalid", "true")
    expect(session.row("params.embed").locator(".sv-cell-type")).to_have_text(embed_type)  # the last picture
    state = session.kernel_state()
    assert (state["rules_text"], state["error_source"]) == (RULES, "rules")
    assert state["error"].startswith("line 2: ")
    session.commit_rules(RULES)
    expect(alert).to_have_count(0)
    session.nb.assert_healthy()


def test_selecting_a_device_lists_what_it_holds(session: Session) -> None:
    session.filter("")
    widget = session.widget()
    held = session.kernel_state()["held"]
    panel = widget.locator('[data-role="device-holdings"]')
    for device in ("0", "5"):
        leaves, nbytes = held[device]
        widget.locator(f'[data-role="heat-map"] [data-device-id="{device}"]').click()
        expect(panel).to_have_attribute("data-device-id", device)
        expect(panel).to_contain_text(f"{leaves} leaves, largest first")
        expect(panel).to_contain_text(f"({nbytes:,} B)")
        expect(panel.locator("li")).to_have_count(12)
    assert held["0"][0] == held["5"][0] + 1  # the counter lives on device 0 alone
    session.nb.assert_healthy()
