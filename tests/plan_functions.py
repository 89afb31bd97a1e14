"""Module-level functions for the what-if tests (a child process imports them by reference)."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp


def matmul_sum(x, w):
    return jnp.sum(jnp.tanh(x @ w), axis=0)


def scanned_model(params, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(layer, x, params)
    return jnp.mean(h**2)


def slow(x):
    time.sleep(600)
    return x


def gather_rows(a):
    # Explicit axes: a PartitionSpec alone, as under jax.set_mesh on the real machine.
    return jax.sharding.reshard(a, jax.sharding.PartitionSpec(None, "Y"))
