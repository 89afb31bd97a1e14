"""Collectives snapshots (shardviz.testing.assert_collectives_snapshot) on real traces.

The code traced lives in module files written for each test, so a test can
move its lines, add a collective or grow one, as an edit would. What a
snapshot records is checked against the collectives in the compiled module.
"""

from __future__ import annotations

import importlib.util
import json
import re
import uuid

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import SnapshotChanged, assert_collectives_snapshot, collectives_record
from shardviz.text.ranges import format_bytes

MESH = Mesh(
    np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Explicit)
)

MODEL = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P, reshard

MESH = None
GATHER = False


def step(w, x):
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    if GATHER:
        g = g + jnp.sum(reshard(x, NamedSharding(MESH, P())))
    return w - 0.1 * g
"""


def load(directory, source=MODEL, gather=False):
    """The model module written to ``directory/model.py`` and imported fresh."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"snapshot_model_{uuid.uuid4().hex}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.MESH, module.GATHER = MESH, gather
    return module


def arguments(width=32):
    w = jax.device_put(jnp.ones((16, width)), NamedSharding(MESH, P()))
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    return w, x


def line_of(directory, snippet: str) -> int:
    return next(k for k, text in enumerate((directory / "model.py").read_text().splitlines(), 1) if snippet in text)


def compiled_kinds(f, *args) -> set[str]:
    text = jax.jit(f).lower(*args).compile().as_text()
    return {m.group(1) for m in re.finditer(r"\b(all-reduce|all-gather|reduce-scatter|all-to-all)(?:-start)?\(", text)}


def snap(tmp_path, directory, prog, **kwargs):
    return assert_collectives_snapshot(prog, tmp_path / "snap.json", "step", base=directory, **kwargs)


def test_a_record_holds_the_compiled_collectives_per_line(tmp_path):
    code = tmp_path / "v1"
    module = load(code, gather=True)
    prog = shardviz.trace(module.step, *arguments())
    record = collectives_record(prog, code)
    kinds = {item["kind"] for line in record["lines"] for item in line["collectives"]}
    assert kinds == compiled_kinds(module.step, *arguments()) == {"all-reduce", "all-gather"}
    gather_line = line_of(code, "reshard(x")
    (gathers,) = [line for line in record["lines"] if line["where"] == f"model.py:{gather_line}"]
    assert gathers["function"] == "step"
    assert gathers["code"] == "g = g + jnp.sum(reshard(x, NamedSharding(MESH, P())))"
    assert gathers["collectives"] == [
        {
            "kind": "all-gather",
            "axes": "data",
            "bytes": sum(c.total_wire_bytes for c in prog.collectives if c.kind == "all-gather"),
            "runs": 1,
        }
    ]
    assert record["mesh"] == "data=4 model=2"


def test_record_then_compare_passes_and_the_file_is_small_json(tmp_path):
    code = tmp_path / "v1"
    prog = shardviz.trace(load(code).step, *arguments())
    with pytest.raises(
        SnapshotChanged, match=r"no snapshot named 'step' in .*snap.json: record the collectives of step"
    ):
        snap(tmp_path, code, prog)
    recorded = snap(tmp_path, code, prog, update=True)
    assert recorded.recorded and recorded.notes == ()
    data = json.loads((tmp_path / "snap.json").read_text())
    assert data["format"] == "shardviz collectives snapshot 1" and list(data["snapshots"]) == ["step"]
    again = snap(tmp_path, code, prog)
    assert not again.recorded and again.notes == ()


def test_an_added_collective_fails_naming_the_line(tmp_path):
    code = tmp_path / "v1"
    snap(tmp_path, code, shardviz.trace(load(code).step, *arguments()), update=True)
    grown = shardviz.trace(load(code, gather=True).step, *arguments())
    with pytest.raises(SnapshotChanged) as info:
        snap(tmp_path, code, grown)
    message = str(info.value)
    sent = sum(c.total_wire_bytes for c in grown.collectives if c.kind == "all-gather")
    line = line_of(code, "reshard(x")
    assert (
        f"line {line} of model.py (step) now all-gathers {format_bytes(sent)} over data per call (x1); the snapshot has none"
        in message
    )
    assert "      g = g + jnp.sum(reshard(x, NamedSharding(MESH, P())))" in message
    assert "pytest --shardviz-update" in message
    assert info.value.subject is grown


def test_more_bytes_on_a_line_fail_and_fewer_pass_with_a_note(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    small = shardviz.trace(module.step, *arguments(width=8))
    big = shardviz.trace(module.step, *arguments(width=32))
    before = sum(c.total_wire_bytes for c in small.collectives)
    after = sum(c.total_wire_bytes for c in big.collectives)
    assert after > before > 0
    snap(tmp_path, code, small, update=True)
    with pytest.raises(SnapshotChanged) as info:
        snap(tmp_path, code, big)
    line = line_of(code, "jax.grad(")
    assert (
        f"line {line} of model.py (step) now all-reduces {format_bytes(after)} over data per call (x1); "
        f"the snapshot has {format_bytes(before)} (x1)" in str(info.value)
    )
    snap(tmp_path, code, big, update=True)
    shrunk = snap(tmp_path, code, small)
    assert not shrunk.recorded
    assert shrunk.notes[0] == (
        f"line {line} of model.py (step) now all-reduces {format_bytes(before)} over data per call (x1); "
        f"the snapshot has {format_bytes(after)} (x1): -{format_bytes(after - before)} "
        f"(-{(after - before) / after:.0%})\n      g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)"
    )
    # the weights are narrower: a layout change, which passes unless the check is strict
    assert shrunk.notes[1:] == (
        "input w is laid out as float32[16,8] now; the snapshot has float32[16,32]",
        "output out is laid out as float32[16,8] now; the snapshot has float32[16,32]",
    )


def test_a_removed_collective_passes_with_a_note(tmp_path):
    code = tmp_path / "v1"
    snap(tmp_path, code, shardviz.trace(load(code, gather=True).step, *arguments()), update=True)
    result = snap(tmp_path, code, shardviz.trace(load(code).step, *arguments()))
    line = line_of(code, "reshard(x")
    assert len(result.notes) == 1
    assert result.notes[0].startswith(f"line {line} of model.py (step) no longer all-gathers")


def test_moving_code_down_the_file_is_no_change(tmp_path):
    first, moved = tmp_path / "v1", tmp_path / "v2"
    snap(tmp_path, first, shardviz.trace(load(first, gather=True).step, *arguments()), update=True)
    module = load(moved, "# a comment\n# another\n\n" + MODEL, gather=True)
    assert line_of(moved, "reshard(x") == line_of(first, "reshard(x") + 3
    result = snap(tmp_path, moved, shardviz.trace(module.step, *arguments()))
    assert result.notes == ()


def test_updating_one_snapshot_keeps_the_others(tmp_path):
    code = tmp_path / "v1"
    prog = shardviz.trace(load(code).step, *arguments())
    path = tmp_path / "snap.json"
    assert_collectives_snapshot(prog, path, "a", update=True, base=code)
    assert_collectives_snapshot(prog, path, "b", update=True, base=code)
    assert sorted(json.loads(path.read_text())["snapshots"]) == ["a", "b"]
    assert_collectives_snapshot(prog, path, "a", base=code)
    assert_collectives_snapshot(prog, path, "b", base=code)


def test_bad_input_raises_sharding_error(tmp_path):
    code = tmp_path / "v1"
    prog = shardviz.trace(load(code).step, *arguments())
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(shardviz.ShardingError, match="cannot read the snapshot file"):
        assert_collectives_snapshot(prog, broken, "step")
    other = tmp_path / "other.json"
    other.write_text('{"format": "something else"}')
    with pytest.raises(shardviz.ShardingError, match="is no shardviz collectives snapshot"):
        assert_collectives_snapshot(prog, other, "step")
    with pytest.raises(shardviz.ShardingError, match=r"records a program traced with shardviz\.trace"):
        assert_collectives_snapshot(arguments()[0], tmp_path / "snap.json", "step")
    with pytest.raises(shardviz.ShardingError, match="a snapshot's name is a non-empty string"):
        assert_collectives_snapshot(prog, tmp_path / "snap.json", "")
