"""shardviz.testing.assert_collectives on real traces, checked against the compiled module's own text.

Each budget is tested both ways: a program that keeps it passes, one that
breaks it fails with a message naming the kind, axes, bytes and source line.
Which collectives a program runs is read from ``Compiled.as_text()``; the
lines from the test's own source (``inspect``).
"""

from __future__ import annotations

import inspect
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, reshard
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import CollectiveBudgetExceeded, ShardvizAssertionError, assert_collectives
from shardviz.text.ranges import format_bytes

EXPLICIT2 = (AxisType.Explicit, AxisType.Explicit)
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def compiled_kinds(f, *args) -> set[str]:
    """The collective kinds in the compiled module, as XLA prints them (async starts count as their kind)."""
    text = jax.jit(f).lower(*args).compile().as_text()
    return {m.group(1) for m in re.finditer(rf"\b({'|'.join(KINDS)})(?:-start)?\(", text)}


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=EXPLICIT2)


def loss(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    out = h @ params["w2"]
    return jnp.mean((out - y) ** 2)


def data_parallel_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def gathering_step(w, x):
    full = reshard(w, NamedSharding(MESH, P()))
    return jnp.tanh(x @ full)


def dp_args():
    rep = NamedSharding(MESH, P())
    params = {"w1": jax.device_put(jnp.ones((16, 32)), rep), "w2": jax.device_put(jnp.ones((32, 8)), rep)}
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    y = jax.device_put(jnp.ones((16, 8)), NamedSharding(MESH, P("data")))
    return params, x, y


def gather_args():
    w = jax.device_put(jnp.ones((16, 32)), NamedSharding(MESH, P("model", None)))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(MESH, P("data")))
    return w, x


@pytest.fixture(scope="module")
def dp():
    return shardviz.trace(data_parallel_step, *dp_args())


@pytest.fixture(scope="module")
def gathering():
    return shardviz.trace(gathering_step, *gather_args())


# ---------------------------------------------------------------------------- allow


def test_a_data_parallel_step_passes_when_all_reduce_over_data_is_allowed(dp):
    assert compiled_kinds(data_parallel_step, *dp_args()) == {"all-reduce"}
    assert assert_collectives(dp, allow={"all-reduce": ["data"]}) is dp
    assert_collectives(dp, allow={"all-reduce": "data"})
    assert_collectives(dp, allow={"all_reduce": "*"})
    assert_collectives(dp, allow=["all-reduce"])
    assert_collectives(dp, allow="all-reduce")


def test_a_kind_not_allowed_fails_naming_kind_axes_bytes_and_line(gathering):
    assert "all-gather" in compiled_kinds(gathering_step, *gather_args())
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(gathering, allow={"all-reduce": ["data"]})
    message = str(info.value)
    gather = next(c for c in gathering.collectives if c.kind == "all-gather")
    line = line_of(gathering_step, "full = reshard(")
    assert f"all-gather over model: {format_bytes(gather.total_wire_bytes)} per call" in message
    assert "no all-gather is allowed" in message
    assert (
        f"{os.path.basename(__file__)}:{line} (gathering_step)  full = reshard(w, NamedSharding(MESH, P()))" in message
    )
    assert "allowed: all-reduce over data" in message
    assert isinstance(info.value, AssertionError) and isinstance(info.value, ShardvizAssertionError)
    assert info.value.subject is gathering


def test_a_kind_allowed_over_other_axes_fails(gathering):
    with pytest.raises(CollectiveBudgetExceeded, match=r"all-gather is allowed only over data"):
        assert_collectives(gathering, allow={"all-gather": ["data"]})
    assert_collectives(gathering, allow={"all-gather": ["model"]})
    assert_collectives(gathering, allow={"all-gather": ["data", "model"]})


def test_allowing_nothing_fails_on_every_collective(dp):
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(dp, allow={})
    assert "no all-reduce is allowed" in str(info.value)
    assert "allowed: no collectives" in str(info.value)


def test_a_combined_all_reduce_names_each_operands_line(dp):
    """XLA merges the two gradients' all-reduces into one; the message names both lines it comes from."""
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(dp, allow={"all-gather": "*"})
    message = str(info.value)
    for snippet in ('h = jnp.tanh(x @ params["w1"])', 'out = h @ params["w2"]'):
        assert f"{os.path.basename(__file__)}:{line_of(loss, snippet)} (loss)  {snippet}" in message


# ---------------------------------------------------------------------------- max_wire_bytes


def test_max_wire_bytes_both_ways(dp):
    total = dp.totals.wire_bytes
    assert total == sum(c.wire_bytes * c.count for c in dp.collectives) > 0
    assert_collectives(dp, max_wire_bytes=total)
    assert_collectives(dp, max_wire_bytes=f"{total / 1024} KiB")
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(dp, max_wire_bytes=total - 1)
    message = str(info.value)
    assert f"{format_bytes(total)} ({total} B) sent per device per call" in message
    assert f"over max_wire_bytes {format_bytes(total - 1)} ({total - 1} B)" in message
    assert "the lines that send the most" in message
    assert 'h = jnp.tanh(x @ params["w1"])' in message


def test_a_program_without_collectives_keeps_any_budget():
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    prog = shardviz.trace(lambda a: jnp.tanh(a) * 2, x)
    assert compiled_kinds(lambda a: jnp.tanh(a) * 2, x) == set()
    assert_collectives(prog, allow={}, max_wire_bytes=0, per_line=0)


# ---------------------------------------------------------------------------- per_line


def test_per_line_caps_every_line_or_named_ones(dp):
    file = os.path.basename(__file__)
    h_line = line_of(loss, 'h = jnp.tanh(x @ params["w1"])')
    out_line = line_of(loss, 'out = h @ params["w2"]')
    by_line = {}
    for c in dp.collectives:
        for part in c.parts or ():
            by_line[part.source.line] = by_line.get(part.source.line, 0) + part.wire_bytes * c.count
    assert set(by_line) == {h_line, out_line}
    biggest = max(by_line.values())

    assert_collectives(dp, per_line=biggest)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(dp, per_line=biggest - 1)
    message = str(info.value)
    assert "lines over their per_line budget" in message
    assert f"{file}:{h_line} (loss)" in message.split("every collective")[0]

    # by file:line (the file's name or a path ending in it), by line number, by function; the most specific wins
    assert_collectives(dp, per_line={f"{file}:{h_line}": by_line[h_line], out_line: by_line[out_line]})
    with pytest.raises(CollectiveBudgetExceeded, match=rf"over its budget 100 B \(tests/{file}:{out_line}\)"):
        assert_collectives(dp, per_line={"loss": biggest, f"tests/{file}:{out_line}": 100})
    with pytest.raises(CollectiveBudgetExceeded, match=rf"\(line {h_line}\)"):
        assert_collectives(dp, per_line={h_line: 1, "loss": biggest})
    with pytest.raises(CollectiveBudgetExceeded, match=r"\(function loss\)"):
        assert_collectives(dp, per_line={"loss": 1})


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"allow": {"all-gathr": ["data"]}}, "unknown collective kind 'all-gathr'"),
        ({"allow": {"all-reduce": ["batch"]}}, "names the axis 'batch', which the program's mesh lacks"),
        ({"allow": {"all-reduce": [1]}}, "lists the mesh axes all-reduce may run over"),
        ({"allow": 5}, "allow maps collective kinds to mesh axes"),
        ({"allow": {3: "data"}}, "allow's keys name collective kinds"),
        ({"max_wire_bytes": "lots"}, "max_wire_bytes 'lots' is not a size"),
        ({"max_wire_bytes": True}, "max_wire_bytes must be a byte count"),
        ({"max_wire_bytes": -1}, "0 or more bytes"),
        ({"max_wire_bytes": 1.5}, "whole number of bytes"),
        ({"per_line": [1]}, "per_line must be a byte count"),
        (
            {"per_line": {"no_such_function": 1}},
            "per_line['no_such_function'] names a function in which no collective runs",
        ),
        ({"per_line": {"elsewhere.py:3": 1}}, "no collective of the program is on a line of a file 'elsewhere.py'"),
        ({"per_line": {"loss": "7 parsecs"}}, "per_line['loss'] '7 parsecs' is not a size"),
        ({"per_line": {2.5: 1}}, "per_line's keys are"),
    ],
)
def test_bad_budgets_raise_sharding_error(dp, kwargs, fragment):
    with pytest.raises(shardviz.ShardingError) as info:
        assert_collectives(dp, **kwargs)
    assert fragment in str(info.value)
    assert not isinstance(info.value, AssertionError)


def test_only_a_traced_program_is_checked():
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    with pytest.raises(
        shardviz.ShardingError, match=r"a program traced with shardviz.trace\(f, \*args\), not ArrayImpl"
    ):
        assert_collectives(x, allow={})


def lambda_step(w, x):
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    return w - 0.1 * g


def test_a_function_key_covers_the_lambdas_written_in_it():
    w = jax.device_put(jnp.ones((16, 32)), NamedSharding(MESH, P()))
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(MESH, P("data")))
    prog = shardviz.trace(lambda_step, w, x)
    assert compiled_kinds(lambda_step, w, x) == {"all-reduce"}
    (reduce,) = prog.collectives
    assert reduce.source.function == "lambda_step.<locals>.<lambda>"
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 1 B \(function lambda_step\)"):
        assert_collectives(prog, per_line={"lambda_step": 1})
    assert_collectives(prog, per_line={"lambda_step": reduce.total_wire_bytes})
