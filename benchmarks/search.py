"""Searching a plan: ``shardviz.search`` over a 256-chip space against tracing every candidate.

The step is notebook 11's transformer block (notebooks/search_block.py) on
256 chips of TPU v5p. ``search`` prices every candidate of its space with the
link model and traces the best three in what-if children. What a user would
do instead is trace every candidate of the space: the figure is that sum,
the space's size times one candidate's what-if trace (the search's best
plan, best of two, measured in this run), against the search's wall time.
Prints a table and one BENCH-JSON line; nothing here asserts a time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import search_block

import shardviz
from shardviz.compare.candidates import Candidate, resolve_arguments

DEVICES, SEQUENCES, TOP_K = 256, 256, 3
# --smoke (make bench-smoke): one candidate traced and timed once, checking that the part runs.
SMOKE = "--smoke" in sys.argv[1:]


def one_trace(rules: str, mesh: jax.sharding.AbstractMesh) -> float:
    """One candidate's what-if trace as a user would run it, best of two."""
    laid = resolve_arguments(Candidate("one", mesh, rules), search_block.arguments(SEQUENCES))
    best = float("inf")
    for _ in range(1 if SMOKE else 2):
        started = time.perf_counter()
        shardviz.trace(search_block.train_step, *laid, mesh=mesh)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    started = time.perf_counter()
    result = shardviz.search(
        search_block.train_step,
        search_block.arguments(SEQUENCES),
        devices=DEVICES,
        hardware="tpu-v5p",
        top_k=1 if SMOKE else TOP_K,
    )
    searched = time.perf_counter() - started
    space = result.search
    mesh = jax.sharding.AbstractMesh(tuple(n for _, n in space.best_mesh), tuple(a for a, _ in space.best_mesh))
    single = one_trace(space.best_rules, mesh)
    every = space.considered * single
    results = {
        "considered": space.considered,
        "pruned": space.pruned,
        "traced": space.traced,
        "workers": result.workers,
        "search_s": searched,
        "traces_s": result.seconds,
        "one_trace_s": single,
        "every_candidate_s": every,
        "search_over_every": searched / every,
        "jax": jax.__version__,
        "exit_code": 0,
    }
    print("BENCH-JSON " + json.dumps(results))
    print("| run | seconds |")
    print("|---|---|")
    print(f"| search: {space.considered} candidates considered, {space.traced} traced ({result.workers} at once) "
          f"| {searched:.2f} |")  # fmt: skip
    print(f"| of which the traces | {result.seconds:.2f} |")
    print(f"| one candidate's what-if trace, 256 devices (best of two) | {single:.2f} |")
    print(f"| tracing every candidate: {space.considered} x one trace | {every:.2f} |")
    print(f"| search over that | {searched / every:.3f}x |")


if __name__ == "__main__":
    main()
