"""Time estimates on named hardware, against hand-derived values from JAX's own module."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, NamedSharding
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
    assert est.memory_s == pytest.approx(prog_16x16.bytes_accessed / 8.1e11)
    assert est.step_s == max(est.compute_s, est.memory_s, est.network_s)
    assert est.bound in ("compute", "memory", "network")
    assert est.to_json()["collectives"][0]["seconds"] == timed.seconds
    assert "compiled for CPU" in str(est) and any("CPU" in n for n in est.to_json()["notes"])
    assert est.fits is True and est.device_bytes == prog_16x16.memory.reserved_bytes


def test_a_closed_ring_halves_the_busiest_link_load(prog_16x16):
    (reduce,) = prog_16x16.collectives
    without = Hardware("flat", 1e14, 1e12, 1e10, (16, 16), False, latency_s=0)
    with_ring = Hardware("torus", 1e14, 1e12, 1e10, (16, 16), True, latency_s=0)
    v = reduce.result_bytes
    assert prog_16x16.estimate(without).collectives[0].seconds == pytest.approx(2 * v * 15 / 16 / 1e10)
    assert prog_16x16.estimate(with_ring).collectives[0].seconds == pytest.approx(2 * v * 8 / 16 / 1e10)
    # v5e closes only a full axis of 16: the same all-reduce over 8 devices runs on an open ring
    eight = _program((8, 32), P("data", None), P(None, "model"))
    (timed,) = eight.estimate("tpu-v5e").collectives
    assert "open" in timed.formula and timed.seconds == pytest.approx(2 * 7 * 1e-6 * eight.collectives[0].count)


def test_gpu_groups_inside_a_node_use_nvlink_and_across_nodes_infiniband():
    # model axis of 8: groups of consecutive devices, one node each; data axis of 8: one device per node.
    inside = _program((8, 8), P(None, "model"), P("model", None))
    across = _program((8, 8), P(None, "data"), P("data", None))
    (a,) = inside.estimate("h100").collectives
    (b,) = across.estimate("h100").collectives
    assert a.link == "NVLink" and a.bandwidth == 4.5e11
    assert b.link == "InfiniBand" and b.bandwidth == 5.0e10


def test_bad_hardware_is_refused(prog_16x16):
    with pytest.raises(ShardingError, match="tpu-v5e"):
        prog_16x16.estimate("tpu-v9")
    with pytest.raises(ShardingError, match="Hardware"):
        prog_16x16.estimate(42)
    with pytest.raises(ShardingError, match="flops_per_s"):
        Hardware("x", -1.0, 1e12, 1e10)
    assert shardviz.estimate(prog_16x16, "tpu-v4").hardware.name == "tpu-v4"


def test_two_v5e_slices_talk_over_dcn_and_each_slice_over_ici():
    # 512 chips are two v5e pods of 256 (device id // 256): the slice axis crosses DCN, x stays on ICI.
    mesh = AbstractMesh((2, 16, 16), ("slice", "x", "y"))
    x = jax.ShapeDtypeStruct((512, 1024), jnp.float32, sharding=NamedSharding(mesh, P(("slice", "x"), None)))
    w = jax.ShapeDtypeStruct((1024, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "y")))
    program = shardviz.trace(matmul_sum, x, w, mesh=mesh)
    (reduce,) = [c for c in program.collectives if c.kind == "all-reduce"]
    assert reduce.axes == ("slice", "x")
    (timed,) = program.estimate("tpu-v5e").collectives
    assert timed.link == "DCN" and timed.bandwidth == pytest.approx(2.5e10 / 8)
    # one open ring of 32 chips at the DCN bandwidth per chip, 31 steps of 10 us each way
    expected = max(2 * 31 * 1e-5, 2 * reduce.result_bytes * 31 / 32 / (2.5e10 / 8))
    assert timed.seconds == pytest.approx(expected * reduce.count)
    one_slice = program.estimate(Hardware("one-pod", 1.97e14, 8.1e11, 4.5e10, (16, 16), True, wrap_multiple=16))
    assert one_slice.collectives[0].link == "ICI"


def test_hardware_figures_are_checked():
    with pytest.raises(ShardingError, match="node_bytes_per_s"):
        Hardware("x", 1e14, 1e12, 1e10, node_size=8)
    with pytest.raises(ShardingError, match="wrap_multiple"):
        Hardware("x", 1e14, 1e12, 1e10, wrap_multiple=0)
    with pytest.raises(ShardingError, match="hbm_bytes"):
        Hardware("x", 1e14, 1e12, 1e10, hbm_bytes=float("nan"))
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

    from shardviz.program.sources import file_label

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
