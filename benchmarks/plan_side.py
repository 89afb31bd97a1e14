"""What-if trace cost: shardviz.trace(..., mesh=AbstractMesh) against a bare compile in a child.

The bare baseline starts a Python child with the same number of simulated CPU
devices that imports jax, builds the mesh and runs
``jax.jit(f).trace(*args).lower().compile()`` under ``jax.set_mesh``, timed
from the parent like the what-if trace (process start included). Two steps:
a 24-layer scanned MLP (Auto axes) and notebook 09's transformer training
step (``notebooks/pod_step.py``: 16 layers, bf16, Explicit axes, FSDP and
tensor parallelism on a 32x8 mesh), each at 256 devices, best of three. Then
what-if traces at 2,048 to 8,192 devices, and each child's memory estimate
against its measured peak. Prints a JSON object; nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import pod_step  # the notebook's own module

import shardviz
from plan_functions import scanned_model

ROOT = Path(__file__).resolve().parent.parent

LAYERS, WIDTH = 24, 512
POD_MESH, POD_BATCH = (32, 8), 512

BARE = """
import os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {notebooks!r})
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
n = {n}
if {step!r} == "scanned":
    from plan_functions import scanned_model as fun
    mesh = jax.make_mesh((n // 16, 16), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    spec = NamedSharding(mesh, P(None, None, "model"))
    params = jax.ShapeDtypeStruct(({layers}, {width}, {width}), jnp.float32, sharding=spec)
    x = jax.ShapeDtypeStruct((n, {width}), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    args = (params, x)
else:
    import pod_step
    fun = pod_step.train_step
    mesh = jax.make_mesh({pod_mesh}, ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    args = pod_step.arguments(mesh, {pod_batch})
with jax.set_mesh(mesh):
    jax.jit(fun).trace(*args).lower().compile()
sys.stdout.flush()
os._exit(0)
"""


def bare_compile_seconds(step: str, n: int) -> float:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
    script = BARE.format(
        n=n, step=step, layers=LAYERS, width=WIDTH, pod_mesh=POD_MESH, pod_batch=POD_BATCH,
        tests=str(ROOT / "tests"), notebooks=str(ROOT / "notebooks"),
    )  # fmt: skip
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    return time.perf_counter() - started


def whatif(step: str, n: int) -> dict[str, Any]:
    if step == "scanned":
        mesh = AbstractMesh((n // 16, 16), ("data", "model"))
        params = jax.ShapeDtypeStruct(
            (LAYERS, WIDTH, WIDTH), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model"))
        )
        x = jax.ShapeDtypeStruct((n, WIDTH), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
        fun, args = scanned_model, (params, x)
    else:
        mesh = AbstractMesh(POD_MESH, ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
        fun, args = pod_step.train_step, pod_step.arguments(mesh, POD_BATCH)
    started = time.perf_counter()
    try:
        prog = shardviz.trace(fun, *args, mesh=mesh)
    except shardviz.ShardingError as err:
        return {"devices": n, "error": str(err), "seconds": time.perf_counter() - started}
    return {"devices": n, "seconds": time.perf_counter() - started, **prog.whatif.to_json()}


def side_by_side(step: str, n: int, repeats: int = 3) -> dict[str, Any]:
    """Best of ``repeats`` each, interleaved so that a busy spell of the machine hits both."""
    bare, traced, runs = [], [], []
    for _ in range(repeats):
        bare.append(bare_compile_seconds(step, n))
        run = whatif(step, n)
        runs.append(run)
        traced.append(float(run["seconds"]))
    best = runs[traced.index(min(traced))]
    return {"bare_s": min(bare), "whatif_s": min(traced), "ratio": min(traced) / min(bare), "run": best}


def main() -> None:
    # --smoke (make bench-smoke): one run of each at 256 and 4096 devices, checking that it runs; --quick is taken
    # and ignored, as every run here is already a few.
    smoke = "--smoke" in sys.argv[1:]
    repeats = 1 if smoke else 3
    results: dict[str, Any] = {}
    scanned = side_by_side("scanned", 256, repeats)
    pod = side_by_side("pod", 256, repeats)
    results["bare_256_s"] = scanned["bare_s"]
    results["whatif_256_s"] = scanned["whatif_s"]
    results["whatif_over_bare_256"] = scanned["ratio"]
    results["pod_bare_256_s"] = pod["bare_s"]
    results["pod_whatif_256_s"] = pod["whatif_s"]
    results["pod_whatif_over_bare_256"] = pod["ratio"]
    results["whatif_256"] = scanned["run"]
    results["pod_whatif_256"] = pod["run"]
    for n in (4096,) if smoke else (2048, 4096, 8192):
        results[f"whatif_{n}"] = whatif("scanned", n)
    keys = ("whatif_256", "pod_whatif_256", "whatif_2048", "whatif_4096", "whatif_8192")
    runs = [results[k] for k in keys if k in results]
    measured = [r for r in runs if "error" not in r]
    results["estimate_over_peak_min"] = min(r["estimated_bytes"] / r["peak_rss_bytes"] for r in measured)
    results["jax"] = jax.__version__
    results["exit_code"] = 0
    print("BENCH-JSON " + json.dumps(results))
    print("| run | seconds | peak RSS | estimated |")
    print("|---|---|---|---|")
    print(f"| bare compile, scanned MLP, in a 256-device child | {scanned['bare_s']:.2f} | | |")
    print(f"| bare compile, transformer training step (32x8), in a 256-device child | {pod['bare_s']:.2f} | | |")
    for label, r in (
        ("what-if trace, scanned MLP, 256 devices", results["whatif_256"]),
        ("what-if trace, transformer training step, 256 devices", results["pod_whatif_256"]),
        ("what-if trace, scanned MLP, 2048 devices", results.get("whatif_2048")),
        ("what-if trace, scanned MLP, 4096 devices", results["whatif_4096"]),
        ("what-if trace, scanned MLP, 8192 devices", results.get("whatif_8192")),
    ):
        if r is None:
            continue
        if "error" in r:
            print(f"| {label} | {float(r['seconds']):.2f} | refused: {str(r['error'])[-160:]} | |")
            continue
        peak, estimate = int(r["peak_rss_bytes"]) / 2**20, int(r["estimated_bytes"]) / 2**20
        print(f"| {label} | {float(r['seconds']):.2f} | {peak:.0f} MiB | {estimate:.0f} MiB |")


if __name__ == "__main__":
    main()
