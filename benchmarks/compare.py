"""Comparing plans: sixteen candidates at 256 devices against one candidate's what-if trace, same run.

``shardviz.compare`` traces each candidate in its own what-if child, as many
at once as the machine has cores (and memory). What a user would do
instead is trace the candidates one after another; with ``w`` children at
once the best the comparison can do is ``16 / w`` of that. So the figure is
the comparison's wall time over ``(16 / w) x`` one candidate's what-if trace
(``shardviz.trace(..., mesh=...)``, best of two, measured in this run),
target <= 1.25x. The step is the 24-layer scanned MLP of
``benchmarks/plan_side.py`` on Auto axes; the candidates are eight mesh
shapes of 256 devices, each with the weights split over ``model`` alone or
also over ``data``. Then the comparison payload's size (two hardware, so 32
rows), target < 300 KB. Prints a table and one BENCH-JSON line; nothing
here asserts a time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import shardviz
from plan_functions import scanned_model

LAYERS, WIDTH, DEVICES = 24, 512, 256
SHAPES = ((256, 1), (128, 2), (64, 4), (32, 8), (16, 16), (8, 32), (4, 64), (2, 128))
SPLITS = {"tp": P(None, None, "model"), "fsdp+tp": P(None, "data", "model")}


def mesh(data: int, model: int) -> AbstractMesh:
    return AbstractMesh((data, model), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def arguments() -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct]:
    return (
        jax.ShapeDtypeStruct((LAYERS, WIDTH, WIDTH), jnp.float32),
        jax.ShapeDtypeStruct((DEVICES, WIDTH), jnp.float32),
    )


def candidates() -> list[shardviz.Candidate]:
    return [
        shardviz.Candidate(f"{name} {d}x{m}", mesh(d, m), (spec, P("data", None)))
        for d, m in SHAPES
        for name, spec in SPLITS.items()
    ]


def one_trace() -> float:
    """One candidate's what-if trace as a user would run it, best of two."""
    first = candidates()[6]  # fsdp+tp 32x8
    params, x = arguments()
    laid = (
        jax.ShapeDtypeStruct(params.shape, params.dtype, sharding=first.shardings[0]),
        jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=first.shardings[1]),
    )
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        shardviz.trace(scanned_model, *laid, mesh=first.mesh)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    # --smoke (make bench-smoke): four candidates, checking that it runs; --quick is taken and ignored.
    chosen = candidates()[:4] if "--smoke" in sys.argv[1:] else candidates()
    single = one_trace()
    started = time.perf_counter()
    comparison = shardviz.compare(scanned_model, chosen, args=arguments(), hardware=("tpu-v5p", "h100"))
    together = time.perf_counter() - started
    workers = comparison.workers
    ideal = len(chosen) / workers * single
    payload = len(json.dumps(comparison.to_json()).encode())
    results = {
        "candidates": len(comparison.candidates),
        "rows": len(comparison.rows),
        "failures": len(comparison.failures),
        "workers": workers,
        "one_trace_s": single,
        "compare_s": together,
        "compare_over_ideal": together / ideal,
        "payload_bytes": payload,
        "jax": jax.__version__,
        "exit_code": 0,
    }
    print("BENCH-JSON " + json.dumps(results))
    print("| run | seconds |")
    print("|---|---|")
    print(f"| one candidate's what-if trace, 256 devices (best of two) | {single:.2f} |")
    print(f"| compare: {len(chosen)} candidates, {workers} children at once | {together:.2f} |")
    print(f"| ({len(chosen)} / {workers}) x one trace | {ideal:.2f} |")
    print(f"| compare over that | {together / ideal:.2f}x |")
    print(
        f"\nPayload of {len(chosen)} candidates on two hardware ({len(comparison.rows)} rows): {payload / 1000:.1f} KB"
    )


if __name__ == "__main__":
    main()
