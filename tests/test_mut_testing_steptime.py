"""assert_step_time against an estimate written by hand: the budget, the bound and the message's rows.

The estimate (:func:`shardviz.estimate`, tested in tests/test_plan_*.py) is
replaced by a fixed one, so only what ``assert_step_time`` does with it is
checked: a step of 52.5 ms on "h100" (compute 21.9 µs, memory unknown,
network 52.5 ms, network-bound) whose six collectives take 30 ms, 20 ms,
4 ms, 3 ms, 2 ms and 1 ms.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

import shardviz.testing.steptime as steptime
from shardviz.errors import ShardingError
from shardviz.program.program import Program
from shardviz.testing.errors import StepTimeExceeded
from shardviz.testing.steptime import assert_step_time, parse_seconds
from testing_standins import program


def timed(seconds, kind="all-reduce", axes=("data",), line="model.py:3"):
    return SimpleNamespace(seconds=seconds, kind=kind, axes=axes, link="ICI", line=line)


COLLECTIVES = (
    timed(0.002, "all-to-all"),
    timed(0.03),
    timed(0.001, "collective-permute", line="model.py:9"),
    timed(0.02, "all-gather", axes=None, line=None),
    timed(0.004, "reduce-scatter", axes=("data", "model")),
    timed(0.003),
)


@pytest.fixture
def step(monkeypatch):
    est = SimpleNamespace(
        step_s=0.0525,
        hardware=SimpleNamespace(name="h100"),
        bound="network",
        compute_s=2.19e-5,
        memory_s=None,
        network_s=0.0525,
        collectives=COLLECTIVES,
    )
    prog = program([], total=0, kind=Program)
    asked = []
    monkeypatch.setattr(steptime, "estimate", lambda p, hardware: asked.append((p, hardware)) or est)
    return prog, est, asked


def test_a_step_within_its_budget_returns_the_estimate(step):
    prog, est, asked = step
    assert assert_step_time(prog, "h100", 0.0525) is est
    assert assert_step_time(prog, "h100", "52.5 ms", bound="network") is est
    assert asked == [(prog, "h100"), (prog, "h100")]


def test_a_step_over_its_budget_lists_the_five_slowest_collectives(step):
    prog, _, _ = step
    with pytest.raises(StepTimeExceeded) as info:
        assert_step_time(prog, "h100", "40 ms")
    assert str(info.value).splitlines() == [
        "step: estimated 52.5 ms per step on h100, over the budget of 40 ms by 12.5 ms",
        "  compute 21.9 µs  memory unknown  network 52.5 ms",
        "the collectives that take longest:",
        "       30 ms  all-reduce over data on ICI at model.py:3",
        "       20 ms  all-gather over ? on ICI at no line of yours",
        "        4 ms  reduce-scatter over data,model on ICI at model.py:3",
        "        3 ms  all-reduce over data on ICI at model.py:3",
        "        2 ms  all-to-all over data on ICI at model.py:3",
        "  ... and 1 more",
        "if this is intended, raise max_step (the estimate is 52.5 ms) or change bound",
    ]
    page = info.value.page
    assert page.budget == "at most 40 ms per step on h100"
    assert page.figure == "52.5 ms per step, network-bound"
    assert page.columns == ("time", "collective", "axes", "link", "line")
    assert page.rows == (
        ("30 ms", "all-reduce", "data", "ICI", "model.py:3"),
        ("20 ms", "all-gather", "?", "ICI", "no line of yours"),
        ("4 ms", "reduce-scatter", "data,model", "ICI", "model.py:3"),
        ("3 ms", "all-reduce", "data", "ICI", "model.py:3"),
        ("2 ms", "all-to-all", "data", "ICI", "model.py:3"),
        ("1 ms", "collective-permute", "data", "ICI", "model.py:9"),
    )
    assert page.marked == (True, True, True, True, True, False)
    assert info.value.subject is prog


def test_a_step_bound_otherwise_fails_within_its_budget(step):
    prog, _, _ = step
    with pytest.raises(StepTimeExceeded) as info:
        assert_step_time(prog, "h100", 1, bound="compute")
    lines = str(info.value).splitlines()
    assert lines[0] == "step: the step is network-bound, not compute-bound"
    assert info.value.page.budget == "at most 1 s per step on h100, compute-bound"
    with pytest.raises(StepTimeExceeded) as info:
        assert_step_time(prog, "h100", 0.05, bound="memory")
    assert str(info.value).splitlines()[0] == (
        "step: estimated 52.5 ms per step on h100, over the budget of 50 ms by 2.5 ms; "
        "the step is network-bound, not memory-bound"
    )


def test_five_collectives_or_fewer_are_all_listed_and_none_says_nothing(step):
    prog, est, _ = step
    est.collectives = COLLECTIVES[:5]
    with pytest.raises(StepTimeExceeded) as info:
        assert_step_time(prog, "h100", "1 ms")
    assert "  ... and" not in str(info.value)
    assert str(info.value).splitlines()[-2] == "        1 ms  collective-permute over data on ICI at model.py:9"
    est.collectives = ()
    with pytest.raises(StepTimeExceeded) as info:
        assert_step_time(prog, "h100", "1 ms")
    assert "the collectives that take longest:" not in str(info.value)
    assert info.value.page.rows == () and info.value.page.marked == ()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("80 ms", 0.08), ("1.5 s", 1.5), ("250 us", 250e-6), ("250µs", 250e-6), (" .5 ns ", 0.5e-9), ("3. s", 3.0)],
)
def test_times_as_users_write_them(text, seconds):
    value = parse_seconds(text, "max_step")
    assert value == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("value", [2, 0.25])
def test_a_number_is_seconds(value):
    assert parse_seconds(value, "max_step") == value and isinstance(parse_seconds(value, "max_step"), float)


@pytest.mark.parametrize("value", [0, -1, True, math.inf, math.nan, None, [1]])
def test_a_time_that_is_no_positive_number_is_refused(value):
    with pytest.raises(ShardingError) as info:
        parse_seconds(value, "max_step")
    assert str(info.value) == (
        f"max_step must be a positive number of seconds or a string such as '80 ms', not {value!r}"
    )


@pytest.mark.parametrize("text", ["fast", "1 min", "80", "ms"])
def test_a_string_that_is_no_time_is_refused(text):
    with pytest.raises(ShardingError) as info:
        parse_seconds(text, "budget")
    assert str(info.value) == f"budget {text!r} is not a time: write a number and s, ms, us or ns (e.g. '80 ms')"


def test_only_a_traced_program_and_a_known_bound(step):
    prog, _, asked = step
    with pytest.raises(ShardingError) as info:
        assert_step_time(object(), "h100", 1.0)
    assert str(info.value) == ("assert_step_time checks a program traced with shardviz.trace(f, *args), not object")
    with pytest.raises(ShardingError) as info:
        assert_step_time(prog, "h100", 1.0, bound="disk")
    assert str(info.value) == "bound must be one of compute, memory, network, not 'disk'"
    with pytest.raises(ShardingError, match=r"^max_step 'soon' is not a time"):
        assert_step_time(prog, "h100", "soon")
    assert asked == []
