"""Notebook 11's step: one transformer block (attention and MLP, "How to Scale Your Model"'s
Transformer of Part 4) trained one step, written on Auto axes so each plan's shardings alone decide
the collectives. The gradient of the block's input is returned too: the block before it needs it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

D, F, HEADS, SEQ = 2048, 8192, 16, 1024


def _block(params, x):
    b, t, d = x.shape
    k = d // HEADS

    def heads(w):
        return (x @ w).reshape(b, t, HEADS, k)

    q, kk, v = heads(params["wq"]), heads(params["wk"]), heads(params["wv"])
    scores = jnp.einsum("bthk,bshk->bhts", q, kk) / jnp.sqrt(k).astype(x.dtype)
    attention = jnp.einsum("bhts,bshk->bthk", jax.nn.softmax(scores, axis=-1), v).reshape(b, t, d)
    x = x + attention @ params["wo"]
    return x + jax.nn.relu(x @ params["w_in"]) @ params["w_out"]


def _loss(params, x):
    return jnp.mean(_block(params, x).astype(jnp.float32) ** 2)


@jax.jit
def train_step(params, x):
    grads, dx = jax.grad(_loss, argnums=(0, 1))(params, x)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), dx


def arguments(sequences, dtype=jnp.bfloat16):
    """The block's parameters and its input (``sequences`` of ``SEQ`` tokens), unsharded."""
    s = jax.ShapeDtypeStruct
    params = {name: s((D, D), dtype) for name in ("wq", "wk", "wv", "wo")}
    params.update(w_in=s((D, F), dtype), w_out=s((F, D), dtype))
    return params, s((sequences, SEQ, D), dtype)
