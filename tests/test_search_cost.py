"""The search's analytic cost against hand counts from "How to Scale Your Model" (no trace).

sharding.md: an all-gather of ``V`` bytes over rings of a torus takes ``V x share / (rings x
link)`` with the busiest ring's share, ``(n // 2) / n`` round a closed ring of ``n`` and
``(N - 1) / N`` along an open one, times the ring's stride; a reduce-scatter the same, an
all-reduce twice. training.md: FSDP moves each weight three times a step (gathered forward and
backward, its gradient scattered), a Megatron pair its activations four times (gather and scatter,
forward and backward), a replicated weight all-reduces its gradient over the batch axes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from shardviz.plan.hardware import hardware_named
from shardviz.search.cost import cost, implied
from shardviz.search.space import leaves_of, plans, residual_width

LINK = 9e10  # v5p ICI, one direction of one link
D, F, TOKENS = 4096, 16384, 64 * 512


def _args():
    params = {"w_in": jax.ShapeDtypeStruct((D, F), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((F, D), jnp.bfloat16)}
    return params, jax.ShapeDtypeStruct((TOKENS, D), jnp.bfloat16)


def _cost(name, devices=64, hw="tpu-v5p", flops=1e13):
    leaves = leaves_of(_args(), (0,), ())
    found, _ = plans(leaves, devices, hardware_named(hw))
    plan = next(p for p in found if p.name == name)
    return plan, cost(plan, hardware_named(hw), flops, TOKENS, residual_width(leaves))


def test_pure_fsdp_on_a_4x4x4_cube_is_three_closed_rings():
    _, c = _cost("fsdp64")
    weight = D * F * 2
    one = weight * (4 // 2) / 4 / (3 * LINK)
    assert c.network_s == pytest.approx(2 * 3 * one, rel=1e-9)
    assert c.compute_s == pytest.approx(1e13 / 64 / 4.59e14)
    assert c.device_bytes == 2 * weight // 64 + TOKENS * D * 2 // 64
    assert c.bound == "network" and c.step_s == c.network_s


def test_fsdp_32_on_whole_dimensions_and_model_2_every_other_chip():
    # model2-fsdp32 on 4x4x4: fsdp takes two whole dimensions (closed rings of 4) and the minor half
    # of the third (an open line of 2); model the major half of it, every other chip (stride 2)
    _, c = _cost("model2-fsdp32")
    weight = D * F * 2 / 2  # each weight split over model first
    fsdp = weight * max(0.5, (2 - 1) / 2) / (3 * LINK)
    activations = TOKENS / 32 * D * 2
    tensor = activations * ((2 - 1) / 2) * 2 / LINK
    assert c.network_s == pytest.approx(2 * 3 * fsdp + 4 * tensor, rel=1e-9)


def test_data_parallel_all_reduces_each_gradient_once():
    plan, c = _cost("data64")
    kinds = [(x.kind, x.axes, x.runs) for x in implied(plan, TOKENS, D)]
    assert kinds == [("all-reduce", ("data",), 1), ("all-reduce", ("data",), 1)]
    weight = D * F * 2
    assert c.network_s == pytest.approx(2 * 2 * weight * 0.5 / (3 * LINK), rel=1e-9)


def test_gpus_price_tensor_parallelism_on_nvlink_inside_a_node():
    # gpus.md: inside a node an all-gather of V over k GPUs takes V (k - 1) / k / 450e9
    _, c = _cost("model8", devices=8, hw="h100")
    activations = TOKENS * D * 2
    assert c.network_s == pytest.approx(4 * activations * 7 / 8 / 450e9, rel=1e-6)
