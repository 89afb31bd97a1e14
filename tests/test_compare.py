"""shardviz.compare: candidates traced in parallel what-if children, ranked; failures kept as rows.

The ranking is checked against a hand calculation from "How to Scale Your
Model" (gpus.md: inside an H100 node an all-gather of ``V`` bytes over ``k``
GPUs takes ``V (k - 1) / k / W`` at ``W = 450e9`` B/s each way per GPU, an
all-reduce twice that), with the bytes of each collective counted by hand
from the step's shapes, never from shardviz's own formulas.
"""

from __future__ import annotations

import json

import jax
import pytest
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import PartitionSpec as P

import shardviz
from compare_steps import STORED, mlp, mlp_arguments
from shardviz.compare import Candidate, Comparison
from shardviz.text.ranges import format_bytes

EXPLICIT = AxisType.Explicit


def mesh(data, model):
    return AbstractMesh((data, model), ("data", "model"), axis_types=(EXPLICIT, EXPLICIT))


SMALL = mlp_arguments(64, 256, 256)


def sixteen_candidates():
    """14 that trace (8 and 16 devices, specs, rules and functions of the mesh) and 2 that cannot."""
    good = []
    for data, model in ((8, 1), (4, 2), (2, 4), (1, 8), (16, 1), (8, 2), (4, 4), (2, 8)):
        good.append(Candidate(f"specs {data}x{model}", mesh(data, model), STORED))
    rules = "0 = data, model\n1 = model, data\n2 = data, None"
    for data, model in ((8, 1), (4, 2), (2, 4)):
        good.append(Candidate(f"rules {data}x{model}", mesh(data, model), rules))
    # replicated weights (no FSDP): the same step with nothing to gather
    good.append(Candidate("replicated 8x1", mesh(8, 1), (P(), P(), P("data", None))))
    good.append(Candidate("function 4x2", mesh(4, 2), lambda m: STORED))
    good.append(Candidate("function args 2x4", mesh(2, 4), lambda m: _laid_out(m)))
    bad = [
        # 64 rows over 3 devices: JAX refuses to lay out the batch
        Candidate("uneven 3x1", mesh(3, 1), STORED),
        # the step reshards onto 'model', which this mesh has not
        Candidate(
            "no model axis",
            AbstractMesh((8,), ("data",), axis_types=(EXPLICIT,)),
            (P("data", None), P(None, "data"), P("data", None)),
        ),
    ]
    return [*good[:7], bad[0], *good[7:], bad[1]]


def _laid_out(m):
    return tuple(
        jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=jax.sharding.NamedSharding(m, spec))
        for a, spec in zip(SMALL, STORED)
    )


@pytest.fixture(scope="module")
def sixteen() -> Comparison:
    return shardviz.compare(mlp, sixteen_candidates(), args=SMALL, hardware="h100", timeout=300)


def test_sixteen_candidates_two_fail_fourteen_ranked(sixteen):
    assert len(sixteen.candidates) == 16
    assert len(sixteen.rows) == 14
    assert sorted(f.candidate for f in sixteen.failures) == ["no model axis", "uneven 3x1"]
    assert all(f.hardware == "" for f in sixteen.failures)
    uneven = next(f for f in sixteen.failures if f.candidate == "uneven 3x1")
    assert "argument w1" in uneven.error and "3 devices" in uneven.error
    missing = next(f for f in sixteen.failures if f.candidate == "no model axis")
    assert "model" in missing.error
    assert [r.rank for r in sixteen.rows] == list(range(1, 15))
    times = [r.step_s for r in sixteen.rows]
    assert times == sorted(times)
    assert set(sixteen.programs) == {r.candidate for r in sixteen.rows}
    for row in sixteen.rows:
        # each row's mesh is the candidate's, as the child compiled it
        assert sixteen.programs[row.candidate].num_partitions == row.mesh[0][1] * row.mesh[1][1]


def test_rules_and_specs_of_one_layout_give_one_program(sixteen):
    for shape in ("8x1", "4x2", "2x4"):
        by_specs, by_rules = sixteen.row(f"specs {shape}"), sixteen.row(f"rules {shape}")
        assert by_rules.lines == by_specs.lines
        assert by_rules.step_s == pytest.approx(by_specs.step_s)
    assert sixteen.row("function 4x2").lines == sixteen.row("specs 4x2").lines
    assert sixteen.row("function args 2x4").lines == sixteen.row("specs 2x4").lines
    # the inputs the child traced were laid out as the rules say (JAX's own shardings, read back)
    program = sixteen.programs["rules 4x2"]
    assert [tuple(i.spec) for i in program.inputs][:2] == [(("data",), ("model",)), (("model",), ("data",))]


def test_replicated_weights_gather_nothing(sixteen):
    row = sixteen.row("replicated 8x1")
    assert not [c for c in row.lines if c.kind == "all-gather"]
    fsdp = sixteen.row("specs 8x1")
    gathers = [c for c in fsdp.lines if c.kind == "all-gather"]
    assert len(gathers) == 2 and all(c.axes == "data" for c in gathers)


def test_best_and_changes_against_it(sixteen):
    best = sixteen.best()
    assert best is sixteen.rows[0] and best.changes == ()
    for row in sixteen.rows[1:]:
        assert row.against == best.candidate
        assert row.changes == sixteen.changes(best.candidate, row.candidate)


def test_payload_is_json_and_versioned(sixteen):
    payload = json.loads(json.dumps(sixteen.to_json()))
    assert payload["kind"] == "compare" and payload["version"] == 1
    assert len(payload["rows"]) == 14 and len(payload["failures"]) == 2
    assert payload["candidates"] == [c.name for c in sixteen_candidates()]
    row = payload["rows"][0]
    assert set(row) >= {"candidate", "hardware", "rank", "mesh", "step_s", "bound", "network_by_axis",
                        "network_by_link", "device_bytes", "hbm_bytes", "fits", "lines", "changes"}  # fmt: skip


def test_text_names_every_row_and_failure(sixteen):
    text = str(sixteen)
    assert "16 candidates on h100, 14 row(s) ranked, 2 failed to trace" in text
    for row in sixteen.rows:
        assert row.candidate in text
    assert "failed: uneven 3x1:" in text and "failed: no model axis:" in text
    assert f"best that fits: {sixteen.best().candidate} on h100" in text


# Hand calculation: the layer at a size where the network dominates, on one H100 node of 8 GPUs.
B, D, F = 2048, 4096, 4096
BF16 = 2
NVLINK = 450e9  # gpus.md: NVLink bandwidth per H100, each way


def all_gather_s(v, k):
    return v * (k - 1) / k / NVLINK


def test_ranking_agrees_with_the_scaling_book_by_hand():
    big = mlp_arguments(B, D, F)
    result = shardviz.compare(
        mlp,
        [Candidate("fsdp", mesh(8, 1), STORED), Candidate("fsdp+tp", mesh(2, 4), STORED)],
        args=big,
        hardware="h100",
    )
    # pure FSDP over 8: each GPU gathers both whole weights (V = D F bf16 each) over its 8 data peers;
    # nothing to reduce (model has one GPU)
    fsdp = 2 * all_gather_s(D * F * BF16, 8)
    # FSDP over 2, TP over 4: each gathers a quarter of each weight over 2 peers, then all-reduces its
    # [B/2, D] bf16 output block over the 4 model peers (a reduce-scatter and an all-gather)
    tp = 2 * all_gather_s(D * F // 4 * BF16, 2) + 2 * all_gather_s(B // 2 * D * BF16, 4)
    assert tp < fsdp  # by hand: 46.6 us against 130.5 us
    rows = {r.candidate: r for r in result.rows}
    assert rows["fsdp"].network_s == pytest.approx(fsdp, rel=0.15)
    assert rows["fsdp+tp"].network_s == pytest.approx(tp, rel=0.15)
    # compute by hand: two matrix multiplies of 2 B D F flops over 8 GPUs, at 989 Tflop/s dense bf16
    compute = 2 * 2 * B * D * F / 8 / 9.89e14
    for row in rows.values():
        assert row.compute_s == pytest.approx(compute, rel=0.05)
        assert row.bound == "network"
    assert [r.candidate for r in result.rows] == ["fsdp+tp", "fsdp"]
    assert result.best().candidate == "fsdp+tp"
    # FSDP against the best: its gathers of the weights grew fourfold (a quarter of each weight against
    # all of it), its all-reduce over model vanished
    changes = {(c.kind, c.axes): c for c in rows["fsdp"].changes}
    gathers = [c for c in rows["fsdp"].changes if c.kind == "all-gather"]
    assert {c.change for c in gathers} == {"grown"}
    # The bytes each GPU sends per call (the program table's figure): an all-gather over n sends the
    # (n-1)/n of its result it lacks, an all-reduce 2 (n-1)/n of its result.
    assert sum(c.bytes_after for c in gathers) == 2 * D * F * BF16 * 7 // 8
    assert sum(c.bytes_before for c in gathers) == 2 * D * F // 4 * BF16 // 2
    assert changes[("all-reduce", "model")].change == "vanished"
    assert changes[("all-reduce", "model")].bytes_before == B // 2 * D * BF16 * 2 * 3 // 4


def test_several_hardware_give_a_row_each_and_best_per_hardware():
    result = shardviz.compare(
        mlp, [("a", mesh(4, 2), STORED), ("b", mesh(8, 1), STORED)], args=SMALL, hardware=("h100", "tpu-v5p")
    )
    assert sorted((r.candidate, r.hardware) for r in result.rows) == [
        ("a", "h100"), ("a", "tpu-v5p"), ("b", "h100"), ("b", "tpu-v5p"),
    ]  # fmt: skip
    for hw in ("h100", "tpu-v5p"):
        best = result.best(hardware=hw)
        own = [r for r in result.rows if r.hardware == hw]
        assert best.step_s == min(r.step_s for r in own)
        other = next(r for r in own if r is not best)
        assert other.against == best.candidate
    # one trace per candidate, whatever the hardware
    assert len(result.programs) == 2


def test_a_row_that_does_not_fit_ranks_after_those_that_fit():
    result = shardviz.compare(mlp, [("dp+tp", mesh(4, 2), STORED), ("tp", mesh(1, 8), STORED)], args=SMALL)
    # JAX's own memory analysis of each compiled candidate, its arguments checked by hand
    held = {name: p.memory.argument_bytes for name, p in result.programs.items()}
    assert held["dp+tp"] == 2 * 256 * 256 * 2 // 8 + 64 // 4 * 256 * 2  # weights over all 8, batch over 4
    assert held["tp"] == 2 * 256 * 256 * 2 // 8 + 64 * 256 * 2  # weights over model, the whole batch
    # the one peak (Program.memory.held_bytes) is what rows rank by
    reserved = {name: p.memory.held_bytes for name, p in result.programs.items()}
    assert [r.device_bytes for r in result.rows] == [reserved[r.candidate] for r in result.rows]
    between = (reserved["dp+tp"] + reserved["tp"]) / 2
    assert reserved["tp"] < between < reserved["dp+tp"]  # the gathered weights live at the peak
    # a chip as fast as an H100 with HBM between the two: the faster plan does not fit
    small = shardviz.Hardware("small", 9.89e14, 3.35e12, 4.5e11, switch=True, node_size=8, node_bytes_per_s=5e10,
                              hbm_bytes=between)  # fmt: skip
    on_small = result.on(small)
    assert on_small.hardware == ("small",) and on_small.programs == result.programs  # not traced again
    fast, slow = on_small.row("dp+tp"), on_small.row("tp")
    assert fast.step_s < slow.step_s
    assert fast.fits is False and slow.fits is True
    assert fast.headroom_bytes == between - reserved["dp+tp"] < 0 < slow.headroom_bytes
    assert on_small.best().candidate == "tp"
    assert [r.candidate for r in on_small.rows] == ["tp", "dp+tp"]
    assert on_small.best(fits=False).candidate == "dp+tp"
    assert slow.changes == () and fast.against == "tp"
    assert "OVER" in str(on_small) and "best that fits: tp on small" in str(on_small)
    # the row over its HBM says by how much and which groups hold its peak: all of it, by group
    assert sum(n for _, n in fast.held_by_group) == fast.device_bytes
    over = format_bytes(fast.device_bytes - int(between))
    assert f"over HBM by {over} per device; at the peak: " in str(on_small)


@pytest.mark.parametrize(
    ("candidates", "kwargs", "message"),
    [
        ([], {}, "at least one candidate"),
        (["nope"], {}, "candidate 1 is a str"),
        ([("a", "8x1", STORED)], {}, "not a jax.sharding.Mesh"),
        ([("a", mesh(8, 1), STORED), ("a", mesh(4, 2), STORED)], {}, "two candidates are named 'a'"),
        ([("a", mesh(8, 1), STORED)], {"hardware": "tpu-v9"}, "unknown hardware 'tpu-v9'"),
        ([("a", mesh(8, 1), STORED)], {"hardware": []}, "names no hardware"),
        ([("a", mesh(8, 1), STORED)], {"workers": 0}, "workers= must be a positive int"),
    ],
)
def test_bad_input_is_refused_before_any_child(candidates, kwargs, message):
    with pytest.raises(shardviz.ShardingError, match=message):
        shardviz.compare(mlp, candidates, args=SMALL, **kwargs)


def test_a_candidate_whose_layout_is_wrong_is_a_failure_naming_it():
    result = shardviz.compare(
        mlp,
        [
            ("bad rule", mesh(8, 1), "0 = data, model\nnothing.* = data"),
            ("bad specs", mesh(8, 1), (P("data"), P("data"))),
            ("raises", mesh(8, 1), lambda m: 1 / 0),
        ],
        args=SMALL,
    )
    errors = {f.candidate: f.error for f in result.failures}
    assert "line 2" in errors["bad rule"] and "nothing.*" in errors["bad rule"]
    assert "do not match the step's arguments" in errors["bad specs"]
    assert "ZeroDivisionError" in errors["raises"]
    assert result.rows == () and result.best() is None
    with pytest.raises(shardviz.ShardingError, match="no arguments"):
        from shardviz.compare.candidates import resolve_arguments

        resolve_arguments(Candidate("x", mesh(8, 1), STORED), None)


def test_the_package_and_the_function_are_one_name():
    import shardviz.compare as package

    assert callable(package)
    assert shardviz.compare.Candidate is Candidate


def test_retrace_traces_one_candidate_again_and_keeps_the_others():
    from shardviz.compare.run import retrace

    rules = "0 = data, model\n1 = model, data\n2 = data, None"
    result = shardviz.compare(mlp, [("a", mesh(4, 2), rules), ("b", mesh(2, 4), rules)], args=SMALL, hardware="h100")
    # a's weights replicated now: nothing to gather for it
    again = retrace(result, "a", "2 = data, None")
    assert again.programs["b"] is result.programs["b"]
    assert again.programs["a"] is not result.programs["a"]
    inputs = [tuple(i.spec) for i in again.programs["a"].inputs]
    assert inputs == [((), ()), ((), ()), (("data",), ())]
    assert not [c for c in again.row("a").lines if c.kind == "all-gather"]
    assert [c.kind for c in result.row("a").lines if c.kind == "all-gather"] == ["all-gather", "all-gather"]
    assert again.candidates == result.candidates and again.hardware == result.hardware
    # the edited rules stay with the candidate: a second edit starts from them
    assert next(c for c in again.origin.candidates if c.name == "a").shardings == "2 = data, None"
    with pytest.raises(shardviz.ShardingError, match="no candidate named 'c'"):
        retrace(result, "c", rules)
    with pytest.raises(shardviz.ShardingError, match="line 1"):
        retrace(result, "a", "0 = data, nope")
    with pytest.raises(shardviz.ShardingError, match=r"only a comparison made by shardviz\.compare"):
        retrace(shardviz.diff(result.programs["a"], result.programs["b"]), "a", rules)
