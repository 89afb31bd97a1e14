"""The program view's Python side: what ``shardviz.trace`` costs over a bare compile.

    python benchmarks/program_side.py [--quick]

On 8 simulated CPU devices (a 2x4 mesh, data x model), a stack of 24 MLP
layers written as one ``lax.scan`` and its gradient (``jax.value_and_grad``):

- ``shardviz.trace(f, *args)`` against a bare ``jax.jit(f).lower(*args).compile()``,
  each sample with a freshly built ``f`` (new closures, so JAX's tracing and
  lowering caches cannot answer; the persistent compilation cache is off),
  bare and traced samples interleaved; medians and the ratio of medians.
  Under Auto axes the trace also dumps XLA's module before partitioning
  during its one compile; under Explicit axes it does not need to.
- issue 41's small program, a 24-layer unrolled ``h = tanh(h @ W[i]) + seed``
  on ``h [64, 256]`` and 24 ``[256, 256]`` weights: it compiles quickly, so
  the trace's fixed part (trace minus bare compile, in ms) shows in its ratio;
- the payload (``Program.to_json()`` as compact JSON): bytes raw and gzipped,
  and the time to build it; the terminal report's time.

Prints a markdown table and one ``BENCH-JSON {...}`` line, then leaves with
``os._exit(0)``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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

jax.config.update("jax_enable_compilation_cache", False)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument(
        "--smoke", action="store_true", help="one sample of each, small sizes: checks that it runs (make bench-smoke)"
    )
    return parser.parse_args()


def make_step(explicit: bool) -> Callable[..., Any]:
    """A fresh value-and-gradient of a 24-layer scanned MLP (new closures every call)."""
    # Explicit axes ask where a product over a split dimension lands; Auto axes let XLA decide.
    out_sharding = P("data", None) if explicit else None

    def stack(params, x):
        def layer(h, p):
            w_in, w_out = p
            return h + jnp.dot(jnp.tanh(h @ w_in), w_out, out_sharding=out_sharding), None

        return jax.lax.scan(layer, x, params)[0]

    def loss(params, x):
        return (stack(params, x) ** 2).mean()

    return jax.value_and_grad(loss)


def arguments(mesh: jax.sharding.Mesh) -> tuple[Any, ...]:
    w_in = jax.device_put(jnp.ones((LAYERS, WIDTH, HIDDEN)), NamedSharding(mesh, P(None, None, "model")))
    w_out = jax.device_put(jnp.ones((LAYERS, HIDDEN, WIDTH)), NamedSharding(mesh, P(None, "model", None)))
    x = jax.device_put(jnp.ones((BATCH, WIDTH)), NamedSharding(mesh, P("data", None)))
    return (w_in, w_out), x


def seconds(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def measure(axis_type: AxisType, samples: int) -> dict[str, Any]:
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type, axis_type))
    args = arguments(mesh)
    explicit = axis_type == AxisType.Explicit

    def make() -> Callable[..., Any]:
        return make_step(explicit)

    context = jax.set_mesh(mesh)
    with context:
        # One of each first: the process's first compile pays for warming XLA itself.
        jax.jit(make()).lower(*args).compile()
        shardviz.trace(make(), *args)
        bare, traced = [], []
        for _ in range(samples):
            bare.append(seconds(lambda: jax.jit(make()).lower(*args).compile()))
            traced.append(seconds(lambda: shardviz.trace(make(), *args)))
        prog = shardviz.trace(make(), *args)
    text = json.dumps(prog.to_json(), separators=(",", ":"))
    payload_ms = statistics.median(
        seconds(lambda: json.dumps(prog.to_json(), separators=(",", ":"))) * 1e3 for _ in range(samples)
    )
    report_ms = statistics.median(seconds(lambda: prog.render(width=80, color=False)) * 1e3 for _ in range(samples))
    bare_ms, trace_ms = statistics.median(bare) * 1e3, statistics.median(traced) * 1e3
    return {
        "axis_type": axis_type.name,
        "samples": samples,
        "bare_compile_ms": bare_ms,
        "trace_ms": trace_ms,
        "ratio": trace_ms / bare_ms,
        "bare_samples_ms": [round(s * 1e3, 2) for s in bare],
        "trace_samples_ms": [round(s * 1e3, 2) for s in traced],
        "payload_bytes": len(text.encode()),
        "payload_gzip_bytes": len(gzip.compress(text.encode(), compresslevel=9, mtime=0)),
        "payload_ms": payload_ms,
        "report_ms": report_ms,
        "values": len(prog.values),
        "values_with_layout": sum(1 for v in prog.values if v.layout is not None),
        "collectives": len(prog.collectives),
        "collective_runs": prog.totals.runs,
        "wire_bytes_per_call": prog.totals.wire_bytes,
    }


def unrolled_forward() -> Callable[..., Any]:
    """A fresh 24-layer forward pass written as a Python loop (unrolled while tracing: a few hundred values)."""

    def forward(params, x):
        w_in, w_out = params
        for k in range(LAYERS):
            h = jnp.tanh(x @ w_in[k])
            x = x + h @ w_out[k]
        return (x**2).mean()

    return forward


def unrolled_step() -> Callable[..., Any]:
    """A fresh 24-layer training step (gradient and SGD update) of that unrolled forward pass."""
    forward = unrolled_forward()

    def step(params, x):
        loss, grads = jax.value_and_grad(forward)(params, x)
        return loss, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    return step


def measure_unrolled(samples: int) -> dict[str, Any]:
    """The unrolled forward pass and its training step against a bare compile, and the step's payload."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    args = arguments(mesh)
    times: dict[str, list[float]] = {"bare": [], "traced": [], "step_bare": [], "step_traced": []}
    for make in (unrolled_forward, unrolled_step):  # warm: JAX's own first-use costs
        jax.jit(make()).lower(*args).compile()
        shardviz.trace(make(), *args)
    for _ in range(samples):
        times["bare"].append(seconds(lambda: jax.jit(unrolled_forward()).lower(*args).compile()))
        times["traced"].append(seconds(lambda: shardviz.trace(unrolled_forward(), *args)))
        times["step_bare"].append(seconds(lambda: jax.jit(unrolled_step()).lower(*args).compile()))
        times["step_traced"].append(seconds(lambda: shardviz.trace(unrolled_step(), *args)))
    prog = shardviz.trace(unrolled_forward(), *args)
    step = shardviz.trace(unrolled_step(), *args)
    text = json.dumps(step.to_json(), separators=(",", ":")).encode()
    median_ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return {
        "bare_compile_ms": median_ms["bare"],
        "trace_ms": median_ms["traced"],
        "ratio": median_ms["traced"] / median_ms["bare"],
        "step_bare_compile_ms": median_ms["step_bare"],
        "step_trace_ms": median_ms["step_traced"],
        "step_ratio": median_ms["step_traced"] / median_ms["step_bare"],
        "values": len(prog.values),
        "collectives": len(prog.collectives),
        "step_values": len(step.values),
        "step_payload_bytes": len(text),
        "step_payload_gzip_bytes": len(gzip.compress(text, compresslevel=9, mtime=0)),
    }


SMALL_WIDTH, SMALL_BATCH = 256, 64


def small_forward() -> Callable[..., Any]:
    """A fresh 24-layer forward pass, ``h = tanh(h @ W[i]) + seed``, one weight per layer (issue 41)."""

    def forward(weights, h, seed):
        for w in weights:
            h = jnp.tanh(h @ w) + seed
        return h

    return forward


def measure_small(samples: int) -> dict[str, Any]:
    """The small unrolled program against a bare compile: it compiles quickly, so trace's fixed part shows."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    weights = [
        jax.device_put(jnp.full((SMALL_WIDTH, SMALL_WIDTH), 0.01), NamedSharding(mesh, P(None, "model")))
        for _ in range(LAYERS)
    ]
    h = jax.device_put(jnp.ones((SMALL_BATCH, SMALL_WIDTH)), NamedSharding(mesh, P("data", None)))
    args = (weights, h, jnp.float32(0.5))
    jax.jit(small_forward()).lower(*args).compile()
    shardviz.trace(small_forward(), *args)
    bare, traced = [], []
    for _ in range(samples):
        bare.append(seconds(lambda: jax.jit(small_forward()).lower(*args).compile()))
        traced.append(seconds(lambda: shardviz.trace(small_forward(), *args)))
    bare_ms, trace_ms = statistics.median(bare) * 1e3, statistics.median(traced) * 1e3
    return {
        "bare_compile_ms": bare_ms,
        "trace_ms": trace_ms,
        "fixed_ms": trace_ms - bare_ms,
        "ratio": trace_ms / bare_ms,
        "values": len(shardviz.trace(small_forward(), *args).values),
    }


def measure_dumps(samples: int) -> dict[str, Any]:
    """What XLA's dumps cost the one compile: buffer assignment and live ranges into a private
    folder in /dev/shm (what trace does where it can) and on the disk-backed temporary folder."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    args = arguments(mesh)
    lowered = jax.jit(make_step(False)).lower(*args)
    lowered.compile()

    def dumped(parent: str | None) -> float:
        with tempfile.TemporaryDirectory(dir=parent) as folder:
            options = {"xla_dump_to": folder, "xla_dump_hlo_pass_re": "^$"}
            return seconds(lambda: jax.jit(make_step(False)).lower(*args).compile(compiler_options=options))

    rows: dict[str, list[float]] = {"bare": [], "shm": [], "tmp": []}
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    for _ in range(samples):
        rows["bare"].append(seconds(lambda: jax.jit(make_step(False)).lower(*args).compile()))
        if shm:
            rows["shm"].append(dumped(shm))
        rows["tmp"].append(dumped(None))
    out = {k: statistics.median(v) * 1e3 for k, v in rows.items() if v}
    return {"ms": out, "shm": shm is not None}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| axes | bare compile (ms) | shardviz.trace (ms) | ratio | payload (gzip) | to_json (ms) "
        "| report (ms) | values (with layout) | collectives (runs) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['axis_type']} | {r['bare_compile_ms']:.0f} | {r['trace_ms']:.0f} | {r['ratio']:.2f}x "
            f"| {r['payload_bytes'] / 1024:.1f} KiB ({r['payload_gzip_bytes'] / 1024:.1f} KiB) "
            f"| {r['payload_ms']:.2f} | {r['report_ms']:.2f} | {r['values']} ({r['values_with_layout']}) "
            f"| {r['collectives']} ({r['collective_runs']}) |"
        )
    return "\n".join(lines)


def main() -> dict[str, Any]:
    args = parse_args()
    assert jax.device_count() == DEVICES, jax.device_count()
    samples = 1 if args.smoke else 3 if args.quick else 9
    started = time.perf_counter()
    rows = [measure(AxisType.Auto, samples), measure(AxisType.Explicit, samples)]
    unrolled = measure_unrolled(samples)
    small = measure_small(samples)
    dumps = measure_dumps(samples)
    print(
        f"{LAYERS}-layer scanned MLP ({WIDTH}x{HIDDEN}, batch {BATCH}) and its gradient, "
        f"{DEVICES} simulated CPU devices, medians of {samples}\n"
    )
    print(table(rows))
    print(
        f"\n{LAYERS}-layer unrolled forward pass (Auto axes, {unrolled['values']} values): bare compile "
        f"{unrolled['bare_compile_ms']:.0f} ms, shardviz.trace {unrolled['trace_ms']:.0f} ms, "
        f"{unrolled['ratio']:.2f}x; its training step ({unrolled['step_values']} values): bare compile "
        f"{unrolled['step_bare_compile_ms']:.0f} ms, shardviz.trace {unrolled['step_trace_ms']:.0f} ms, "
        f"{unrolled['step_ratio']:.2f}x; the step's payload {unrolled['step_payload_bytes'] / 1024:.1f} KiB "
        f"({unrolled['step_payload_gzip_bytes'] / 1024:.1f} KiB gzip, {unrolled['step_values']} values)"
    )
    print(
        f"\n{LAYERS}-layer small forward pass (h [{SMALL_BATCH}, {SMALL_WIDTH}], {LAYERS} weights "
        f"[{SMALL_WIDTH}, {SMALL_WIDTH}], {small['values']} values): bare compile "
        f"{small['bare_compile_ms']:.0f} ms, shardviz.trace "
        f"{small['trace_ms']:.0f} ms, {small['ratio']:.2f}x; trace's fixed part {small['fixed_ms']:.0f} ms"
    )
    print(
        "\nXLA's dumps (buffer assignment, live ranges) in one compile of the scanned step: "
        + ", ".join(f"{k} {v:.0f} ms" for k, v in dumps["ms"].items())
    )
    return {
        "devices": DEVICES,
        "jax": jax.__version__,
        "program": {"layers": LAYERS, "width": WIDTH, "hidden": HIDDEN, "batch": BATCH},
        "rows": rows,
        "unrolled": unrolled,
        "small": small,
        "dumps": dumps,
        "total_s": time.perf_counter() - started,
    }


if __name__ == "__main__":
    try:
        result = main()
        print("BENCH-JSON " + json.dumps(result), flush=True)
        code = 0
    except BaseException as err:  # report, then leave without tearing JAX down
        import traceback

        traceback.print_exc()
        print("BENCH-JSON " + json.dumps({"devices": DEVICES, "error": f"{type(err).__name__}: {err}"}), flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
