"""The pytest plugin in whole runs: pages that show the difference, meshes, xdist, trimmed tracebacks.

Inner test files run with pytest's own ``pytester``: in this process where
they may share its devices, in a subprocess where a run needs its own
(pytest-xdist workers, a conftest that sets the device count).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from shardviz.testing import plugin
from test_testing_plugin import plugin_arguments

pytest_plugins = ["pytester"]

QUIET = plugin_arguments()

EIGHT = """
import jax

jax.config.update("jax_num_cpu_devices", 8)
"""

PRELUDE = """
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, reshard
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import assert_collectives, assert_layout, assert_step_time

MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def step(w, x):
    full = reshard(w, NamedSharding(MESH, P()))
    return jnp.tanh(x @ full)


def traced():
    w = jax.device_put(jnp.ones((16, 32)), NamedSharding(MESH, P("model", None)))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(MESH, P("data")))
    return shardviz.trace(step, w, x)
"""

FAILURES = (
    PRELUDE
    + """

def test_budget():
    assert_collectives(traced(), max_wire_bytes="1 B")


def test_snapshot(shardviz_snapshot):
    shardviz_snapshot(traced())


def test_time():
    assert_step_time(traced(), "h100", "1 ns")


def test_layout():
    assert_layout(jax.device_put(jnp.ones((8, 4)), NamedSharding(MESH, P("data"))), "float32[8@model,4]")


@pytest.mark.parametrize("case", ["a/b", "a_b", "a b"])
def test_ids(case):
    assert_layout(jax.device_put(jnp.ones((8, 4)), NamedSharding(MESH, P())), "float32[8@data,4]")


def test_moves_away(tmp_path):
    os.chdir(tmp_path)
    assert_layout(jax.device_put(jnp.ones((8, 4)), NamedSharding(MESH, P())), "[8@data,4]")
"""
)


def pages_of(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_failure_pages_show_the_budget_the_figure_and_the_difference(pytester, tmp_path, monkeypatch):
    pytester.makepyfile(test_pages=FAILURES)
    (pytester.path / "__shardviz__").mkdir()
    (pytester.path / "__shardviz__" / "test_pages.json").write_text(
        json.dumps({"format": "shardviz collectives snapshot 1", "snapshots": {"test_snapshot": {"lines": []}}})
    )
    monkeypatch.chdir(pytester.path)
    result = pytester.runpytest(*QUIET, "--shardviz-html", "pages", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=8)
    pages = pages_of(pytester.path / "pages")  # relative to where pytest started, though a test moved away
    ids = [f"test_pages.py::test_{n}" for n in ("budget", "snapshot", "time", "layout", "moves_away")]
    ids += [f"test_pages.py::test_ids[{case}]" for case in ("a/b", "a_b", "a b")]
    assert sorted(pages) == sorted(plugin.page_name(i) for i in ids)  # one page each: none overwritten
    budget, snapshot, time, layout = (pages[plugin.page_name(i)] for i in ids[:4])
    assert len({budget, snapshot, time}) == 3
    assert "<dd data-role=budget>max_wire_bytes 1 B</dd>" in budget
    assert re.search(r"<dd data-role=figure>1\.0 KiB \(1024 B\) sent per device per call</dd>", budget)
    assert re.search(r"<tr class=sv-marked data-marked><td>&#x2717;</td><td>test_pages\.py:\d+ \(step\)</td>", budget)
    assert "the snapshot &#x27;test_snapshot&#x27;" in snapshot and "all-gather" in snapshot
    assert snapshot.count("data-marked") == 1  # the gather over model, new since the (empty) snapshot
    assert "<dd data-role=budget>at most 1 ns per step on h100</dd>" in time
    # a layout: the expected and the actual drawn side by side, each an array view
    assert "<section data-role=expected><h2>expected</h2>" in layout and "<section data-role=actual>" in layout
    payloads = re.findall(r"data-shardviz-payload>(.*?)</script>", layout)
    assert [json.loads(p)["kind"] for p in payloads] == ["array", "array"]
    assert [json.loads(p)["type_str"] for p in payloads] == ["float32[8@model,4]", "float32[8@data,4]"]
    assert "<dd data-role=budget>laid out as float32[8@model,4]</dd>" in layout
    assert "dim 0: expected split by model, actually split by data" in layout
    assert "<script>alert" not in layout


def test_page_names_are_readable_and_unique():
    names = {plugin.page_name(f"tests/test_x.py::test_ids[{case}]") for case in ("a/b", "a_b", "a b")}
    assert len(names) == 3
    assert all(n.startswith("tests_test_x.py_test_ids[a_b]-") and n.endswith(".html") for n in names)


def test_a_failing_assertion_shows_the_users_frames_only(pytester):
    pytester.makepyfile(
        test_trim=PRELUDE + "\n\ndef test_budget():\n    assert_collectives(traced(), allow=['all-reduce'])\n"
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "shardviz/testing/" not in text and "def assert_collectives(" not in text
    assert ">       assert_collectives(traced(), allow=['all-reduce'])" in text


MESHES = """
import jax
import pytest


@pytest.mark.shardviz_mesh((4, 2), ("data", "model"))
def test_marked(shardviz_mesh):
    assert dict(shardviz_mesh.shape) == {"data": 4, "model": 2}
    assert jax.sharding.get_abstract_mesh().axis_names == ("data", "model")  # entered for the test


@pytest.mark.shardviz_mesh((64, 2), ("data", "model"))
def test_too_big(shardviz_mesh):
    raise AssertionError("never runs")


@pytest.mark.parametrize("shardviz_mesh", [((8,), ("data",)), ((2, 4), ("data", "model"))], indirect=True)
def test_over_several(shardviz_mesh):
    assert shardviz_mesh.size == 8


def test_unmarked(shardviz_mesh):
    pass
"""


def test_the_mesh_fixture_builds_enters_and_skips_saying_how_to_get_more_devices(pytester):
    pytester.makepyfile(test_meshes=MESHES)
    result = pytester.runpytest(*QUIET, "-rs")
    result.assert_outcomes(passed=3, skipped=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*the mesh needs 128 devices and this process has 12: simulate more on CPU in conftest.py, "
            "before JAX starts, with jax.config.update('jax_num_cpu_devices', 128) "
            "(or run with XLA_FLAGS=--xla_force_host_platform_device_count=128)",
        ]
    )
    assert "the shardviz_mesh fixture needs @pytest.mark.shardviz_mesh(shape, names)" in result.stdout.str()


SNAPSHOTS = (
    PRELUDE
    + """

@pytest.mark.parametrize("case", range(6))
def test_many(case, shardviz_snapshot):
    shardviz_snapshot(traced())
    shardviz_snapshot(traced())


@pytest.mark.shardviz_snapshot(strict=True)
def test_strict_by_marker(shardviz_snapshot):
    width = int(os.environ.get("SNAP_WIDTH", "32"))
    w = jax.device_put(jnp.ones((16, width)), NamedSharding(MESH, P("model", None)))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(MESH, P("data")))
    shardviz_snapshot(shardviz.trace(step, w, x))
"""
)


def test_xdist_workers_lose_no_record_and_the_summary_comes_from_every_worker(pytester, monkeypatch):
    pytester.makeconftest(EIGHT)
    pytester.makepyfile(test_snaps=SNAPSHOTS)
    monkeypatch.delenv("SNAP_WIDTH", raising=False)
    args = [*QUIET, "-p", "no:cacheprovider", "-n", "2"]
    recorded = pytester.runpytest_subprocess(*args, "--shardviz-update")
    recorded.assert_outcomes(passed=7)
    workers = set(re.findall(r"\[(gw\d)\]", pytester.runpytest_subprocess(*args, "-v").stdout.str()))
    assert workers == {"gw0", "gw1"}  # the tests landed on both workers
    records = json.loads((pytester.path / "__shardviz__" / "test_snaps.json").read_text())["snapshots"]
    expected = {f"test_many[{k}]" for k in range(6)} | {f"test_many[{k}]#2" for k in range(6)}
    assert set(records) == expected | {"test_strict_by_marker"}
    summary = recorded.stdout.str().split("shardviz snapshots")[1]
    assert sorted(re.findall(r"recorded '([^']+)'", summary)) == sorted(records)
    # the marker makes one test strict: a narrower weight (less traffic) fails it
    monkeypatch.setenv("SNAP_WIDTH", "8")
    narrower = pytester.runpytest_subprocess(*args)
    narrower.assert_outcomes(passed=6, failed=1)
    narrower.stdout.fnmatch_lines(["*changed since the snapshot 'test_strict_by_marker'*(strict):"])


def test_strictness_from_the_command_line_and_the_ini_file(pytester, monkeypatch):
    pytester.makepyfile(test_snaps=SNAPSHOTS.replace("@pytest.mark.shardviz_snapshot(strict=True)\n", ""))
    monkeypatch.delenv("SNAP_WIDTH", raising=False)
    args = [*QUIET, "-p", "no:cacheprovider", "-k", "strict_by_marker"]
    pytester.runpytest(*args, "--shardviz-update").assert_outcomes(passed=1)
    monkeypatch.setenv("SNAP_WIDTH", "8")
    pytester.runpytest(*args).assert_outcomes(passed=1)  # less traffic passes by default
    pytester.runpytest(*args, "--shardviz-strict").assert_outcomes(failed=1)
    pytester.makeini("[pytest]\nshardviz_strict = true\nshardviz_tolerance = 90%\n")
    pytester.runpytest(*args).assert_outcomes(failed=1)  # the layout changed: no tolerance covers that
    pytester.makeini("[pytest]\nshardviz_tolerance = lots\n")
    assert "shardviz_tolerance must be a number such as 0.02 or 2%" in pytester.runpytest(*args).stderr.str()


def test_a_second_unnamed_call_is_a_record_of_its_own(pytester, monkeypatch):
    source = PRELUDE + (
        "\n\ndef test_two(shardviz_snapshot):\n"
        "    shardviz_snapshot(traced())\n"
        "    if os.environ.get('SECOND_GATHERS'):\n"
        "        shardviz_snapshot(traced())\n"
        "    else:\n"
        "        shardviz_snapshot(shardviz.trace(lambda x: x * 2, jnp.ones(4)))\n"
    )
    pytester.makepyfile(test_two=source)
    monkeypatch.delenv("SECOND_GATHERS", raising=False)
    pytester.runpytest(*QUIET, "--shardviz-update").assert_outcomes(passed=1)
    records = json.loads((pytester.path / "__shardviz__" / "test_two.json").read_text())["snapshots"]
    assert records["test_two"]["lines"] and records["test_two#2"]["lines"] == []
    monkeypatch.setenv("SECOND_GATHERS", "1")
    grown = pytester.runpytest(*QUIET)
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines(["*grew since the snapshot 'test_two#2'*"])


def test_strict_stale_fails_a_whole_run_on_a_record_whose_test_is_gone_until_it_is_pruned(pytester, monkeypatch):
    pytester.makepyfile(test_kept=PRELUDE + "\n\ndef test_kept(shardviz_snapshot):\n    shardviz_snapshot(traced())\n")
    monkeypatch.chdir(pytester.path)
    pytester.runpytest(*QUIET, "--shardviz-update").assert_outcomes(passed=1)
    path = pytester.path / "__shardviz__" / "test_kept.json"
    data = json.loads(path.read_text())
    data["snapshots"]["test_removed_long_ago"] = data["snapshots"]["test_kept"]
    path.write_text(json.dumps(data))
    lenient = pytester.runpytest(*QUIET)
    assert lenient.ret == 0  # by default a stale record is only noted
    lenient.stdout.fnmatch_lines(["*stale record 'test_removed_long_ago'*pytest --shardviz-update removes it"])
    strict = pytester.runpytest(*QUIET, "--shardviz-strict-stale")
    strict.assert_outcomes(passed=1)
    assert strict.ret == 1
    strict.stdout.fnmatch_lines(["*the run fails on the stale records above*pytest --shardviz-update to prune them"])
    pytester.makeini("[pytest]\nshardviz_strict_stale = true\n")
    assert pytester.runpytest(*QUIET).ret == 1
    pytester.runpytest(*QUIET, "--shardviz-update").assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["snapshots"]) == {"test_kept"}
    assert pytester.runpytest(*QUIET).ret == 0
