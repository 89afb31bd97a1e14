"""The training step planned in notebook 09, in a module so that a CI test can import it too.

A decoder-only transformer (16 layers, d_model 2048, 16 heads, ffn 8192,
vocab 32,000: about 0.9 billion parameters in bfloat16), written in the
style of JAX's training cookbook: Explicit mesh axes, weights stored fully
sharded (FSDP over ``data`` on one dimension, tensor parallel over
``model`` on the other) and gathered over ``data`` where a layer uses them
(``reshard``), activations split over ``data`` by batch and over ``model``
by heads and ffn columns (Megatron), the embedding split over ``model`` by
vocabulary.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P

VOCAB, D, HEADS, FFN, LAYERS, SEQ = 32_000, 2048, 16, 8192, 16, 1024

# How each weight is stored (the layer index first): FSDP over data, tensor parallel over model.
STORED = {
    "embed": P("model", "data"),
    "layers": {
        "wq": P(None, "data", "model"),
        "wk": P(None, "data", "model"),
        "wv": P(None, "data", "model"),
        "wo": P(None, "model", "data"),
        "w_in": P(None, "data", "model"),
        "w_out": P(None, "model", "data"),
        "norm": P(),
    },
    "final_norm": P(),
}
# How a layer uses them: gathered over data, still split over model.
USED = {"wq": P(None, "model"), "wk": P(None, "model"), "wv": P(None, "model"), "wo": P("model", None),
        "w_in": P(None, "model"), "w_out": P("model", None), "norm": P()}  # fmt: skip
SHAPES = {
    "embed": (VOCAB, D),
    "layers": {
        "wq": (LAYERS, D, D),
        "wk": (LAYERS, D, D),
        "wv": (LAYERS, D, D),
        "wo": (LAYERS, D, D),
        "w_in": (LAYERS, D, FFN),
        "w_out": (LAYERS, FFN, D),
        "norm": (LAYERS, D),
    },
    "final_norm": (D,),
}


def rms_norm(x, scale):
    return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + 1e-6) * scale


def block(x, stored):
    w = {name: reshard(value, USED[name]) for name, value in stored.items()}  # FSDP: all-gather over data
    b, t, _ = x.shape
    heads = P("data", None, "model", None)
    h = rms_norm(x, w["norm"])
    q, k, v = (jnp.reshape(h @ w[n], (b, t, HEADS, D // HEADS), out_sharding=heads) for n in ("wq", "wk", "wv"))
    scores = jnp.einsum("bthd,bshd->bhts", q, k) * (D // HEADS) ** -0.5
    causal = jnp.tril(jnp.ones((t, t), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    attn = jnp.reshape(jnp.einsum("bhts,bshd->bthd", weights, v), (b, t, D), out_sharding=P("data", None, "model"))
    x = x + jnp.matmul(attn, w["wo"], out_sharding=P("data", None, None))  # all-reduce over model
    h = rms_norm(x, w["norm"])
    x = x + jnp.matmul(jax.nn.gelu(h @ w["w_in"]), w["w_out"], out_sharding=P("data", None, None))
    return x, None


def loss_fn(params, tokens):
    embed = reshard(params["embed"], P("model", None))  # vocabulary-parallel, gathered over data
    x = embed.at[tokens[:, :-1]].get(out_sharding=P("data", None, None))
    x, _ = jax.lax.scan(block, x, params["layers"])
    logits = rms_norm(x, params["final_norm"]) @ embed.T
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    targets = tokens[:, 1:, None] == jnp.arange(VOCAB, out_sharding=P("model"))
    return -jnp.mean(jnp.sum(jnp.where(targets, logp, 0.0), axis=-1))


def train_step(params, tokens):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
    params = jax.tree.map(lambda p, g: p - 1e-4 * g.astype(p.dtype), params, grads)
    return params, loss


def arguments(mesh, batch):
    """The step's arguments on ``mesh`` (an AbstractMesh is enough): shapes, dtypes and shardings, no data."""
    params = jax.tree.map(
        lambda shape, spec: jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec)),
        SHAPES, STORED, is_leaf=lambda s: isinstance(s, tuple),
    )  # fmt: skip
    tokens = jax.ShapeDtypeStruct((batch, SEQ + 1), jnp.int32, sharding=NamedSharding(mesh, P("data", None)))
    return params, tokens
