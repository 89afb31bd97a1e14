"""The search's verdict on the book's regimes without a trace: training.md's bound for FSDP/tensor
mixes, 4 alpha^2 / (F M_X M_Y) tokens per chip, against the whole-step link model, on the book's
MLP block (F = 32,768) on a v5p 4x4x4 slice, each plan by its analytic cost (docs/searching.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from shardviz.plan.hardware import hardware_named
from shardviz.search.cost import cost
from shardviz.search.regime import d_ff_of, is_data_model, is_mix, regime, replicated_extra_bytes, torus_axes
from shardviz.search.space import leaves_of, plans, residual_width

D, F, CHIPS = 1024, 32_768, 64
ALPHA = 4.59e14 / (2 * 9e10)  # v5p: C / W_ici, W both directions of one link (2550)
HW = hardware_named("tpu-v5p")


def _regime(tokens_per_chip, devices=CHIPS, hw=HW, traced=None):
    params = {"w_in": jax.ShapeDtypeStruct((D, F), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((F, D), jnp.bfloat16)}
    args = params, jax.ShapeDtypeStruct((tokens_per_chip * devices, D), jnp.bfloat16)
    leaves = leaves_of(args, (0,), ())
    width = residual_width(leaves)
    space, _ = plans(leaves, devices, hw)
    tokens = tokens_per_chip * devices
    costs = {p.name: cost(p, hw, 12 * tokens * D * F, tokens, width) for p in space}
    return regime(space, costs, traced or {}, leaves, width, tokens, devices, hw), space


def test_the_books_bound_on_a_4x4x4_slice_is_2_alpha_squared_over_f():
    found, _ = _regime(100)
    assert found.d_ff == F and found.torus_axes == 3 and found.m_x_m_y == 2
    assert found.alpha == pytest.approx(ALPHA) == pytest.approx(2550, abs=1)
    assert found.book_bound == pytest.approx(4 * ALPHA**2 / (F * 2 * 1))
    assert found.tokens_per_chip == 100


@pytest.mark.parametrize(("tokens_per_chip", "below"), [(100, True), (396, True), (397, False), (1200, False)])
def test_every_mix_is_network_bound_by_the_book_below_its_bound(tokens_per_chip, below):
    found, _ = _regime(tokens_per_chip)
    assert found.network_bound_mixes is below
    said = "every FSDP/tensor mix is network-bound" if below else "the best FSDP/tensor mix can be compute-bound"
    assert said in found.sentences()[0]
    assert f"this step has {tokens_per_chip}, " in found.sentences()[0]
    assert "(alpha = 2550, F = 32768, M_X = 2, M_Y = 1)" in found.sentences()[0]


def test_at_100_tokens_per_chip_no_mix_and_no_data_x_model_plan_is_compute_bound():
    found, _ = _regime(100)
    assert found.compute_bound_mixes == () and found.data_model_plan is None
    assert len(found.sentences()) == 1


def test_at_200_data_4_x_model_16_is_named_with_its_replicated_bytes():
    # whole-step crossover of data 4 x model 16: about 182 tokens per chip (tests/test_search_cost.py)
    found, _ = _regime(200)
    assert found.compute_bound_mixes == ()
    assert found.data_model_plan == "data4-model16"
    # both weights (2 D F bf16) over model 16, replicated over data 4: 3/4 of that is what FSDP would not hold
    assert found.data_model_extra_bytes == 2 * D * F * 2 // 16 * 3 // 4
    line = found.sentences()[-1]
    assert line == ("data4-model16 (weights replicated over data) is compute-bound: it moves its weights once a "
                    "step (the gradient all-reduce) where FSDP moves them three times, and holds 6.0 MiB more per "
                    "chip")  # fmt: skip


def test_at_300_the_link_model_names_the_mixes_still_compute_bound():
    # the whole-step bound for mixes is (8/3) alpha^2 / (F M_X M_Y) = 265 tokens per chip: at 300 some
    # mixes are compute-bound though the book says every one is network-bound
    found, _ = _regime(300)
    assert found.network_bound_mixes is True
    assert "model8-fsdp8" in found.compute_bound_mixes
    assert found.sentences()[1].startswith("the whole-step link model still finds ")
    assert "model8-fsdp8" in found.sentences()[1]


def test_a_traced_row_decides_over_the_analytic_cost():
    analytic, _ = _regime(200)
    traced, _ = _regime(200, traced={"data4-model16": "network", "model8-fsdp8": "compute"})
    assert analytic.data_model_plan == "data4-model16" and traced.data_model_plan != "data4-model16"
    assert traced.compute_bound_mixes == ("model8-fsdp8",)


def test_at_1200_a_compute_bound_mix_is_the_books_answer_and_no_replicated_plan_is_named():
    found, _ = _regime(1200)
    assert found.network_bound_mixes is False and found.compute_bound_mixes
    assert found.data_model_plan is None and found.data_model_extra_bytes == 0


def test_gpus_have_no_torus_bound():
    found, _ = _regime(100, devices=16, hw=hardware_named("h100"))
    assert found.alpha is None and found.book_bound is None and found.network_bound_mixes is None
    assert found.torus_axes == 0
    assert not any("the book" in s for s in found.sentences())
    # v5p slices (Google's shapes): 16 chips are 2x2x4, 4 chips 2x2x1 (two axes past one)
    assert torus_axes(16, HW) == 3 and torus_axes(4, HW) == 2
    assert found.to_json()["book_bound"] is None


def test_the_slices_of_the_space():
    _, space = _regime(100)
    kinds = {p.name: (is_mix(p), is_data_model(p)) for p in space}
    assert kinds["fsdp64"] == (True, False) and kinds["model64"] == (True, False)
    assert kinds["data4-model16"] == (False, True) and kinds["data64"] == (False, True)
    assert kinds["data2-fsdp32"] == (False, False)
    data64 = next(p for p in space if p.name == "data64")
    assert replicated_extra_bytes(data64) == 2 * D * F * 2 * 63 // 64
    assert d_ff_of(leaves_of(({"w": jax.ShapeDtypeStruct((8, 4), jnp.float32)},), (0,), ()), 8) == 4


def test_where_f_is_small_pure_fsdp_is_compute_bound_before_the_mixed_bound():
    # F = 8,192: the mixed bound 2 alpha^2 / F = 1,588 tokens per chip, but pure FSDP over the three
    # torus axes is compute-bound from alpha / 3 = 850 (training.md's FSDP bound, M_X = 3), so at
    # 1,024 the book does not say every mix is network-bound
    small = _regime_f(1024, 8192)
    assert small.book_bound == pytest.approx(2 * ALPHA**2 / 8192) == pytest.approx(1588, abs=1)
    assert small.fsdp_bound == pytest.approx(ALPHA / 3) == pytest.approx(850, abs=1)
    assert small.network_bound_mixes is False
    assert "alpha / 3 = 850: this step has 1024, at or above 850" in small.sentences()[0]
    big, _ = _regime(300)
    assert big.network_bound_mixes is True and "this step has 300, below both" in big.sentences()[0]


def _regime_f(tokens_per_chip, f):
    params = {"w_in": jax.ShapeDtypeStruct((D, f), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((f, D), jnp.bfloat16)}
    args = params, jax.ShapeDtypeStruct((tokens_per_chip * CHIPS, D), jnp.bfloat16)
    leaves = leaves_of(args, (0,), ())
    width = residual_width(leaves)
    space, _ = plans(leaves, CHIPS, HW)
    tokens = tokens_per_chip * CHIPS
    costs = {p.name: cost(p, HW, 12 * tokens * D * f, tokens, width) for p in space}
    return regime(space, costs, {}, leaves, width, tokens, CHIPS, HW)


def test_the_verdicts_words_and_figures_at_300_tokens_per_chip():
    found, _ = _regime(300)
    first, second, third = found.sentences()
    assert first == (
        "the book (training.md, 'What's the right combination of FSDP and MP?'): every FSDP/tensor mix is "
        "network-bound; its bound 4 alpha^2 / (F M_X M_Y) = 397 tokens per chip (alpha = 2550, F = 32768, "
        "M_X = 2, M_Y = 1) and pure FSDP's over the slice's 3 torus axes, alpha / 3 = 850: this step has 300, "
        "below both"
    )
    assert second.startswith("the whole-step link model still finds model8-fsdp8") and second.endswith(
        " compute-bound: the book counts the forward pass, where compute triples over a whole step and a "
        "Megatron pair's activations only double"
    )
    # data 16 x model 4: both weights (2 D F bf16) over model 4, 15/16 of that past FSDP over data
    extra = 2 * D * F * 2 // 4 * 15 // 16
    assert extra == 30 * 2**20
    assert third == (
        "data16-model4 (weights replicated over data) is compute-bound: it moves its weights once a step (the "
        "gradient all-reduce) where FSDP moves them three times, and holds 30 MiB more per chip"
    )
    payload = found.to_json()
    assert "model8-fsdp8" in payload.pop("compute_bound_mixes")
    assert payload == {
        "tokens_per_chip": 300,
        "d_ff": F,
        "alpha": pytest.approx(ALPHA),
        "book_bound": pytest.approx(4 * ALPHA**2 / (F * 2)),
        "fsdp_bound": pytest.approx(ALPHA / 3),
        "network_bound_mixes": True,
        "data_model_plan": "data16-model4",
        "data_model_extra_bytes": extra,
    }
    assert isinstance(found.data_model_extra_bytes, int)


def test_a_2d_slice_splits_its_two_axes_one_and_one():
    # v6e: C = 9.18e14, one ICI link 9e10 each way, alpha = 5100; 16 chips are a 4x4 slice, so the
    # book's mix takes M_X = M_Y = 1 and pure FSDP spans 2 axes
    v6e = hardware_named("tpu-v6e")
    found, _ = _regime(100, devices=16, hw=v6e)
    alpha = 9.18e14 / (2 * 9e10)
    assert found.torus_axes == 2 and found.m_x_m_y == 1
    assert found.book_bound == pytest.approx(4 * alpha**2 / F)
    assert found.fsdp_bound == pytest.approx(alpha / 2)
    assert "M_X = 1, M_Y = 1" in found.sentences()[0]


def test_on_gpus_a_compute_bound_mix_leaves_the_replicated_plan_unnamed():
    found, _ = _regime(40_000, devices=16, hw=hardware_named("h100"))
    assert found.network_bound_mixes is None and found.compute_bound_mixes
    assert found.data_model_plan is None


def test_d_ff_and_the_replicated_kinds_by_hand():
    # a stacked weight's leading dimension is no matrix dimension: F is the widest of its last two
    stacked = [_leaf_of("0.e", (100, 16, 8))]
    assert d_ff_of(stacked, 16) == 8
    _, space = _regime(100)
    kinds = {p.name: is_data_model(p) for p in space}
    assert kinds["data2-model32"] and not kinds["fsdp2-model32"]


def _leaf_of(path, shape):
    from shardviz.search.space import Leaf

    return Leaf(path, shape, 2, "param", 0)


def test_what_the_verdict_says_above_the_bound_and_without_matrices():
    found, _ = _regime(1200)
    assert found.sentences()[0].startswith(
        "the book (training.md, 'What's the right combination of FSDP and MP?'): the best FSDP/tensor mix can "
        "be compute-bound; its bound"
    )
    mixes, _ = _regime(300)
    assert ", ".join(["model8-fsdp8", "fsdp4-model16"]) in mixes.sentences()[1]
    # a step of vectors alone has no F: no book bound, and nothing said of it
    leaves = leaves_of(({"b": jax.ShapeDtypeStruct((64,), jnp.float32)}, jax.ShapeDtypeStruct((64,), jnp.float32)),
                       (0,), ())  # fmt: skip
    assert d_ff_of(leaves, None) is None
    space, _ = plans(leaves, 8, HW)
    costs = {p.name: cost(p, HW, 1e9, 64, None) for p in space}
    vectors = regime(space, costs, {}, leaves, None, 64, 8, HW)
    assert vectors.book_bound is None and vectors.network_bound_mixes is None
    assert not any(s.startswith("the book") for s in vectors.sentences())
