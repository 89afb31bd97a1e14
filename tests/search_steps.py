"""Module-level steps for the search tests (what-if children import them by reference).

``mlp_block_step`` is one block of "How to Scale Your Model"'s stack of MLP
blocks (training.md: ``In[B, D] *_D W_in[D, F] *_F W_out[F, D]``, no gating
matrix) trained one step: the gradients of both weights and of the block's
input, which the block before it needs (the book's ``dIn``). It is written
on Auto axes, so each candidate's shardings alone decide the collectives.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _loss(params, x):
    h = jax.nn.relu(x @ params["w_in"])
    out = h @ params["w_out"]
    return jnp.mean(out.astype(jnp.float32) ** 2)


@jax.jit
def mlp_block_step(params, x):
    grads, dx = jax.grad(_loss, argnums=(0, 1))(params, x)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), dx


def mlp_block_arguments(tokens, d, f, dtype=jnp.bfloat16):
    """The block's parameters and its input, unsharded (the search gives each candidate's)."""
    params = {"w_in": jax.ShapeDtypeStruct((d, f), dtype), "w_out": jax.ShapeDtypeStruct((f, d), dtype)}
    return params, jax.ShapeDtypeStruct((tokens, d), dtype)
