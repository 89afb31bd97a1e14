"""Matrix-multiply flops read from compiled modules, loops counted, against XLA's own cost analysis."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from plan_functions import scanned_model
from shardviz.program import hlo

LAYERS = 12


def _layer(h, w):
    return jnp.tanh(h @ w), None


def _scanned(ws, x):
    return jax.lax.scan(_layer, x, ws)[0].sum()


def _unrolled(ws, x):
    return jax.lax.scan(_layer, x, ws, unroll=True)[0].sum()


def _compiled(f, *args):
    return jax.jit(f).lower(*args).compile()


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "gradient"])
def test_a_scanned_loop_counts_every_layer_as_the_unrolled_cost_analysis_does(grad):
    ws, x = jnp.ones((LAYERS, 256, 256)), jnp.ones((128, 256))
    scanned, unrolled = (jax.grad(f) if grad else f for f in (_scanned, _unrolled))
    looped, flat = _compiled(scanned, ws, x), _compiled(unrolled, ws, x)
    counted = hlo.matmul_flops(hlo.parse_module(looped.as_text()))
    counted_flat = hlo.matmul_flops(hlo.parse_module(flat.as_text()))
    # XLA's cost analysis of the module without a loop counts every layer's dots (plus a little
    # elementwise work); of the looped module, about one layer's.
    assert counted_flat.flops == pytest.approx(flat.cost_analysis()["flops"], rel=0.02)
    assert looped.cost_analysis()["flops"] < counted.flops / (LAYERS - 1)
    assert counted.exact and counted.dots == (3 if grad else 1)
    # unrolled, XLA drops the first layer's gradient for x, which nobody asked for; a loop cannot
    extra = 2 * 128 * 256 * 256 if grad else 0
    assert counted.flops == counted_flat.flops + extra


def test_partitioned_dots_count_per_device():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    x = jax.device_put(jnp.ones((512, 256)), NamedSharding(mesh, P("data", None)))
    w = jax.device_put(jnp.ones((256, 1024)), NamedSharding(mesh, P(None, "model")))
    compiled = _compiled(lambda x, w: x @ w, x, w)
    counted = hlo.matmul_flops(hlo.parse_module(compiled.as_text()))
    assert counted.flops == 2 * (512 // 2) * (1024 // 4) * 256
    assert counted.flops == pytest.approx(compiled.cost_analysis()["flops"], rel=0.01)


def test_the_estimate_takes_the_loops_counted_flops():
    mesh = AbstractMesh((4, 4), ("data", "model"))
    params = jax.ShapeDtypeStruct((24, 512, 512), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model")))
    x = jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(scanned_model, params, x, mesh=mesh)
    assert prog.matmul_flops > 20 * prog.flops  # cost analysis saw one of the 24 layers
    est = prog.estimate("tpu-v5e")
    assert est.compute_s == pytest.approx(prog.matmul_flops / 1.97e14)
    assert any("loops counted" in note for note in est.notes)
