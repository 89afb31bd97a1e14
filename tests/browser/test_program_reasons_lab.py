"""The program view's reason panel in JupyterLab 4 with a live kernel (8 simulated CPU devices; the
rematerialization on a what-if 4x3 mesh, compiled in a child of 12), and on a saved page opened from
file:// with the network cut off.

A click on a collective, or on a line's marker (its "sends" figure) in the source, opens why it is
there (the operands' layouts as small mesh grids, the rule); "Find fixes" traces the changes in the kernel, "Try it" makes one the program shown, "Back" returns.
The kernel is read back with a probe cell that compiles the tried program's function with JAX itself
(no shardviz) and lists the compiled module's collectives: the page must agree.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import IMAGES, KERNEL_WATCH, REPO, JupyterLab, LabNotebook, open_notebook, png_size
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP, PROBE, REMAT = range(3)
CELLS = [
    f"""import json, logging, sys
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
import shardviz
sys.path.insert(0, {str(REPO / "tests")!r})
from program_js_fixtures import hlo_collectives

{KERNEL_WATCH}
mesh = jax.make_mesh((4, 2), ('a', 'b'), axis_types=(AxisType.Auto,) * 2)

def sorted_rows(x):
    return jnp.sort(x, axis=0)

x = jax.ShapeDtypeStruct((8, 6), jnp.float32, sharding=NamedSharding(mesh, P('a', None)))
w = shardviz.ProgramWidget(shardviz.trace(sorted_rows, x))
w""",
    """_probe = globals().get('_probe', 0) + 1
_shown = w.program
_spec = _shown.inputs[0].spec
_args = [jax.ShapeDtypeStruct((8, 6), jnp.float32, sharding=NamedSharding(mesh, P(*[s[0] if s else None for s in _spec])))]
print(f'PROBE {_probe} ' + json.dumps({
    'error': w.error, 'spec': [list(s) for s in _spec],
    'shown': [c.kind for c in _shown.collectives],
    'jax': [c['kind'] for c in hlo_collectives(jax.jit(sorted_rows).lower(*_args).compile())],
    'problems': _problems.records,
}))""",
    """from jax.sharding import AbstractMesh
from plan_functions import swapped_blocks  # P('a','b') asked for as P('b','a'): XLA gathers it all on 4x3

wmesh = AbstractMesh((4, 3), ('a', 'b'), axis_types=(AxisType.Auto,) * 2)
y = jax.ShapeDtypeStruct((12, 12), jnp.float32, sharding=NamedSharding(wmesh, P('a', 'b')))
rw = shardviz.ProgramWidget(shardviz.trace(swapped_blocks, y, mesh=wmesh))  # a what-if child of 12 devices
print('REMATS', len(rw.program.rematerializations))
rw""",
]


class Session:
    def __init__(self, nb: LabNotebook) -> None:
        self.nb = nb
        self.page = nb.page
        self.probes = 1

    def widget(self, cell: int = SETUP) -> Any:
        return (
            self.nb.cell(cell).locator(".jp-OutputArea-output").filter(has=self.page.locator('[data-view="program"]'))
        )

    def kernel_state(self) -> dict[str, Any]:
        self.probes += 1
        return self.nb.probe(PROBE, self.probes)


@pytest.fixture(scope="module")
def session(jupyter_lab: JupyterLab, browser: Any) -> Iterator[Session]:
    with open_notebook(jupyter_lab, browser, "shardviz-reasons.ipynb", CELLS) as nb:
        nb.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        nb.run_all(len(CELLS))
        s = Session(nb)
        for cell in (SETUP, REMAT):
            expect(s.widget(cell)).to_have_count(1, timeout=60_000)
        nb.assert_healthy()
        yield s


def shot(locator: Any, name: str) -> pathlib.Path:
    locator.scroll_into_view_if_needed()
    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / name
    locator.screenshot(path=str(path), animations="disabled", caret="hide", scale="css")
    width, height = png_size(path)
    assert 200 <= width <= 1600 and 40 <= height <= 2400, f"{name} is {width}x{height}"
    return path


def test_a_click_on_a_line_marker_opens_the_reason_of_its_collective(session: Session) -> None:
    widget = session.widget()
    # The sort's line has one collective (the all-gather of x, numbered 0): its "sends" figure is the marker.
    line = widget.locator('[data-role="source-line"]').filter(has_text="jnp.sort(x, axis=0)")
    marker = line.locator('[data-role="line-sent"]')
    expect(marker).to_have_attribute("data-why-collective", "0")
    marker.click()
    reason = widget.locator('[data-role="selection"] [data-role="reason"]')
    expect(reason.locator('[data-role="reason-cause"]')).to_have_text("Needs a whole dimension: sort")
    expect(reason.locator('[data-role="reason-rule"]')).to_contain_text("dimension 0 of x, which is split over 'a'")
    expect(widget.locator('[data-role="selection"] .sv-panel-title').first).to_have_text("Collective all-gather over a")
    shot(widget.locator(".sv-program-main"), "program-reason-marker.png")
    # The rematerialization's line is marked as such, and its marker opens the box with both layouts.
    remat_widget = session.widget(REMAT)
    remat_marker = remat_widget.locator('[data-role="line-sent"][data-why-collective]').first
    expect(remat_marker).to_have_class(re.compile(r"\bsv-why-remat\b"))
    remat_marker.click()
    expect(remat_widget.locator('[data-role="selection"] [data-role="remat"]')).to_contain_text(
        "from P('a', 'b') to P('b', 'a')"
    )
    session.nb.assert_healthy()


def test_a_click_on_a_collective_opens_its_reason_and_try_it_traces_the_fix(session: Session) -> None:
    widget = session.widget()
    widget.locator('[data-role="collective"]').first.click()
    reason = widget.locator('[data-role="reason"]')
    expect(reason.locator('[data-role="reason-cause"]')).to_have_text("Needs a whole dimension: sort")
    expect(reason.locator('[data-role="reason-rule"]')).to_contain_text("dimension 0 of x, which is split over 'a'")
    # x P('a') on a 4x2 mesh: the device at row i holds block i of dimension 0, whole along dimension 1
    cells = reason.locator('[data-role="reason-grid"]').first.locator(".sv-reason-cell")
    expect(cells).to_have_count(8)
    assert cells.all_text_contents() == ["0,*", "0,*", "1,*", "1,*", "2,*", "2,*", "3,*", "3,*"]
    reason.locator('[data-role="find-fixes"]').click()
    fixes = widget.locator('[data-role="reason-fix"]')
    expect(fixes.first).to_have_attribute("data-removed", "true", timeout=60_000)
    expect(fixes.first.locator('[data-role="reason-code"]')).to_contain_text("jax.device_put(x, NamedSharding(mesh")
    shot(widget.locator('[data-role="selection"]'), "program-reason.png")
    fixes.first.locator('[data-role="try-fix"]').click()
    expect(widget.locator('[data-role="collective"]')).to_have_count(0, timeout=60_000)
    state = session.kernel_state()
    assert state["error"] == "" and state["shown"] == [] and state["jax"] == []  # JAX's own module agrees
    assert state["spec"] == [[], []]
    shot(widget.locator(".sv-summary-slot"), "program-reason-tried.png")
    widget.locator('[data-role="fix-back"]').click()
    expect(widget.locator('[data-role="collective"]')).to_have_count(1, timeout=60_000)
    state = session.kernel_state()
    assert state["shown"] == ["all-gather"] and state["spec"] == [["a"], []] and state["problems"] == []
    session.nb.assert_healthy()


def test_a_rematerialization_is_flagged_with_both_layouts(session: Session) -> None:
    widget = session.widget(REMAT)
    out = session.nb.cell(REMAT).locator(".jp-OutputArea-output").first
    expect(out).to_contain_text("REMATS")
    count = int(out.inner_text().split("REMATS")[1].split()[0])
    if count == 0:
        pytest.fail("the what-if child caught no involuntary rematerialization for the 4x3 case")
    expect(widget.locator('[data-role="remat-flag"]')).to_contain_text("involuntary full rematerialization")
    widget.locator('[data-role="collective"]').first.click()
    remat = widget.locator('[data-role="remat"]')
    expect(remat).to_contain_text("from P('a', 'b') to P('b', 'a')")
    grids = remat.locator('[data-role="reason-grid"]')
    expect(grids).to_have_count(2)
    # On the 4x3 mesh, P('a','b'): the device at (i, j) holds block (i, j); P('b','a'): block (j, i)
    assert grids.nth(0).locator(".sv-reason-cell").all_text_contents()[:4] == ["0,0", "0,1", "0,2", "1,0"]
    assert grids.nth(1).locator(".sv-reason-cell").all_text_contents()[:4] == ["0,0", "1,0", "2,0", "0,1"]
    shot(widget.locator('[data-role="selection"]'), "program-remat.png")
    session.nb.assert_healthy()


def test_a_saved_page_shows_the_reasons_and_traced_fixes_read_only(offline_context: Any, tmp_path: Any) -> None:
    import jax
    import jax.numpy as jnp
    from browser_support import check_front_end_built
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    check_front_end_built()
    mesh = jax.make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])

    def sorted_rows(x):
        return jnp.sort(x, axis=0)

    x = jax.ShapeDtypeStruct((8, 6), jnp.float32, sharding=NamedSharding(mesh, P("a", None)))
    prog = shardviz.trace(sorted_rows, x)
    assert prog.collectives[0].fixes  # traced here, so the page carries them
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(prog, tmp_path / "reasons.html")))
    expect(page.locator('[data-view="program"]')).to_have_count(1)
    # The line's marker opens the reason on the saved page too, and the fixes traced before saving.
    page.locator('[data-role="source-line"]').filter(has_text="jnp.sort").locator('[data-role="line-sent"]').click()
    reason = page.locator('[data-role="reason"]')
    expect(reason.locator('[data-role="reason-cause"]')).to_have_text("Needs a whole dimension: sort")
    expect(reason.locator('[data-role="reason-fix"]').first).to_have_attribute("data-removed", "true")
    page.locator('[data-role="collective"]').first.click()
    expect(reason.locator('[data-role="reason-cause"]')).to_have_text("Needs a whole dimension: sort")
    expect(reason.locator('[data-role="reason-fix"]').first).to_have_attribute("data-removed", "true")
    expect(reason.locator('[data-role="try-fix"]')).to_have_count(0)  # read-only: nothing to trace with
    expect(reason.locator('[data-role="find-fixes"]')).to_have_count(0)
    shot(page.locator('[data-role="selection"]'), "program-reason-saved.png")
    assert offline_context.aborted == []
    watch.assert_clean()


def test_a_saved_page_shows_a_fix_of_two_inputs_and_a_constraint_that_leaves_the_sum(
    offline_context: Any, tmp_path: Any
) -> None:
    """Megatron's MLP on 4x2: y = h @ w2 sums partial products over 'b' (h and w2 both split over 'b' where
    they are contracted). Its top fix keeps w1 and w2 off 'b' and removes the all-reduce; constraining h whole
    where its line makes it does not (w2 is still split). The saved page lists both, each marked."""
    import jax
    import jax.numpy as jnp
    from browser_support import check_front_end_built
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    check_front_end_built()
    mesh = jax.make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])

    def put(shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))

    def megatron_mlp(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        y = h @ w2
        return y

    prog = shardviz.trace(megatron_mlp, put((16, 24), P("a")), put((24, 48), P(None, "b")), put((48, 24), P("b")))
    (c,) = prog.collectives
    fixes = c.fixes
    assert [(f.kind, f.removed) for f in fixes] == [("input-spec", True), ("constraint", False)]
    page, watch = offline_context.open(pathlib.Path(shardviz.save_html(prog, tmp_path / "megatron.html")))
    page.locator('[data-role="collective"]').first.click()
    reason = page.locator('[data-role="reason"]')
    expect(reason.locator('[data-role="reason-rule"]')).to_contain_text("h is split over 'b' on its contracting")
    rows = reason.locator('[data-role="reason-fix"]')
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-removed", "true")
    expect(rows.nth(0).locator('[data-role="reason-code"]')).to_have_text(fixes[0].code)
    expect(rows.nth(1)).to_have_attribute("data-removed", "false")
    expect(rows.nth(1).locator('[data-role="reason-code"]')).to_have_text(fixes[1].code)
    shot(page.locator('[data-role="selection"]'), "program-reason-two-inputs-saved.png")
    assert offline_context.aborted == []
    watch.assert_clean()
