"""A what-if program in JupyterLab 4 with a live kernel (8 simulated CPU devices, a mesh of 16).

One notebook: a bf16 layer traced with ``shardviz.trace(..., mesh=AbstractMesh((4, 4)))``
and shown as a ``ProgramWidget``. The collectives table counts the bf16
all-reduce in bf16 with XLA:CPU's f32 figure under it (hand counts below), and
an edit of an input's spec, typed into the widget's editor, traces the program
again in a child with 16 devices: a probe cell traces the same function on the
specs the widget holds, itself, and the page must show what that says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import KERNEL_WATCH, JupyterLab, open_notebook
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP, PROBE = range(2)
CELLS = [
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
import shardviz
from shardviz.array.grammar import parse_spec

{KERNEL_WATCH}
mesh = AbstractMesh((4, 4), ('data', 'model'))

def layer(x, w):
    return jnp.tanh(x @ w)

def struct(shape, spec):
    return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec))

w = shardviz.ProgramWidget(shardviz.trace(layer, struct((64, 128), P('data', 'model')),
                                          struct((128, 256), P('model', None)), mesh=mesh))
w""",
    """_probe = globals().get('_probe', 0) + 1
def _spec(text):
    return P(*[e if e is None or len(e) != 1 else e[0] for e in parse_spec(text)])
_fresh = shardviz.trace(layer, *[struct(s, _spec(t)) for s, t in zip(((64, 128), (128, 256)), w.input_specs)],
                        mesh=mesh)
print(f'PROBE {_probe} ' + json.dumps({
    'input_specs': w.input_specs, 'error': w.error, 'devices': w.program.whatif.devices,
    'shown': sorted([c.kind, c.axes, c.total_wire_bytes, c.on_cpu.wire_bytes * c.count] for c in w.program.collectives),
    'fresh': sorted([c.kind, c.axes, c.total_wire_bytes, c.on_cpu.wire_bytes * c.count] for c in _fresh.collectives),
    'problems': _problems.records,
}))""",
]


class Session:
    def __init__(self, nb: Any) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def widget(self) -> Any:
        return (
            self.nb.cell(SETUP).locator(".jp-OutputArea-output").filter(has=self.page.locator('[data-view="program"]'))
        )

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)

    def table(self) -> list[list[Any]]:
        rows = self.widget().locator('[data-role="collective"]')
        return rows.evaluate_all(
            """rows => rows.map((r) => [
                r.getAttribute('data-kind'),
                r.querySelector('[data-role="collective-dtype"]').textContent,
                Number(r.getAttribute('data-bytes')),
                r.querySelector('[data-role="other-count"]')?.textContent ?? '',
            ])"""
        )


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-whatif.ipynb", CELLS) as nb:
        nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        nb.run_all(len(CELLS))
        s = Session(nb)
        expect(s.widget()).to_have_count(1, timeout=120_000)
        nb.assert_healthy()
        yield s


def test_the_bf16_all_reduce_is_counted_in_bf16_with_xla_cpus_figure_under_it(
    session: Session, tmp_path_factory: Any
) -> None:
    state = session.kernel_state()
    assert state["devices"] == 16 and state["input_specs"] == ["data, model", "model"]
    # x @ w contracts over model: each device's (64/4) x 256 partial sums, all-reduced over the 4 of model;
    # a ring sends 2 (4-1)/4 of them: bf16 on the device, f32 in XLA:CPU's module
    partial = 64 // 4 * 256
    device, cpu = 2 * 3 * partial * 2 // 4, 2 * 3 * partial * 4 // 4
    assert state["shown"] == [["all-reduce", ["model"], device, cpu]]
    (row,) = session.table()
    assert row[:3] == ["all-reduce", "bf16", device]
    assert row[3].startswith("f32 in XLA:CPU:")
    widget = session.widget()
    expect(widget.locator('[data-role="bytes-counting"]')).to_contain_text("program's dtypes")
    expect(widget.locator('[data-role="other-total"]')).to_be_visible()
    expect(widget.locator('[data-role="whatif-note"]')).to_contain_text("16 simulated CPU devices")
    widget.screenshot(path=str(tmp_path_factory.mktemp("shots") / "whatif-bf16.png"), animations="disabled")
    session.nb.assert_healthy()


def test_an_edit_traces_again_in_a_child_and_the_table_follows(session: Session) -> None:
    before = session.table()
    field = session.widget().locator('[data-role="input-spec"][data-input="1"]')
    expect(field).to_be_enabled()
    field.fill("None, model")
    field.press("Enter")
    expect(session.widget().locator('[data-role="retracing"]')).to_have_count(0, timeout=120_000)
    expect(field).to_have_value("None, model", timeout=120_000)
    state = session.kernel_state()
    assert state["error"] == "" and state["input_specs"] == ["data, model", "None, model"]
    assert state["devices"] == 16
    assert state["shown"] == state["fresh"]
    shown = session.table()
    assert shown != before
    assert sorted([r[0], r[2]] for r in shown) == sorted([kind, total] for kind, _, total, _ in state["fresh"])
    session.nb.assert_healthy()
