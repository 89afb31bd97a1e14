"""Checks of shardviz.testing that once passed when they had to fail (issue 31), each against a hand count.

Every test here failed on the code before the fix: a tree never placed on a
mesh, NumPy leaves and an empty tree passed ``assert_sharded``; per-line
budgets on lines and functions that send nothing passed; ``{U:}``/``{R:}``
were ignored; a combined collective's operands in a scanned step, runs per
operand, and an allowance by overlap instead of subset are each checked by
hand against the ring formulas of docs/program-payload.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import (
    CollectiveBudgetExceeded,
    LayoutMismatch,
    NotShardedEnough,
    assert_collectives,
    assert_layout,
    assert_sharded,
    collectives_record,
    parse_bytes,
)

MESH = Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
HERE = os.path.basename(__file__)


def put(x, *spec):
    return jax.device_put(x, NamedSharding(MESH, P(*spec)))


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


def ring_all_reduce(n: int, nbytes: int) -> int:
    return 2 * (n - 1) * nbytes // n


# ---------------------------------------------------------------------------- assert_sharded


def test_parameters_never_placed_on_a_mesh_are_not_sharded():
    params = {"w": jnp.ones((1024, 1024))}  # on one device of eight
    assert jax.device_count() > 1 and isinstance(params["w"].sharding, jax.sharding.SingleDeviceSharding)
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(params)
    message = str(info.value)
    assert message.startswith("0.0% of the tree's 4.0 MiB is sharded (split by some mesh axis); at least 90.0% must be")
    assert "  w  float32[1024,1024]  4.0 MiB, 4.0 MiB per device, on one device, on no mesh" in message
    assert "1 of them is on no mesh: place each with jax.device_put(x, NamedSharding(mesh, P(...)))" in message


def test_numpy_leaves_count_as_not_sharded():
    sharded = put(jnp.ones((64, 64)), "data", "model")  # 16 KiB
    tree = {"w": np.ones((256, 256), np.float32), "v": sharded}  # 256 KiB on the host
    share = 16 * 1024 / (16 * 1024 + 256 * 1024)
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(tree, 0.5)
    message = str(info.value)
    assert message.startswith(f"{share:.1%} of the tree's 272 KiB is sharded")
    assert "  w  ndarray float32[256,256]  256 KiB, a NumPy array in host memory, on no device" in message
    assert assert_sharded(tree, 0.05) == pytest.approx(share)


@pytest.mark.parametrize("tree", [{}, {"step": 3, "name": None}, []])
def test_a_tree_with_nothing_to_check_is_refused_by_name(tree):
    with pytest.raises(shardviz.ShardingError, match="assert_sharded has nothing to check: it was given"):
        assert_sharded(tree)


def test_the_advice_names_the_axis_that_saves_most():
    tree = {"w": put(jnp.ones((256, 512)))}  # replicated over data (4) and model (2)
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(tree)
    advice = [line.strip() for line in str(info.value).splitlines() if "sharding it saves" in line]
    assert advice == [
        "w is replicated over data; dim 1 (512) is divisible by data=4: sharding it saves 384 KiB per device"
    ]


def test_a_fraction_that_rounds_to_the_bound_is_written_with_more_digits():
    tree = {"big": put(jnp.ones((1000, 16)), "data"), "tiny": put(jnp.ones((1,)))}
    share = 64000 / 64004
    with pytest.raises(NotShardedEnough, match=rf"^{share:.4%} of the tree's .* at least 100.0% must be"):
        assert_sharded(tree, 1.0)


# ---------------------------------------------------------------------------- per_line keys


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w))


def train_step(w, x):
    g = jax.grad(loss)(w, x)  # the all-reduce of the gradient is in loss's backward pass
    return w - 0.1 * g


@pytest.fixture(scope="module")
def step():
    w = put(jnp.ones((16, 32)))
    x = put(jnp.ones((16, 16)), "data")
    return shardviz.trace(train_step, w, x)


def test_step_sends_one_all_reduce_on_the_loss_line(step):
    (c,) = step.collectives
    assert c.source.line == line_of(loss, "jnp.tanh(x @ w)") and c.source.function == "loss"
    assert c.total_wire_bytes == ring_all_reduce(4, 16 * 32 * 4)


@pytest.mark.parametrize("key", [1000, f"{HERE}:1000", f"{HERE}:{line_of(train_step, 'return w - 0.1 * g')}"])
def test_a_line_key_on_a_line_without_collectives_is_refused(step, key):
    with pytest.raises(shardviz.ShardingError) as info:
        assert_collectives(step, per_line={key: "1 KiB"})
    message = str(info.value)
    assert message.startswith(f"per_line[{key!r}] names a line with no collective")
    assert f"lines with collectives: {HERE}:{line_of(loss, 'jnp.tanh(x @ w)')}" in message


def test_a_function_key_covers_the_functions_it_calls(step):
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(step, per_line={"train_step": "1 B"})
    message = str(info.value)
    sent = ring_all_reduce(4, 16 * 32 * 4)
    assert f"sends {sent / 1024:.1f} KiB ({sent} B) per call, over its budget 1 B (function train_step)" in message
    # the innermost function named wins
    assert_collectives(step, per_line={"train_step": "1 B", "loss": sent})


def test_a_function_key_with_no_collective_is_refused(step):
    with pytest.raises(shardviz.ShardingError, match=r"per_line\['put'\] names a function in which no collective runs"):
        assert_collectives(step, per_line={"put": 0})


# ---------------------------------------------------------------------------- {U:} and {R:}


def test_unreduced_and_reduced_axes_are_compared():
    x = put(jnp.ones((64, 256)), "data")
    assert str(jax.typeof(x)) == "float32[64@data,256]"
    for mark, name in (("U", "unreduced"), ("R", "reduced")):
        with pytest.raises(LayoutMismatch) as info:
            assert_layout(x, f"float32[64@data,256]{{{mark}:model}}")
        assert f"  {name} axes ({mark}:): expected model, actually none" in str(info.value)
    # a layout whose type says it is unreduced over model matches the same string, and not a plain one
    unreduced = dataclasses.replace(shardviz.describe(x), type_str="float32[64@data,256]{U:model}")
    assert assert_layout(unreduced, "float32[64@data,256]{U:model}") is unreduced
    with pytest.raises(LayoutMismatch, match=r"unreduced axes \(U:\): expected none, actually model"):
        assert_layout(unreduced, "float32[64@data,256]")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("float32[64@data,256]{Q:model}", "the braces hold V:, U: or R: and axes"),
        ("float32[64@data,256]{U:tp}", "names 'tp' among its unreduced axes, which is no axis of the array's mesh"),
    ],
)
def test_bad_marks_are_sharding_errors(text, fragment):
    with pytest.raises(shardviz.ShardingError, match=fragment):
        assert_layout(put(jnp.ones((64, 256)), "data"), text)


# ---------------------------------------------------------------------------- allow is a subset


def reduce_over_both(x):
    return jnp.sum(x)  # x split over data and model: an all-reduce over both


def test_allow_takes_a_collective_only_over_a_subset_of_its_axes():
    prog = shardviz.trace(reduce_over_both, put(jnp.ones((64, 8)), ("data", "model")))
    assert {c.axes for c in prog.collectives} == {("data", "model")}
    with pytest.raises(
        CollectiveBudgetExceeded, match=r"all-reduce over data,model: .*all-reduce is allowed only over data"
    ):
        assert_collectives(prog, allow={"all-reduce": ["data"]})
    assert_collectives(prog, allow={"all-reduce": ["data", "model"]})


# ---------------------------------------------------------------------------- a combined collective in a loop


def two_weight_loss(params, x):
    h = jnp.tanh(x @ params["a"]) + jnp.tanh(x @ params["b"])  # both gradients' all-reduces come from here
    return jnp.sum(h @ params["c"])


def scanned_step(params, x):
    def one(p, _):
        g = jax.grad(two_weight_loss)(p, x)
        return jax.tree.map(lambda v, d: v - 0.1 * d, p, g), None

    return jax.lax.scan(one, params, None, length=3)[0]


@pytest.fixture(scope="module")
def scanned():
    params = {"a": put(jnp.ones((16, 32))), "b": put(jnp.ones((16, 32))), "c": put(jnp.ones((32, 8)))}
    return shardviz.trace(scanned_step, params, put(jnp.ones((16, 16)), "data"))


def test_a_combined_collectives_parts_are_charged_once_per_run(scanned):
    combined = [c for c in scanned.collectives if c.combined]
    assert combined and all(c.count == 3 for c in combined)
    line = line_of(two_weight_loss, "h = jnp.tanh(")
    # the gradients of a and b (16 x 32 float32 each) are reduced over data on that line, three times a call
    by_hand = 3 * 2 * ring_all_reduce(4, 16 * 32 * 4)
    assert_collectives(scanned, per_line={f"{HERE}:{line}": by_hand})
    with pytest.raises(CollectiveBudgetExceeded, match=rf"sends .*\({by_hand} B\) per call, over its budget"):
        assert_collectives(scanned, per_line={f"{HERE}:{line}": by_hand - 1})
    record = collectives_record(scanned, os.path.dirname(__file__))
    (entry,) = [e for e in record["lines"] if e["where"] == f"{HERE}:{line}"]
    (item,) = entry["collectives"]
    # the bytes by hand, and the runs counted per collective, not per operand: one combined op, 3 trips
    assert item == {"kind": "all-reduce", "axes": "data", "bytes": by_hand, "runs": 3}


# ---------------------------------------------------------------------------- budgets and times as written


@pytest.mark.parametrize("text", ["0.5", "1.3 B", "0.1 KiB"])
def test_a_budget_that_is_no_whole_number_of_bytes_is_refused(text):
    with pytest.raises(shardviz.ShardingError, match="not a whole number"):
        parse_bytes(text, "max_wire_bytes")


def test_budgets_in_decimal_units_are_exact():
    assert parse_bytes("1.1 GB", "x") == 1_100_000_000
    assert parse_bytes("0.5 KiB", "x") == 512
