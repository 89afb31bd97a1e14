"""assert_step_time: estimated step time on named hardware against a budget, both ways."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from plan_functions import matmul_sum
from shardviz import ShardingError
from shardviz.testing import StepTimeExceeded, assert_step_time


@pytest.fixture(scope="module")
def prog():
    mesh = AbstractMesh((16, 16), ("data", "model"))
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.float32, sharding=NamedSharding(mesh, P(None, "data")))
    w = jax.ShapeDtypeStruct((4096, 4096), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
    return shardviz.trace(matmul_sum, x, w, mesh=mesh)


def test_a_step_within_its_budget_returns_the_estimate(prog):
    est = prog.estimate("tpu-v5p")
    assert assert_step_time(prog, "tpu-v5p", est.step_s * 1.01) == est
    assert assert_step_time(prog, "tpu-v5p", f"{est.step_s * 1e3 * 1.01} ms", bound=est.bound).step_s == est.step_s


def test_a_step_over_its_budget_names_the_slowest_collectives_on_their_lines(prog):
    est = prog.estimate("tpu-v5e")
    (reduce,) = [c for c in prog.collectives if c.kind == "all-reduce"]
    with pytest.raises(StepTimeExceeded) as failed:
        assert_step_time(prog, "tpu-v5e", est.step_s / 2)
    message = str(failed.value)
    assert "over the budget" in message and "tpu-v5e" in message
    assert f"all-reduce over {','.join(reduce.axes)} on ICI at plan_functions.py:{reduce.source.line}" in message
    assert failed.value.subject is prog
    other = "compute" if est.bound != "compute" else "network"
    with pytest.raises(StepTimeExceeded, match=f"{est.bound}-bound, not {other}-bound"):
        assert_step_time(prog, "tpu-v5e", "1 s", bound=other)


def test_bad_budgets_are_refused(prog):
    with pytest.raises(ShardingError, match="not a time"):
        assert_step_time(prog, "tpu-v5e", "fast")
    with pytest.raises(ShardingError, match="positive number of seconds"):
        assert_step_time(prog, "tpu-v5e", -1)
    with pytest.raises(ShardingError, match="bound must be one of"):
        assert_step_time(prog, "tpu-v5e", 1.0, bound="disk")
    with pytest.raises(ShardingError, match="unknown hardware"):
        assert_step_time(prog, "tpu-v9", 1.0)
    with pytest.raises(ShardingError, match=r"traced with shardviz\.trace"):
        assert_step_time(object(), "tpu-v5e", 1.0)
