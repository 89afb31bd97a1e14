"""The tree (model) view's Python side, measured: ``python benchmarks/tree_side.py [--quick]``.

Starts JAX with 8 simulated CPU devices, then measures:

- **what-if**: a transformer's parameters and Adam state (``mu``, ``nu``,
  ``count``) as ShapeDtypeStructs on a 4096-device ``AbstractMesh``
  (16x16x16), about 10,000 leaves. ``describe_tree(tree)`` plus
  ``to_json()`` serialised to compact JSON, against the bare loop a user
  would write (``tree_flatten_with_path``, then per leaf ``keystr``,
  ``str(jax.typeof(x))`` and ``sharding.shard_shape``); the payload's
  bytes per leaf, raw and gzipped, and what carrying every leaf's whole type
  string instead of its group's pieces would add; a rules edit's kernel side
  (``apply_rules`` then describe and payload);
- **flat**: issue 41's tree, 10,000 bf16 leaves ``(256 * (1 + i % 7), 512)``
  in one dict, specs ``P("a", ("b", "c"))``, ``P(None, "b")`` and ``P()`` in
  turn on a 16x16x16 AbstractMesh, against the same bare loop;
- **concrete**: a small transformer's real arrays with Adam state on a 2x4
  mesh of Auto axes (the counter on one device), ``describe_tree`` plus
  payload against treescope's rendering of the same tree
  (``treescope.render_to_html(tree, compressed=True)``): time and bytes.
  On Explicit axes treescope's rendering fails (it slices arrays for its
  summaries); the error is recorded.

Timed calls run with the garbage collector off, as ``timeit`` does. Prints a
markdown table, then one line ``BENCH-JSON {...}``, then leaves with
``os._exit`` (nothing to gain from tearing JAX down).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, AxisType, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.tree.rules import apply_rules


class ScaleByAdamState(NamedTuple):  # optax's Adam state, built by hand (optax is not installed)
    count: Any
    mu: Any
    nu: Any


# A decoder layer: (name, shape, spec); "D" model width, "F" MLP width, "H" heads x head width.
D, F, VOCAB = 8192, 28672, 128256
LAYER = (
    ("attention.query.kernel", (D, D), P("data", "model")),
    ("attention.key.kernel", (D, 1024), P("data", None)),
    ("attention.value.kernel", (D, 1024), P("data", None)),
    ("attention.out.kernel", (D, D), P("model", "data")),
    ("mlp.gate.kernel", (D, F), P("data", "model")),
    ("mlp.up.kernel", (D, F), P("data", "model")),
    ("mlp.down.kernel", (F, D), P("model", "data")),
    ("pre_attention_norm.scale", (D,), P()),
    ("pre_mlp_norm.scale", (D,), P()),
    ("mlp.up.bias", (F,), P("model")),
)
RULES = "*layers.*.mlp.*.kernel = (data, seq), model\n*embed = model, data\n"


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *heads, last = dotted.split(".")
        for head in heads:
            node = node.setdefault(head, {})
        node[last] = value
    return out


def what_if_state(layers: int) -> Any:
    """Parameters and Adam state of a ``layers``-layer decoder on a 16x16x16 AbstractMesh."""
    mesh = AbstractMesh((16, 16, 16), ("data", "model", "seq"), axis_types=(AxisType.Explicit,) * 3)

    def sds(shape: tuple[int, ...], spec: P, dtype: Any) -> jax.ShapeDtypeStruct:
        # A sharding object per leaf, as jax.eval_shape hands them back.
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))

    def params(dtype: Any) -> dict[str, Any]:
        flat = {"embed": sds((VOCAB, D), P(None, "model"), dtype), "final_norm.scale": sds((D,), P(), dtype)}
        for i in range(layers):
            for name, shape, spec in LAYER:
                flat[f"layers.{i}.{name}"] = sds(shape, spec, dtype)
        return nest(flat)

    count = sds((), P(), jnp.int32)
    adam = ScaleByAdamState(count, params(jnp.float32), params(jnp.float32))
    return {"params": params(jnp.bfloat16), "opt_state": adam}


def flat_state(leaves: int) -> dict[str, jax.ShapeDtypeStruct]:
    """Issue 41's tree: ``leaves`` bf16 matrices of seven heights, three specs in turn, on a 16x16x16 mesh.

    Each leaf gets its own spec and sharding objects, as a comprehension that writes ``P(...)`` per leaf
    makes them.
    """
    mesh = AbstractMesh((16, 16, 16), ("a", "b", "c"))
    specs = (lambda: P("a", ("b", "c")), lambda: P(None, "b"), lambda: P())
    return {
        f"w{i}": jax.ShapeDtypeStruct(
            (256 * (1 + i % 7), 512), jnp.bfloat16, sharding=NamedSharding(mesh, specs[i % 3]())
        )
        for i in range(leaves)
    }


def concrete_state(layers: int, axis_type: AxisType) -> Any:
    """A small decoder's real arrays and Adam state on a 2x4 mesh; the counter on device 0."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)
    small = {D: 256, F: 512, 1024: 64}

    def put(shape: tuple[int, ...], spec: P, dtype: Any) -> jax.Array:
        shape = tuple(small.get(n, n) for n in shape)
        return jax.device_put(jnp.ones(shape, dtype), NamedSharding(mesh, spec))

    def params(dtype: Any) -> dict[str, Any]:
        flat = {"embed": put((1024, D), P(None, "model"), dtype), "final_norm.scale": put((D,), P(), dtype)}
        for i in range(layers):
            for name, shape, spec in LAYER:
                flat[f"layers.{i}.{name}"] = put(shape, spec, dtype)
        return nest(flat)

    count = jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[0]))
    adam = ScaleByAdamState(count, params(jnp.float32), params(jnp.float32))
    return {"params": params(jnp.bfloat16), "opt_state": adam}


def bare_loop(tree: Any) -> list[tuple[str, str, tuple[int, ...]]]:
    """What a user writes today to print the same table."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(p), str(jax.typeof(x)), x.sharding.shard_shape(x.shape)) for p, x in leaves]


def payload_text(tl: shardviz.TreeLayout) -> str:
    return json.dumps(tl.to_json(), separators=(",", ":"))


def describe_and_payload(tree: Any) -> str:
    return payload_text(shardviz.describe_tree(tree))


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
        finally:
            gc.enable()
    samples.sort()
    return {"median_ms": statistics.median(samples), "min_ms": samples[0], "max_ms": samples[-1], "n": len(samples)}


def gz(text: str) -> int:
    return len(gzip.compress(text.encode(), compresslevel=9, mtime=0))


def main(quick: bool, smoke: bool = False) -> dict[str, Any]:
    repeats = 1 if smoke else 5 if quick else 15
    slow = 1 if smoke else 3 if quick else 7
    out: dict[str, Any] = {"jax": jax.__version__, "devices": jax.device_count()}

    # ------------------------------------------------------------ what-if, 4096 devices
    layers = (10_000 - 4) // (3 * len(LAYER))  # params + mu + nu, plus the count
    tree = what_if_state(layers)
    leaves = len(jax.tree.leaves(tree))
    t0 = time.perf_counter()
    text = describe_and_payload(tree)
    first = (time.perf_counter() - t0) * 1e3
    tl = shardviz.describe_tree(tree)
    type_strings = json.dumps([tl.type_str(i) for i in range(tl.leaf_count)], separators=(",", ":"))
    out["whatif"] = {
        "devices": tl.device_count,
        "leaves": leaves,
        "groups": len(tl.groups),
        "first_call_ms": first,
        "bare_loop": timed(lambda: bare_loop(tree), repeats),
        "describe_and_payload": timed(lambda: describe_and_payload(tree), repeats),
        "describe_only": timed(lambda: shardviz.describe_tree(tree), repeats),
        "payload_only": timed(lambda: payload_text(tl), repeats),
        "payload_bytes": len(text.encode()),
        "payload_gzip_bytes": gz(text),
        "type_strings_bytes": len(type_strings.encode()),
        "rules_edit": timed(lambda: describe_and_payload(apply_rules(tree, RULES).tree), slow),
        "total_bytes": tl.total_bytes,
        "bytes_per_device": tl.device_bytes[0],
    }
    w = out["whatif"]
    w["ratio"] = w["describe_and_payload"]["median_ms"] / w["bare_loop"]["median_ms"]
    w["bytes_per_leaf"] = w["payload_bytes"] / leaves

    # ------------------------------------------------------------ issue 41's flat tree, 4096 devices
    flat = flat_state(10_000)
    describe_and_payload(flat)
    out["flat"] = {
        "devices": 4096,
        "leaves": len(flat),
        "bare_loop": timed(lambda: bare_loop(flat), repeats),
        "describe_and_payload": timed(lambda: describe_and_payload(flat), repeats),
    }
    f = out["flat"]
    f["ratio"] = f["describe_and_payload"]["median_ms"] / f["bare_loop"]["median_ms"]

    # ------------------------------------------------------------ concrete, 8 devices, vs treescope
    import treescope

    # treescope slices arrays for its summaries, which JAX refuses on Explicit axes that do
    # not divide the slice: compare on Auto axes, and record the refusal.
    try:
        treescope.render_to_html(concrete_state(1, AxisType.Explicit), compressed=True)
        out["treescope_explicit_error"] = None
    except Exception as err:
        out["treescope_explicit_error"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
    concrete = concrete_state(2, AxisType.Auto)
    text = describe_and_payload(concrete)
    html = treescope.render_to_html(concrete, compressed=True)
    out["concrete"] = {
        "devices": jax.device_count(),
        "leaves": len(jax.tree.leaves(concrete)),
        "describe_and_payload": timed(lambda: describe_and_payload(concrete), repeats),
        "treescope": timed(lambda: treescope.render_to_html(concrete, compressed=True), slow),
        "payload_bytes": len(text.encode()),
        "payload_gzip_bytes": gz(text),
        "treescope_bytes": len(html.encode()),
        "treescope_gzip_bytes": gz(html),
    }
    c = out["concrete"]
    c["ratio"] = c["describe_and_payload"]["median_ms"] / c["treescope"]["median_ms"]
    c["bytes_ratio"] = c["payload_bytes"] / c["treescope_bytes"]
    return out


def table(r: dict[str, Any]) -> str:
    w, c = r["whatif"], r["concrete"]

    def ms(stat: dict[str, float]) -> str:
        return f"{stat['median_ms']:.1f}"

    lines = [
        "| measure | shardviz | comparator | ratio |",
        "| --- | ---: | ---: | ---: |",
        f"| what-if: describe_tree + payload, {w['leaves']:,} leaves on {w['devices']:,} devices (ms) "
        f"vs the bare loop | {ms(w['describe_and_payload'])} | {ms(w['bare_loop'])} | {w['ratio']:.2f}x |",
        f"| flat: describe_tree + payload, {r['flat']['leaves']:,} bf16 leaves, three specs, on 4,096 devices (ms) "
        f"vs the bare loop | {ms(r['flat']['describe_and_payload'])} | {ms(r['flat']['bare_loop'])} "
        f"| {r['flat']['ratio']:.2f}x |",
        f"| what-if: describe_tree alone / payload alone (ms) | {ms(w['describe_only'])} / {ms(w['payload_only'])} "
        f"| | |",
        f"| what-if: first call in the process (ms) | {w['first_call_ms']:.1f} | | |",
        f"| what-if: payload bytes per leaf (gzip) | {w['bytes_per_leaf']:.1f} "
        f"({w['payload_gzip_bytes'] / w['leaves']:.1f}) | limit 150 | |",
        f"| what-if: every leaf's type string carried whole would add (bytes per leaf) "
        f"| {w['type_strings_bytes'] / w['leaves']:.1f} | | |",
        f"| what-if: rules edit, kernel side (apply_rules + describe + payload, ms) | {ms(w['rules_edit'])} | | |",
        f"| concrete: describe_tree + payload, {c['leaves']} leaves on {c['devices']} devices (ms) vs "
        f"treescope.render_to_html | {ms(c['describe_and_payload'])} | {ms(c['treescope'])} | {c['ratio']:.3f}x |",
        f"| concrete: payload vs treescope HTML bytes (gzip) | {c['payload_bytes']:,} ({c['payload_gzip_bytes']:,}) "
        f"| {c['treescope_bytes']:,} ({c['treescope_gzip_bytes']:,}) | {c['bytes_ratio']:.3f}x |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument(
        "--smoke", action="store_true", help="one sample of each, small sizes: checks that it runs (make bench-smoke)"
    )
    args = parser.parse_args()
    try:
        result = main(args.quick, args.smoke)
        print(table(result), flush=True)
        print("BENCH-JSON " + json.dumps(result), flush=True)
        code = 0
    except BaseException as err:  # report, then leave without tearing JAX down
        import traceback

        traceback.print_exc()
        print("BENCH-JSON " + json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
