"""What-if trace cost: shardviz.trace(..., mesh=AbstractMesh) against a bare compile in a child.

The bare baseline starts a Python child with the same number of simulated CPU
devices that imports jax, builds the mesh and runs
``jax.jit(f).lower(*args).compile()``, timed from the parent like the
what-if trace (process start included). Prints a JSON object; nothing here
asserts a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import shardviz
from plan_functions import scanned_model

LAYERS, WIDTH = 24, 512

BARE = """
import os, sys, time
sys.path.insert(0, {tests!r})
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from plan_functions import scanned_model
n = {n}
mesh = jax.make_mesh((n // 16, 16), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = NamedSharding(mesh, P(None, None, "model"))
params = jax.ShapeDtypeStruct(({layers}, {width}, {width}), jnp.float32, sharding=spec)
x = jax.ShapeDtypeStruct((n, {width}), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
jax.jit(scanned_model).lower(params, x).compile()
sys.stdout.flush()
os._exit(0)
"""


def bare_compile_seconds(n: int) -> float:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
    script = BARE.format(n=n, layers=LAYERS, width=WIDTH, tests=str(Path(__file__).resolve().parent.parent / "tests"))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    return time.perf_counter() - started


def whatif(n: int) -> dict[str, object]:
    mesh = AbstractMesh((n // 16, 16), ("data", "model"))
    params = jax.ShapeDtypeStruct(
        (LAYERS, WIDTH, WIDTH), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model"))
    )
    x = jax.ShapeDtypeStruct((n, WIDTH), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    started = time.perf_counter()
    try:
        prog = shardviz.trace(scanned_model, params, x, mesh=mesh)
    except shardviz.ShardingError as err:
        return {"devices": n, "error": str(err), "seconds": time.perf_counter() - started}
    return {"devices": n, "seconds": time.perf_counter() - started, **prog.whatif.to_json()}


def main() -> None:
    results: dict[str, object] = {}
    bare = min(bare_compile_seconds(256) for _ in range(3))
    traced = min(float(whatif(256)["seconds"]) for _ in range(3))  # type: ignore[arg-type]
    results["bare_256_s"] = bare
    results["whatif_256_s"] = traced
    results["whatif_over_bare_256"] = traced / bare
    results["whatif_2048"] = whatif(2048)
    results["whatif_4096"] = whatif(4096)
    results["whatif_8192"] = whatif(8192)
    results["jax"] = jax.__version__
    results["exit_code"] = 0
    print("BENCH-JSON " + json.dumps(results))
    print("| run | seconds | peak RSS |")
    print("|---|---|---|")
    print(f"| bare compile in a 256-device child | {bare:.2f} | |")
    print(f"| what-if trace, 256 devices | {traced:.2f} | |")
    for key in ("whatif_2048", "whatif_4096", "whatif_8192"):
        r: dict[str, object] = results[key]  # type: ignore[assignment]
        rss = "refused: " + str(r["error"])[-160:] if "error" in r else f"{int(r['peak_rss_bytes']) / 2**20:.0f} MiB"  # type: ignore[call-overload]
        print(f"| what-if trace, {r['devices']} devices | {float(r['seconds']):.2f} | {rss} |")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
