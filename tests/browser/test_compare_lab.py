"""The comparison view live in JupyterLab with a real kernel: a candidate's rules typed into its editor
trace that candidate again in the kernel, alone, and the page shows the kernel's new comparison; a bad
rule is refused beside the table and the comparison stays. The kernel side is read back through a probe
cell; the expected collectives come from a hand count of the step (tests/compare_steps.py's mlp)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import COMPARE_MLP_CELL, KERNEL_WATCH, JupyterLab, open_notebook
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP, PROBE = range(2)
CELLS = [
    f"""import json, logging
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, AxisType, PartitionSpec as P, reshard
import shardviz

{KERNEL_WATCH}
{COMPARE_MLP_CELL}w = shardviz.ComparisonWidget(cmp)
w""",
    """_probe = globals().get('_probe', 0) + 1
print(f'PROBE {_probe} ' + json.dumps({
    'error': w.error, 'notice': w.notice, 'rules': w.payload['rules'],
    'b_kept': w.comparison.programs['b'] is cmp.programs['b'],
    'a_gathers': sum(1 for c in w.comparison.row('a').lines if c.kind == 'all-gather'),
    'candidates': sorted(r.candidate for r in w.comparison.rows), 'problems': _problems.records,
}))""",
]

RULES = "0 = data, model\n1 = model, data\n2 = data, None"


class Session:
    def __init__(self, nb: Any) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def view(self) -> Any:
        output = self.nb.cell(SETUP).locator(".jp-OutputArea-output")
        return output.filter(has=self.page.locator('[data-view="compare"]'))

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)

    def retrace(self, candidate: str, rules: str) -> None:
        editor = self.view().locator(".sv-compare-editor", has=self.page.locator(f'[data-candidate="{candidate}"]'))
        editor.locator("textarea").fill(rules)
        editor.locator('[data-role="retrace"]').click()


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-compare.ipynb", CELLS) as nb:
        nb.run_all(len(CELLS))
        expect(nb.cell(SETUP).locator('[data-view="compare"]')).to_have_count(1, timeout=120_000)
        nb.assert_healthy()
        yield Session(nb)


def test_a_rules_edit_traces_that_candidate_again_in_the_kernel(session: Session) -> None:
    view = session.view()
    expect(view.locator('[data-role="compare-row"]')).to_have_count(2)
    first = session.kernel_state()
    # By hand: w1 is stored over (data, model) and used over (None, model), so each run gathers it over data;
    # w2 likewise: two all-gathers per candidate.
    assert first["a_gathers"] == 2 and first["error"] == "", first
    # Only x sharded: the weights are whole on every device, so nothing is gathered.
    session.retrace("a", "2 = data, None")
    expect(view.locator('[role="status"]')).to_contain_text("a traced again", timeout=60_000)
    state = session.kernel_state()
    assert state["rules"] == {"a": "2 = data, None", "b": RULES}, state
    assert state["a_gathers"] == 0 and state["b_kept"] is True, state
    assert state["candidates"] == ["a", "b"] and state["problems"] == [], state
    expect(view.locator('textarea[data-candidate="a"]')).to_have_value("2 = data, None")
    session.nb.assert_healthy()


def test_a_bad_rule_is_refused_and_the_comparison_stays(session: Session) -> None:
    view = session.view()
    before = session.kernel_state()
    session.retrace("b", "0 = data, nope")
    alert = view.locator('[role="alert"][data-role="error"]')
    expect(alert).to_contain_text("line 1")
    state = session.kernel_state()
    assert "line 1" in state["error"] and state["rules"] == before["rules"], state
    assert state["b_kept"] is True, state
    expect(view.locator('[data-role="compare-row"]')).to_have_count(2)
    # A good edit afterwards clears the refusal.
    session.retrace("b", RULES)
    # b is traced again in a child process: seconds on a loaded machine, past expect's default 5 s.
    expect(alert).to_have_count(0, timeout=60_000)
    session.nb.assert_healthy()
