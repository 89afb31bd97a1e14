"""A training step's memory against hand counts: parameters, gradients, Adam's moments and the
activations saved for the backward pass, for data parallel, FSDP and tensor parallel versions of
one block stack.

The step: 4 layers ``x = tanh((x @ w1) @ w2)``, ``w1 [512, 2048]`` and
``w2 [2048, 512]`` in bfloat16, 8192 tokens over 8 devices (1024 each),
optax's Adam with both moments in float32 beside the bf16 weights (the
scaling book's 2 + 8 bytes per parameter), the state donated so the new
state is written over the old. Bytes per device, MiB = 2**20:

- parameters: 4 * 2 * 512 * 2048 = 8 Mi elements, 2 B each: 16 MiB whole;
- Adam's moments: 8 Mi elements * 2 moments * 4 B = 64 MiB whole;
- saved for the backward pass, per layer: ``x @ w1`` (1024 * 2048 * 2 B = 4 MiB per device
  under data parallelism) and the layer's tanh output (1024 * 512 * 2 B = 1 MiB).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz

MiB = 2**20
LAYERS, D, F, TOKENS = 4, 512, 2048, 8192
adam = optax.adam(1e-3)


def _layer(x, w):
    h = x @ w["w1"]
    return jnp.tanh(h @ w["w2"])


def _loss(params, x):
    for w in params:
        x = _layer(x, w)
    return jnp.mean(x.astype(jnp.float32) ** 2)


def _loss_remat(params, x):
    for w in params:
        x = jax.checkpoint(_layer)(x, w)
    return jnp.mean(x.astype(jnp.float32) ** 2)


def _step(params, opt_state, x):
    grads = jax.grad(_loss)(params, x)
    updates, opt_state = adam.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def _step_remat(params, opt_state, x):
    grads = jax.grad(_loss_remat)(params, x)
    updates, opt_state = adam.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def _traced(w1_spec, w2_spec, x_spec, tokens, remat=False):
    mesh = Mesh(np.asarray(jax.devices()[:8]), ("data",))

    def leaf(shape, dtype, spec):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))

    def weights(dtype):
        return [{"w1": leaf((D, F), dtype, w1_spec), "w2": leaf((F, D), dtype, w2_spec)} for _ in range(LAYERS)]

    params = weights(jnp.bfloat16)
    count = leaf((), jnp.int32, P())
    opt_state = (
        optax.ScaleByAdamState(count=count, mu=weights(jnp.float32), nu=weights(jnp.float32)),
        optax.EmptyState(),
    )
    x = leaf((tokens, D), jnp.bfloat16, x_spec)
    return shardviz.trace(jax.jit(_step_remat if remat else _step, donate_argnums=(0, 1)), params, opt_state, x)


def _within(figure: int, hand: int, share: float = 0.10) -> bool:
    return abs(figure - hand) <= share * hand


def _at_backward(program) -> dict[str, int]:
    timeline = program.memory_timeline
    assert timeline.backward_step is not None
    return dict(timeline.bytes_by_category(timeline.backward_step))


def test_data_parallel_block_stack():
    program = _traced(P(), P(), P("data"), TOKENS)  # weights replicated, tokens split: 1024 a device
    params, moments = 16 * MiB, 64 * MiB
    x = 1024 * D * 2  # 1 MiB
    saved = LAYERS * (1024 * F * 2 + 1024 * D * 2)  # x @ w1 and the tanh output, per layer: 20 MiB
    held = _at_backward(program)
    assert held["optimizer state"] == moments + 4  # and Adam's step count, one int32
    assert held["parameters and inputs"] == params + x
    assert _within(held["saved activations"], saved)
    assert _within(program.memory.peak_bytes, params + moments + x + saved)


def test_fsdp_block_stack():
    program = _traced(P("data", None), P("data", None), P("data"), TOKENS)  # each weight split 8 ways
    params, moments = 16 * MiB // 8, 64 * MiB // 8
    x = 1024 * D * 2
    # JAX's backward pass reads each layer's all-gathered weights (w1 and w2 whole: 4 MiB a layer),
    # which XLA keeps from the forward pass beside the activations
    saved = LAYERS * (1024 * F * 2 + 1024 * D * 2) + LAYERS * (2 * D * F * 2)
    held = _at_backward(program)
    assert held["optimizer state"] == moments + 4  # and Adam's step count, one int32
    assert held["parameters and inputs"] == params + x
    assert _within(held["saved activations"], saved)
    assert _within(program.memory.peak_bytes, params + moments + x + saved)


def test_tensor_parallel_block_stack():
    # w1 split by columns, w2 by rows (Megatron); 1024 tokens replicated on every device
    program = _traced(P(None, "data"), P("data", None), P(), 1024)
    params, moments = 16 * MiB // 8, 64 * MiB // 8
    x = 1024 * D * 2
    saved = LAYERS * (1024 * (F // 8) * 2 + 1024 * D * 2)  # x @ w1 split 8 ways, the tanh output whole
    held = _at_backward(program)
    assert held["optimizer state"] == moments + 4  # and Adam's step count, one int32
    assert held["parameters and inputs"] == params + x
    assert _within(held["saved activations"], saved)
    assert _within(program.memory.peak_bytes, params + moments + x + saved)


def test_data_parallel_block_stack_with_checkpoint():
    program = _traced(P(), P(), P("data"), TOKENS, remat=True)
    plain = _traced(P(), P(), P("data"), TOKENS)
    params, moments, gradients = 16 * MiB, 64 * MiB, 16 * MiB
    x = 1024 * D * 2
    # jax.checkpoint keeps only each layer's output (the next layer's input, the loss's input for
    # the last): 1024 * 512 * 2 B = 1 MiB a layer; x @ w1 is recomputed in the backward pass
    saved = LAYERS * 1024 * D * 2
    held = _at_backward(program)
    assert held["optimizer state"] == moments + 4
    assert held["parameters and inputs"] == params + x
    assert _within(held["saved activations"], saved)
    assert held["saved activations"] < _at_backward(plain)["saved activations"]
    # the peak comes when every gradient is made and none applied yet: weights, state, x, gradients
    assert _within(program.memory.peak_bytes, params + moments + x + gradients)


def test_tensor_parallel_block_stack_with_checkpoint():
    program = _traced(P(None, "data"), P("data", None), P(), 1024, remat=True)
    saved = LAYERS * 1024 * D * 2  # each layer's output, replicated: 1 MiB a layer
    held = _at_backward(program)
    assert _within(held["saved activations"], saved)
    assert held["optimizer state"] == 64 * MiB // 8 + 4


def test_the_names_at_the_peak_say_what_each_buffer_holds():
    program = _traced(P(), P(), P("data"), TOKENS)
    timeline = program.memory_timeline
    groups = [g for g in timeline.groups if g.most_bytes]
    # a saved activation: the value x @ w1 on its line, [1024, 2048] bf16 per device
    saved = [g for g in groups if g.kind == "saved" and g.label == "h"]
    assert saved and all(g.type_str == "bf16[1024,2048]" and g.source.function.endswith("_layer") for g in saved)
    # optimizer state: Adam's moments, as the planner's group
    moments = [g for g in groups if g.kind == "argument" and ".mu[" in g.label]
    assert len(moments) == 2 * LAYERS and {g.category for g in moments} == {"optimizer state"}
    # a gradient: of the one weight of its shape the line's layers update, by its path
    gradients = {g.label for g in groups if g.label.startswith("gradient of")}
    assert gradients == {"gradient of params[*]['w1']", "gradient of params[*]['w2']"}
    # never a smaller value's name: no buffer larger than the value its label names
    for g in groups:
        if g.label == "h":
            assert g.type_str.endswith("[1024,2048]")
        if g.label == "x":
            assert g.kind == "argument"


@pytest.mark.parametrize("spec", [P(), P("data", None)])
def test_xla_cpus_count_holds_more_for_the_same_step(spec):
    program = _traced(spec, spec, P("data"), TOKENS)
    assert program.with_bytes("cpu").memory.peak_bytes > program.memory.peak_bytes
