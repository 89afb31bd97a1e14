"""Keys typed into shardviz's text boxes in JupyterLab 4 reach the box, not the notebook's shortcuts.

Every text here is TYPED, key by key (``press_sequentially`` and ``keyboard.press``), as a user
would: ``fill()`` sets the value without a key event and so never meets JupyterLab's command
layer. Enter in the rules box is a new line, Shift+Enter is a new line and does not run the
cell, Ctrl+Enter or the Apply button applies; in the one-line boxes Enter applies and letters
that are notebook shortcuts in command mode (``a``, ``b``, ``x``, ``m``, ``d``) are text. The
kernel's state is read back through a probe cell and compared with JAX's own ``jax.typeof``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from browser_support import KERNEL_WATCH, JupyterLab, LabNotebook, open_notebook
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

TREE, ARRAY, PROBE, GUARDED, GUARD_PROBE = range(5)
CELLS = [
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz
{KERNEL_WATCH}
mesh = jax.make_mesh((2, 4), ('data', 'model'))
rep = NamedSharding(mesh, P())
params = {{'w_k': jax.device_put(jnp.ones((64, 256)), rep), 'ln_scale': jax.device_put(jnp.ones((64,)), rep)}}
t = shardviz.show(params)""",
    """x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P('data')))
a = shardviz.show(x)""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'rules_text': t.rules_text, 'error': t.error,
    'w_k': str(jax.typeof(t.tree['w_k'])), 'ln_scale': str(jax.typeof(t.tree['ln_scale'])),
    'x': str(jax.typeof(a.array)), 'array_error': a.error,
}))""",
    # The memory guard: a limit of 64 MiB for this kernel, and a 16 MiB array split over 8 devices.
    """import os
os.environ['SHARDVIZ_MEMORY_LIMIT'] = str(64 * 2**20)
big = jax.device_put(jnp.zeros((4096, 1024), jnp.float32), NamedSharding(mesh, P(('data', 'model'))))
g = shardviz.show(big, name='big')""",
    """_guard = globals().get('_guard', 0) + 1
with open('/proc/self/statm') as _f:
    _rss = int(_f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
print(f'PROBE {_guard} ' + json.dumps({'rss': _rss, 'same': g.array is big, 'type': str(jax.typeof(g.array)),
                                       'error': g.error, 'source': g.error_source}))""",
]


def typeof(shape: tuple[int, ...], spec: P) -> str:
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    return str(jax.typeof(jax.device_put(jnp.ones(shape), NamedSharding(mesh, spec))))


class Typing:
    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def prompt(self, cell: int) -> str:
        return self.nb.cell(cell).locator(".jp-InputPrompt").inner_text().strip()

    def cell_count(self) -> int:
        return self.page.locator(".jp-Notebook .jp-Cell").count()

    def kernel(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)


@pytest.fixture(scope="module")
def typing(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Typing]:
    with open_notebook(jupyter_lab, browser, "shardviz-typing.ipynb", CELLS) as nb:
        nb.run_all(len(CELLS))
        expect(nb.output(TREE)).to_have_count(1, timeout=60_000)
        expect(nb.output(ARRAY)).to_have_count(1, timeout=60_000)
        expect(nb.output(GUARDED)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield Typing(nb)


def test_enter_and_shift_enter_are_new_lines_in_the_rules_box_and_ctrl_enter_applies(typing: Typing) -> None:
    page = typing.page
    box = typing.nb.output(TREE).locator('[data-role="rules-input"]')
    prompt, cells = typing.prompt(TREE), typing.cell_count()
    box.click()
    box.press_sequentially("w_k = None, model")
    page.keyboard.press("Enter")
    box.press_sequentially("ln_scale = model")
    page.keyboard.press("Shift+Enter")
    expect(box).to_have_value("w_k = None, model\nln_scale = model\n")
    expect(box).to_be_focused()
    # Shift+Enter did not run the cell (its prompt and the notebook's cells are as they were).
    assert typing.prompt(TREE) == prompt and typing.cell_count() == cells
    page.keyboard.press("Backspace")
    page.keyboard.press("Control+Enter")
    notice = typing.nb.output(TREE).locator('[data-role="notice"]')
    expect(notice).to_contain_text("re-sharded by 2 rules")
    state = typing.kernel()
    assert state["error"] == "" and state["rules_text"] == "w_k = None, model\nln_scale = model"
    assert state["w_k"] == typeof((64, 256), P(None, "model"))
    assert state["ln_scale"] == typeof((64,), P("model"))
    assert typing.prompt(TREE) == prompt


def test_the_apply_button_applies_typed_rules(typing: Typing) -> None:
    box = typing.nb.output(TREE).locator('[data-role="rules-input"]')
    box.click()
    typing.page.keyboard.press("Control+a")
    box.press_sequentially("w_k = data")
    typing.nb.output(TREE).locator('[data-role="rules-apply"]').click()
    expect(typing.nb.output(TREE).locator('[data-role="notice"]')).to_contain_text("re-sharded by 1 rule")
    state = typing.kernel()
    assert state["rules_text"] == "w_k = data" and state["w_k"] == typeof((64, 256), P("data"))


def test_shortcut_letters_typed_in_a_spec_box_are_text_and_enter_applies(typing: Typing) -> None:
    page = typing.page
    spec = typing.nb.output(ARRAY).locator('[data-role="spec-input"]')
    prompt, cells = typing.prompt(ARRAY), typing.cell_count()
    spec.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    # "m", "d", "a", "b" and "x" are command-mode shortcuts (markdown, delete, insert above/below, cut).
    spec.press_sequentially("model, data")
    expect(spec).to_have_value("model, data")
    page.keyboard.press("Shift+Enter")  # must not run the cell; the box keeps its text
    assert typing.prompt(ARRAY) == prompt and typing.cell_count() == cells
    page.keyboard.press("Enter")
    expect(spec).to_have_value("model, data")
    state = typing.kernel()
    assert state["array_error"] == "" and state["x"] == typeof((8, 16), P("model", "data"))
    assert typing.prompt(ARRAY) == prompt and typing.cell_count() == cells + 0


def test_a_typed_spec_that_would_fill_the_memory_is_refused_and_nothing_grows(typing: Typing) -> None:
    """Replicated over 8 devices the 16 MiB array would take 8 x 16 MiB = 128 MiB of the kernel's
    64 MiB: the edit is refused beside the spec box, the array stays, and the kernel's memory does not
    grow by even one copy of it."""
    page = typing.page
    widget = typing.nb.output(GUARDED)
    before = typing.nb.probe(GUARD_PROBE, 2)  # the cell ran once with the notebook
    assert before["type"] == "float32[4096@(data,model),1024]"
    spec = widget.locator('[data-role="spec-input"]')
    spec.click()
    page.keyboard.press("Control+a")
    spec.press_sequentially("None")
    page.keyboard.press("Enter")
    alert = widget.locator('[role="alert"][data-source="spec"]')
    expect(alert).to_contain_text("128 MiB of host memory", timeout=30_000)
    expect(alert).to_contain_text("64 MiB available: nothing was moved")
    expect(alert).to_contain_text("at least 2 ways would fit")
    after = typing.nb.probe(GUARD_PROBE, 3)
    assert after["same"] and after["type"] == before["type"] and after["source"] == "spec"
    assert after["rss"] - before["rss"] < 16 * 2**20, (before["rss"], after["rss"])
    expect(widget.locator('[data-role="type"]').first).to_have_text(before["type"])
