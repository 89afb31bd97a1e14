"""compare(), diff() and a candidate traced again, with the what-if trace and the estimate replaced by
stand-ins (the real children run in tests/test_compare.py): how many children run at once, what each
child is asked to trace, what fails and what is kept, and the view's rules edits."""

from __future__ import annotations

import dataclasses
import functools
import json
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import PartitionSpec as P

import shardviz
from compare_stand_ins import program
from shardviz.compare import comparison as comparison_module
from shardviz.compare import run as run_module
from shardviz.compare import state as state_module
from shardviz.compare.candidates import Candidate
from shardviz.compare.rows import Failure
from shardviz.compare.run import (
    CompareOrigin,
    _error_text,
    _mesh_of,
    _step_name,
    compare,
    diff,
    retrace,
    usable_cores,
    worker_count,
)
from shardviz.compare.state import CompareState, candidate_rules
from shardviz.plan.hardware import hardware_named
from shardviz.program.program import Program


def mesh(data, model):
    return AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def step(x):
    return x


def test_usable_cores_are_this_processs_else_the_machines_else_one(monkeypatch):
    monkeypatch.setattr(run_module.os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert usable_cores() == 3
    monkeypatch.setattr(run_module.os, "cpu_count", lambda: 6)
    for error in (AttributeError, OSError):

        def refuse(pid, error=error):
            raise error("no affinity here")

        monkeypatch.setattr(run_module.os, "sched_getaffinity", refuse, raising=False)
        assert usable_cores() == 6
    monkeypatch.setattr(run_module.os, "cpu_count", lambda: None)
    assert usable_cores() == 1


@pytest.fixture
def machine(monkeypatch):
    """Four cores and 10,000 bytes free; a child of n devices needs 100 n bytes."""
    asked = []
    monkeypatch.setattr(run_module, "usable_cores", lambda: 4)
    monkeypatch.setattr(run_module, "available_bytes", lambda: 10_000)
    monkeypatch.setattr(run_module, "estimated_child_bytes", lambda devices: asked.append(devices) or 100 * devices)
    return asked


def test_children_at_once_are_the_cores_fewer_where_memory_or_candidates_are_fewer(machine, monkeypatch):
    assert worker_count([8, 16, 4, 2, 2]) == 4  # memory holds 10,000 // 1,600 = 6 children of 16 devices
    assert machine == [16]
    assert worker_count([8, 16, 4]) == 3
    assert worker_count([50, 2, 2]) == 2  # 10,000 // 5,000
    assert worker_count([200, 2]) == 1  # none fits by the estimate: one at a time still
    assert worker_count([]) == 1 and machine[-1] == 1
    monkeypatch.setattr(run_module, "available_bytes", lambda: 1 << 40)
    assert worker_count([2] * 9) == 4
    assert worker_count([2] * 9, workers=7) == 7 and worker_count([2], workers=1) == 1


@pytest.mark.parametrize("workers", [0, -1, 2.0, "2"])
def test_workers_must_be_a_positive_int(workers):
    with pytest.raises(shardviz.ShardingError) as refused:
        worker_count([8], workers)
    assert str(refused.value) == f"workers= must be a positive int, got {workers!r}"


def test_a_failures_text_and_a_steps_name():
    assert _error_text(shardviz.ShardingError("bad spec")) == "bad spec"
    assert _error_text(ValueError("3 devices")) == "ValueError: 3 devices"
    assert _mesh_of(Candidate("a", mesh(4, 2))) == (("data", 4), ("model", 2))

    class Wrapped:
        _fun = step

        def __call__(self, x):
            return x

    assert _step_name(step) == "step"
    assert _step_name(Wrapped()) == "step"
    assert _step_name(functools.partial(step)) == "step"
    assert _step_name(object()) == "object"


class Children:
    """What-if traces replaced: each records what it was asked, returns a stand-in program named after
    the mesh's devices, or raises where the mesh has 3 data devices."""

    def __init__(self):
        self.asked = []
        self.failing = 3

    def __call__(self, fun, *arguments, mesh, whatif_timeout):
        self.asked.append((fun, arguments, mesh, whatif_timeout))
        if mesh.axis_sizes[0] == self.failing:
            raise ValueError("3 devices cannot split 8 rows")
        return program("p" * mesh.size, tuple(zip(mesh.axis_names, mesh.axis_sizes)), child_seconds=1.0)


def stand_in_estimate(prog, hw):
    """A step of 8 s over the devices on h100, twice that elsewhere."""
    devices = 1
    for size in prog.mesh.axis_sizes:
        devices *= size
    step_s = 8.0 / devices * (1.0 if hw.name == "h100" else 2.0)
    return SimpleNamespace(hardware=hw, step_s=step_s, bound="network", compute_s=None, memory_s=None,
                           network_s=step_s, device_bytes=10, fits=True, slices=1, collectives=(),
                           held_by_group=(("arguments", 10),))  # fmt: skip


class Clock:
    def __init__(self, *readings):
        self.readings = list(readings)

    def perf_counter(self):
        return self.readings.pop(0)


@pytest.fixture
def children(monkeypatch, machine):
    traced = Children()
    monkeypatch.setattr(run_module, "trace", traced)
    monkeypatch.setattr(comparison_module, "estimate", stand_in_estimate)
    monkeypatch.setattr(run_module, "time", Clock(10.0, 12.5))
    return traced


ARGS = (jax.ShapeDtypeStruct((24, 4), jnp.float32),)


def test_compare_traces_each_candidate_once_and_keeps_those_that_fail(children):
    plain = jax.ShapeDtypeStruct((8,), jnp.float32)
    result = compare(step, [("a", mesh(4, 2), (P("data"),)), (mesh(3, 1), (P("data"),)), ("c", mesh(2, 1), None)],
                     args=(plain,), hardware=("h100", "h200"), timeout=30.0)  # fmt: skip
    assert [(fun, m, timeout) for fun, _, m, timeout in children.asked] == [
        (step, mesh(4, 2), 30.0), (step, mesh(3, 1), 30.0), (step, mesh(2, 1), 30.0),
    ]  # fmt: skip
    assert tuple(children.asked[0][1][0].sharding.spec) == ("data",)
    assert [(r.candidate, r.hardware, r.step_s, r.trace_seconds) for r in result.rows] == [
        ("a", "h100", 1.0, 1.0), ("a", "h200", 2.0, 1.0), ("c", "h100", 4.0, 1.0), ("c", "h200", 8.0, 1.0),
    ]  # fmt: skip
    assert result.failures == (
        Failure("#2", "", (("data", 3), ("model", 1)), "ValueError: 3 devices cannot split 8 rows"),
    )
    assert (result.step, result.candidates, result.hardware, result.baseline) == (
        "step", ("a", "#2", "c"), ("h100", "h200"), "best",
    )  # fmt: skip
    assert (result.workers, result.seconds) == (3, 2.5)
    assert set(result.programs) == {"a", "c"} and result.programs["a"].name == "p" * 8
    assert result.origin == CompareOrigin(step, (plain,), tuple(run_module.as_candidate(c, i) for i, c in enumerate(
        [("a", mesh(4, 2), (P("data"),)), (mesh(3, 1), (P("data"),)), ("c", mesh(2, 1), None)])), 30.0)  # fmt: skip
    assert result.hardware_used == (hardware_named("h100"), hardware_named("h200"))


def test_the_children_run_in_as_many_threads_as_workers(children, monkeypatch):
    pools = []

    class Pool(run_module.ThreadPoolExecutor):
        def __init__(self, max_workers):
            pools.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(run_module, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(run_module, "time", Clock(0.0, 1.0, 0.0, 1.0))
    compare(step, [("a", mesh(2, 1), None), ("b", mesh(1, 2), None)], args=ARGS)
    compare(step, [("a", mesh(2, 1), None), ("b", mesh(1, 2), None)], args=ARGS, workers=5)
    assert pools == [2, 5]


def test_compare_by_default_runs_on_tpu_v5p_for_ten_minutes_a_child(children):
    result = compare(step, [("a", mesh(2, 1), lambda m: (P(),))], args=ARGS, workers=2)
    assert result.hardware == ("tpu-v5p",) and children.asked[0][3] == 600.0
    assert result.workers == 2 and result.rows[0].step_s == 8.0


@pytest.mark.parametrize(
    ("fun", "candidates", "message"),
    [
        (3, [("a", mesh(2, 1), None)], "compare needs the step function first, got a int"),
        (step, [], "compare needs at least one candidate"),
        (step, None, "compare's candidates are a list of candidates, got a NoneType"),
        (step, 5, "compare's candidates are a list of candidates, got a int"),
        (step, [("a", mesh(2, 1), None), ("a", mesh(1, 2), None)], "two candidates are named 'a'; each needs its own name"),
    ],
)  # fmt: skip
def test_compare_refuses_before_any_child(children, fun, candidates, message):
    with pytest.raises(shardviz.ShardingError) as refused:
        compare(fun, candidates, args=ARGS)
    assert str(refused.value) == message
    assert children.asked == []


def test_diff_sets_two_programs_side_by_side_against_the_first(children):
    before, after = program("mlp", (("x", 8),)), program("other", (("x", 2),))
    result = diff(before, after)
    assert (result.step, result.baseline, result.workers, result.seconds, result.origin) == ("mlp", "first", 1, 0.0,
                                                                                            None)  # fmt: skip
    assert result.hardware == ("tpu-v5p",) and result.candidates == ("before", "after")
    assert result.programs == {"before": before, "after": after}
    assert result.row("after").against == "before" and result.row("before").against == ""
    named = diff(before, after, hardware="h100", names=("old", "new"))
    assert named.hardware == ("h100",) and [r.candidate for r in named.rows] == ["old", "new"]
    assert named.failures == ()


@pytest.mark.parametrize(
    ("before", "after", "names", "message"),
    [
        ("mlp", None, ("a", "b"), "diff takes two shardviz Programs (from shardviz.trace); before is a str"),
        (None, 3, ("a", "b"), "diff takes two shardviz Programs (from shardviz.trace); after is a int"),
        (None, None, ("a", "a"), "diff's names= are two different strings, got ('a', 'a')"),
        (None, None, ("a", "b", "c"), "diff's names= are two different strings, got ('a', 'b', 'c')"),
        (None, None, ("a", 2), "diff's names= are two different strings, got ('a', 2)"),
        (None, None, None, "diff's names= are two different strings, got None"),
    ],
)
def test_diff_refuses_what_is_not_two_programs_with_two_names(children, before, after, names, message):
    made = program()
    with pytest.raises(shardviz.ShardingError) as refused:
        diff(made if before is None else before, made if after is None else after, names=names)
    assert str(refused.value) == message


RULES = "0 = data"


def compared():
    return compare(step, [("a", mesh(4, 2), RULES), ("b", mesh(2, 4), RULES), ("bad", mesh(3, 1), RULES)],
                   args=ARGS, hardware=("h100", "h200"), timeout=20.0)  # fmt: skip


def test_retrace_traces_one_candidate_again_and_keeps_the_rest(children, monkeypatch):
    result = compared()
    monkeypatch.setattr(run_module, "time", Clock(1.0, 1.75))
    children.asked.clear()
    again = retrace(result, "a", "0 = model")
    assert [(fun, m, timeout) for fun, _, m, timeout in children.asked] == [(step, mesh(4, 2), 20.0)]
    assert again.programs["b"] is result.programs["b"] and again.programs["a"] is not result.programs["a"]
    assert list(again.programs) == ["a", "b"]
    assert [c.shardings for c in again.origin.candidates] == ["0 = model", RULES, RULES]
    assert (again.origin.step, again.origin.args, again.origin.timeout) == (step, ARGS, 20.0)
    assert (again.candidates, again.hardware, again.hardware_used) == (result.candidates, result.hardware,
                                                                       result.hardware_used)  # fmt: skip
    assert (again.step, again.baseline, again.workers, again.seconds) == ("step", "best", 1, 0.75)
    assert again.failures == result.failures


def test_a_failed_candidate_traced_again_joins_the_rows(children, monkeypatch):
    result = compared()
    assert [f.candidate for f in result.failures] == ["bad"]
    children.failing = None
    monkeypatch.setattr(run_module, "time", Clock(1.0, 2.0))
    again = retrace(result, "bad", RULES)
    assert list(again.programs) == ["a", "b", "bad"] and again.failures == ()
    assert sorted({r.candidate for r in again.rows}) == ["a", "b", "bad"]


def test_retrace_refuses_an_unknown_candidate_or_a_diff(children):
    result = compared()
    with pytest.raises(shardviz.ShardingError) as refused:
        retrace(result, "zz", RULES)
    assert str(refused.value) == "no candidate named 'zz'; candidates: a, b, bad"
    with pytest.raises(shardviz.ShardingError) as refused:
        retrace(diff(program(), program()), "a", RULES)
    assert str(refused.value) == "only a comparison made by shardviz.compare can trace a candidate again"


def test_the_views_state_is_the_payload_with_each_candidates_rules(children):
    result = compare(step, [("a", mesh(4, 2), RULES), ("b", mesh(2, 4), (P("data"),))], args=ARGS)
    assert candidate_rules(result) == {"a": RULES}
    assert candidate_rules(diff(program(), program())) == {}
    payload = CompareState(result).payload
    assert payload == {**result.to_json(), "rules": {"a": RULES}, "editable": True}
    assert CompareState(diff(program(), program())).payload["editable"] is False


def test_a_rules_edit_traces_that_candidate_again(children, monkeypatch):
    result = compare(step, [("a", mesh(4, 2), RULES), ("b", mesh(2, 2), RULES)], args=ARGS, hardware="h100")
    asked = []

    def retraced(comparison, name, rules):
        asked.append((comparison, name, rules))
        return comparison

    monkeypatch.setattr(state_module, "retrace", retraced)
    state, said = CompareState(result).with_edit(json.dumps({"candidate": "b", "rules": "1 = model"}))
    assert asked == [(result, "b", "1 = model")] and state.comparison is result
    assert said == "b traced again: 2000.00 ms per step on h100"  # the stand-in's 8 s over 4 devices
    empty = SimpleNamespace(rows=(), origin=result.origin)
    monkeypatch.setattr(state_module, "retrace", lambda comparison, name, rules: empty)
    assert CompareState(result).with_edit(json.dumps({"candidate": "a", "rules": ""}))[1] == "a traced again"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("{not json", 'a rules edit is JSON: {"candidate": name, "rules": text}'),
        ("[1]", "a rules edit names a candidate and its rules text"),
        (json.dumps({"candidate": 1, "rules": "x"}), "a rules edit names a candidate and its rules text"),
        (json.dumps({"rules": "x"}), "a rules edit names a candidate and its rules text"),
        (json.dumps({"candidate": "a", "rules": 2}), "a rules edit names a candidate and its rules text"),
        (json.dumps({"candidate": "a"}), "a rules edit names a candidate and its rules text"),
        (json.dumps({"candidate": "b", "rules": "x"}), "candidate 'b' has no rules text to edit"),
    ],
)
def test_a_bad_rules_edit_says_what_was_wrong(children, edit, message):
    result = compare(step, [("a", mesh(4, 2), RULES), ("b", mesh(2, 4), (P("data"),))], args=ARGS)
    with pytest.raises(shardviz.ShardingError) as refused:
        CompareState(result).with_edit(edit)
    assert str(refused.value) == message


@pytest.fixture
def gibibytes(monkeypatch):
    """Four cores; a child of any mesh needs 4 GiB; the test sets what is available."""
    monkeypatch.setattr(run_module, "usable_cores", lambda: 4)
    monkeypatch.setattr(run_module, "estimated_child_bytes", lambda devices: 4 * 2**30)

    def available(gib):
        monkeypatch.setattr(run_module, "available_bytes", lambda: gib * 2**30)

    return available


def test_workers_beyond_what_memory_holds_are_refused_saying_what_fits(gibibytes):
    gibibytes(10)  # holds 10 // 4 = 2 children
    with pytest.raises(shardviz.ShardingError) as refused:
        worker_count([64, 64, 64], workers=3)
    assert str(refused.value) == (
        "workers=3 would run 3 what-if children of up to 64 devices at once, about 12.0 GiB, and this machine "
        "has 10.0 GiB available: workers=2 fits"
    )
    assert worker_count([64, 64], workers=2) == 2  # exactly what memory holds
    gibibytes(6)  # holds one child
    with pytest.raises(shardviz.ShardingError) as refused:
        worker_count([64, 64], workers=2)
    assert str(refused.value) == (
        "workers=2 would run 2 what-if children of up to 64 devices at once, about 8.0 GiB, and this machine "
        "has 6.0 GiB available: workers=1 fits"
    )
    # no candidates run one child whatever workers= says, and one child is never refused
    assert worker_count([], workers=3) == 3
    gibibytes(3)  # holds none
    assert worker_count([64], workers=1) == 1


class Elsewhere(Children):
    """The what-if traces an executor runs: whole Programs (every field set, an origin the executor
    must drop), since they are rebuilt without their origin."""

    def __call__(self, fun, *arguments, mesh, whatif_timeout):
        made = super().__call__(fun, *arguments, mesh=mesh, whatif_timeout=whatif_timeout)
        for f in dataclasses.fields(Program):
            if not hasattr(made, f.name):
                object.__setattr__(made, f.name, None)
        object.__setattr__(made, "origin", "this process")
        return made


@pytest.fixture
def elsewhere(children, monkeypatch):
    traced = Elsewhere()
    monkeypatch.setattr(run_module, "trace", traced)
    return traced


def test_an_executor_traces_each_candidate_and_a_bad_layout_fails_at_once(elsewhere):
    plain = jax.ShapeDtypeStruct((8,), jnp.float32)
    with ThreadPoolExecutor(max_workers=2) as pool:
        result = compare(step, [("a", mesh(4, 2), (P("data"),)), ("b", mesh(3, 1), (P("data"),)),
                                ("c", mesh(2, 1), (P("data"), P()))],
                         args=(plain,), hardware="h100", timeout=30.0, executor=pool)  # fmt: skip
    assert [(fun, m, timeout) for fun, _, m, timeout in elsewhere.asked] == [
        (step, mesh(4, 2), 30.0), (step, mesh(3, 1), 30.0),
    ]  # fmt: skip
    assert tuple(elsewhere.asked[0][1][0].sharding.spec) == ("data",) and elsewhere.asked[0][1][0].shape == (8,)
    assert [(r.candidate, r.step_s) for r in result.rows] == [("a", 1.0)]  # 8 s over 8 devices
    assert result.programs["a"].name == "p" * 8 and result.programs["a"].origin is None
    assert [(f.candidate, f.error) for f in result.failures] == [
        ("b", "ValueError: 3 devices cannot split 8 rows"),
        # two specs for one argument: refused here, before the executor is asked
        ("c", result.failures[1].error),
    ]
    assert result.failures[1].error.startswith("candidate 'c': its specs do not match the step's arguments")


def test_an_executor_gets_a_jitted_step_that_it_jits_again(elsewhere):
    on_data = jax.sharding.NamedSharding(mesh(2, 1), P("data"))
    jitted = jax.jit(step, out_shardings=on_data)
    with ThreadPoolExecutor(max_workers=1) as pool:
        traced = run_module.submit_trace(pool, jitted, Candidate("a", mesh(2, 1), (P("data"),)), ARGS, 5.0).result()
    fun, arguments, on, timeout = elsewhere.asked[0]
    # a jitted function travels as its function and jit's options, and is jitted again where it runs
    assert fun is not jitted and fun.__wrapped__ is step and hasattr(fun, "lower")
    assert fun._jit_info.out_shardings_leaves == (on_data,)  # jit's own record of its options
    assert [tuple(a.sharding.spec) for a in arguments] == [("data",)] and (on, timeout) == (mesh(2, 1), 5.0)
    assert traced.name == "pp" and traced.origin is None


@pytest.mark.parametrize("executor", ["pool", 3])
def test_an_executor_that_is_no_executor_is_refused_before_any_child(children, executor):
    with pytest.raises(shardviz.ShardingError) as refused:
        compare(step, [("a", mesh(2, 1), None)], args=ARGS, executor=executor)
    assert str(refused.value) == (
        f"compare's executor= is a concurrent.futures.Executor, got a {type(executor).__name__}"
    )
    assert children.asked == []
