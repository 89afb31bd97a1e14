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
    with pytest.raises(
        ShardingError, match=r"argument 0 is sharded on a mesh with axes \{'data': 4, 'model': 2\}, not"
    ):
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

    from shardviz.program.result.report import render_program

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


JITTED_SCRIPT = """
import functools
import jax, jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
import shardviz

@functools.partial(jax.jit, static_argnums=(2,))
def step(x, w, rows):  # a jitted function of __main__, its own static argument kept
    return jnp.sum(x[:rows] @ w, axis=0)

mesh = AbstractMesh((4, 4), ("data", "model"))
x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
w = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
prog = shardviz.trace(step, x, w, 64, mesh=mesh)
print(prog.whatif.devices, prog.name, sorted({c.kind for c in prog.collectives}), prog.outputs[0].shape)
here = jax.make_mesh((2, 4), ("data", "model"))
xs = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(here, P("data", None)))
ws = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(here, P(None, "model")))
print(shardviz.trace(step, xs, ws, 64).name)
"""


def test_a_jitted_function_of_a_script_traces_on_a_what_if_mesh(tmp_path):
    # cloudpickle restores a jitted function without the attributes JAX traces it by ('_fun')
    script = tmp_path / "jitted_step.py"
    script.write_text(JITTED_SCRIPT)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    whatif, ordinary = done.stdout.strip().splitlines()[-2:]
    assert whatif == "16 step ['all-reduce'] (256,)"
    assert ordinary == "step"


def test_a_jitted_functions_options_travel_to_the_child():
    from shardviz.program.whatif.parent import Jitted, jit_options

    mesh = AbstractMesh((4, 4), ("data", "model"))
    sharded = NamedSharding(mesh, P("data", None))
    jitted = jax.jit(matmul_sum, in_shardings=(sharded, None), donate_argnums=(1,), keep_unused=True)
    options = jit_options(jitted, mesh)
    assert options["donate_argnums"] == (1,) and options["keep_unused"] is True
    assert options["in_shardings"] == (sharded, None) and "out_shardings" not in options
    x, w = _args(mesh)
    prog = shardviz.trace(jitted, x, w, mesh=mesh)
    assert prog.whatif.devices == 16 and prog.inputs[0].spec == (("data",), ())
    other = NamedSharding(AbstractMesh((2, 8), ("data", "model")), P("data", None))
    with pytest.raises(ShardingError, match="in_shardings of the jitted function is sharded on a mesh"):
        jit_options(jax.jit(matmul_sum, in_shardings=(other, None)), mesh)
    single = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    with pytest.raises(ShardingError, match="out_shardings of the jitted function holds a SingleDeviceSharding"):
        jit_options(jax.jit(matmul_sum, out_shardings=single), mesh)
    assert isinstance(Jitted(matmul_sum, {}).rebuild(jax.make_mesh((2,), ("data",))), type(jitted))


def test_a_jitted_notebook_cell_function_traces_on_a_what_if_mesh():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import jax, jax.numpy as jnp", store_history=True)
        shell.run_cell("@jax.jit\ndef jit_step(x, w):\n    return jnp.tanh(x @ w).sum(axis=0)\n", store_history=True)
        result = shell.run_cell(
            "from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P\n"
            "import shardviz\n"
            "mesh = AbstractMesh((4, 4), ('data', 'model'))\n"
            "x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P('data', None)))\n"
            "w = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, 'model')))\n"
            "prog = shardviz.trace(jit_step, x, w, mesh=mesh)\n",
            store_history=True,
        )
        result.raise_error()
        prog = shell.user_ns["prog"]
        assert prog.whatif.devices == 16 and prog.name == "jit_step"
        (reduce,) = prog.collectives
        assert reduce.axes == ("data",) and reduce.source.line == 3  # the cell's own line
    finally:
        InteractiveShell.clear_instance()


@pytest.fixture(scope="module")
def cookbook_on_16():
    """The training cookbook's step (bf16 weights, Adam state in Refs) on a what-if FSDP mesh of 16,
    more devices than the tests' machine has; 16 heads of 64 so that heads split over 16."""
    from cookbook_bf16 import Sizes, abstract_batch, abstract_state, jitted_train_step

    sizes = Sizes(heads=16, head=64)
    mesh = AbstractMesh((16,), ("fsdp",), axis_types=(AxisType.Explicit,))
    state = abstract_state(sizes, mesh)
    return sizes, state, shardviz.trace(jitted_train_step, sizes, state, abstract_batch(sizes, mesh), mesh=mesh)


def test_a_step_that_takes_ref_state_traces_on_a_what_if_mesh(cookbook_on_16):
    import math

    from cookbook_bf16 import SPECS, shapes

    sizes, state, prog = cookbook_on_16
    assert all(leaf.is_ref for leaf in jax.tree.leaves(state))
    assert prog.whatif.devices == 16 and prog.output_paths == ("out['train_loss']",)
    assert len(prog.inputs) == len(jax.tree.leaves(state)) + 2
    # Every weight stored split over fsdp is gathered, in bf16 (two bytes an element), 15/16 of it sent
    stored = {k: s for k, s in shapes(sizes).items() if k != "layers" and any(SPECS[k])}
    sizes_sent = sorted(math.prod(s) * 2 * 15 // 16 for s in stored.values())
    sizes_sent += sorted(math.prod(s) * 2 * 15 // 16 for blk in shapes(sizes)["layers"] for s in blk.values())
    gathers = [c for c in prog.collectives if c.kind == "all-gather"]
    assert sorted(c.wire_bytes for c in gathers) == sorted(sizes_sent)
    assert {c.axes for c in gathers} == {("fsdp",)}
    assert all(c.on_device.dtype == "bfloat16" and c.on_cpu.dtype == "float32" for c in gathers)


def test_a_ref_of_this_machine_is_refused_with_what_to_pass():
    mesh = AbstractMesh((2, 4), ("data", "model"))
    ref = jax.ref.new_ref(jnp.ones((8,)))
    with pytest.raises(ShardingError, match="is_ref=True"):
        shardviz.trace(lambda r: r[...].sum(), ref, mesh=mesh)


def test_the_childs_memory_estimate_covers_its_measured_peak(cookbook_on_16):
    _, _, prog = cookbook_on_16
    assert prog.whatif.estimated_bytes >= prog.whatif.peak_rss_bytes > 0


def test_the_memory_estimate_grows_with_the_program():
    """An 8-layer transformer step (the cookbook's model, plain SGD) on 16 devices: compiling it takes
    more than JAX itself; the estimate once was 400 MiB + 256 KiB per device whatever the program."""
    from cookbook_bf16 import Sizes, abstract_batch, abstract_state, sgd_step

    sizes = Sizes(heads=16, head=64, layers=8)
    mesh = AbstractMesh((16,), ("fsdp",), axis_types=(AxisType.Explicit,))
    params = jax.tree.map(lambda a: a.update(is_ref=False), abstract_state(sizes, mesh)["params"])
    prog = shardviz.trace(sgd_step, sizes, params, abstract_batch(sizes, mesh), mesh=mesh)
    info = prog.whatif
    assert info.estimated_bytes >= info.peak_rss_bytes > 0
    small = shardviz.trace(
        matmul_sum, *_args(AbstractMesh((4, 4), ("data", "model"))), mesh=AbstractMesh((4, 4), ("data", "model"))
    )
    assert small.whatif.estimated_bytes < info.estimated_bytes, "a larger program is estimated larger"


def test_an_edit_of_a_what_if_programs_input_traces_again_in_a_child():
    mesh = AbstractMesh((4, 4), ("data", "model"))
    prog = shardviz.trace(matmul_sum, *_args(mesh), mesh=mesh)
    w = shardviz.ProgramWidget(prog)
    assert w.input_specs == ["data", "None, model"]
    w.set_state({"input_specs": ["data, model", "model"]})
    assert w.error == "" and w.input_specs == ["data, model", "model"]
    again = w.program
    assert again.whatif is not None and again.whatif.devices == 16 and again.whatif.child_seconds > 0
    # The same program traced afresh on those specs: x @ w contracts over model (an all-reduce over
    # model), the sum over rows reduces over data.
    x = jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
    wt = jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=NamedSharding(mesh, P("model", None)))
    fresh = shardviz.trace(matmul_sum, x, wt, mesh=mesh)
    assert _collectives(again) == _collectives(fresh)
    assert sorted(c.axes for c in again.collectives) == [("data",), ("model",)]
    # a bad spec names its input, and the picture stays
    w.set_state({"input_specs": ["data, model", "q"]})
    assert "axis 'q' is not in the mesh" in w.error and w.error_source == "input:1" and w.program is again


def _layers(x, ws):
    for w in ws:
        x = jnp.tanh(x @ w)  # two equations a layer: dot_general, tanh
    return x


def _scanned_layers(x, ws):
    return jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), x, ws)[0]  # one scan, two in its body


def test_the_child_estimates_its_compile_from_the_traced_programs_equations(monkeypatch):
    from shardviz.program.whatif import child
    from shardviz.program.whatif import parent as whatif

    monkeypatch.setattr(child, "_resident_bytes", lambda: 300 * 2**20)
    monkeypatch.setattr(child, "available_bytes", lambda: 64 * 2**30)
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    ws = [jax.ShapeDtypeStruct((16, 16), jnp.float32)] * 3
    base = 300 * 2**20 + whatif.COMPILE_BYTES + whatif.COMPILE_BYTES_PER_DEVICE * 8
    per = whatif.COMPILE_BYTES_PER_EQUATION
    assert child._check_compile_memory(jax.jit(_layers), (x, ws), {}, 8) == base + per * 6
    assert child._check_compile_memory(jax.jit(_layers), (x, ws[:1]), {}, 8) == base + per * 2
    stacked = jax.ShapeDtypeStruct((3, 16, 16), jnp.float32)
    assert child._check_compile_memory(jax.jit(_scanned_layers), (x, stacked), {}, 8) == base + per * 3
    # a function that does not trace: trace() says why, in JAX's words
    assert child._check_compile_memory(jax.jit(_layers), (x, [x]), {}, 8) is None
    # arguments by keyword reach the trace too
    assert child._check_compile_memory(jax.jit(_layers), (x,), {"ws": ws}, 8) == base + per * 6
    # the compile needs what it adds to the child's memory now: exactly that much available is enough
    monkeypatch.setattr(child, "available_bytes", lambda: whatif.compile_bytes(6, 8))
    assert child._check_compile_memory(jax.jit(_layers), (x, ws), {}, 8) == base + per * 6
    monkeypatch.setattr(child, "available_bytes", lambda: whatif.compile_bytes(6, 8) - 1)
    needed = (300 * 2**20 + whatif.compile_bytes(6, 8)) / 2**30
    available = (whatif.compile_bytes(6, 8) - 1) / 2**30
    with pytest.raises(ShardingError) as err:
        child._check_compile_memory(jax.jit(_layers), (x, ws), {}, 8)
    assert str(err.value) == (
        f"compiling this program of 6 equations for 8 devices needs about {needed:.1f} GiB; "
        f"this machine has {available:.1f} GiB available"
    )


def test_the_parents_estimate_is_jax_its_devices_and_an_empty_compile(monkeypatch):
    from shardviz.program.whatif import parent as whatif

    expected = (
        whatif.JAX_BYTES + (whatif.BYTES_PER_DEVICE + whatif.COMPILE_BYTES_PER_DEVICE) * 256 + whatif.COMPILE_BYTES
    )
    assert whatif.estimated_child_bytes(256) == expected
    monkeypatch.setattr(whatif, "available_bytes", lambda: expected - 1)
    mesh = AbstractMesh((16, 16), ("data", "model"))
    with pytest.raises(ShardingError, match="a what-if trace on 256 devices needs about"):
        shardviz.trace(matmul_sum, *_args(mesh), mesh=mesh)


def test_each_arguments_layout_memory_kind_weak_type_and_ref_travel_to_the_child():
    from shardviz.program.whatif.child import _rebuild_leaf
    from shardviz.program.whatif.parent import _describe_leaf

    mesh = AbstractMesh((2, 4), ("data", "model"))
    leaf = jax.ShapeDtypeStruct(
        (8, 4), jnp.bfloat16, sharding=NamedSharding(mesh, P("data"), memory_kind="pinned_host"), weak_type=True,
        is_ref=True,
    )  # fmt: skip
    sent = _describe_leaf(leaf, mesh, 0)
    assert sent == ("array", (8, 4), "bfloat16", P("data"), "pinned_host", True, True)
    assert _describe_leaf(jax.ShapeDtypeStruct((3,), jnp.int32), mesh, 1) == (
        "array", (3,), "int32", None, None, False, False,
    )  # fmt: skip
    assert _describe_leaf(7, mesh, 2) == ("other", 7)
    here = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    back = _rebuild_leaf(sent, here)
    assert (back.shape, back.dtype, back.weak_type, back.is_ref) == ((8, 4), jnp.bfloat16, True, True)
    assert back.sharding == NamedSharding(here, P("data"), memory_kind="pinned_host")
    assert _rebuild_leaf(_describe_leaf(jax.ShapeDtypeStruct((3,), jnp.int32), mesh, 1), here).sharding is None
    assert _rebuild_leaf(("other", "static"), here) == "static"
    spec_only = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=P("model"))
    assert _describe_leaf(spec_only, mesh, 3)[3] == P("model")  # no mesh set: the spec as given


def test_every_jit_option_is_read_and_rebuilt_on_the_childs_mesh():
    from shardviz.program.whatif.parent import Jitted, _sendable, jit_options

    mesh = AbstractMesh((2, 4), ("data", "model"))

    def step(x, scale, *, rows):
        return x[:rows] * scale

    jitted = jax.jit(
        step, static_argnames=("rows",), donate_argnames=("x",), inline=True, keep_unused=False,
        compiler_options={"xla_embed_ir_in_executable": True}, out_shardings=P("data"),
    )  # fmt: skip
    options = jit_options(jitted, mesh)
    assert options["static_argnames"] == ("rows",) and options["donate_argnames"] == ("x",)
    assert options["static_argnums"] == () and options["donate_argnums"] == (0,)
    assert options["inline"] is True and options["keep_unused"] is False
    assert options["compiler_options"] == {"xla_embed_ir_in_executable": True}
    assert options["out_shardings"] == P("data") and "in_shardings" not in options
    assert "compiler_options" not in jit_options(jax.jit(step), mesh)
    sent = _sendable(jitted, mesh)
    assert isinstance(sent, Jitted) and sent.fun is step and sent.options == options
    assert _sendable(step, mesh) is step

    class Wrapped:  # a callable of the user's own that happens to hold a _fun: no jitted function
        _fun = step

        def __call__(self, *args):
            return step(*args)

    wrapped = Wrapped()
    assert _sendable(wrapped, mesh) is wrapped
    here = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    host = NamedSharding(mesh, P("data"), memory_kind="pinned_host")
    named = Jitted(step, {"in_shardings": (host, None), "out_shardings": P("data"), "static_argnames": ("rows",)})
    rebuilt = named.rebuild(here)
    assert rebuilt._jit_info.in_shardings_leaves == (NamedSharding(here, P("data"), memory_kind="pinned_host"), None)
    assert rebuilt._jit_info.out_shardings_leaves == (P("data"),)
    assert rebuilt._jit_info.static_argnames == ("rows",) and rebuilt._fun is step
    assert named.options["in_shardings"][0].mesh == mesh, "rebuilding leaves the options as they were"


def test_the_childs_resident_memory_is_its_own(monkeypatch):
    import resource

    from shardviz.program.whatif import child

    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    assert abs(child._resident_bytes() - rss) < 16 * 2**20

    def no_page_size(name):
        raise ValueError(name)

    monkeypatch.setattr(child.os, "sysconf", no_page_size)  # where /proc cannot say: the peak so far
    assert child._resident_bytes() == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_an_argument_laid_out_by_a_spec_alone_is_laid_on_the_what_if_mesh():
    # ShapeDtypeStruct(..., sharding=P(...)) outside any mesh: its .sharding would raise; the spec is read as given
    mesh = AbstractMesh((4, 4), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
    a = jax.ShapeDtypeStruct((1024, 4096), jnp.float32, sharding=P("X", "Y"))
    prog = shardviz.trace(gather_rows, a, mesh=mesh)
    (gather,) = prog.collectives
    assert (gather.kind, gather.axes, gather.group_size) == ("all-gather", ("X",), 4)
    assert prog.inputs[0].spec == (("X",), ("Y",))


def test_what_a_what_if_trace_refuses_it_says_in_full():
    import types

    from shardviz.program.whatif.parent import _describe_leaf

    mesh = AbstractMesh((2, 4), ("data", "model"))
    single = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=jax.sharding.SingleDeviceSharding(jax.devices()[0]))
    with pytest.raises(ShardingError) as err:
        _describe_leaf(single, mesh, 0)
    assert str(err.value) == (
        "argument 0 has a SingleDeviceSharding; a what-if trace takes NamedShardings on trace's mesh= or PartitionSpecs"
    )
    with pytest.raises(ShardingError) as err:
        _describe_leaf(np.ones(3, np.float32), mesh, 1)
    assert str(err.value) == (
        "argument 1 is a ndarray; a what-if trace takes jax.ShapeDtypeStructs "
        "(arrays live on this machine's devices, not the what-if mesh)"
    )
    with pytest.raises(ShardingError) as err:
        _describe_leaf(jax.ref.new_ref(jnp.ones(2)), mesh, 2)
    assert str(err.value) == (
        "argument 2 is a Ref holding an array of this machine's devices; for Ref state a what-if "
        "trace takes jax.ShapeDtypeStruct(shape, dtype, sharding=..., is_ref=True)"
    )
    # static leaves pass as they are: a string, a config that has a shape but is no array
    config = types.SimpleNamespace(shape=(2, 2))
    assert _describe_leaf("static", mesh, 3) == ("other", "static")
    assert _describe_leaf(config, mesh, 4) == ("other", config)


def test_the_childs_peak_memory_is_its_own_not_its_parents():
    """Linux keeps ru_maxrss across exec, so a child of a large parent once reported the parent's peak
    (1.4 GiB at the end of the test suite) as its own."""
    ballast = np.ones(768 * 2**20 // 8)  # 768 MiB resident here, in the parent
    code = "from shardviz.program.whatif.child import _peak_resident_bytes; print(_peak_resident_bytes())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert int(done.stdout) < 512 * 2**20 < ballast.nbytes
