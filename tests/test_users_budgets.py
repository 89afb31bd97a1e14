"""Budgets as a user writes them in CI, on code shaped like a real training step (backs notebook 09).

A two-layer MLP trained with SGD and momentum, once data-parallel (weights
replicated, the batch split over ``data``) and once fully sharded (FSDP:
every weight split over ``data``, gathered for the step). Each test says what
the step may communicate, how much memory it may take and how the state is
laid out, with ``shardviz.testing`` only; the numbers a budget is checked
against come from JAX itself (the arrays' bytes and layouts).
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, reshard
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import (
    CollectiveBudgetExceeded,
    assert_collectives,
    assert_fits,
    assert_layout,
    assert_sharded,
)

BATCH, D_IN, D_HIDDEN, D_OUT = 64, 128, 512, 32
MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def sharding(*spec):
    return NamedSharding(MESH, P(*spec))


def init(key, layout):
    """Parameters and momentum, laid out by ``layout(name) -> spec``."""
    k1, k2 = jax.random.split(key)
    params = {
        "w1": jax.random.normal(k1, (D_IN, D_HIDDEN)) * 0.02,
        "b1": jnp.zeros((D_HIDDEN,)),
        "w2": jax.random.normal(k2, (D_HIDDEN, D_OUT)) * 0.02,
        "b2": jnp.zeros((D_OUT,)),
    }
    params = {name: jax.device_put(value, sharding(*layout(name))) for name, value in params.items()}
    return {"params": params, "momentum": jax.tree.map(jnp.zeros_like, params)}


def replicated(name):
    return ()


def fsdp(name):
    return ("data",) if name.startswith("w") else ()  # weights split over data; biases are small


def batch():
    x = jax.device_put(jnp.ones((BATCH, D_IN)), sharding("data"))
    y = jax.device_put(jnp.ones((BATCH, D_OUT)), sharding("data"))
    return x, y


def forward(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def train_step(state, x, y):
    grads = jax.grad(loss_fn)(state["params"], x, y)
    momentum = jax.tree.map(lambda m, g: 0.9 * m + g, state["momentum"], grads)
    params = jax.tree.map(lambda p, m: p - 1e-3 * m, state["params"], momentum)
    return {"params": params, "momentum": momentum}


def fsdp_train_step(state, x, y):
    # gather each weight for the step (the FSDP all-gather); the gradient goes back split as the weight is
    gathered = {k: reshard(v, sharding()) if k.startswith("w") else v for k, v in state["params"].items()}
    grads = jax.grad(loss_fn)(gathered, x, y)
    grads = {k: reshard(g, sharding(*fsdp(k))) for k, g in grads.items()}
    momentum = jax.tree.map(lambda m, g: 0.9 * m + g, state["momentum"], grads)
    params = jax.tree.map(lambda p, m: p - 1e-3 * m, state["params"], momentum)
    return {"params": params, "momentum": momentum}


def param_bytes(state) -> int:
    return sum(leaf.nbytes for leaf in jax.tree.leaves(state["params"]))


# ---------------------------------------------------------------------------- data parallel


@pytest.fixture(scope="module")
def data_parallel():
    state = init(jax.random.key(0), replicated)
    return state, shardviz.trace(train_step, state, *batch())


def test_data_parallel_step_only_all_reduces_gradients_over_data(data_parallel):
    state, step = data_parallel
    # A ring all-reduce sends 2(n-1)/n of the gradients: under twice their bytes.
    assert_collectives(step, allow={"all-reduce": ["data"]}, max_wire_bytes=2 * param_bytes(state))


def test_data_parallel_step_fits_in_its_memory_budget(data_parallel):
    state, step = data_parallel
    assert_fits(step, bytes_per_device="4 MiB")
    assert_fits(state, bytes_per_device=2 * param_bytes(state))  # parameters and momentum, replicated


def test_data_parallel_step_keeps_the_layouts(data_parallel):
    state, _ = data_parallel
    x, _ = batch()
    assert_layout(x, f"float32[{BATCH}@data,{D_IN}]")
    new_state = jax.jit(train_step)(state, *batch())
    for name, value in state["params"].items():
        assert_layout(new_state["params"][name], str(jax.typeof(value)))


def test_a_replicated_model_is_not_sharded_enough(data_parallel):
    state, _ = data_parallel
    with pytest.raises(AssertionError, match=r"0\.0% of the tree's .* is sharded"):
        assert_sharded(state, min_fraction=0.9)


# ---------------------------------------------------------------------------- fully sharded


@pytest.fixture(scope="module")
def fully_sharded():
    state = init(jax.random.key(0), fsdp)
    return state, shardviz.trace(fsdp_train_step, state, *batch())


def test_fsdp_state_is_sharded_and_fits(fully_sharded):
    state, _ = fully_sharded
    assert_sharded(state, min_fraction=0.9)
    assert_sharded(state["params"], min_fraction=0.9, axes=("data",))
    data = MESH.shape["data"]
    assert_fits(state, bytes_per_device=2 * param_bytes(state) // data + 4096)  # biases stay whole
    assert_layout(state["params"]["w1"], f"float32[{D_IN}@data,{D_HIDDEN}]")


def test_fsdp_step_communicates_over_data_only(fully_sharded):
    state, step = fully_sharded
    assert_collectives(
        step,
        allow={"all-gather": ["data"], "reduce-scatter": ["data"], "all-reduce": ["data"]},
        max_wire_bytes=3 * param_bytes(state),
        per_line={gather_line(): param_bytes(state)},  # the gathers: each weight once
    )
    # a function's budget covers the lines of the functions it calls too: the forward pass's all-reduce
    with pytest.raises(
        CollectiveBudgetExceeded, match=r"\(forward\).*\n.*over its budget .* \(function fsdp_train_step\)"
    ):
        assert_collectives(step, per_line={"fsdp_train_step": param_bytes(state)})


def gather_line() -> str:
    lines, first = inspect.getsourcelines(fsdp_train_step)
    return f"test_users_budgets.py:{first + next(k for k, text in enumerate(lines) if 'gathered = ' in text)}"


def test_a_budget_that_forbids_the_gathers_names_them(fully_sharded):
    _, step = fully_sharded
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(step, allow={"all-reduce": ["data"]})
    message = str(info.value)
    assert "all-gather over data" in message
    assert "gathered = {k: reshard(v, sharding()) if k.startswith" in message
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 1 B \(function fsdp_train_step\)"):
        assert_collectives(step, per_line={"fsdp_train_step": 1})
