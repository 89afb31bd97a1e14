"""shardviz.search against "How to Scale Your Model", training.md, "What's the right combination of
FSDP and MP?" (expected answers from the book's formulas, written out in each test, never from
shardviz's own output), the pruning against a full trace, and bad input.

The book models a Transformer as a stack of MLP blocks ``In[B, D] *_D W_in[D, F] *_F W_out[F, D]``
(bf16) and a TPU v5p by ``C = 4.6e14`` flops/s against ``W = 2 x 9e10`` B/s of ICI, so
``alpha = C / W = 2550``. Every ratio it derives cancels ``D``, so the block here has a small ``D``
(what-if traces stay quick) and the book's ``F = 32,768``.
"""

from __future__ import annotations

import math

import pytest

import shardviz
from search_steps import mlp_block_arguments, mlp_block_step
from shardviz import ShardingError

ALPHA = 2550  # training.md: C / W_ici on TPU v5p
F = 32_768  # the worked example's d_ff
D = 1024
CHIPS = 64  # a v5p 4x4x4 slice


def sizes(row):
    # a traced row's mesh, or a considered candidate's axes
    return {**{"data": 1, "fsdp": 1, "model": 1}, **dict(getattr(row, "mesh", None) or row.axes)}


def block_search(tokens_per_chip, top_k=4, devices=CHIPS, hardware="tpu-v5p", **kw):
    args = mlp_block_arguments(tokens_per_chip * devices, D, F)
    return shardviz.search(mlp_block_step, args, devices=devices, hardware=hardware, top_k=top_k, timeout=300, **kw)


@pytest.fixture(scope="module")
def worked_example():
    return block_search(48_000 // CHIPS)


def test_the_books_worked_example_picks_fsdp_32_and_model_2(worked_example):
    # training.md, "What's the right combination of FSDP and MP?": with M_X = 2, M_Y = 1,
    # X = B / 2550 + sqrt(B^2 F^2 - 2 x 2550^2 x F x B x N) / (2550 F); on 64 chips, F = 32,768 and
    # B = 48,000 the book gets X = 31.7 (about 32) and Y = N / X = 2.01 (about 2)
    b, n = 48_000, CHIPS
    x = b / ALPHA + math.sqrt(b**2 * F**2 - 2 * ALPHA**2 * F * b * n) / (ALPHA * F)
    assert x == pytest.approx(31.7, abs=0.05)
    book_x = min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - x))
    book_y = n // book_x
    assert (book_x, book_y) == (32, 2)
    best = worked_example.best()
    assert sizes(best) == {"data": 1, "fsdp": book_x, "model": book_y}
    assert worked_example.search.best == best.candidate
    assert best.bound == "compute"
    # the book's plan traced: the best row is it, or within 5% of its step
    book_rows = [r for r in worked_example.rows if sizes(r) == {"data": 1, "fsdp": 32, "model": 2}]
    assert book_rows and best.step_s <= min(r.step_s for r in book_rows) * 1.05


def test_the_space_is_said_and_the_best_plan_is_rules_text(worked_example):
    space = worked_example.search
    assert space.considered == space.pruned + space.traced
    assert space.traced == 4 == len(worked_example.rows)
    assert space.considered > 30  # every factorization of 64 into data x fsdp x model, in two torus orders
    assert all(c.reason for c in space.candidates if c.status == "pruned")
    # FSDP on W_in's D and W_out's D (the largest dimension left), Megatron's F split over model
    assert space.best_rules.splitlines() == ["0.w_in = fsdp, model", "0.w_out = model, fsdp", "1 = fsdp, None"]
    # the traced module's own input layouts are the rules' (what JAX laid out in the child)
    program = worked_example.programs[space.best]
    assert [layout.spec for layout in program.inputs] == [
        (("fsdp",), ("model",)),
        (("model",), ("fsdp",)),
        (("fsdp",), ()),
    ]
    assert "jax.make_mesh((2, 32), ('model', 'fsdp')" in space.code() and space.best_rules in space.code()
    assert "search on 64 devices" in str(worked_example)


@pytest.mark.parametrize("tokens_per_chip", [1_200, 3_000])
def test_pure_fsdp_ranks_first_from_about_1100_tokens_per_chip(tokens_per_chip):
    # training.md: "pure FSDP is dominant on the RHS from about 1100 tokens / chip onward"
    result = block_search(tokens_per_chip, top_k=3)
    assert sizes(result.best()) == {"data": 1, "fsdp": CHIPS, "model": 1}
    assert result.best().bound == "compute"


def book_bound(m_x=2, m_y=1):
    # training.md, "What's the right combination of FSDP and MP?": the forward pass of an FSDP/MP mix
    # is comms-bound below B/N = 4 alpha^2 / (F M_X M_Y); a 3D torus splits at best M_X = 2, M_Y = 1
    return 4 * ALPHA**2 / (F * m_x * m_y)


def mixes(result):
    # the book's slice of the space: FSDP and tensor parallelism, no axis replicating the weights
    return [c for c in result.search.candidates if c.analytic is not None and sizes(c)["data"] == 1]


def test_below_2_alpha_squared_over_f_every_plan_is_network_bound():
    # training.md: the batch per device cannot drop below 2 x 2550^2 / F (about 400 here) before
    # even the best mix of FSDP and tensor parallelism is comms-bound; 100 tokens per chip is below
    bound = 2 * ALPHA**2 / F
    assert bound == pytest.approx(396.9, abs=0.1) == pytest.approx(book_bound(), abs=0.1)
    tokens = 100
    assert tokens < bound
    result = block_search(tokens, top_k=3)
    assert all(r.bound == "network" for r in result.rows)
    assert result.search.network_bound
    assert "every plan is network-bound" in result.search.verdict
    assert "every plan is network-bound" in str(result)
    # the book's claim said as such, with its bound and F, and the link model agrees on every mix
    assert result.search.network_bound_mixes is True
    assert result.search.book_bound == pytest.approx(book_bound(), rel=2e-3)  # alpha = 4.59e14 / 1.8e11
    assert "every FSDP/tensor mix is network-bound" in result.search.verdict
    assert "= 397 tokens per chip" in result.search.verdict and "F = 32768" in result.search.verdict
    assert mixes(result) and all(c.analytic.bound == "network" for c in mixes(result))
    assert result.search.regime.compute_bound_mixes == ()
    assert result.search.to_json()["network_bound_mixes"] is True


def test_at_300_tokens_per_chip_the_book_says_network_bound_and_data_x_model_is_named():
    # 300 < 397: the book's FSDP/MP mixes are all comms-bound. Weights replicated over data move once
    # a step (their gradient all-reduce), so the fastest data x model plan is compute-bound and the
    # verdict names it with what its replicated weights hold per chip past FSDP: both weights
    # (2 x D x F bf16) split over model, times (1 - 1/data)
    result = block_search(300, top_k=2)
    space = result.search
    assert space.network_bound_mixes is True
    assert "every FSDP/tensor mix is network-bound" in space.verdict and "this step has 300" in space.verdict
    named = space.regime.data_model_plan
    assert named is not None
    plan = next(c for c in space.candidates if c.name == named)
    data, model = sizes(plan)["data"], sizes(plan)["model"]
    assert data > 1 and sizes(plan)["fsdp"] == 1 and plan.analytic.bound == "compute"
    extra = 2 * D * F * 2 // model * (data - 1) // data
    assert space.regime.data_model_extra_bytes == extra
    assert f"{named} (weights replicated over data) is compute-bound" in space.verdict
    assert "moves its weights once a step" in space.verdict


def test_at_200_tokens_per_chip_data_4_x_model_16_wins_compute_bound_and_says_why():
    # the whole-step crossover of data 4 x model 16 (hand formula: tests/test_search_cost.py) is
    # about 182 tokens per chip; at 200 it is compute-bound while every FSDP/MP mix is network-bound
    # by the book and by the link model alike
    result = block_search(200, top_k=3)
    space = result.search
    assert sizes(result.best()) == {"data": 4, "fsdp": 1, "model": 16}
    assert result.best().bound == "compute"
    assert space.network_bound_mixes is True and space.regime.compute_bound_mixes == ()
    assert all(c.analytic.bound == "network" for c in mixes(result))
    assert space.regime.data_model_plan == result.best().candidate
    assert "moves its weights once a step" in space.verdict


def test_analytic_pure_fsdp_is_the_books_count_on_the_links():
    # sharding.md: an all-gather of V over closed rings takes V x (n // 2) / n / (rings x link);
    # pure FSDP over 64 = 4x4x4 is three closed rings of 4 (wraparound on a whole cube); FSDP moves
    # each weight three times (gather forward and backward, reduce-scatter its gradient: training.md)
    result = block_search(1_200, top_k=1)
    fsdp = next(c for c in result.search.candidates if c.name == "fsdp64")
    weight = D * F * 2  # bf16
    one = weight * (4 // 2) / 4 / (3 * 9e10)
    assert fsdp.analytic.network_s == pytest.approx(2 * 3 * one, rel=1e-6)
    # the traced module gathers each weight twice and all-reduces both gradients (2 gathers each)
    assert result.row("fsdp64").network_s == pytest.approx(2 * 3 * one, rel=0.05)


def test_pruning_never_drops_the_plan_a_full_trace_ranks_first():
    # 8 chips (2x2x2): small enough to trace every candidate of the space
    args = mlp_block_arguments(8 * 600, 256, 4096)
    pruned = shardviz.search(mlp_block_step, args, devices=8, hardware="tpu-v5p", top_k=2, timeout=300)
    whole = shardviz.search(mlp_block_step, args, devices=8, hardware="tpu-v5p", top_k=1000, timeout=300)
    assert whole.search.pruned == 0 and whole.search.traced == whole.search.considered
    assert pruned.search.traced == 2
    assert pruned.best().candidate == whole.best().candidate


def test_use_this_plan_code_lays_the_arrays_out_as_traced():
    # the best plan's code run on this machine's CPU devices: each array's sharding is what the
    # traced program's inputs were
    import jax
    import jax.numpy as jnp

    result = shardviz.search(mlp_block_step, mlp_block_arguments(8 * 64, 32, 256), devices=8, top_k=2, timeout=300)
    arrays = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), mlp_block_arguments(8 * 64, 32, 256))
    scope = {"args": arrays}
    exec(result.search.code(), scope)
    placed = jax.tree.leaves(scope["args"])
    program = result.programs[result.search.best]
    assert len(placed) == len(program.inputs)
    for array, layout in zip(placed, program.inputs):
        spec = tuple(() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in array.sharding.spec)
        spec = spec + ((),) * (array.ndim - len(spec))
        assert spec == tuple(layout.spec)
        assert dict(array.sharding.mesh.shape) == dict(result.search.best_mesh)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"devices": 12, "hardware": "h100"}, "no whole number of h100 nodes"),
        ({"devices": 48, "hardware": "tpu-v5p-4x4x4"}, "no multiple"),
        ({"devices": 0}, "positive number of devices"),
        ({"devices": 8, "hardware": "tpu-v9"}, "tpu-v9"),
        ({"devices": 8, "params": 5}, "params="),
        ({"devices": 8, "top_k": 0}, "top_k"),
    ],
)
def test_bad_input_is_refused_before_any_child_starts(monkeypatch, kwargs, words):
    started = []
    monkeypatch.setattr("shardviz.search.run.compare", lambda *a, **k: started.append(1))
    with pytest.raises(ShardingError, match=words):
        shardviz.search(mlp_block_step, mlp_block_arguments(64, 32, 64), **kwargs)
    assert not started


def test_a_step_with_no_array_arguments_is_refused(monkeypatch):
    started = []
    monkeypatch.setattr("shardviz.search.run.compare", lambda *a, **k: started.append(1))
    with pytest.raises(ShardingError, match="no array arguments"):
        shardviz.search(lambda a, b: a, (3, "x"), devices=8)
    assert not started


def test_batch_max_is_the_largest_batch_that_fits_by_the_memory_estimate():
    import dataclasses

    from jax.sharding import AbstractMesh

    from shardviz.compare.candidates import Candidate, resolve_arguments
    from shardviz.plan.hardware import hardware_named

    # a chip of 64 MiB, so the batch that fills it stays small enough to trace quickly
    hw = dataclasses.replace(hardware_named("tpu-v5p"), name="v5p-64MiB", hbm_bytes=64 * 2**20)
    args = mlp_block_arguments(8 * 64, 256, 1024)
    result = shardviz.search(mlp_block_step, args, devices=8, hardware=hw, top_k=1, batch="max", timeout=300)
    (largest,) = result.search.max_batch
    assert largest.plan == result.search.best
    assert largest.fits and largest.device_bytes <= hw.hbm_bytes
    mesh = AbstractMesh(tuple(n for _, n in result.search.best_mesh), tuple(a for a, _ in result.search.best_mesh))
    split = largest.batch // largest.per_device

    def held(rows):
        laid = resolve_arguments(Candidate("x", mesh, result.search.best_rules), mlp_block_arguments(rows, 256, 1024))
        return shardviz.trace(mlp_block_step, *laid, mesh=mesh).estimate(hw).device_bytes

    # JAX's own memory analysis of the step at that batch fits; a tenth more rows does not
    assert held(largest.batch) == largest.device_bytes <= hw.hbm_bytes
    assert held((largest.batch * 11 // 10) // split * split) > hw.hbm_bytes
    assert "largest batch of" in result.search.report()


def test_batch_max_needs_one_batch_dimension():
    with pytest.raises(ShardingError, match="batch="):
        shardviz.search(mlp_block_step, mlp_block_arguments(64, 32, 64), devices=8, batch="most")


def test_a_long_sequence_of_one_row_is_split_over_a_sequence_axis():
    # one row of S = 32,768 tokens ([batch, seq, d_model]): no mesh splits its batch dimension of 1,
    # so the tokens split over "sequence" or the pair over "model". By hand, per chip of 8 (v5p 2x2x2):
    #   compute 12 S D F / (8 C) = 28.1 us, the same on every plan;
    #   sequence 8: weights replicated, both gradients all-reduced: 2 x (2 D F bf16) = 2 MiB moved,
    #     at most 2 MiB / 9e10 = 23.3 us even over one link, so it is not network-bound;
    #   any model split m with sequence s: also the pair's activations, 4 collectives of
    #     (m - 1) / m x S / s x D bf16: at least 4 x 1/2 x 4 MiB = 8 MiB (s = 4, m = 2), 4x the bytes.
    import jax
    import jax.numpy as jnp

    s, d, f = 32_768, 256, 1024
    params = {"w_in": jax.ShapeDtypeStruct((d, f), jnp.bfloat16), "w_out": jax.ShapeDtypeStruct((f, d), jnp.bfloat16)}
    x = jax.ShapeDtypeStruct((1, s, d), jnp.bfloat16)
    result = shardviz.search(mlp_block_step, (params, x), devices=8, hardware="tpu-v5p", top_k=3, timeout=300)
    compute = 12 * s * d * f / (8 * 4.59e14)
    assert compute == pytest.approx(28.1e-6, abs=0.1e-6)
    assert dict(result.best().mesh) == {"sequence": 8}
    best = result.best()
    assert best.compute_s == pytest.approx(compute, rel=0.01)
    assert best.network_s <= 2 * (2 * d * f * 2) / 9e10 < compute
    split = [r for r in result.rows if dict(r.mesh).get("model", 1) > 1]
    assert split and all(r.network_s > best.network_s for r in split)
    # JAX laid the sequence dimension over the axis, the weights replicated
    assert [x.spec for x in result.programs[result.search.best].inputs] == [((), ()), ((), ()), ((), ("sequence",), ())]
    assert result.search.best_rules == "1 = None, sequence, None"
    # the batch dimension of 1 splits over no data or fsdp axis: those meshes are pruned, saying so
    reasons = [c.reason for c in result.search.candidates if "data" in dict(c.axes) or "fsdp" in dict(c.axes)]
    assert reasons and all(r.startswith("does not split: the batch 1 [1, 32768, 256]") for r in reasons)
