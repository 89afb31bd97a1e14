"""hlo.hbm_bytes: what a compiled module reads and writes per device, in the program's dtypes, against hand counts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from shardviz.program import hlo


def _bytes(fn, *args):
    module = hlo.parse_module(jax.jit(fn).lower(*args).compile().as_text())
    return hlo.hbm_bytes(module)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["f32", "bf16"])
def test_adding_two_vectors_reads_two_and_writes_one(dtype):
    # gpus.md, Quiz 1 Q7: adding two fp32[N] vectors moves 12N bytes; in bf16 6N, though XLA:CPU adds in f32
    n = 1 << 20
    x = jax.ShapeDtypeStruct((n,), dtype)
    counted = _bytes(lambda a, b: a + b, x, x)
    assert counted.bytes == 3 * n * jnp.dtype(dtype).itemsize and counted.exact


def test_a_matmul_reads_its_operands_and_writes_its_result_in_their_dtype():
    # XLA:CPU widens both bf16 operands to f32, multiplies, narrows the result: none of that on the device
    a = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
    w = jax.ShapeDtypeStruct((512, 1024), jnp.bfloat16)
    assert _bytes(jnp.matmul, a, w).bytes == 2 * (256 * 512 + 512 * 1024 + 256 * 1024)


def test_an_int8_matmul_is_counted_in_int8():
    # tpus.md Q4: int8[16384, 4096] x int8[B, 4096] loads 16384 x 4096 + 4096 B bytes, writes 16384 B
    w = jax.ShapeDtypeStruct((16384, 4096), jnp.int8)
    x = jax.ShapeDtypeStruct((240, 4096), jnp.int8)
    assert _bytes(lambda w, x: jnp.matmul(x, w.T), w, x).bytes == 16384 * 4096 + 4096 * 240 + 16384 * 240


def scanned(params, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(layer, x, params)
    return h


def test_a_scanned_layer_counts_every_run_and_reads_only_its_slice_of_the_stack():
    layers, d, rows = 6, 256, 64
    params = jax.ShapeDtypeStruct((layers, d, d), jnp.float32)
    x = jax.ShapeDtypeStruct((rows, d), jnp.float32)
    counted = _bytes(scanned, params, x)
    # per layer: the dot reads h and this layer's weights and writes its product; tanh reads and writes it
    per_layer = 4 * (rows * d + d * d + rows * d) + 4 * 2 * rows * d
    assert counted.exact
    assert per_layer * layers <= counted.bytes <= 1.1 * per_layer * layers


def test_fills_made_from_no_array_cost_nothing():
    # a causal mask and a fill broadcast from a scalar: a device makes them where they are used
    def masked(scores):
        t = scores.shape[-1]
        return jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -1e9)

    scores = jax.ShapeDtypeStruct((4, 512, 512), jnp.bfloat16)
    assert _bytes(masked, scores).bytes == 2 * 2 * 4 * 512 * 512


def test_collectives_are_the_networks_not_the_memorys():
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    f = jax.shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
    counted = _bytes(f, jax.ShapeDtypeStruct((8 * 128, 128), jnp.float32))
    assert counted.bytes == 0 and counted.operations == 0
