"""Budgets in tests: how long a failing ``shardviz.testing`` assertion takes to say why, after the trace.

    python benchmarks/testing_side.py [--quick]

On 8 simulated CPU devices (a 2x4 mesh, data x model, Explicit axes), the
value and gradient of a 24-layer scanned MLP (as ``program_side.py``) is
traced once; then each failing assertion is timed from the call to the
finished message (``str`` of the AssertionError), median and worst of the
samples:

- ``assert_collectives`` with every budget broken at once (no kind allowed,
  ``max_wire_bytes=0``, ``per_line=0``): the issue's target, < 50 ms;
- ``assert_layout`` of an argument against another split (two pictures);
- ``assert_fits`` of the program under a budget of 1 byte;
- a collectives snapshot compared with one recorded from a smaller model.

Prints a markdown table and one ``BENCH-JSON {...}`` line, then leaves with
``os._exit(0)``. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEVICES = 8
LAYERS, WIDTH, HIDDEN, BATCH = 24, 256, 1024, 64

os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz  # noqa: E402
from shardviz.testing import (  # noqa: E402
    assert_collectives,
    assert_collectives_snapshot,
    assert_fits,
    assert_layout,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument(
        "--smoke", action="store_true", help="one sample of each, small sizes: checks that it runs (make bench-smoke)"
    )
    return parser.parse_args()


def step(params, x):
    def layer(h, p):
        w_in, w_out = p
        return h + jnp.dot(jnp.tanh(h @ w_in), w_out, out_sharding=P("data", None)), None

    def loss(params, x):
        return (jax.lax.scan(layer, x, params)[0] ** 2).mean()

    return jax.value_and_grad(loss)(params, x)


def unrolled_step(params, x):
    """The same model with the layers as a Python loop: a collective per layer, each on its own line."""

    def loss(params, x):
        h = x
        for w_in, w_out in zip(params[0], params[1]):
            h = h + jnp.dot(jnp.tanh(h @ w_in), w_out, out_sharding=P("data", None))
        return (h**2).mean()

    return jax.value_and_grad(loss)(params, x)


def arguments(mesh: jax.sharding.Mesh, layers: int = LAYERS) -> tuple[Any, ...]:
    w_in = jax.device_put(jnp.ones((layers, WIDTH, HIDDEN)), NamedSharding(mesh, P(None, None, "model")))
    w_out = jax.device_put(jnp.ones((layers, HIDDEN, WIDTH)), NamedSharding(mesh, P(None, "model", None)))
    x = jax.device_put(jnp.ones((BATCH, WIDTH)), NamedSharding(mesh, P("data", None)))
    return (w_in, w_out), x


def message_ms(check: Callable[[], Any]) -> tuple[float, str]:
    """Milliseconds from the call to the finished message of the AssertionError it must raise."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        try:
            check()
        except AssertionError as err:
            message = str(err)
            return (time.perf_counter() - started) * 1e3, message
        raise RuntimeError("the assertion passed; the benchmark needs it to fail")
    finally:
        gc.enable()


def measure(name: str, check: Callable[[], Any], samples: int) -> dict[str, Any]:
    first_ms, _ = message_ms(check)  # the first call after the trace also reads the source lines
    times, message = [], ""
    for _ in range(samples):
        ms, message = message_ms(check)
        times.append(ms)
    return {
        "check": name,
        "first_ms": first_ms,
        "median_ms": statistics.median(times),
        "max_ms": max(times),
        "samples": samples,
        "message_lines": len(message.splitlines()),
        "message_chars": len(message),
    }


def main() -> None:
    args = parse_args()
    samples = 1 if args.smoke else 5 if args.quick else 40
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Explicit))
    with jax.set_mesh(mesh):
        started = time.perf_counter()
        prog = shardviz.trace(step, *arguments(mesh))
        trace_ms = (time.perf_counter() - started) * 1e3
        smaller = shardviz.trace(step, *arguments(mesh, layers=2))
        unrolled = shardviz.trace(unrolled_step, *arguments(mesh))
    (w_in, _), _ = arguments(mesh)
    with tempfile.TemporaryDirectory() as folder:
        snapshot = Path(folder) / "snapshot.json"
        assert_collectives_snapshot(smaller, snapshot, "step", update=True)
        rows = [
            measure(
                "assert_collectives, every budget broken",
                lambda: assert_collectives(prog, allow={}, max_wire_bytes=0, per_line=0),
                samples,
            ),
            measure(
                f"assert_collectives, every budget broken, {LAYERS} layers unrolled",
                lambda: assert_collectives(unrolled, allow={}, max_wire_bytes=0, per_line=0),
                samples,
            ),
            measure("assert_layout, another split", lambda: assert_layout(w_in, P(None, "model", None)), samples),
            measure("assert_fits, the program over 1 B", lambda: assert_fits(prog, 1), samples),
            measure(
                "snapshot compare, the collectives grew",
                lambda: assert_collectives_snapshot(prog, snapshot, "step"),
                samples,
            ),
        ]
    result = {
        "devices": DEVICES,
        "layers": LAYERS,
        "trace_ms": trace_ms,
        "collectives": len(prog.collectives),
        "collective_runs": prog.totals.runs,
        "rows": rows,
        "unrolled_collectives": len(unrolled.collectives),
        # the target: the worst of the first calls and of every sample, over both programs
        "collectives_message_ms": max(max(r["first_ms"], r["max_ms"]) for r in rows[:2]),
        "jax": jax.__version__,
    }
    print(f"{LAYERS}-layer scanned MLP and its gradient on {DEVICES} devices: traced once in {trace_ms:.0f} ms, ")
    print(f"{len(prog.collectives)} collectives ({prog.totals.runs} runs per call); unrolled, ")
    print(f"{len(unrolled.collectives)} collectives\n")
    print("| failing check | first call (ms) | median (ms) | worst (ms) | message lines |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['check']} | {row['first_ms']:.2f} | {row['median_ms']:.2f} | {row['max_ms']:.2f} "
            f"| {row['message_lines']} |"
        )
    print("BENCH-JSON " + json.dumps(result))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
