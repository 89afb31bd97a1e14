"""What-if traces: a program compiled in a child with as many CPU devices as the mesh."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError

sys.path.insert(0, str(Path(__file__).parent))
from plan_functions import gather_rows, matmul_sum, scanned_model, slow


def _collectives(prog):
    return [(c.kind, c.groups, c.axes, c.result_bytes, c.wire_bytes) for c in prog.collectives]


def _args(mesh):
    x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
    return x, w


def test_child_compiles_the_same_collectives_as_an_in_process_compile():
    assert jax.device_count() >= 8, "tests run on 12 simulated devices (tests/conftest.py)"
    real = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    here = shardviz.trace(matmul_sum, *_args(real))
    there = shardviz.trace(matmul_sum, *_args(real.abstract_mesh), mesh=real.abstract_mesh)
    assert there.whatif is not None and there.whatif.devices == 8
    assert here.whatif is None
    assert _collectives(there) == _collectives(here)
    assert there.totals.wire_bytes == here.totals.wire_bytes
    assert [lay.shape for lay in there.outputs] == [lay.shape for lay in here.outputs]
    assert there.flops == here.flops


def test_256_device_what_if_reduces_over_the_data_axis():
    mesh = AbstractMesh((16, 16), ("data", "model"))
    prog = shardviz.trace(matmul_sum, *_args(mesh), mesh=mesh)
    assert prog.whatif.devices == 256 and prog.num_partitions == 256
    ids = np.arange(256).reshape(16, 16)  # the child's mesh: CPU devices 0..255 in order
    reduces = [c for c in prog.collectives if c.kind == "all-reduce"]
    assert reduces, prog.collectives
    expected = {tuple(int(i) for i in ids[:, j]) for j in range(16)}  # same model index, every data index
    for c in reduces:
        assert set(prog.device_groups(c)) == expected
        assert c.axes == ("data",)
    # The sum over rows of a (64/16, 256/16) float32 block, reduced over data: 16 floats per device.
    assert reduces[0].result_bytes == 16 * 4


def test_scanned_model_on_256_devices_reports_its_cost():
    mesh = AbstractMesh((16, 16), ("data", "model"))
    params = jax.ShapeDtypeStruct((24, 512, 512), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model")))
    x = jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(scanned_model, params, x, mesh=mesh)
    info = prog.whatif
    assert info.devices == 256 and info.peak_rss_bytes > 0 and info.child_seconds > 0
    assert str(prog)


def test_4096_device_what_if_compiles_past_the_cpu_clients_id_limit():
    # XLA:CPU takes device ids above 2,048 for another process's; the child gives itself a
    # one-process runtime with collectives, so the compile goes through (nothing runs).
    mesh = AbstractMesh((16, 256), ("data", "model"))
    x = jax.ShapeDtypeStruct((64, 1024), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((1024, 512), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
    prog = shardviz.trace(matmul_sum, x, w, mesh=mesh)
    assert prog.whatif.devices == 4096 and prog.num_partitions == 4096
    ids = np.arange(4096).reshape(16, 256)
    (reduce,) = [c for c in prog.collectives if c.kind == "all-reduce"]
    assert reduce.axes == ("data",)
    assert set(prog.device_groups(reduce)) == {tuple(int(i) for i in ids[:, j]) for j in range(256)}
    assert reduce.result_bytes == (512 // 256) * 4  # the sum over rows of a (64/16, 512/256) float32 block
    assert prog.whatif.peak_rss_bytes > 0


def test_refusals():
    mesh = AbstractMesh((2, 4), ("data", "model"))
    with pytest.raises(ShardingError, match="AbstractMesh"):
        shardviz.trace(matmul_sum, *_args(mesh), mesh="2x4")
    with pytest.raises(ShardingError, match="at most 8192"):
        shardviz.trace(matmul_sum, *_args(mesh), mesh=AbstractMesh((2, 8192), ("a", "b")))
    other = AbstractMesh((4, 2), ("data", "model"))
    with pytest.raises(ShardingError, match="not trace's mesh"):
        shardviz.trace(matmul_sum, *_args(other), mesh=mesh)
    with pytest.raises(ShardingError, match="ShapeDtypeStruct"):
        shardviz.trace(matmul_sum, np.ones((64, 128), np.float32), _args(mesh)[1], mesh=mesh)


def test_a_lambda_is_sent_by_value_and_refused_without_cloudpickle(monkeypatch):
    mesh = AbstractMesh((2, 4), ("data", "model"))
    assert shardviz.trace(lambda x, w: x @ w, *_args(mesh), mesh=mesh).whatif.devices == 8
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # as on a machine without it
    with pytest.raises(ShardingError, match="install cloudpickle"):
        shardviz.trace(lambda x, w: x @ w, *_args(mesh), mesh=mesh)


SCRIPT = """
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
import shardviz

def step(x, w):  # lives in __main__, as a notebook cell's function does
    return jnp.sum(x @ w, axis=0)

mesh = AbstractMesh((4, 4), ("data", "model"))
x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
w = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
prog = shardviz.trace(step, x, w, mesh=mesh)
print(prog.whatif.devices, sorted({c.kind for c in prog.collectives}))
(reduce,) = prog.collectives
print(reduce.source.file, reduce.source.line)
"""


def test_a_function_of_a_script_or_notebook_is_sent_by_value(tmp_path):
    # pickled by reference it would name __main__, which in the child is shardviz's own module
    script = tmp_path / "plan_step.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds, line = done.stdout.strip().splitlines()[-2:]
    assert kinds == "16 ['all-reduce']"
    assert line == f"{script} 7", "the collective sits on the script's own line (jnp.sum in step)"


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_child_past_its_timeout_is_killed():
    mesh = AbstractMesh((2, 4), ("data", "model"))
    x = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(mesh, P("data")))
    # Other tests may leave processes of their own under this one (a JupyterLab server, a browser):
    # only a child this trace started and left alive is a leak.
    before = set(_children_of(os.getpid()))
    started = time.perf_counter()
    with pytest.raises(ShardingError, match="timeout"):
        shardviz.trace(slow, x, mesh=mesh, whatif_timeout=5)
    assert time.perf_counter() - started < 60
    assert not [p for p in set(_children_of(os.getpid())) - before if _alive(p)]


def test_the_child_dies_with_its_parent():
    script = (
        "import sys, jax, jax.numpy as jnp\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P\n"
        "import shardviz\nfrom plan_functions import slow\n"
        "m = AbstractMesh((2, 4), ('data', 'model'))\n"
        "shardviz.trace(slow, jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(m, P('data'))), mesh=m)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        children: list[int] = []
        while not children and time.monotonic() < deadline:
            time.sleep(0.2)
            children = _children_of(parent.pid)
        assert children, "the what-if child never started"
        time.sleep(1)  # let the child get into its compile
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(c) for c in children)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_explicit_axes_code_runs_under_the_what_if_mesh():
    """Code for Explicit axes names specs alone (``reshard(a, P(None, 'Y'))``) and runs under
    ``jax.set_mesh``, which takes no AbstractMesh here: the child sets its concrete mesh. The
    gather over X of a [1024@X, 4096@Y] array on 4x4x4 runs in groups of 4 along X."""
    mesh = AbstractMesh((4, 4, 4), ("X", "Y", "Z"), axis_types=(AxisType.Explicit,) * 3)
    a = jax.ShapeDtypeStruct((1024, 4096), jnp.bfloat16, sharding=NamedSharding(mesh, P("X", "Y")))
    prog = shardviz.trace(gather_rows, a, mesh=mesh)
    (gather,) = prog.collectives
    assert (gather.kind, gather.axes, gather.group_size) == ("all-gather", ("X",), 4)
    assert prog.outputs[0].spec == ((), ("Y",))


def test_a_notebook_cells_step_keeps_its_cell_and_line_texts_on_a_what_if_mesh():
    from IPython.core.interactiveshell import InteractiveShell

    from shardviz.program.report import render_program

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import jax, jax.numpy as jnp", store_history=True)
        shell.run_cell("def cell_step(x, w):\n    h = jnp.tanh(x @ w)\n    return h.sum(axis=0)\n", store_history=True)
        number = shell.execution_count - 1
        result = shell.run_cell(
            "from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P\n"
            "import shardviz\n"
            "mesh = AbstractMesh((4, 4), ('data', 'model'))\n"
            "x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P('data', None)))\n"
            "w = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, 'model')))\n"
            "prog = shardviz.trace(cell_step, x, w, mesh=mesh)\n",
            store_history=True,
        )
        result.raise_error()
        prog = shell.user_ns["prog"]
        assert prog.whatif.devices == 16
        payload = prog.to_json()
        assert f"In [{number}]" in payload["file_labels"]
        assert "return h.sum(axis=0)" in [t for _, _, t in payload["line_texts"]]
        assert f"In [{number}]:3 (cell_step)  return h.sum(axis=0)" in render_program(prog, width=100, color=False)
        assert prog.source is not None and "def cell_step(x, w):" in prog.source.lines[0]
        assert any(v.label == "h" for v in prog.values), "the child read the cell's lines: h is named"
    finally:
        InteractiveShell.clear_instance()
