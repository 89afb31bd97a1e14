"""Module-level steps for the comparison tests (what-if children import them by reference).

``mlp`` is one feed-forward layer written the training cookbook's way, on
Explicit axes ``data`` and ``model``: the weights stored fully sharded (FSDP
over ``data`` on one dimension, tensor parallel over ``model`` on the
other), gathered over ``data`` where they are used (``reshard``), the
second matrix multiply contracting over ``model`` and so ending in an
all-reduce over ``model``. With ``model`` of size 1 it is pure FSDP.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from jax.sharding import reshard

STORED = (P("data", "model"), P("model", "data"), P("data", None))  # w1 [D, F], w2 [F, D], x [B, D]


def mlp(w1, w2, x):
    h = jax.nn.gelu(x @ reshard(w1, P(None, "model")))  # FSDP: w1 gathered over data
    return jnp.matmul(h, reshard(w2, P("model", None)), out_sharding=P("data", None))  # all-reduce over model


def mlp_arguments(batch, d, f, dtype=jnp.bfloat16):
    """The step's arguments with no sharding (each candidate gives its own)."""
    return (
        jax.ShapeDtypeStruct((d, f), dtype),
        jax.ShapeDtypeStruct((f, d), dtype),
        jax.ShapeDtypeStruct((batch, d), dtype),
    )


def dense(w, x):
    # auto axes: the partitioner decides, from the input shardings alone, what to communicate
    return jnp.tanh(x @ w)
