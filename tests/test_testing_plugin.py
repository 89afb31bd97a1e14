"""The pytest plugin of shardviz.testing, run on real inner test files with pytest's own ``pytester``.

The inner files trace real programs on the simulated devices of this run
(pytester runs them in this process). They check a passing and a failing
budget, ``--shardviz-html`` writing a page for the failing one only, and
the snapshot fixture through record, compare, growth and shrinkage.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import tomllib
from pathlib import Path

import shardviz
from shardviz.testing import plugin

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent


def plugin_arguments() -> list[str]:
    """Load the plugin by its entry point where shardviz is installed with it, else by module."""
    # this process imported the plugin module already (the test suite's conftest loads every module)
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if any(ep.name == "shardviz" for ep in importlib.metadata.entry_points(group="pytest11")):
        return ["-p", "shardviz", *quiet]
    return ["-p", "shardviz.testing.plugin", *quiet]


def line_in(source: str, snippet: str) -> int:
    """The line number of ``snippet`` in an inner test file made from ``source``."""
    return next(k for k, text in enumerate(source.strip().splitlines(), 1) if snippet in text)  # makepyfile strips


PRELUDE = """
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, reshard
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import assert_collectives

MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
"""

BUDGETS = (
    PRELUDE
    + """

def step(w, x):
    full = reshard(w, NamedSharding(MESH, P()))
    return jnp.tanh(x @ full)


def traced():
    w = jax.device_put(jnp.ones((16, 32)), NamedSharding(MESH, P("model", None)))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(MESH, P("data")))
    return shardviz.trace(step, w, x)


def test_gathers_only_over_model():
    assert_collectives(traced(), allow={"all-gather": ["model"]})


def test_only_all_reduce_over_data():
    assert_collectives(traced(), allow={"all-reduce": ["data"]})


def test_plain_failure():
    assert 1 == 2
"""
)

SNAPSHOT = (
    PRELUDE
    + """

def step(w, x):
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    if os.environ.get("SNAP_GATHER"):
        g = g + jnp.sum(reshard(x, NamedSharding(MESH, P())))
    return w - 0.1 * g


def test_step(shardviz_snapshot):
    width = int(os.environ.get("SNAP_WIDTH", "32"))
    w = jax.device_put(jnp.ones((16, width)), NamedSharding(MESH, P()))
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    shardviz_snapshot(shardviz.trace(step, w, x))
"""
)


def test_a_passing_and_a_failing_budget(pytester):
    pytester.makepyfile(test_budgets=BUDGETS)
    result = pytester.runpytest(*plugin_arguments())
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*CollectiveBudgetExceeded: the program step breaks its collective budget*",
            "*allowed: all-reduce over data",
            "*collectives not allowed:",
            "*all-gather over model: * per call (* x1); no all-gather is allowed",
            f"*at test_budgets.py:{line_in(BUDGETS, 'full = reshard(')} (step)  full = reshard(w, NamedSharding(MESH, P()))",
        ]
    )
    assert "shardviz page" not in result.stdout.str()  # no pages unless asked for


def test_html_pages_for_failing_shardviz_assertions_only(pytester, tmp_path):
    pytester.makepyfile(test_budgets=BUDGETS)
    pages = tmp_path / "pages"
    result = pytester.runpytest(*plugin_arguments(), "--shardviz-html", str(pages))
    result.assert_outcomes(passed=1, failed=2)
    written = sorted(p.name for p in pages.iterdir())
    assert written == [plugin.page_name("test_budgets.py::test_only_all_reduce_over_data")]
    assert written[0].startswith("test_budgets.py_test_only_all_reduce_over_data-")
    page = (pages / written[0]).read_text()
    assert (
        "<title>shardviz: assert_collectives failed in test_budgets.py::test_only_all_reduce_over_data</title>" in page
    )
    (payload,) = re.findall(r"data-shardviz-payload>(.*?)</script>", page)
    assert json.loads(payload)["kind"] == "program"
    result.stdout.fnmatch_lines([f"*the failed assertion's page: {pages / written[0]}"])


def test_snapshot_record_compare_grow_and_shrink(pytester, monkeypatch):
    pytester.makepyfile(test_snap=SNAPSHOT)
    monkeypatch.delenv("SNAP_GATHER", raising=False)
    monkeypatch.delenv("SNAP_WIDTH", raising=False)
    args = plugin_arguments()

    missing = pytester.runpytest(*args)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            "*no snapshot named 'test_step' in *test_snap.json: record the collectives of step with pytest*--shardviz-update*"
        ]
    )

    recorded = pytester.runpytest(*args, "--shardviz-update")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["*shardviz snapshots*", "test_snap.py::test_step: recorded 'test_step' in *"])
    stored = json.loads((pytester.path / "__shardviz__" / "test_snap.json").read_text())
    (line,) = stored["snapshots"]["test_step"]["lines"]
    grad_line, gather_line = line_in(SNAPSHOT, "jax.grad("), line_in(SNAPSHOT, "reshard(x")
    assert line["where"] == f"test_snap.py:{grad_line}" and line["function"] == "step"
    assert [item["kind"] for item in line["collectives"]] == ["all-reduce"]

    pytester.runpytest(*args).assert_outcomes(passed=1)

    monkeypatch.setenv("SNAP_GATHER", "1")
    grown = pytester.runpytest(*args)
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines(
        [
            "*SnapshotChanged: the collectives of step grew since the snapshot 'test_step'*",
            f"*line {gather_line} of test_snap.py (step) now all-gathers * over data per call (x1); the snapshot has none: +*",
            "*g = g + jnp.sum(reshard(x, NamedSharding(MESH, P())))",
            "*if the change is intended, record it again: pytest 'test_snap.py::test_step' --shardviz-update",
        ]
    )
    monkeypatch.delenv("SNAP_GATHER")

    monkeypatch.setenv("SNAP_WIDTH", "8")
    shrunk = pytester.runpytest(*args)
    shrunk.assert_outcomes(passed=1)
    shrunk.stdout.fnmatch_lines(
        [
            "*shardviz snapshots*",
            f"test_snap.py::test_step: line {grad_line} of test_snap.py (step) now all-reduces * the snapshot has *: -* (-*%)",
        ]
    )
    monkeypatch.setenv("SNAP_WIDTH", "64")
    pytester.runpytest(*args).assert_outcomes(failed=1)  # the shrunk run did not rewrite the snapshot


def test_unused_the_plugin_changes_nothing(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest(*plugin_arguments())
    result.assert_outcomes(passed=1)
    # nothing but pytest's own list of installed plugins mentions it
    assert [line for line in result.outlines if "shardviz" in line and not line.startswith("plugins:")] == []
    helped = pytester.runpytest(*plugin_arguments(), "--help")
    helped.stdout.fnmatch_lines(["*--shardviz-html=DIR*", "*--shardviz-update*"])


def test_the_entry_point_names_the_plugin_module():
    table = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert table == {"shardviz": "shardviz.testing.plugin"}
    for hook in ("pytest_addoption", "pytest_runtest_makereport", "shardviz_snapshot", "pytest_terminal_summary"):
        assert hasattr(plugin, hook)


def test_the_plugin_module_imports_only_pytest_and_the_standard_library():
    """Loading the plugin must stay cheap: shardviz's own modules (and JAX) load when a fixture or a failure needs them."""
    tree = ast.parse(Path(plugin.__file__).read_text())
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    stdlib = {"__future__", "hashlib", "importlib", "re", "sys", "collections", "pathlib", "typing"}
    assert imported <= stdlib | {"pytest"}


def test_shardviz_testing_imports_without_pytest_or_widgets():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pytest'] = None; sys.modules['anywidget'] = None\n"
        "import shardviz.testing\n"
        "assert 'shardviz.widgets.base' not in sys.modules and 'shardviz.testing.plugin' not in sys.modules\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
    assert shardviz.testing.__all__


def test_the_plugin_loads_no_jax_into_a_test_run_that_does_not_use_it():
    # pytest imports every installed pytest11 plugin at start: users who never
    # assert a layout must not pay for importing JAX in each run.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import shardviz.testing.plugin\n"
        "assert 'jax' not in sys.modules, 'the plugin imported jax'\n"
        "from shardviz.testing import assert_fits\n"
        "assert 'jax' in sys.modules\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_every_public_name_of_shardviz_and_its_testing_kit_resolves():
    import shardviz
    import shardviz.testing
    from shardviz.kinds import KINDS

    assert set(shardviz.__all__) == {"ShardingError", *shardviz._LAZY} - {"KINDS"}
    assert set(shardviz.testing.__all__) == set(shardviz.testing._LAZY)
    for module in (shardviz, shardviz.testing):
        for name in module.__all__:
            assert getattr(module, name) is not None, name
    for kind in KINDS.values():
        _, _, name = kind.widget.partition(":")
        assert getattr(shardviz, name) is kind.widget_class(), name
