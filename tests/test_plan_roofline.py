"""shardviz's estimates against jax.experimental.roofline's own figures on shard_map programs.

roofline reads the jaxpr (shard_map only) and counts, per device: flops,
HBM bytes (its ``hbm_bytes``: each matrix multiply's operands and result,
the rest assumed fused) and the ICI bytes of each collective: ``(N - 1) / N``
of the array for a ring all-gather or reduce-scatter (twice for psum), and
for an all-to-all the bytes crossing a closed ring's bisection,
``N x block / 4``. A closed ring moves ``V`` in ``V / (2 x link)`` (both
directions), so on a closed ring of ``N`` the estimate's time is roofline's
bytes times ``N / (N - 1)`` over ``2 x link`` for the ring collectives, and
roofline's bytes over ``2 x link`` for the all-to-all. Each check divides
roofline's number by the link, never by shardviz's own bytes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import roofline  # needs absl-py (in the test extras)
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz

N = 8
LINK = 1e10
RING = shardviz.Hardware("ring-of-8", 1e14, 1e12, LINK, torus=(N,), latency_s=0.0)  # one closed ring


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(jax.devices()[:N]).reshape(N), ("x",))


def _collective(kind):
    def body(a):
        if kind == "psum":
            return jax.lax.psum(a, "x")
        if kind == "all_gather":
            return jax.lax.all_gather(a, "x", tiled=True)
        if kind == "psum_scatter":
            return jax.lax.psum_scatter(a, "x", tiled=True)
        return jax.lax.all_to_all(a, "x", 0, 0, tiled=True)

    return body


SPECS = {"psum": P(), "all_gather": P("x"), "psum_scatter": P("x"), "all_to_all": P("x")}
KINDS = {"psum": "all-reduce", "all_gather": "all-gather", "psum_scatter": "reduce-scatter", "all_to_all": "all-to-all"}


def _both(mesh, body, in_specs, out_specs, *arrays):
    _, theirs = roofline.roofline(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(*arrays)
    program = shardviz.trace(jax.jit(jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)), *arrays)
    return theirs, program


def _array(mesh, shape, spec, dtype):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("kind", ["psum", "all_gather", "psum_scatter", "all_to_all"])
def test_each_collective_takes_the_time_of_roofline_s_ici_bytes(mesh, kind, dtype):
    x = _array(mesh, (N * 256, 512), P("x"), dtype)
    theirs, program = _both(mesh, _collective(kind), P("x"), SPECS[kind], x)
    (timed,) = [c for c in program.estimate(RING).collectives if c.kind == KINDS[kind]]
    ring_bytes = theirs.ici_bytes["x"] * (1 if kind == "all_to_all" else N / (N - 1))
    assert timed.seconds == pytest.approx(ring_bytes / (2 * LINK), rel=1e-6)


def mlp(x, w1, w2):
    return jax.lax.psum(jax.nn.gelu(x @ w1) @ w2, "x")


def gather_matmul(x, w):
    return jax.lax.all_gather(x, "x", axis=1, tiled=True) @ w


def matmul_scatter(x, w):
    return jax.lax.psum_scatter(x @ w, "x", scatter_dimension=1, tiled=True)


PROGRAMS = {
    "mlp": (mlp, (P(None, None), P(None, "x"), P("x", None)), P(None, None),
            [((512, 512), P(None, None)), ((512, 2048), P(None, "x")), ((2048, 512), P("x", None))]),
    "gather_matmul": (gather_matmul, (P(None, "x"), P(None, "x")), P(None, "x"),
                      [((256, 1024), P(None, "x")), ((1024, 1024), P(None, "x"))]),
    "matmul_scatter": (matmul_scatter, (P(None, "x"), P("x", None)), P(None, "x"),
                       [((256, 1024), P(None, "x")), ((1024, 1024), P("x", None))]),
}  # fmt: skip


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_flops_and_hbm_bytes_agree_with_roofline(mesh, name, dtype):
    body, in_specs, out_specs, shapes = PROGRAMS[name]
    arrays = [_array(mesh, shape, spec, dtype) for shape, spec in shapes]
    theirs, program = _both(mesh, body, in_specs, out_specs, *arrays)
    assert program.matmul_flops == pytest.approx(theirs.flops)
    # XLA:CPU's own bytes_accessed is 2 to 7 times roofline's here (its f32 converts and copies)
    assert theirs.hbm_bytes <= program.hbm_bytes <= 1.25 * theirs.hbm_bytes
    est = program.estimate("tpu-v5e")
    assert est.memory_s == pytest.approx(program.hbm_bytes / 8.1e11)
