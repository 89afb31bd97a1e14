"""A search's space in the comparison view, and Flax's logical axes in the model view, live in
JupyterLab with a real kernel and on saved pages opened offline.

The kernel runs ``shardviz.search`` of one MLP block on 8 simulated devices (with logical names, so
the best plan has logical-axis rules) and shows the Linen guide's model initialised onto its
logical-axis rules (``embed -> fsdp``, ``hidden -> model``). What the page shows is checked
against the kernel's own objects (read back through a probe cell) and against JAX's own layout of
each array (``array.sharding.spec``), never against the page's earlier output.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import KERNEL_WATCH, JupyterLab, OfflineContext, check_front_end_built, open_notebook
from playwright.sync_api import expect

import shardviz

pytestmark = pytest.mark.browser

SEARCH, TREE, PROBE = range(3)

# one MLP block trained one step (training.md's In[B, D] *_D W_in[D, F] *_F W_out[F, D]); the
# what-if children take a notebook's step by value (cloudpickle)
STEP = """
def _loss(params, x):
    h = jax.nn.relu(x @ params['w_in'])
    return jnp.mean((h @ params['w_out']).astype(jnp.float32) ** 2)

@jax.jit
def step(params, x):
    grads, dx = jax.grad(_loss, argnums=(0, 1))(params, x)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), dx

args = ({'w_in': jax.ShapeDtypeStruct((64, 1024), jnp.bfloat16),
         'w_out': jax.ShapeDtypeStruct((1024, 64), jnp.bfloat16)},
        jax.ShapeDtypeStruct((8 * 256, 64), jnp.bfloat16))
names = {'0.w_in': ('embed', 'mlp'), '0.w_out': ('mlp', 'embed'), '1': ('batch', 'activation_embed')}
"""

# Flax's Linen guide "Scale up Flax Modules on multiple devices", with embed on an fsdp axis
LINEN = """
from flax import linen as nn

class DotReluDot(nn.Module):
    depth: int

    @nn.compact
    def __call__(self, x):
        w1 = self.param('W1', nn.with_logical_partitioning(nn.initializers.xavier_normal(), ('embed', 'hidden')),
                        (x.shape[-1], self.depth))
        w2 = self.param('W2', nn.with_logical_partitioning(nn.initializers.xavier_normal(), ('hidden', 'embed')),
                        (self.depth, x.shape[-1]))
        return jax.nn.relu(x @ w1) @ w2

def linen_params():
    mesh = jax.make_mesh((2, 4), ('fsdp', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2,
                         devices=jax.devices()[:8])
    rules = (('batch', 'fsdp'), ('hidden', 'model'), ('embed', 'fsdp'))
    x = jnp.ones((8, 32))
    model = DotReluDot(64)
    abstract = jax.eval_shape(model.init, jax.random.key(0), x)
    shardings = nn.logical_to_mesh_sharding(nn.get_partition_spec(abstract), mesh, rules)
    return jax.jit(model.init, out_shardings=shardings)(jax.random.key(0), x)
"""

CELLS = [
    f"""import json, logging
import jax, jax.numpy as jnp
import shardviz

{KERNEL_WATCH}
{STEP}
result = shardviz.search(step, args, devices=8, hardware='tpu-v5p', top_k=2, names=names, timeout=300)
shardviz.show(result)""",
    f"""{LINEN}
params = linen_params()
tree = shardviz.show(params)
tree""",
    """_probe = globals().get('_probe', 0) + 1
space = result.search
print(f'PROBE {_probe} ' + json.dumps({
    'considered': space.considered, 'pruned': space.pruned, 'traced': space.traced, 'best': space.best,
    'best_rules': space.best_rules, 'code': space.code(), 'verdict': space.verdict,
    'logical': [[n, list(a)] for n, a in space.best_logical_rules],
    'specs': {k: [list((e,) if isinstance(e, str) else e or ()) for e in v.value.sharding.spec]
              for k, v in params['params'].items()},
    'problems': _problems.records,
}))""",
]


def check_search_panel(view: Any, state: dict[str, Any]) -> None:
    """The panel says the kernel's space: its counts, verdict, best rules, logical rules and code."""
    panel = view.locator('[data-role="search-space"]')
    expect(panel).to_have_count(1)
    counts = panel.locator('[data-role="search-counts"]')
    expect(counts).to_contain_text(f"{state['considered']} candidates considered on 8 devices of tpu-v5p")
    expect(counts).to_contain_text(f"{state['pruned']} pruned")
    expect(counts).to_contain_text(f"{state['traced']} traced")
    verdict = panel.locator('[data-role="search-verdict"] p')
    assert verdict.all_inner_texts() == state["verdict"].split("\n")
    expect(panel).to_contain_text(f"Best plan: {state['best']}")
    rules = panel.locator('[data-role="search-rules"]')
    assert rules.inner_text().strip() == state["best_rules"]
    pairs = ", ".join(f"{n} -> {'+'.join(a) or 'None'}" for n, a in state["logical"])
    expect(panel.locator('[data-role="search-logical-rules"]')).to_have_text(f"Logical-axis rules: {pairs}")
    code = panel.locator('[data-role="search-code"]')
    expect(code).to_be_hidden()
    panel.locator('[data-role="use-plan"]').click()
    expect(code).to_be_visible()
    assert code.inner_text().strip() == state["code"].strip()


def check_logical_column(view: Any, specs: dict[str, list[list[str]]]) -> None:
    """Each kernel shows its logical names beside the mesh axes JAX laid it out on."""
    by_name = {"W1": ("embed", "hidden"), "W2": ("hidden", "embed")}
    for name, logical in by_name.items():
        axes = ["+".join(a) or "-" for a in specs[name]]
        text = ", ".join(f"{n} -> {a}" for n, a in zip(logical, axes))
        row = view.locator('[data-role="logical"]').filter(has_text=text)
        expect(row).to_have_count(1)
    # by hand: the rules put embed on fsdp and hidden on model
    assert specs["W1"] == [["fsdp"], ["model"]] and specs["W2"] == [["model"], ["fsdp"]], specs


@pytest.fixture(scope="module")
def lab_state(jupyter_lab: JupyterLab, browser: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    with open_notebook(jupyter_lab, browser, "shardviz-search.ipynb", CELLS) as nb:
        nb.run_all(len(CELLS))
        expect(nb.cell(SEARCH).locator('[data-view="compare"]')).to_have_count(1, timeout=240_000)
        nb.assert_healthy()
        yield nb, nb.probe(PROBE, 2)  # run_all ran it once


def test_the_search_panel_in_jupyterlab_says_the_kernels_space(lab_state: tuple[Any, dict[str, Any]]) -> None:
    nb, state = lab_state
    assert state["traced"] == 2 and state["considered"] == state["pruned"] + 2, state
    view = nb.cell(SEARCH).locator(".jp-OutputArea-output")
    check_search_panel(view, state)
    view.locator('[data-role="search-space"]').screenshot(path=str(_shots() / "search-panel-lab.png"))
    assert state["problems"] == [], state
    nb.assert_healthy()


def test_the_model_view_in_jupyterlab_shows_embed_on_fsdp(lab_state: tuple[Any, dict[str, Any]]) -> None:
    nb, state = lab_state
    view = nb.cell(TREE).locator(".jp-OutputArea-output")
    check_logical_column(view, state["specs"])
    view.screenshot(path=str(_shots() / "logical-lab.png"))
    nb.assert_healthy()


def _shots() -> pathlib.Path:
    out = pathlib.Path(__file__).resolve().parents[2] / "build" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _kernel_objects() -> dict[str, Any]:
    """The notebook's cells run here: the search's result and the Linen params."""
    scope: dict[str, Any] = {"jax": jax, "jnp": jnp, "shardviz": shardviz}
    exec(STEP, scope)
    exec(LINEN, scope)
    step, args, names = scope["step"], scope["args"], scope["names"]
    result = shardviz.search(step, args, devices=8, hardware="tpu-v5p", top_k=2, names=names, timeout=300)
    return {"result": result, "params": scope["linen_params"]()}


def test_saved_pages_show_the_search_and_the_logical_axes_offline(
    offline_context: OfflineContext, tmp_path: pathlib.Path
) -> None:
    check_front_end_built()
    objects = _kernel_objects()
    space = objects["result"].search
    state = {
        "considered": space.considered, "pruned": space.pruned, "traced": space.traced, "best": space.best,
        "best_rules": space.best_rules, "code": space.code(), "verdict": space.verdict,
        "logical": [[n, list(a)] for n, a in space.best_logical_rules],
    }  # fmt: skip
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(objects["result"], tmp_path / "search.html")))
    view = page.locator('[data-view="compare"]')
    expect(view).to_have_count(1)
    check_search_panel(view, state)
    page.screenshot(path=str(_shots() / "search-panel-page.png"), full_page=True)
    params = objects["params"]["params"]
    specs = {
        k: [list((e,) if isinstance(e, str) else e or ()) for e in v.value.sharding.spec] for k, v in params.items()
    }
    tree_page, tree_watch = offline_context.open(
        pathlib.Path(shardviz.save_html(objects["params"], tmp_path / "tree.html"))
    )
    check_logical_column(tree_page.locator("body"), specs)
    tree_page.screenshot(path=str(_shots() / "logical-page.png"), full_page=True)
    assert offline_context.aborted == []
    watch.assert_clean()
    tree_watch.assert_clean()
