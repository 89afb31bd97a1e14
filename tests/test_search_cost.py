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


def _block_cost(name, tokens_per_chip, d=1024, f=32768, devices=64):
    params = {"w_in": jax.ShapeDtypeStruct((d, f), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((f, d), jnp.bfloat16)}
    args = params, jax.ShapeDtypeStruct((tokens_per_chip * devices, d), jnp.bfloat16)
    leaves = leaves_of(args, (0,), ())
    hw = hardware_named("tpu-v5p")
    plan = next(p for p in plans(leaves, devices, hw)[0] if p.name == name)
    tokens = tokens_per_chip * devices
    return cost(plan, hw, 12 * tokens * d * f, tokens, residual_width(leaves))  # the step's 12 B D F flops


def test_data_4_x_model_16_turns_network_bound_where_the_whole_step_hand_count_says():
    # training.md's MLP block over a whole step, bf16, B tokens on N = 64 chips, data X = 4 (one
    # torus axis of the 4x4x4 cube, M_X = 1), model Y = 16 (two axes, M_Y = 2), W = 2 x 9e10:
    #   math  12 B D F / (N C)
    #   MP    8 B D / (X W M_Y): the block's output and its input's gradient all-reduced over model
    #         (each two gathers' worth of the B/X x D activations), forward and backward
    #   DP    8 D F / (Y W M_X): both weights' gradients (2 D F / Y bf16) all-reduced over data once
    # The book's forward-only count (4 B D F, 4 B D, 4 D F) would scale all three by 3 to get its
    # bound; the whole step moves the activations only twice as often as the forward does.
    # Equal at b = B / N = 8 F alpha / (Y M_X) / (12 F - 8 Y alpha / M_Y), alpha = C / W
    c, w = 4.59e14, 2 * LINK
    alpha = c / w
    x, y, m_x, m_y = 4, 16, 1, 2
    f = 32768
    crossover = 8 * f * alpha / (y * m_x) / (12 * f - 8 * y * alpha / m_y)
    assert crossover == pytest.approx(181.6, abs=0.1)
    below, above = _block_cost("data4-model16", 176), _block_cost("data4-model16", 188)
    assert below.bound == "network" and above.bound == "compute"
    b, d = 188 * 64, 1024
    assert above.network_s == pytest.approx(8 * b * d / (x * w * m_y) + 8 * d * f / (y * w * m_x), rel=1e-9)
    assert above.compute_s == pytest.approx(12 * b * d * f / (64 * c), rel=1e-9)


def test_fsdp_and_model_mixes_are_network_bound_below_the_whole_step_bound():
    # FSDP moves each weight three times a step (12 D F / (Y W M_X)) and the pair its activations
    # four (8 B D / (X W M_Y)); their least sum against 12 B D F / (N C) is compute-bound only from
    # b = (8/3) alpha^2 / (F M_X M_Y), 265 tokens per chip with M_X M_Y = 2 (the book's forward count
    # gives 4 alpha^2 / (F M_X M_Y) = 397)
    alpha = 4.59e14 / (2 * LINK)
    whole_step = 8 / 3 * alpha**2 / (32768 * 2)
    assert whole_step == pytest.approx(264.6, abs=0.1)
    from shardviz.search.regime import is_mix

    hw = hardware_named("tpu-v5p")
    for tokens_per_chip in (100, 200, 250):
        args = _block_args(tokens_per_chip)
        leaves = leaves_of(args, (0,), ())
        found = [p for p in plans(leaves, 64, hw)[0] if is_mix(p)]
        assert len(found) > 10
        assert all(_block_cost(p.name, tokens_per_chip).bound == "network" for p in found)
    assert _block_cost("model8-fsdp8", 300).bound == "compute"


def _block_args(tokens_per_chip, d=1024, f=32768):
    params = {"w_in": jax.ShapeDtypeStruct((d, f), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((f, d), jnp.bfloat16)}
    return params, jax.ShapeDtypeStruct((tokens_per_chip * 64, d), jnp.bfloat16)


def test_each_collective_of_a_mixed_plan_by_hand():
    # data 2 x fsdp 2 x model 2 on 8 chips; w_in [D, F] (an in-projection), w_out [F, D] (its out-
    # projection), stacked experts [8, D, F]; the batch [T, D]; an optimizer leaf moves nothing.
    # training.md's count: FSDP gathers each weight's model shard twice and scatters its gradient
    # once (bytes: the weight over model); the gradient all-reduces over data (bytes: the weight
    # over model and fsdp); experts send each local token's d_model out and back, forward and
    # backward (4 all-to-alls); the one Megatron pair gathers and scatters the local activations
    # twice each.
    s = jax.ShapeDtypeStruct
    d, f, t = 64, 256, 512
    params = {"w_in": s((d, f), jnp.bfloat16), "w_out": s((f, d), jnp.bfloat16), "experts": s((8, d, f), jnp.float32)}
    args = params, {"mu": s((d, f), jnp.float32)}, s((t, d), jnp.bfloat16)
    leaves = leaves_of(args, (0,), (1,))
    plan = next(p for p in plans(leaves, 8, hardware_named("tpu-v5p"))[0] if p.name == "data2-fsdp2-model2")
    got = [(c.kind, c.axes, c.bytes, c.runs) for c in implied(plan, t, d)]
    local = t / 4  # tokens per device of the batch axes data x fsdp
    weight, experts = d * f * 2, 8 * d * f * 4
    assert got == [  # the leaves in the tree's order: experts, w_in, w_out
        ("all-gather", ("fsdp",), experts / 2, 2),
        ("reduce-scatter", ("fsdp",), experts / 2, 1),
        ("all-reduce", ("data",), experts / 4, 1),
        ("all-to-all", ("model",), local * d * 4, 4),
        ("all-gather", ("fsdp",), weight / 2, 2),
        ("reduce-scatter", ("fsdp",), weight / 2, 1),
        ("all-reduce", ("data",), weight / 4, 1),
        ("all-gather", ("fsdp",), weight / 2, 2),
        ("reduce-scatter", ("fsdp",), weight / 2, 1),
        ("all-reduce", ("data",), weight / 4, 1),
        ("all-gather", ("model",), local * d * 2, 2),
        ("reduce-scatter", ("model",), local * d * 2, 2),
    ]
    assert [c.why.split(":")[0] for c in implied(plan, t, d)][:5] == ["0.experts"] * 4 + ["0.w_in"]


def test_two_pairs_double_the_activation_collectives_and_a_width_of_none_moves_one_feature():
    s = jax.ShapeDtypeStruct
    params = {"a_in": s((64, 256), jnp.bfloat16), "a_out": s((256, 64), jnp.bfloat16),
              "b_in": s((64, 256), jnp.bfloat16), "b_out": s((256, 64), jnp.bfloat16)}  # fmt: skip
    leaves = leaves_of((params, s((128, 64), jnp.bfloat16)), (0,), ())
    plan = next(p for p in plans(leaves, 4, hardware_named("tpu-v5p"))[0] if p.name == "model4")
    pairs = [(c.kind, c.bytes, c.runs) for c in implied(plan, 128, 64) if c.axes == ("model",)]
    assert pairs == [("all-gather", 128 * 64 * 2, 4), ("reduce-scatter", 128 * 64 * 2, 4)]
    # no batch axis: nothing all-reduces, and a width unknown counts one feature a token
    assert all(c.kind != "all-reduce" for c in implied(plan, 128, 64))
    assert [c.bytes for c in implied(plan, 128, None)] == [128 * 1 * 2, 128 * 1 * 2]
    # compute splits the step's flops over every device
    c = cost(plan, hardware_named("tpu-v5p"), 4e12, 128, 64)
    assert c.compute_s == pytest.approx(4e12 / 4 / 4.59e14)
    assert c.network_s == pytest.approx(sum(x.seconds for x in c.collectives)) and c.network_s > 0
    assert c.device_bytes == plan.device_bytes()
    assert c.bound == ("network" if c.network_s > c.compute_s else "compute")


def test_a_split_sequence_gathers_attentions_keys_and_values():
    # a block with attention ([batch, seq, d] activations) on data 2 x sequence 2 x model 2: the keys
    # and values of every position are gathered over sequence (each device's batch rows, all S
    # positions, the projection's outputs over model) and their gradients scattered back; queries,
    # the output projection and the MLP gather nothing over sequence
    s = jax.ShapeDtypeStruct
    d, b, t = 64, 8, 128
    names = ("wq", "wk", "wv", "wo")
    params = {n: s((d, d), jnp.bfloat16) for n in names} | {"w_in": s((d, 256), jnp.bfloat16)}
    leaves = leaves_of((params, s((b, t, d), jnp.bfloat16)), (0,), ())
    plan = next(p for p in plans(leaves, 8, hardware_named("tpu-v5p"))[0] if p.name == "data2-sequence2-model2")
    over_sequence = [(c.why.split(":")[0], c.kind, c.bytes, c.runs) for c in implied(plan, b * t, d)
                     if c.axes == ("sequence",)]  # fmt: skip
    whole = b / 2 * t * d / 2 * 2  # rows over data, every position, outputs over model, bf16
    assert over_sequence == [
        ("0.wk", "all-gather", whole, 1),
        ("0.wk", "reduce-scatter", whole, 1),
        ("0.wv", "all-gather", whole, 1),
        ("0.wv", "reduce-scatter", whole, 1),
    ]
    # replicated over sequence and data, each weight all-reduces its gradient over both
    assert {c.axes for c in implied(plan, b * t, d) if c.kind == "all-reduce"} == {("data", "sequence")}
    # the Megatron pairs move each device's own tokens: split over data and sequence
    pair = next(c for c in implied(plan, b * t, d) if c.why == "Megatron pairs: inputs")
    assert pair.bytes == b * t / 4 * d * 2


def test_keys_and_values_by_their_names():
    from shardviz.search.cost import is_key_or_value

    for path in ("0.wk", "0.layers.attn.wv", "params.attn.key.kernel", "params.attn.value.kernel", "0.k_proj",
                 "0.attn.qkv", "state.attn.v_proj.value", "0.KV"):  # fmt: skip
        assert is_key_or_value(path), path
    for path in ("0.wq", "0.wo", "0.w_in.value", "0.keys_norm", "0.q_proj", "0.mlp.value"):
        assert not is_key_or_value(path), path


def test_the_priced_collectives_are_the_implied_ones_and_experts_alone_make_no_pair():
    s = jax.ShapeDtypeStruct
    params = {"experts": s((8, 64, 256), jnp.bfloat16)}
    leaves = leaves_of((params, s((128, 64), jnp.bfloat16)), (0,), ())
    hw = hardware_named("tpu-v5p")
    plan = next(p for p in plans(leaves, 8, hw)[0] if p.name == "data4-model2")
    implied_here = [(c.kind, c.axes, c.bytes, c.runs, c.why) for c in implied(plan, 128, None)]
    priced = cost(plan, hw, 1e9, 128, None).collectives
    assert [(c.kind, c.axes, c.bytes, c.runs, c.why) for c in priced] == implied_here
    assert all(c.seconds > 0 for c in priced)
    # no Megatron pair: no activation collectives; the experts' all-to-all moves the local tokens'
    # features (the width unknown: the expert's last dimension)
    assert [c.kind for c in priced] == ["all-reduce", "all-to-all"]
    assert priced[1].bytes == 128 / 4 * 256 * 2 and priced[1].why == "0.experts: tokens to their experts"


def test_keys_and_values_only_on_a_sequence_axis_and_by_their_outputs():
    s = jax.ShapeDtypeStruct
    params = {"wk": s((64, 32), jnp.bfloat16), "wq": s((64, 64), jnp.bfloat16)}
    leaves = leaves_of((params, s((8, 128, 64), jnp.bfloat16)), (0,), ())
    hw = hardware_named("tpu-v5p")
    found = {p.name: p for p in plans(leaves, 4, hw)[0]}
    assert not any("sequence" in c.axes for c in implied(found["data4"], 8 * 128, 64))
    gathered = [
        c for c in implied(found["sequence4"], 8 * 128, 64) if c.axes == ("sequence",) and c.kind != "all-reduce"
    ]
    # all 8 rows and 128 positions of wk's 32 outputs, bf16
    assert [(c.kind, c.bytes, c.why) for c in gathered] == [
        ("all-gather", 8 * 128 * 32 * 2, "0.wk: keys or values of the whole sequence"),
        ("reduce-scatter", 8 * 128 * 32 * 2, "0.wk: their gradient"),
    ]
    fsdp = [c.why for c in implied(found["fsdp4"], 8 * 128, 64) if c.kind == "all-gather"]
    assert fsdp == ["0.wk: FSDP gathers it, forward and backward", "0.wq: FSDP gathers it, forward and backward"]


def test_a_parameter_after_the_batch_still_moves_and_the_pairs_say_so():
    s = jax.ShapeDtypeStruct
    leaves = leaves_of((s((8, 64), jnp.bfloat16), {"w_in": s((64, 256), jnp.bfloat16),
                                                   "w_out": s((256, 64), jnp.bfloat16)}), (1,), ())  # fmt: skip
    plan = next(p for p in plans(leaves, 4, hardware_named("tpu-v5p"))[0] if p.name == "data2-model2")
    got = [(c.kind, c.axes, c.why) for c in implied(plan, 8, 64)]
    assert got == [
        ("all-reduce", ("data",), "1.w_in: its gradient over the batch"),
        ("all-reduce", ("data",), "1.w_out: its gradient over the batch"),
        ("all-gather", ("model",), "Megatron pairs: inputs"),
        ("reduce-scatter", ("model",), "Megatron pairs: outputs"),
    ]
