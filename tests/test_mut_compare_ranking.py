"""The Comparison without a trace: rank order (the fastest that fits first), the best row, each row's
changes against its baseline, other hardware, the payload and the text's head, from stand-in rows,
programs and estimates whose figures are chosen by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import shardviz
from compare_stand_ins import line, program, row
from shardviz.compare import comparison as comparison_module
from shardviz.compare.comparison import Comparison, build_comparison, hardware_list, ranked, rows_of
from shardviz.compare.rows import Failure, LineChange
from shardviz.plan.hardware import hardware_named

GATHER = line("m.py:1", "all-gather", "x", 100, 1.0)


def gather(sent):
    return (line("m.py:1", "all-gather", "x", sent, 1.0),)


def grown(before, after):
    return (LineChange("m.py:1", "all-gather", "x", "grown", before, after, 1.0, 1.0),)


def mixed_rows():
    return [
        row("slow", 3.0, lines=gather(300)),
        row("over", 1.0, fits=False, lines=gather(50)),
        row("fast", 2.0, lines=gather(100)),
        row("unknown", 2.5, fits=None, lines=gather(100)),
        row("slow", 5.0, hardware="tpu-v5p", lines=gather(200)),
        row("fast", 6.0, hardware="tpu-v5p", lines=gather(400)),
    ]


def test_rows_rank_fastest_first_those_that_do_not_fit_last_each_against_the_best_of_its_hardware():
    done = ranked(mixed_rows(), "best", None)
    assert [(r.rank, r.candidate, r.hardware) for r in done] == [
        (1, "fast", "h100"), (2, "unknown", "h100"), (3, "slow", "h100"), (4, "slow", "tpu-v5p"),
        (5, "fast", "tpu-v5p"), (6, "over", "h100"),
    ]  # fmt: skip
    assert [(r.against, r.changes) for r in done] == [
        ("", ()),
        ("fast", ()),  # the same bytes as the best: nothing differs, but it is against it
        ("fast", grown(100, 300)),
        ("", ()),
        ("slow", grown(200, 400)),
        ("fast", (LineChange("m.py:1", "all-gather", "x", "shrunk", 100, 50, 1.0, 1.0),)),
    ]


def test_equal_times_rank_by_candidate_then_hardware():
    done = ranked([row("b", 1.0), row("a", 1.0, hardware="z"), row("a", 1.0, hardware="h")], "best", None)
    assert [(r.candidate, r.hardware) for r in done] == [("a", "h"), ("a", "z"), ("b", "h100")]


def test_where_nothing_fits_the_fastest_is_the_baseline():
    done = ranked([row("b", 2.0, fits=False, lines=gather(300)), row("a", 1.0, fits=False, lines=gather(100))],
                  "best", None)  # fmt: skip
    assert [(r.candidate, r.against, r.changes) for r in done] == [("a", "", ()), ("b", "a", grown(100, 300))]


def test_a_first_baseline_compares_each_row_with_the_first_candidate_of_its_hardware():
    done = ranked(mixed_rows(), "first", "slow")
    by = {(r.candidate, r.hardware): r for r in done}
    assert (by["slow", "h100"].against, by["slow", "h100"].changes) == ("", ())
    assert (by["fast", "h100"].against, by["fast", "h100"].changes) == (
        "slow", (LineChange("m.py:1", "all-gather", "x", "shrunk", 300, 100, 1.0, 1.0),),
    )  # fmt: skip
    assert by["fast", "tpu-v5p"].against == "slow"
    # a hardware with no row of the first candidate: nothing to compare with
    alone = ranked([row("b", 1.0, lines=gather(1)), row("c", 2.0, lines=gather(2))], "first", "a")
    assert [(r.against, r.changes) for r in alone] == [("", ()), ("", ())]


def made(rows, **changed):
    fields = dict(step="mlp", rows=ranked(rows, "best", None), failures=(Failure("bad", "", (), "no axis"),),
                  hardware=("h100", "tpu-v5p"), programs={}, candidates=("slow", "over", "fast", "unknown", "bad"))  # fmt: skip
    fields.update(changed)
    return Comparison(**fields)


def test_the_best_row_fits_unless_told_otherwise():
    result = made(mixed_rows())
    assert (result.best().candidate, result.best().hardware) == ("fast", "h100")
    assert result.best(fits=False).candidate == "over"
    assert (result.best(hardware="tpu-v5p").candidate, result.best(hardware="tpu-v5p").hardware) == ("slow", "tpu-v5p")
    assert result.best(hardware="nothing") is None
    assert made([row("f", 2.0), row("u", 1.0, fits=None)]).best().candidate == "u"
    assert made([row("a", 1.0, hardware="z"), row("a", 1.0, hardware="h"), row("b", 1.0)]).best().hardware == "h"
    assert made([row("b", 1.0), row("a", 1.0)]).best().candidate == "a"


def test_a_row_is_found_by_candidate_on_the_first_hardware_unless_named():
    result = made(mixed_rows())
    assert (result.row("fast").hardware, result.row("fast").step_s) == ("h100", 2.0)
    assert result.row("fast", "tpu-v5p").step_s == 6.0
    with pytest.raises(shardviz.ShardingError) as refused:
        made([row("a", 1.0), row("b", 2.0, hardware="tpu-v5p")]).row("b")
    assert str(refused.value) == "no row for candidate 'b' on 'h100'; rows: a on h100, b on tpu-v5p"


def test_changes_between_two_named_candidates_on_one_hardware():
    result = made(mixed_rows())
    assert result.changes("fast", "slow") == grown(100, 300)
    assert result.changes("slow", "fast", "tpu-v5p") == (
        LineChange("m.py:1", "all-gather", "x", "grown", 200, 400, 1.0, 1.0),
    )


def test_the_payload_holds_every_row_and_failure():
    result = made([row("a", 1.0)], workers=3, seconds=4.5, baseline="first", candidates=("a", "bad"))
    assert result.to_json() == {
        "kind": "compare",
        "version": 1,
        "step": "mlp",
        "baseline": "first",
        "hardware": ["h100", "tpu-v5p"],
        "candidates": ["a", "bad"],
        "workers": 3,
        "seconds": 4.5,
        "rows": [result.rows[0].to_json()],
        "failures": [{"candidate": "bad", "hardware": "", "mesh": [], "error": "no axis"}],
    }
    assert result.rows[0].to_json()["rank"] == 1


def test_the_text_names_the_best_that_fits_and_keeps_to_the_width():
    result = made(mixed_rows())
    text = str(result)
    assert text.startswith("mlp: 5 candidates on h100, tpu-v5p, 6 row(s) ranked, 1 failed to trace\n")
    assert "best that fits: fast on h100, 2.00 s per step" in text
    narrow = result.report(width=30)
    assert max(len(t) for t in narrow.split("\n")[1:-2]) == 30  # the table; then the best and a failure
    assert result.render(width=30) == narrow
    assert repr(result) == "Comparison(mlp, 5 candidates, 6 rows, 1 failed)"


def stand_in_estimate(program, hw):
    """Step time: the program's name's length in seconds on h100, ten times it elsewhere; 'broken' has none."""
    if program.name == "broken":
        raise shardviz.ShardingError(f"{hw.name} cannot hold it")
    step = len(program.name) * (1.0 if hw.name == "h100" else 10.0)
    return SimpleNamespace(hardware=hw, step_s=step, bound="network", compute_s=None, memory_s=None,
                           network_s=step, device_bytes=10, fits=True, slices=1, collectives=(),
                           held_by_group=(("arguments", 10),))  # fmt: skip


@pytest.fixture
def estimates(monkeypatch):
    monkeypatch.setattr(comparison_module, "estimate", stand_in_estimate)


def test_rows_of_a_program_one_per_hardware_a_failure_where_it_cannot_be_estimated(estimates):
    h100, v5p = hardware_named("h100"), hardware_named("tpu-v5p")
    got, failed = rows_of("a", program("abc", child_seconds=2.5), (h100, v5p))
    assert [(r.candidate, r.hardware, r.step_s, r.trace_seconds, r.hbm_bytes) for r in got] == [
        ("a", "h100", 3.0, 2.5, h100.hbm_bytes), ("a", "tpu-v5p", 30.0, 2.5, v5p.hbm_bytes),
    ]  # fmt: skip
    assert failed == []
    assert rows_of("a", program("abc", child_seconds=None), (h100,))[0][0].trace_seconds == 0.0
    got, failed = rows_of("b", program("broken"), (h100, v5p))
    assert got == []
    assert failed == [Failure("b", "h100", (("data", 4), ("model", 2)), "h100 cannot hold it"),
                      Failure("b", "tpu-v5p", (("data", 4), ("model", 2)), "tpu-v5p cannot hold it")]  # fmt: skip
    assert rows_of("b", program("broken", mesh=None), (h100,))[1][0].mesh == ()


def test_a_comparison_is_built_from_programs_and_estimated_on_other_hardware_without_tracing(estimates):
    programs = {"long": program("longer"), "short": program("ab"), "b": program("broken")}
    traced_not = [Failure("c", "", (), "no trace")]
    h100 = hardware_named("h100")
    built = build_comparison("mlp", programs, traced_not, (h100,), ["long", "short", "b", "c"], "best", 2, 7.5,
                             origin="origin")  # fmt: skip
    assert [(r.rank, r.candidate, r.step_s) for r in built.rows] == [(1, "short", 2.0), (2, "long", 6.0)]
    assert built.failures == (Failure("c", "", (), "no trace"), Failure("b", "h100", (("data", 4), ("model", 2)),
                                                                        "h100 cannot hold it"))  # fmt: skip
    assert (built.step, built.hardware, built.candidates, built.baseline) == ("mlp", ("h100",),
                                                                             ("long", "short", "b", "c"), "best")  # fmt: skip
    assert (built.workers, built.seconds, built.origin, built.hardware_used) == (2, 7.5, "origin", (h100,))
    assert built.programs == programs and built.programs is not programs
    first = build_comparison("mlp", programs, [], (h100,), ["long", "short"], "first", 1, 0.0)
    assert first.row("short").against == "long" and first.origin is None
    assert build_comparison("mlp", {}, [], (h100,), [], "first", 1, 0.0).rows == ()

    moved = built.on(["tpu-v5p", "h100"])
    assert moved.hardware == ("tpu-v5p", "h100") and moved.programs == programs
    assert [(r.candidate, r.hardware, r.step_s) for r in moved.rows] == [
        ("short", "h100", 2.0), ("long", "h100", 6.0), ("short", "tpu-v5p", 20.0), ("long", "tpu-v5p", 60.0),
    ]  # fmt: skip
    # the trace failure is kept; the estimate failures are worked out again for the new hardware
    assert [(f.candidate, f.hardware) for f in moved.failures] == [("c", ""), ("b", "tpu-v5p"), ("b", "h100")]
    assert (moved.candidates, moved.baseline, moved.workers, moved.seconds, moved.origin) == (
        ("long", "short", "b", "c"), "best", 2, 7.5, "origin",
    )  # fmt: skip
    assert moved.step == "mlp"


def test_hardware_is_one_name_one_hardware_or_a_list():
    h100 = hardware_named("h100")
    assert hardware_list("h100") == (h100,)
    assert hardware_list(h100) == (h100,)
    assert hardware_list(("h100", "tpu-v5p")) == (h100, hardware_named("tpu-v5p"))
    with pytest.raises(shardviz.ShardingError, match=r"^hardware= names no hardware; give a name such as"):
        hardware_list([])


@pytest.mark.parametrize(("hardware", "named"), [(None, "NoneType"), (5, "int")])
def test_hardware_that_is_no_name_nor_list_is_refused_by_its_type(hardware, named):
    with pytest.raises(
        shardviz.ShardingError, match=rf"^hardware must be a name \(.*\) or a shardviz.Hardware, got a {named}$"
    ):
        hardware_list(hardware)


class SearchStandIn:
    """What shardviz.search explored, as a comparison reads it: a text and a payload."""

    def report(self):
        return "searched 3 plans"

    def to_json(self):
        return {"plans": 3}


def test_a_searchs_comparison_puts_what_it_explored_before_the_table_and_in_the_payload():
    plain = made(mixed_rows())
    searched = made(mixed_rows(), search=SearchStandIn())
    assert searched.report(width=100) == "searched 3 plans\n\n" + plain.report(width=100)
    assert searched.to_json() == {**plain.to_json(), "search": {"plans": 3}}
    assert "search" not in plain.to_json()


def test_no_row_on_a_hardware_is_no_best_with_or_without_fitting():
    assert made(mixed_rows()).best(fits=False, hardware="nothing") is None
