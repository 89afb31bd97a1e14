"""The Python half of `make bench`, for one simulated device count.

    python benchmarks/python_side.py N [--payload-dir DIR] [--quick]

Starts JAX with N CPU devices, then measures, on one real 2-D float32 array:

- shardviz: ``describe(x)`` plus the payload serialised to compact JSON, warm
  (a fresh array every repeat, the per-mesh device cache filled) and cold (the
  first call in the process, and every repeat with shardviz's caches
  cleared); the same split into describe alone and payload alone;
- ``jax.debug.visualize_array_sharding(x)``, its rich table captured to a
  string (what a terminal user gets here: no colour without matplotlib);
- shardviz's own terminal picture, ``render_text(x, width=80, color=False)``
  (the width rich gives that table), like for like with the line above;
- treescope: ``render_array_sharding(x)`` rendered to HTML with
  ``render_to_html(figure, compressed=True)`` (treescope's default), and its
  bytes raw and gzipped, against the payload's;
- payload bytes for a mesh with shuffled devices (the worst case for the run
  encoding) and for arrays of growing size on the same sharding;
- the kernel's share of an edit: ``ShardingWidget.set_state({'spec_text'})``
  (parse, ``jax.device_put``, describe, payload) on the same array;
- with ``--whatif`` (the 8-device process does it): what-if layouts on an
  ``AbstractMesh`` of 4096 (16x16x16) and 8960 (16x20x28, a TPU v5p pod)
  devices;
- the process's peak RSS after JAX started, one array was made and described
  (before the pool of fresh arrays the timings use), and at the end.

Prints one line, ``BENCH-JSON {...}``, then leaves with ``os._exit(0)``:
tearing 4096 simulated devices down takes seconds and measures nothing.
With ``--payload-dir`` it also writes the payloads the browser half draws.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import io
import json
import math
import os
import pathlib
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

# Which mesh and which specs each device count gets. The array is square and
# its side divisible by every split below, so every spec variant fits it.
MESHES: dict[int, tuple[tuple[int, ...], tuple[str, ...]]] = {
    8: ((2, 4), ("x", "y")),
    64: ((8, 8), ("x", "y")),
    512: ((8, 8, 8), ("a", "b", "c")),
    4096: ((16, 16, 16), ("a", "b", "c")),
}
SPECS_2 = ["x, y", "y, x", "None, (x, y)", "x, None"]
SPECS_3 = ["a, (b, c)", "(a, b), c", "b, (a, c)", "c, None"]
SIDE = 1024  # the array is float32[1024, 1024] (4 MiB) at every device count
WHATIF = {
    4096: ((16, 16, 16), ("a", "b", "c"), "a, (b, c)", (4096, 4096)),
    8960: ((16, 20, 28), ("x", "y", "z"), "x, (y, z)", (4096, 560 * 8)),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("devices", type=int, choices=sorted(MESHES))
    parser.add_argument("--payload-dir", type=pathlib.Path, default=None)
    parser.add_argument("--whatif", action="store_true", help="also time AbstractMesh what-if layouts")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    return parser.parse_args()


ARGS = parse_args()
N = ARGS.devices
# Before JAX starts: N simulated CPU devices, nothing else.
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={N}"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec  # noqa: E402

import shardviz  # noqa: E402
import shardviz.array.devices as sv_devices  # noqa: E402
from shardviz.array.grammar import parse_spec  # noqa: E402

REPEATS = 5 if ARGS.quick else 31  # cheap measurements (shardviz)
SLOW_REPEATS = 3 if ARGS.quick else 11  # the comparators, up to ~0.3 s each at 4096 devices


def spec_of(text: str) -> PartitionSpec:
    """A PartitionSpec from the editor's text (the widget's own grammar)."""
    entries = parse_spec(text)
    return PartitionSpec(*(e if e is None or len(e) != 1 else e[0] for e in entries))


def clear_shardviz_caches() -> None:
    """Forget the per-mesh device columns, as a first call on a new mesh would find them."""
    for name in ("mesh_columns", "device_columns", "virtual_columns", "platform_memory_kinds", "local_memory_kinds"):
        getattr(sv_devices, name).cache_clear()


def timed(fn: Callable[..., Any], repeats: int, before: Callable[[int], Any] | None = None) -> dict[str, Any]:
    """Median and spread of `fn` in milliseconds.

    `before(i)`, untimed, makes the argument of the i-th call. As in timeit,
    the garbage collector is off while a call runs; no gc.collect() runs in
    between: JAX hooks a callback on it that frees device buffers and leaves
    the next call a few milliseconds slower than any user would see.
    """
    samples = []
    for i in range(repeats):
        arg = before(i) if before else None
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn() if before is None else fn(arg)
            samples.append((time.perf_counter() - t0) * 1e3)
        finally:
            gc.enable()
    samples.sort()
    return {
        "median_ms": statistics.median(samples),
        "min_ms": samples[0],
        "max_ms": samples[-1],
        "p90_ms": samples[min(len(samples) - 1, math.ceil(0.9 * len(samples)) - 1)],
        "n": len(samples),
    }


def payload_text(layout: shardviz.Layout) -> str:
    return json.dumps(layout.to_json(), separators=(",", ":"))


def gz(text: str) -> int:
    return len(gzip.compress(text.encode(), compresslevel=9, mtime=0))


def main() -> dict[str, Any]:
    started = time.perf_counter()
    assert jax.device_count() == N, f"asked for {N} devices, JAX has {jax.device_count()}"
    sizes, names = MESHES[N]
    specs = SPECS_2 if len(names) == 2 else SPECS_3
    mesh = jax.make_mesh(sizes, names)
    sharding = NamedSharding(mesh, spec_of(specs[0]))
    host = np.arange(SIDE * SIDE, dtype=np.float32).reshape(SIDE, SIDE)

    def new_array() -> jax.Array:
        # From host memory: a device_put of a device array onto 4096 devices
        # compiles a reshard and takes most of a minute.
        return jax.device_put(host, sharding).block_until_ready()

    x = new_array()
    t0 = time.perf_counter()
    first_text = payload_text(shardviz.describe(x))
    first_call_ms = (time.perf_counter() - t0) * 1e3
    # JAX with N devices, one array and shardviz: what a kernel holds.
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # Every timed call gets an array nobody has described or drawn yet, made
    # ahead of the timing (so that XLA's work on it is done).
    pool = [new_array() for _ in range(3 * REPEATS + 2 * SLOW_REPEATS)]
    fresh = iter(pool)

    def fresh_array(_: int = 0) -> jax.Array:
        return next(fresh)

    out: dict[str, Any] = {
        "devices": N,
        "mesh": dict(zip(names, sizes)),
        "spec": specs[0],
        "shape": list(x.shape),
        "dtype": str(x.dtype),
        "jax": jax.__version__,
        "setup_s": time.perf_counter() - started,
    }

    # ---------------------------------------------------------------- shardviz
    def describe_and_payload(arr: jax.Array) -> str:
        return payload_text(shardviz.describe(arr))

    out["sv_first_call_ms"] = first_call_ms
    out["rss_mib"] = rss_mib
    out["sv_warm"] = timed(describe_and_payload, REPEATS, before=fresh_array)
    out["sv_describe_only"] = timed(shardviz.describe, REPEATS, before=fresh_array)
    out["sv_payload_only"] = timed(lambda lay: payload_text(lay), REPEATS, before=lambda _: shardviz.describe(x))

    def cold_start(i: int) -> jax.Array:
        clear_shardviz_caches()
        return pool[i]  # these arrays were described above: only the caches are new

    out["sv_cold"] = timed(describe_and_payload, REPEATS, before=cold_start)

    payload = first_text
    out["payload_bytes"] = len(payload.encode())
    out["payload_gzip_bytes"] = gz(payload)

    # ---------------------------------------------------------------- jax.debug.visualize_array_sharding
    def visualize(arr: jax.Array) -> str:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            jax.debug.visualize_array_sharding(arr)
        return buf.getvalue()

    t0 = time.perf_counter()
    text = visualize(x)
    out["vas_first_call_ms"] = (time.perf_counter() - t0) * 1e3
    out["vas_chars"] = len(text)
    out["vas"] = timed(visualize, SLOW_REPEATS, before=fresh_array)

    # ---------------------------------------------------------------- render_text: a terminal picture too
    def terminal_picture(arr: jax.Array) -> str:
        # 80 columns and no colour: what visualize_array_sharding's captured table has.
        return shardviz.render_text(arr, width=80, color=False)

    t0 = time.perf_counter()
    text = terminal_picture(x)
    out["sv_text_first_call_ms"] = (time.perf_counter() - t0) * 1e3
    out["sv_text_chars"] = len(text)
    out["sv_text"] = timed(terminal_picture, REPEATS, before=fresh_array)

    # ---------------------------------------------------------------- treescope
    import treescope

    def treescope_html(arr: jax.Array) -> str:
        return treescope.render_to_html(treescope.render_array_sharding(arr), compressed=True)

    t0 = time.perf_counter()
    html = treescope_html(x)
    out["ts_first_call_ms"] = (time.perf_counter() - t0) * 1e3
    out["ts"] = timed(treescope_html, SLOW_REPEATS, before=fresh_array)
    out["ts_html_bytes"] = len(html.encode())
    out["ts_html_gzip_bytes"] = gz(html)
    plain = treescope.render_to_html(treescope.render_array_sharding(x), compressed=False)
    out["ts_html_uncompressed_bytes"] = len(plain.encode())

    # ---------------------------------------------------------------- payload size
    # Worst case for the run encoding: the mesh's devices in a random order.
    rng = np.random.default_rng(0)
    shuffled = jax.sharding.Mesh(
        np.array(jax.devices(), dtype=object)[rng.permutation(N)].reshape(sizes),
        names,
        axis_types=(AxisType.Explicit,) * len(names),
    )
    worst = shardviz.describe(NamedSharding(shuffled, spec_of(specs[0])), shape=(SIDE, SIDE))
    out["payload_shuffled_bytes"] = len(payload_text(worst).encode())
    # The same sharding over arrays from 4 Ki to 1 Ti elements (hypothetical
    # layouts past the real one: same code path, no memory).
    by_size = {}
    for side in (64, SIDE, 16 * SIDE, 1024 * SIDE):
        if side % (N // sizes[0]) or side % sizes[0]:
            continue
        lay = shardviz.describe(sharding, shape=(side, side), dtype="float32")
        by_size[str(side * side)] = len(payload_text(lay).encode())
    out["payload_bytes_by_elements"] = by_size

    # ---------------------------------------------------------------- a widget edit, kernel side
    from shardviz import ShardingWidget

    widget = ShardingWidget(x)
    toggle = {"i": 0}

    def edit() -> None:
        # What the front end sends: the spec text, alternating between two specs.
        toggle["i"] += 1
        widget.set_state({"spec_text": specs[toggle["i"] % 2]})
        if widget.error:
            raise RuntimeError(widget.error)

    edit()  # the first reshard to each sharding fills JAX's caches
    edit()
    out["widget_edit"] = timed(edit, SLOW_REPEATS if N >= 4096 else REPEATS)

    # ---------------------------------------------------------------- browser payloads
    if ARGS.payload_dir:
        ARGS.payload_dir.mkdir(parents=True, exist_ok=True)
        variants = []
        for text in specs:
            arr = jax.device_put(host, NamedSharding(mesh, spec_of(text)))
            variants.append(shardviz.describe(arr).to_json())
        (ARGS.payload_dir / f"payloads-{N}.json").write_text(json.dumps(variants, separators=(",", ":")))

    # ---------------------------------------------------------------- what-if layouts
    if ARGS.whatif:
        whatif = {}
        for count, (wsizes, wnames, wspec, wshape) in WHATIF.items():
            abstract = AbstractMesh(wsizes, wnames, axis_types=(AxisType.Explicit,) * len(wnames))
            wsharding = NamedSharding(abstract, spec_of(wspec))

            def whatif_payload(_: Any, s: NamedSharding = wsharding, shape: tuple[int, int] = wshape) -> str:
                return payload_text(shardviz.describe(s, shape=shape, dtype="float32"))

            clear_shardviz_caches()
            t0 = time.perf_counter()
            text = whatif_payload(None)
            first = (time.perf_counter() - t0) * 1e3
            whatif[str(count)] = {
                "mesh": dict(zip(wnames, wsizes)),
                "spec": wspec,
                "shape": list(wshape),
                "first_call_ms": first,
                "warm": timed(whatif_payload, REPEATS, before=lambda _: None),
                "cold": timed(whatif_payload, REPEATS, before=lambda _: clear_shardviz_caches()),
                "payload_bytes": len(text.encode()),
                "payload_gzip_bytes": gz(text),
            }
        out["whatif"] = whatif

    # With the pool of arrays above: more than a user's process would hold.
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["total_s"] = time.perf_counter() - started
    return out


if __name__ == "__main__":
    try:
        result = main()
        print("BENCH-JSON " + json.dumps(result), flush=True)
        code = 0
    except BaseException as err:  # report, then leave without tearing JAX down
        import traceback

        traceback.print_exc()
        print("BENCH-JSON " + json.dumps({"devices": N, "error": f"{type(err).__name__}: {err}"}), flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
