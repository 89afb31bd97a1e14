"""The MLP's layout, traffic, memory and time, as a team checks them in CI."""

import jax
import mlp
import pytest

import shardviz
from shardviz.testing import (
    assert_collectives,
    assert_fits,
    assert_sharded,
    assert_step_time,
    assert_tree_layout,
)

pytestmark = pytest.mark.shardviz_mesh((4, 2), ("fsdp", "tp"))


@pytest.fixture
def params(shardviz_mesh):
    return mlp.init(jax.random.key(0), shardviz_mesh)


@pytest.fixture
def step(params, shardviz_mesh):
    return shardviz.trace(mlp.train_step, params, *mlp.batch(shardviz_mesh))


def test_parameters_are_laid_out_by_the_rules(params):
    assert_tree_layout(params, mlp.RULES)


def test_parameters_are_sharded(params):
    assert_sharded(params, min_fraction=0.9)


def test_the_step_gathers_over_fsdp_and_reduces_over_both(step):
    assert_collectives(
        step,
        allow={"all-gather": ["fsdp"], "all-reduce": ["fsdp", "tp"], "reduce-scatter": ["fsdp"]},
        per_line={"mlp_block": "2 MiB"},
    )


def test_the_step_matches_its_snapshot(step, shardviz_snapshot):
    shardviz_snapshot(step)


@pytest.mark.parametrize("layers", [1, 3])
def test_deeper_models_match_their_snapshots(layers, shardviz_mesh, shardviz_snapshot):
    params = mlp.init(jax.random.key(0), shardviz_mesh, layers)
    shardviz_snapshot(shardviz.trace(mlp.train_step, params, *mlp.batch(shardviz_mesh)))


def test_the_step_fits_in_64_mib_per_device(step):
    assert_fits(step, "64 MiB")


def test_the_step_takes_under_a_millisecond_on_h100s(step):
    assert_step_time(step, "h100", "1 ms")
