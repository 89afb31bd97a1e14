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


def test_all_reduce_on_a_v5e_slice_matches_the_ring_formula(prog_16x16):
    (reduce,) = [c for c in prog_16x16.collectives if c.kind == "all-reduce"]
    est = prog_16x16.estimate("tpu-v5e")
    # A ring all-reduce over 16 devices sends 2 x 15/16 of the result per device; v5e's 16-wide
    # axis has no wraparound, so one direction of a 4.5e10 B/s link carries it; 15 hops of 1 us.
    expected = 2 * 15 / 16 * reduce.result_bytes * reduce.count / 4.5e10 + 15 * reduce.count * 1e-6
    (timed,) = est.collectives
    assert timed.seconds == pytest.approx(expected)
    assert timed.link == "ici" and "4.5e+10" in timed.formula
    assert est.compute_s == pytest.approx(prog_16x16.flops / 1.97e14)
    assert est.memory_s == pytest.approx(prog_16x16.bytes_accessed / 8.1e11)
    assert est.step_s == max(est.compute_s, est.memory_s, est.network_s)
    assert est.bound in ("compute", "memory", "network")
    assert est.to_json()["collectives"][0]["seconds"] == timed.seconds
    assert "compiled for CPU" in str(est) and any("CPU" in n for n in est.to_json()["notes"])


def test_wraparound_doubles_the_ring_bandwidth(prog_16x16):
    (reduce,) = prog_16x16.collectives
    without = Hardware("flat", 1e14, 1e12, 1e10, (16, 16), False, latency_s=0)
    with_ring = Hardware("torus", 1e14, 1e12, 1e10, (16, 16), True, latency_s=0)
    assert prog_16x16.estimate(without).collectives[0].seconds == pytest.approx(reduce.total_wire_bytes / 1e10)
    assert prog_16x16.estimate(with_ring).collectives[0].seconds == pytest.approx(reduce.total_wire_bytes / 2e10)


def test_gpu_groups_inside_a_node_use_nvlink_and_across_nodes_infiniband():
    # model axis of 8: groups of consecutive devices, one node each; data axis of 8: one device per node.
    inside = _program((8, 8), P(None, "model"), P("model", None))
    across = _program((8, 8), P(None, "data"), P("data", None))
    (a,) = inside.estimate("h100").collectives
    (b,) = across.estimate("h100").collectives
    assert a.link == "nvlink" and a.bandwidth == 4.5e11
    assert b.link == "network" and b.bandwidth == 5.0e10


def test_bad_hardware_is_refused(prog_16x16):
    with pytest.raises(ShardingError, match="tpu-v5e"):
        prog_16x16.estimate("tpu-v9")
    with pytest.raises(ShardingError, match="Hardware"):
        prog_16x16.estimate(42)
    with pytest.raises(ShardingError, match="flops_per_s"):
        Hardware("x", -1.0, 1e12, 1e10)
    assert shardviz.estimate(prog_16x16, "tpu-v4").hardware.name == "tpu-v4"
