"""A user's CI budgets for the transformer step planned in notebook 09 (notebooks/pod_step.py).

What a team would assert before renting a pod, on what-if meshes larger
than this machine: which collectives the step may run over which axes, its
estimated time on the hardware it is meant for (budgets set from the
estimates of notebook 09, with a margin), and its traffic per source line
against a snapshot recorded with ``pytest --shardviz-update``. The step's
bytes and lines come from the module XLA compiles for each mesh.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jax.sharding import AbstractMesh, AxisType

import shardviz
from shardviz.testing import StepTimeExceeded, assert_collectives, assert_step_time

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import pod_step  # the notebook's own module

GLOBAL_BATCH = 512  # sequences per step on 256 chips


def _trace(data, model, batch=GLOBAL_BATCH):
    mesh = AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    return shardviz.trace(pod_step.train_step, *pod_step.arguments(mesh, batch), mesh=mesh)


@pytest.fixture(scope="module")
def node_sized_tp():
    return _trace(32, 8)  # tensor parallelism over the 8 GPUs of an H100 node


@pytest.fixture(scope="module")
def pod_wide_tp():
    return _trace(16, 16)  # tensor parallelism over 16: every group spans exactly two nodes


def test_the_step_gathers_weights_over_data_and_reduces_activations_over_model(node_sized_tp):
    assert_collectives(node_sized_tp, allow={"all-gather": ["data"], "all-reduce": ["data", "model"]})


def test_on_256_h100s_tensor_parallelism_inside_a_node_takes_under_45_ms(node_sized_tp):
    est = assert_step_time(node_sized_tp, "h100", "45 ms")
    assert {c.link for c in est.collectives if c.axes == ("model",)} == {"NVLink"}


def test_tensor_parallelism_over_two_nodes_breaks_the_budget_bound_by_nvlink(pod_wide_tp):
    with pytest.raises(StepTimeExceeded, match="model on NVLink\\+InfiniBand"):
        assert_step_time(pod_wide_tp, "h100", "45 ms")
    # an all-reduce over exactly two nodes runs both levels at once; NVLink is the slower (gpus.md)
    est = pod_wide_tp.estimate("h100")
    for c in (c for c in est.collectives if c.axes == ("model",)):
        inside, across = c.parts
        assert (inside.link, across.link) == ("NVLink", "InfiniBand") and c.combined_by == "max"
        assert c.seconds == inside.seconds > across.seconds


def test_pure_fsdp_over_256_h100s_takes_under_20_ms():
    est = assert_step_time(_trace(256, 1), "h100", "20 ms")
    assert not any(c.axes == ("model",) for c in est.collectives)


def test_the_steps_traffic_per_line_matches_its_snapshot(node_sized_tp, shardviz_snapshot):
    shardviz_snapshot(node_sized_tp)


def test_on_4096_v5p_chips_one_slice_keeps_the_step_under_200_ms():
    program = _trace(256, 16, batch=16 * GLOBAL_BATCH)
    assert program.whatif.devices == 4096
    est = assert_step_time(program, "tpu-v5p", "200 ms", bound="network")
    assert est.slices == 1 and est.topology == (16, 16, 16)  # within Google's largest v5p slice, 6,144 chips
    assert {c.link for c in est.collectives} == {"ICI"}
    on_v5e = program.estimate("tpu-v5e")  # sixteen v5e pods of 256: data crosses DCN between them
    assert on_v5e.slices == 16 and on_v5e.step_s > est.step_s
    assert "ICI+DCN" in {c.link for c in on_v5e.collectives if c.axes == ("data",)}
