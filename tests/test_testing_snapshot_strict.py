"""Strict snapshots, layouts in the record, line identity, updates as a diff, and writers at once.

The traced code lives in module files written for each test (as in
test_testing_snapshot.py), so a test can add a comment, reformat a line,
move a collective from one function to another or narrow an input, as an
edit would. Bytes are checked against the ring formulas by hand.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import uuid

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import SnapshotChanged, assert_collectives_snapshot, collectives_record
from shardviz.testing.snapshot import stale_records
from shardviz.testing.snapshot_diff import code_key

MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)

MODEL = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P, reshard

MESH = None


def step(w, x):
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    return w - 0.1 * g
"""


def load(directory, source=MODEL):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"strict_model_{uuid.uuid4().hex}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.MESH = MESH
    return module


def arguments(width=32, batch=("data",)):
    w = jax.device_put(jnp.ones((16, width)), NamedSharding(MESH, P()))
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P(*batch)))
    return w, x


def snap(tmp_path, directory, prog, **kwargs):
    return assert_collectives_snapshot(prog, tmp_path / "snap.json", "step", base=directory, **kwargs)


def gradient_bytes(width: int, n: int = 4) -> int:
    return 2 * (n - 1) * (16 * width * 4) // n  # the gradient's all-reduce over data, by the ring formula


# ---------------------------------------------------------------------------- strict


def test_less_traffic_fails_a_strict_snapshot_and_passes_a_lenient_one(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    snap(tmp_path, code, shardviz.trace(module.step, *arguments(32)), update=True)
    small = shardviz.trace(module.step, *arguments(8))
    lenient = snap(tmp_path, code, small)
    assert lenient.notes and not lenient.recorded
    with pytest.raises(SnapshotChanged) as info:
        snap(tmp_path, code, small, strict=True)
    message = str(info.value)
    before, after = gradient_bytes(32), gradient_bytes(8)
    assert message.startswith("the collectives of step changed since the snapshot 'step' in ")
    assert message.splitlines()[0].endswith("(strict):")
    assert (
        f"line 10 of model.py (step) now all-reduces {after} B over data per call (x1); "
        f"the snapshot has {before / 1024:.1f} KiB (x1): -{(before - after) / 1024:.1f} KiB (-75%)" in message
    )
    assert "input w is laid out as float32[16,8] now; the snapshot has float32[16,32]" in message
    assert message.endswith("if the change is intended, record it again: pytest --shardviz-update (or update=True)")
    assert info.value.page.marked and all(info.value.page.marked)


def test_a_tolerance_takes_small_changes_in_bytes_as_none(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    snap(tmp_path, code, shardviz.trace(module.step, *arguments(32)), update=True)
    record = json.loads((tmp_path / "snap.json").read_text())
    item = record["snapshots"]["step"]["lines"][0]["collectives"][0]
    assert item["bytes"] == gradient_bytes(32)
    item["bytes"] = round(gradient_bytes(32) * 1.04)  # as if the record had 4% more
    (tmp_path / "snap.json").write_text(json.dumps(record))
    prog = shardviz.trace(module.step, *arguments(32))
    with pytest.raises(SnapshotChanged, match=r": -[0-9.]+ B \(-4%\)"):
        snap(tmp_path, code, prog, strict=True)
    assert snap(tmp_path, code, prog, strict=True, tolerance=0.05).notes == ()
    with pytest.raises(shardviz.ShardingError, match="tolerance is a relative change"):
        snap(tmp_path, code, prog, tolerance=5)


def test_a_dropped_batch_axis_is_a_layout_change_and_an_axis_no_longer_used(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    snap(tmp_path, code, shardviz.trace(module.step, *arguments()), update=True)
    dropped = shardviz.trace(module.step, *arguments(batch=()))
    assert dropped.collectives == ()  # no data parallelism, no traffic: nothing grew
    assert snap(tmp_path, code, dropped).notes
    with pytest.raises(SnapshotChanged) as info:
        snap(tmp_path, code, dropped, strict=True)
    message = str(info.value)
    assert (
        "input x is laid out as float32[16,16] now; the snapshot has float32[16@data,16] (no longer split by data)"
        in message
    )
    sent = gradient_bytes(32)
    assert (
        f"line 10 of model.py (step) no longer all-reduces over data; the snapshot has {sent / 1024:.1f} KiB "
        f"over data per call (x1): -{sent / 1024:.1f} KiB" in message
    )
    assert "the mesh axes data are used no more" in message


def test_a_record_without_layouts_says_so_and_still_compares_its_lines(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    prog = shardviz.trace(module.step, *arguments())
    old = collectives_record(prog, code)
    del old["inputs"], old["outputs"]
    (tmp_path / "snap.json").write_text(
        json.dumps({"format": "shardviz collectives snapshot 1", "snapshots": {"step": old}})
    )
    result = snap(tmp_path, code, prog, strict=True)
    assert result.notes == (
        "the snapshot keeps no input or output layouts (recorded before they were kept): record it again",
    )


# ---------------------------------------------------------------------------- line identity


def test_a_comment_and_reformatting_are_no_change_and_no_contradiction(tmp_path):
    first, edited = tmp_path / "v1", tmp_path / "v2"
    snap(tmp_path, first, shardviz.trace(load(first).step, *arguments()), update=True)
    source = MODEL.replace(
        "    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)",
        "    g = jax.grad(lambda w:jnp.sum( jnp.tanh(x@w) ))(w)  # the gradient, all-reduced",
    )
    assert source != MODEL
    result = snap(tmp_path, edited, shardviz.trace(load(edited, source).step, *arguments()), strict=True)
    assert result.notes == ()


def test_code_keys_leave_out_comments_and_spaces_but_not_strings():
    assert code_key("h = x @ w  # note") == code_key("h=x@w") == "h=x@w"
    assert code_key('s = "a # b"') == 's="a # b"'
    assert code_key("s = 'it\\'s'  # x") == "s='it\\'s'"
    assert code_key("# only a comment") == ""


TWO_FUNCTIONS = """
import jax.numpy as jnp


def first(x, w):
    return jnp.sum(x @ w)


def second(x, w):
    return jnp.sum(x @ w)


def step(split, whole, w):
    return FIRST(split, w) + SECOND(whole, w)
"""


def test_a_collective_moved_to_another_function_with_the_same_code_is_a_change(tmp_path):
    """Both functions read ``return jnp.sum(x @ w)``; the sharded argument moves from one to the other."""
    code = tmp_path / "v1"
    split = jax.device_put(jnp.ones((16, 8)), NamedSharding(MESH, P("data")))
    whole = jax.device_put(jnp.ones((16, 8)), NamedSharding(MESH, P()))
    w = jax.device_put(jnp.ones((8, 4)), NamedSharding(MESH, P()))
    module = load(code, TWO_FUNCTIONS.replace("FIRST", "first").replace("SECOND", "second"))
    prog = shardviz.trace(module.step, split, whole, w)
    (line,) = collectives_record(prog, code)["lines"]
    assert line["function"] == "first"
    snap(tmp_path, code, prog, update=True)
    swapped = load(code, TWO_FUNCTIONS.replace("FIRST", "second").replace("SECOND", "first"))
    with pytest.raises(SnapshotChanged) as info:
        snap(tmp_path, code, shardviz.trace(swapped.step, split, whole, w))
    message = str(info.value)
    assert "line 10 of model.py (second) now all-reduces" in message and "the snapshot has none" in message
    assert "line 6 of model.py (first) no longer all-reduces over data" in message


# ---------------------------------------------------------------------------- updates as a diff


def test_an_update_lists_growth_and_shrinkage_against_the_record_it_replaces(tmp_path):
    code = tmp_path / "v1"
    module = load(code)
    snap(tmp_path, code, shardviz.trace(module.step, *arguments(8)), update=True)
    grown = snap(tmp_path, code, shardviz.trace(module.step, *arguments(32)), update=True)
    assert grown.recorded
    assert grown.notes[0].startswith(
        f"+ line 10 of model.py (step) now all-reduces {gradient_bytes(32) / 1024:.1f} KiB over data per call (x1); "
        f"the snapshot has {gradient_bytes(8)} B (x1): +"
    )
    shrunk = snap(tmp_path, code, shardviz.trace(module.step, *arguments(8)), update=True)
    assert shrunk.notes[0].startswith("- line 10 of model.py (step) now all-reduces 768 B over data per call (x1)")
    assert "~ input w is laid out as float32[16,8] now; the snapshot has float32[16,32]" in shrunk.notes
    assert snap(tmp_path, code, shardviz.trace(module.step, *arguments(8)), update=True).notes == ()


# ---------------------------------------------------------------------------- stale records


def test_stale_records_are_those_of_tests_gone_or_calls_no_longer_made(tmp_path):
    code = tmp_path / "v1"
    prog = shardviz.trace(load(code).step, *arguments())
    path = tmp_path / "snap.json"
    for name in ("test_a[1]", "test_a[2]", "test_b", "test_b#2", "test_c::named", "test_gone"):
        assert_collectives_snapshot(prog, path, name, update=True, base=code)
    tests = {"test_a[1]", "test_b", "test_c", "test_d"}
    finished = {"test_b"}  # test_b ran to its end using one record; test_c did not run
    found = stale_records(path, tests, finished, {"test_b"}, prune=False)
    assert found == ["test_a[2]", "test_b#2", "test_gone"]
    assert sorted(json.loads(path.read_text())["snapshots"]) == sorted(
        ["test_a[1]", "test_a[2]", "test_b", "test_b#2", "test_c::named", "test_gone"]
    )
    assert stale_records(path, tests, finished, {"test_b"}, prune=True) == found
    assert sorted(json.loads(path.read_text())["snapshots"]) == ["test_a[1]", "test_b", "test_c::named"]
    assert stale_records(path, set(), set(), set(), prune=True) == ["test_a[1]", "test_b", "test_c::named"]
    assert not path.exists()  # no record left, no file


# ---------------------------------------------------------------------------- writers at once


WRITER = """
import sys
import jax
jax.config.update("jax_num_cpu_devices", 8)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
import shardviz
from shardviz.testing import assert_collectives_snapshot

mesh = Mesh(np.asarray(jax.devices()).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
x = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P("data")))
prog = shardviz.trace(lambda x: jnp.sum(x), x)
path, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # both writers start together
for k in range(count):
    assert_collectives_snapshot(prog, path, f"{writer}-{k}", update=True)
print("done", flush=True)
"""


def test_two_processes_writing_one_file_at_once_lose_no_record(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER))
    path = tmp_path / "__shardviz__" / "test_many.json"
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), name, "200"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for w in writers:
        assert w.stdout.readline().strip() == "ready", w.stderr.read()
    for w in writers:
        w.stdin.write("go\n")
        w.stdin.flush()
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0 and out.strip() == "done", err
    records = json.loads(path.read_text())["snapshots"]
    assert len(records) == 400 and {f"{n}-{k}" for n in "ab" for k in range(200)} == set(records)
    assert [p.name for p in path.parent.iterdir()] == ["test_many.json"]  # no temporary file left behind
