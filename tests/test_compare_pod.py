"""Notebook 10's ranking of notebook 9's transformer step on 256 H100s, checked by hand with the
scaling book's formulas (gpus.md): pure FSDP against FSDP over 32 with tensor parallelism over 8.

A collective over ``k`` GPUs in each of ``M`` nodes takes its slower level:
``V (k - 1) / k / 450e9`` over NVLink inside a node, ``V / k x (M - 1) / M /
50e9`` over each GPU's InfiniBand NIC between nodes; an all-reduce twice an
all-gather. The bytes come from the model's shapes (pod_step.py), never from
shardviz's own formulas.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jax.sharding import AbstractMesh, AxisType

import shardviz

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import pod_step  # notebook 9's and 10's own module

NVLINK, IB, BF16, BATCH = 450e9, 50e9, 2, 512


def gather(v: float, k: int, m: int) -> float:
    return max(v * (k - 1) / k / NVLINK, v / k * (m - 1) / m / IB)


def candidate(data: int, model: int) -> shardviz.Candidate:
    mesh = AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    return shardviz.Candidate(f"{data}x{model}", mesh, lambda m: pod_step.arguments(m, BATCH))


@pytest.mark.timeout(600)
def test_pure_fsdp_beats_fsdp_with_tensor_parallelism_on_256_h100s_as_by_hand():
    result = shardviz.compare(pod_step.train_step, [candidate(256, 1), candidate(32, 8)], hardware="h100")
    v, d, f, layers, t = pod_step.VOCAB, pod_step.D, pod_step.FFN, pod_step.LAYERS, pod_step.SEQ
    weights = (v * d + layers * (4 * d * d + 2 * d * f)) * BF16
    # over data: gather the weights, all-reduce their gradients (XLA:CPU's module all-reduces them)
    fsdp = gather(weights, 8, 32) + 2 * gather(weights, 8, 32)
    # FSDP over 32 (one GPU per node) on an eighth of the weights; per layer six all-reduces over model
    # (8 GPUs, one node) of each GPU's [16, 1024, 2048] bf16 activations: wo and w_out forward, the
    # gradients through wq, wk, wv and w_in backward
    tp = gather(weights / 8, 1, 32) + 2 * gather(weights / 8, 1, 32)
    tp += layers * 6 * 2 * gather(BATCH // 32 * t * d * BF16, 8, 1)
    rows = {r.candidate: r for r in result.rows}
    print({name: (rows[name].network_s, hand) for name, hand in (("256x1", fsdp), ("32x8", tp))})
    assert [r.candidate for r in result.rows] == ["256x1", "32x8"]
    assert fsdp < tp
    assert rows["256x1"].network_s == pytest.approx(fsdp, rel=0.10)
    assert rows["32x8"].network_s == pytest.approx(tp, rel=0.10)
