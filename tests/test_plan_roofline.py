"""shardviz's collective bytes against jax.experimental.roofline on shard_map programs.

roofline reads the jaxpr (shard_map only) and counts the ICI bytes each
device sends per mesh axis with the same ring model; shardviz reads the
module XLA compiled. They agree for all-gather, reduce-scatter and
all-reduce (psum), in bf16 too (roofline counts the jaxpr's bf16, shardviz
the device bytes XLA:CPU widened to f32). They differ for all-to-all:
roofline counts the bytes that cross the torus's bisection
(``N x input / 4`` on a ring that closes), shardviz the bytes each device
sends on a ring (``(N-1)/N x input``); its time uses the book's quarter of
an all-gather instead. roofline gives bytes, not time: the time per
hardware is shardviz's own.
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
import shardviz.plan.comms

N = 8


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(jax.devices()[:N]).reshape(N), ("x",))


def _step(kind):
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


def _both(mesh, kind, dtype):
    body = _step(kind)
    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=SPECS[kind])
    x = jax.device_put(jnp.ones((N * 256, 512), dtype), NamedSharding(mesh, P("x")))
    _, result = roofline.roofline(body, mesh=mesh, in_specs=P("x"), out_specs=SPECS[kind])(x)
    program = shardviz.trace(jax.jit(f), x)
    (collective,) = [c for c in program.collectives if c.kind == KINDS[kind]]
    timed = program.estimate("tpu-v4").collectives[0]
    ratio = timed.bytes / shardviz.plan.comms.array_bytes(collective.kind, collective.result_bytes, N)
    return result.ici_bytes["x"], collective.wire_bytes * ratio, collective


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("kind", ["psum", "all_gather", "psum_scatter"])
def test_ring_collectives_send_the_bytes_roofline_counts(mesh, kind, dtype):
    theirs, ours, _ = _both(mesh, kind, dtype)
    assert ours == pytest.approx(theirs, rel=0.01)


def test_all_to_all_differs_as_documented(mesh):
    theirs, ours, collective = _both(mesh, "all_to_all", jnp.float32)
    input_bytes = collective.result_bytes  # tiled all-to-all keeps the block size
    assert theirs == pytest.approx(N * input_bytes / 4, rel=0.01)  # bisection bytes on a closed ring
    assert ours == pytest.approx((N - 1) / N * input_bytes, rel=0.01)  # what one device sends
