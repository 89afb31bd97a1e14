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


def all_to_all(a, axis):
    # shard_map under the child's mesh: each device's block, split into one piece per peer, moves
    # its sharding from the first dimension to the second (AllToAll_{X,J} A[I_X, J] -> A[I, J_X])
    from jax.sharding import PartitionSpec as P

    def body(x):
        return jax.lax.all_to_all(x, axis, 0, 1, tiled=True)

    return jax.shard_map(body, in_specs=P(axis, None), out_specs=P(None, axis))(a)


def send(a, axes, perm):
    # shard_map: each device sends its block to its pair's target (jax.lax.ppermute over linear indices)
    from jax.sharding import PartitionSpec as P

    return jax.shard_map(lambda x: jax.lax.ppermute(x, axes, perm), in_specs=P(axes), out_specs=P(axes))(a)


def add(x, y):
    return x + y


def weight_grads(x, dy):
    # dW[D, F]{U_X} = In[B_X, D] *_B dOut[B_X, F]: the data-parallel gradient, all-reduced over the batch's axes
    return jnp.einsum("bd,bf->df", x, dy)


def swapped_blocks(y):
    """``y`` laid out P('a', 'b') asked for as P('b', 'a') on the mesh in force: on a 4x3 mesh XLA gathers the
    whole array (an involuntary full rematerialization)."""
    return jax.lax.with_sharding_constraint(y, jax.sharding.PartitionSpec("b", "a"))
