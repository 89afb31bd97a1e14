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


def constrain(a, spec):
    # Auto axes under the child's jax.set_mesh: a bare PartitionSpec names the mesh's axes.
    return jax.lax.with_sharding_constraint(a, spec)


def bf16_matmul(a, w):
    # both operands bf16: the product (and the all-reduce of its partial sums) is bf16 on a TPU
    return a @ w
