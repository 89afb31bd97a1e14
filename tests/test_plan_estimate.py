"""Time estimates on named hardware, against hand-derived values from JAX's own module."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from plan_functions import matmul_sum
from shardviz import Hardware, ShardingError


def _program(shape, x_spec, w_spec):
    mesh = AbstractMesh(shape, ("data", "model"))
    x = jax.ShapeDtypeStruct((1024, 512), jnp.float32, sharding=NamedSharding(mesh, x_spec))
    w = jax.ShapeDtypeStruct((512, 256), jnp.float32, sharding=NamedSharding(mesh, w_spec))
    return shardviz.trace(matmul_sum, x, w, mesh=mesh)


@pytest.fixture(scope="module")
def prog_16x16():
    return _program((16, 16), P("data", None), P(None, "model"))


def test_all_reduce_on_a_v5e_slice_is_two_gathers_round_a_closed_ring(prog_16x16):
    (reduce,) = [c for c in prog_16x16.collectives if c.kind == "all-reduce"]
    assert reduce.axes == ("data",)
    est = prog_16x16.estimate("tpu-v5e")
    # data is a full axis of 16, which closes its ring on v5e: 8 hops each way per gather, two gathers
    # (reduce-scatter, all-gather); the 256 floats of the result are far below a hop's 1 us of bandwidth.
    (timed,) = est.collectives
    bandwidth = 2 * reduce.result_bytes * (8 / 16) / 4.5e10
    assert timed.seconds == pytest.approx(max(2 * 8 * 1e-6, bandwidth) * reduce.count)
    assert timed.bound == "latency" and timed.link == "ICI" and "4.5e+10" in timed.formula
    assert est.compute_s == pytest.approx(prog_16x16.flops / 1.97e14)
    assert est.memory_s == pytest.approx(prog_16x16.hbm_bytes / 8.1e11)  # the program's own bytes, not XLA:CPU's
    assert est.step_s == max(est.compute_s, est.memory_s, est.network_s)
    assert est.bound in ("compute", "memory", "network")
    assert est.to_json()["collectives"][0]["seconds"] == timed.seconds
    assert "compiled for CPU" in str(est) and any("CPU" in n for n in est.to_json()["notes"])
    assert est.fits is True and est.device_bytes == prog_16x16.memory.held_bytes


def test_a_closed_ring_halves_the_busiest_link_load(prog_16x16):
    (reduce,) = prog_16x16.collectives
    without = Hardware("flat", 1e14, 1e12, 1e10, (16, 16), False, latency_s=0)
    with_ring = Hardware("torus", 1e14, 1e12, 1e10, (16, 16), True, latency_s=0)
    v = reduce.result_bytes
    assert prog_16x16.estimate(without).collectives[0].seconds == pytest.approx(2 * v * 15 / 16 / 1e10)
    assert prog_16x16.estimate(with_ring).collectives[0].seconds == pytest.approx(2 * v * 8 / 16 / 1e10)
    # v5e closes only a full dimension of 16. On a 16x16 slice create_device_mesh puts model=32 on one
    # dimension and half the other, data=8 on the other half as its major part: every 2nd chip of a
    # closed ring of 16, so each hop crosses 2 links (8 hops a gather) and 2 groups share each link.
    eight = _program((8, 32), P("data", None), P(None, "model"))
    (timed,) = eight.estimate("tpu-v5e").collectives
    v = eight.collectives[0].result_bytes
    assert "rings 8 every 2" in timed.formula
    assert timed.seconds == pytest.approx(max(2 * 8 * 1e-6, 2 * v * (4 / 8) * 2 / 4.5e10) * eight.collectives[0].count)
    # a named slice of 8x32 chips would be no v5e: the largest has 16 chips a side
    with pytest.raises(ShardingError, match="largest single slice"):
        eight.estimate("tpu-v5e-8x32")


def test_gpu_groups_inside_a_node_use_nvlink_and_across_nodes_infiniband():
    # model axis of 8: groups of consecutive devices, one node each; data axis of 8: one device per node.
    inside = _program((8, 8), P(None, "model"), P("model", None))
    across = _program((8, 8), P(None, "data"), P("data", None))
    (a,) = inside.estimate("h100").collectives
    (b,) = across.estimate("h100").collectives
    assert a.link == "NVLink" and a.bandwidth == 4.5e11
    assert b.link == "InfiniBand" and b.bandwidth == 5.0e10


def test_a_slice_the_user_names_holds_the_program(prog_16x16):
    # Hardware(..., topology=...) as a name would give it: 256 chips as 16 slices of 4x4 over DCN; the leading
    # axis, data, splits across them, so its all-reduce has one chip in each slice: a ring of 16 over DCN
    import dataclasses

    v5e = shardviz.HARDWARE["tpu-v5e"]
    est = prog_16x16.estimate(dataclasses.replace(v5e, name="v5e-4x4", topology=(4, 4)))
    assert est.slices == 16 and est.topology == (4, 4)
    (timed,) = est.collectives
    v = prog_16x16.collectives[0].result_bytes
    runs = prog_16x16.collectives[0].count
    assert timed.link == "DCN" and timed.seconds == pytest.approx(max(2 * 15 * 1e-5, 2 * v * 15 / 16 / 3.125e9) * runs)
    with pytest.raises(ShardingError, match="the program has 256 devices"):
        prog_16x16.estimate(dataclasses.replace(v5e, topology=(3, 5)))


def test_bad_hardware_is_refused(prog_16x16):
    with pytest.raises(ShardingError, match="tpu-v5e"):
        prog_16x16.estimate("tpu-v9")
    with pytest.raises(ShardingError, match="Hardware"):
        prog_16x16.estimate(42)
    with pytest.raises(ShardingError, match="flops_per_s"):
        Hardware("x", -1.0, 1e12, 1e10)
    assert shardviz.estimate(prog_16x16, "tpu-v4").hardware.name == "tpu-v4"


def test_two_v5e_slices_reduce_inside_each_slice_then_across_dcn():
    # 512 chips are two v5e pods of 256 (mesh positions // 256): XLA reduce-scatters over each slice's
    # 16x16 torus, all-reduces the 1/256 share over DCN, all-gathers back (training.md, "Scaling Across Pods")
    mesh = AbstractMesh((2, 16, 16), ("slice", "x", "y"))
    x = jax.ShapeDtypeStruct((512, 1024), jnp.float32, sharding=NamedSharding(mesh, P(("slice", "x"), None)))
    w = jax.ShapeDtypeStruct((1024, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "y")))
    program = shardviz.trace(matmul_sum, x, w, mesh=mesh)
    (reduce,) = [c for c in program.collectives if c.kind == "all-reduce"]
    assert reduce.axes == ("slice", "x")
    est = program.estimate("tpu-v5e")
    assert est.slices == 2 and est.topology == (16, 16)
    (timed,) = est.collectives
    assert timed.link == "ICI+DCN" and timed.combined_by == "sum"
    inside, across, back = timed.parts
    v = reduce.result_bytes
    # x is one closed ring of 16 in each slice; slice crosses DCN at 2.5e10 / 8 per chip, 2 steps of 10 us
    assert inside.link == back.link == "ICI" and across.link == "DCN"
    assert inside.seconds == pytest.approx(max(8e-6, v * (8 / 16) / 4.5e10) * reduce.count)
    assert across.seconds == pytest.approx(max(2e-5, 2 * (v / 16) * (1 / 2) / 3.125e9) * reduce.count)
    assert timed.seconds == pytest.approx(inside.seconds + across.seconds + back.seconds)
    one_slice = program.estimate(Hardware("one-pod", 1.97e14, 8.1e11, 4.5e10, (16, 32), True, wrap_multiple=16))
    assert one_slice.collectives[0].link == "ICI" and one_slice.slices == 1


def test_hardware_figures_are_checked():
    with pytest.raises(ShardingError, match="node_bytes_per_s"):
        Hardware("x", 1e14, 1e12, 1e10, node_size=8)
    with pytest.raises(ShardingError, match="wrap_multiple"):
        Hardware("x", 1e14, 1e12, 1e10, wrap_multiple=0)
    with pytest.raises(ShardingError, match="hbm_bytes"):
        Hardware("x", 1e14, 1e12, 1e10, hbm_bytes=float("nan"))
    with pytest.raises(ShardingError, match="topology"):
        Hardware("x", 1e14, 1e12, 1e10, topology=(0, 4))
    with pytest.raises(ShardingError, match="topology"):
        Hardware("x", 1e14, 1e12, 1e10, topology=[4, 4])
    assert shardviz.HARDWARE["tpu-v5e"].ring_closes(16) and not shardviz.HARDWARE["tpu-v5e"].ring_closes(8)
    assert shardviz.HARDWARE["tpu-v4"].ring_closes(4) and not shardviz.HARDWARE["tpu-v4"].ring_closes(2)


def test_a_sum_jax_accumulates_in_f32_keeps_its_f32_bytes():
    # jnp.sum of bf16 reduces in f32 (the jaxpr says so): that all-reduce is f32 on a TPU too
    mesh = AbstractMesh((16, 16), ("data", "model"))
    x = jax.ShapeDtypeStruct((1024, 512), jnp.bfloat16, sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((512, 256), jnp.bfloat16, sharding=NamedSharding(mesh, P(None, "model")))
    program = shardviz.trace(matmul_sum, x, w, mesh=mesh)
    (reduce,) = [c for c in program.collectives if c.kind == "all-reduce"]
    assert "f32" in reduce.hlo.split("=", 1)[1].split("all-reduce", 1)[0]
    (timed,) = program.estimate("tpu-v5e").collectives
    assert timed.bytes == reduce.result_bytes and timed.note == ""


def two_matmuls(x, w1, w2):
    h = jnp.tanh(x @ w1)
    return h @ w2


def test_each_line_is_bound_by_its_own_matmuls_or_collectives():
    import numpy as np
    from jax.sharding import Mesh

    from shardviz.text.files import file_label

    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    x = jax.device_put(jnp.ones((256, 128)), NamedSharding(mesh, P("data", None)))
    w1 = jax.device_put(jnp.ones((128, 512)), NamedSharding(mesh, P(None, "model")))
    w2 = jax.device_put(jnp.ones((512, 64)), NamedSharding(mesh, P("model", None)))
    prog = shardviz.trace(two_matmuls, x, w1, w2)
    first = two_matmuls.__code__.co_firstlineno
    label = file_label(two_matmuls.__code__.co_filename)
    hw = Hardware("slow-chip", 1e9, 1e12, 1e10, latency_s=0)
    est = prog.estimate(hw)
    lines = {t.line: t for t in est.lines}
    # per device: (256/2 x 128) @ (128 x 512/4), then (128 x 512/4) @ (512/4 x 64), from the arrays' shapes
    assert lines[f"{label}:{first + 1}"].compute_s == pytest.approx(2 * 128 * 128 * 128 / 1e9)
    second = lines[f"{label}:{first + 2}"]
    assert second.compute_s == pytest.approx(2 * 128 * 64 * 128 / 1e9)
    (reduce,) = prog.collectives
    assert second.seconds == est.collectives[0].seconds and reduce.source.line == first + 2
    assert second.bound == ("compute" if second.compute_s > second.seconds else "network")
    assert sum(t.compute_s for t in est.lines) == pytest.approx(prog.matmul_flops / 1e9)
    assert "lines that take longest" in str(est)


def bf16_grads(params, x):
    def loss(params):
        h = jnp.tanh(x @ params["w1"])
        return jnp.sum((h @ params["w2"]).astype(jnp.float32) ** 2)

    return jax.grad(loss)(params)


def test_a_combined_gradient_all_reduce_counts_each_bf16_operand_as_bf16():
    import numpy as np
    from jax.sharding import Mesh

    mesh = Mesh(np.asarray(jax.devices()[:8]), ("data",))
    rep = NamedSharding(mesh, P())
    params = {
        "w1": jax.device_put(jnp.ones((64, 128), jnp.bfloat16), rep),
        "w2": jax.device_put(jnp.ones((128, 32), jnp.bfloat16), rep),
    }
    x = jax.device_put(jnp.ones((64, 64), jnp.bfloat16), NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(bf16_grads, params, x)
    combined = [c for c in prog.collectives if c.kind == "all-reduce" and len(c.parts) >= 2]
    assert combined, [(c.kind, len(c.parts), c.hlo[:80]) for c in prog.collectives]
    (reduce,) = combined
    # XLA:CPU reduces the gradients in f32; on the device they are the weights' bf16 (JAX's own dtypes)
    assert "f32" in reduce.hlo.split("all-reduce(", 1)[0]
    assert {str(g.dtype) for g in jax.tree.leaves(jax.eval_shape(bf16_grads, params, x))} == {"bfloat16"}
    timed = next(t for t in prog.estimate("tpu-v5p").collectives if t.name == reduce.name)
    assert timed.bytes == reduce.on_cpu.result_bytes // 2 == reduce.result_bytes
    assert f"{len(reduce.parts)} of its {len(reduce.parts)} operands are bfloat16" in timed.note


# --------------------------------------------------------------------------
# the planted bugs: each must fail one of these


def _gather_program(sizes, names, shape, spec, to, dtype=jnp.float32):
    from plan_functions import constrain

    mesh = AbstractMesh(sizes, names, axis_types=(AxisType.Auto,) * len(names))
    a = jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))
    return shardviz.trace(functools.partial(constrain, spec=to), a, mesh=mesh)


def _only(est, kind):
    (found,) = [c for c in est.collectives if c.kind == kind]
    return found


def test_an_all_to_all_on_an_open_ring_takes_twice_the_closed_one():
    # the bisection of an open ring of n is one link each way, of a closed ring two: V/4 over 1 or 2 links
    from plan_functions import all_to_all

    mesh = AbstractMesh((4, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
    a = jax.ShapeDtypeStruct((4096, 4096), jnp.float32, sharding=NamedSharding(mesh, P("X", None)))
    program = shardviz.trace(functools.partial(all_to_all, axis="X"), a, mesh=mesh)
    v = 4096 * 4096 * 4
    open_ring = Hardware("open", 1e14, 1e12, 1e10, (4, 4), False, latency_s=0)
    closed_ring = Hardware("closed", 1e14, 1e12, 1e10, (4, 4), True, latency_s=0)
    assert _only(program.estimate(open_ring), "all-to-all").seconds == pytest.approx(v / 4 / 1e10)
    assert _only(program.estimate(closed_ring), "all-to-all").seconds == pytest.approx(v / 4 / (2 * 1e10))


def test_the_busiest_ring_bounds_a_gather_over_an_open_and_a_closed_ring():
    # v5e 8x16: the 16 dimension wraps, the 8 does not. Each ring moves its half of V: the closed one
    # half of that each way, the open one 7/8 of it one way, so the open ring bounds the gather.
    program = _gather_program((8, 16), ("X", "Y"), (1024, 4096), P(("X", "Y"), None), P(None, None))
    timed = _only(program.estimate("tpu-v5e"), "all-gather")
    v = 1024 * 4096 * 4
    assert "open" in timed.formula
    assert timed.seconds == pytest.approx(v * (7 / 8) / (2 * 4.5e10))


def test_nvlink_and_dcn_rings_move_n_minus_1_over_n():
    nvlink = _gather_program((8,), ("X",), (4096, 65536), P("X", None), P(None, None))
    v = 4096 * 65536 * 4
    assert _only(nvlink.estimate("h100"), "all-gather").seconds == pytest.approx(v * 7 / 8 / 4.5e11)
    # an all-reduce over the slice axis only: one chip per slice, 3 slices of 16x16 v5e over DCN
    from plan_functions import bf16_matmul

    mesh = AbstractMesh((3, 256), ("pod", "data"), axis_types=(AxisType.Auto,) * 2)
    a = jax.ShapeDtypeStruct((256 * 64, 3 * 1024), jnp.float32, sharding=NamedSharding(mesh, P("data", "pod")))
    w = jax.ShapeDtypeStruct((3 * 1024, 1024), jnp.float32, sharding=NamedSharding(mesh, P("pod", None)))
    program = shardviz.trace(bf16_matmul, a, w, mesh=mesh)
    timed = _only(program.estimate("tpu-v5e"), "all-reduce")
    assert timed.link == "DCN" and timed.axes == ("pod",) and timed.bytes == 64 * 1024 * 4
    assert timed.seconds == pytest.approx(2 * (64 * 1024 * 4) * (2 / 3) / 3.125e9)


def test_a_shift_round_a_ring_uses_one_direction_a_single_send_both():
    from plan_functions import send

    mesh = AbstractMesh((16,), ("X",), axis_types=(AxisType.Auto,))
    a = jax.ShapeDtypeStruct((16 * 1024, 1024), jnp.float32, sharding=NamedSharding(mesh, P("X")))
    shift = shardviz.trace(functools.partial(send, axes="X", perm=[(i, (i + 1) % 16) for i in range(16)]), a, mesh=mesh)
    ring = Hardware("ring", 1e14, 1e12, 1e10, torus=(16,), latency_s=0)
    block = 1024 * 1024 * 4
    # every device sends one block to its neighbour: each link carries one block one way
    assert _only(shift.estimate(ring), "collective-permute").seconds == pytest.approx(block / 1e10)
    # one device sends halfway round a closed ring: both ways are as short, so half goes each way
    half = shardviz.trace(functools.partial(send, axes="X", perm=[(0, 8)]), a, mesh=mesh)
    assert _only(half.estimate(ring), "collective-permute").seconds == pytest.approx(block / 2 / 1e10)


def test_no_wraparound_on_a_slice_of_no_whole_cubes_or_on_part_of_a_dimension():
    # v5p 2x4x4 (32 chips) has no wraparound links although its dimensions of 4 are multiples of 4
    program = _gather_program((2, 4, 4), ("X", "Y", "Z"), (1024, 4096), P("Z", None), P(None, None))
    timed = _only(program.estimate("tpu-v5p"), "all-gather")
    v = 1024 * 4096 * 4
    assert timed.seconds == pytest.approx(v * 3 / 4 / 9e10)
    assert _only(program.estimate("tpu-v5p-4x4x2"), "all-gather").seconds == pytest.approx(v * 3 / 4 / 9e10)
    # on a v5e 16x16 mesh (4, 4, 16), b takes four neighbours of a wrapped 16: an open line, not a ring
    sub = _gather_program((4, 4, 16), ("a", "b", "c"), (1024, 4096), P("b", None), P(None, None))
    assert _only(sub.estimate("tpu-v5e"), "all-gather").seconds == pytest.approx(v * 3 / 4 / 4.5e10)


def scanned_gathers(params, x):
    def layer(h, w):
        w = jax.lax.with_sharding_constraint(w, P(None, None))
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(layer, x, params)
    return h


def test_a_lines_bytes_count_every_run_of_its_collectives():
    mesh = AbstractMesh((8,), ("X",), axis_types=(AxisType.Auto,))
    params = jax.ShapeDtypeStruct((6, 256, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "X", None)))
    x = jax.ShapeDtypeStruct((64, 256), jnp.float32, sharding=NamedSharding(mesh, P()))
    program = shardviz.trace(scanned_gathers, params, x, mesh=mesh)
    est = program.estimate("tpu-v5e")
    gathers = [c for c in est.collectives if c.kind == "all-gather"]
    assert gathers and all(c.runs == 6 for c in gathers)
    line = next(t for t in est.lines if t.line == gathers[0].line)
    assert line.bytes == sum(c.bytes * c.runs for c in est.collectives if c.line == line.line)
    assert line.bytes == 6 * 256 * 256 * 4


def two_dtypes_on_one_line(a16, w16, a32, w32):
    return a16 @ w16, a32 @ w32


def test_a_line_that_makes_two_dtypes_prices_each_product_in_its_own():
    # one line makes a bf16 and an f32 product, each all-reduced: the columns tell them apart, so the
    # bf16 operand is priced at 2 bytes an element and the f32 one at 4
    mesh = AbstractMesh((8,), ("X",), axis_types=(AxisType.Auto,))
    spec_a, spec_w = NamedSharding(mesh, P(None, "X")), NamedSharding(mesh, P("X", None))
    args = [
        jax.ShapeDtypeStruct((256, 512), jnp.bfloat16, sharding=spec_a),
        jax.ShapeDtypeStruct((512, 128), jnp.bfloat16, sharding=spec_w),
        jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=spec_a),
        jax.ShapeDtypeStruct((512, 128), jnp.float32, sharding=spec_w),
    ]
    program = shardviz.trace(two_dtypes_on_one_line, *args, mesh=mesh)
    est = program.estimate("tpu-v5e")
    reduces = sorted((c.bytes, c.note) for c in est.collectives if c.kind == "all-reduce")
    # each product is (256, 128) of partial sums over X, and XLA combines the two all-reduces
    assert reduces == [(256 * 128 * 2 + 256 * 128 * 4, "1 of its 2 operands are bfloat16 on the device: "
                        "XLA:CPU moved them as 32-bit floats")]  # fmt: skip


# --------------------------------------------------------------------------
# the payload (docs/planning.md, "Estimate.to_json()") and the terminal report

GPU4 = Hardware("gpu4", 1e14, 1e12, 4.5e11, switch=True, node_size=4, node_bytes_per_s=5e10, latency_s=2e-6,
                node_latency_s=5e-6, link_name="NVLink", node_link_name="InfiniBand", hbm_bytes=1e9)  # fmt: skip
HARDWARE_KEYS = {"name", "flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "torus", "wraparound", "wrap_multiple",
                 "switch", "node_size", "node_bytes_per_s", "latency_s", "node_latency_s", "hbm_bytes", "link_name",
                 "node_link_name", "source", "topology", "wrap_whole_slice"}  # fmt: skip


@pytest.fixture(scope="module")
def two_nodes_of_four():
    # an all-reduce over 8 devices on nodes of 4: NVLink inside, InfiniBand between, the slower bounds
    return _program((1, 8), P(None, "model"), P("model", None))


def test_estimate_to_json_says_what_the_estimate_holds(two_nodes_of_four):
    import json

    est = two_nodes_of_four.estimate(GPU4)
    payload = json.loads(json.dumps(est.to_json()))
    assert payload["hardware"] == {**{k: getattr(GPU4, k) for k in HARDWARE_KEYS}, "torus": [], "topology": None}
    for key in ("program", "compute_s", "memory_s", "network_s", "step_s", "serial_s", "bound", "device_bytes",
                "fits", "slices"):  # fmt: skip
        assert payload[key] == getattr(est, key), key
    assert payload["topology"] is None and payload["slices"] == 2 and payload["notes"] == list(est.notes)
    (c,) = est.collectives
    (row,) = payload["collectives"]
    assert row == {
        "kind": c.kind, "name": c.name, "axes": list(c.axes), "group_size": 8, "bytes": c.bytes, "runs": c.runs,
        "link": "NVLink+InfiniBand", "bandwidth": c.bandwidth, "seconds": c.seconds, "bound": c.bound,
        "formula": c.formula, "line": c.line, "note": c.note, "combined_by": "max",
        "parts": [{"what": p.what, "link": p.link, "bandwidth": p.bandwidth, "seconds": p.seconds, "bound": p.bound,
                   "formula": p.formula} for p in c.parts],
    }  # fmt: skip
    assert [p["link"] for p in row["parts"]] == ["NVLink", "InfiniBand"]
    assert [p["bandwidth"] for p in row["parts"]] == [4.5e11, 5e10]
    assert payload["lines"] == [
        {"line": t.line, "seconds": t.seconds, "bytes": t.bytes, "compute_s": t.compute_s, "bound": t.bound}
        for t in est.lines
    ]
    assert set(payload) == {"program", "hardware", "compute_s", "memory_s", "network_s", "step_s", "serial_s",
                            "bound", "device_bytes", "fits", "slices", "topology", "collectives", "lines", "notes"}  # fmt: skip
    tpu = two_nodes_of_four.estimate("tpu-v5p").to_json()
    assert tpu["topology"] == [2, 2, 2] and tpu["hardware"]["topology"] is None
    assert tpu["hardware"]["wrap_whole_slice"] is True and tpu["hardware"]["torus"] == [16, 20, 28]


def test_the_payloads_estimates_are_each_hardwares(two_nodes_of_four):
    from shardviz.plan.estimate import CPU_CAVEAT, estimates_payload

    brief = estimates_payload(two_nodes_of_four)
    assert brief["hardware"] == list(shardviz.HARDWARE) and brief["caveat"] == CPU_CAVEAT
    for name in shardviz.HARDWARE:
        est = two_nodes_of_four.estimate(name)
        assert brief["by_hardware"][name] == {
            "step_s": est.step_s, "bound": est.bound, "compute_s": est.compute_s, "memory_s": est.memory_s,
            "network_s": est.network_s, "fits": est.fits, "hbm_bytes": est.hardware.hbm_bytes, "slices": est.slices,
            "topology": None if est.topology is None else list(est.topology),
            "collectives": [[c.seconds, c.link, c.bound, c.formula, c.note, [[p.what, p.link, p.seconds] for p in c.parts]]
                            for c in est.collectives],
        }, name  # fmt: skip
    assert two_nodes_of_four.to_json()["estimates"] == brief


def test_the_terminal_report_lists_times_collectives_parts_and_notes(two_nodes_of_four):
    import dataclasses

    est = two_nodes_of_four.estimate(GPU4)
    text = str(dataclasses.replace(est, step_s=0.0123, compute_s=None, memory_s=999e-6, network_s=1e-3))
    lines = text.splitlines()
    assert lines[0] == f"{est.program} on gpu4: 12.300 ms per step, {est.bound}-bound"
    assert lines[1] == "  compute unknown  memory 999.0 us  network 1.000 ms"
    (c,) = est.collectives
    assert f"  {c.kind} {c.name} over model at {c.line}: " in text and f"({c.bound}) = {c.formula}" in text
    for p in c.parts:
        assert f"    {p.what} on {p.link}: " in text and p.formula in text
    assert all(f"  note: {n}" in lines for n in est.notes)
    assert "  lines that take longest (network: their collectives; compute: their matrix multiplies):" in lines
    # each collective's and each line's times, in microseconds below a millisecond, and a collective whose groups
    # span no whole mesh axes (axes None) and that no line of the user's made
    c = dataclasses.replace(c, axes=None, line=None, seconds=250e-6, note="a note", parts=c.parts[:1])
    line = dataclasses.replace(est.lines[0], seconds=12e-6, compute_s=3e-3)
    shown = str(dataclasses.replace(est, collectives=(c,), lines=(line,)))
    assert f"  {c.kind} {c.name} over ?: 250.0 us ({c.bound}) = {c.formula}" in shown.splitlines()
    assert f"    {c.parts[0].what} on {c.parts[0].link}: " in shown and "\n    a note\n" in shown
    assert f"    {line.line}: network 12.0 us, compute 3.000 ms: {line.bound}-bound" in shown.splitlines()
    payload = dataclasses.replace(est, collectives=(c,)).to_json()
    assert payload["collectives"][0]["axes"] is None and payload["collectives"][0]["line"] is None


def test_a_slice_name_that_cannot_be_is_refused_with_the_reason():
    with pytest.raises(ShardingError) as err:
        shardviz.plan.hardware.hardware_named("tpu-v5e-16x32")
    assert str(err.value) == (
        "tpu-v5e-16x32: tpu-v5e's largest single slice is 256 chips within a pod of 16x16; a larger program runs "
        "on several slices over DCN (use tpu-v5e and the estimate says how many)"
    )
    with pytest.raises(ShardingError) as err:
        shardviz.plan.hardware.hardware_named("tpu-v4-4x4")
    assert str(err.value) == "tpu-v4-4x4: a tpu-v4 slice has 3 dimensions, like tpu-v4-16x16x16"
    assert shardviz.plan.hardware.hardware_named("tpu-v6e-16x16").topology == (16, 16)
    named = shardviz.plan.hardware.hardware_named("tpu-v5p-2x2x1")  # Google's smallest v5p slice
    assert named.topology == (2, 2, 1) and named.to_json()["topology"] == [2, 2, 1]
    with pytest.raises(ShardingError, match="3 dimensions"):
        shardviz.plan.hardware.hardware_named("tpu-v5p-0x2x2")
