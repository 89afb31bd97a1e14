"""Write real payloads, made by the real engine, for the front-end tests.

``python tests/make_js_fixtures.py js/fixtures`` (``make test-js`` runs it
with 12 simulated CPU devices). The Vitest suite reads these files.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile
from dataclasses import dataclass, replace

import jax

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    jax.config.update("jax_num_cpu_devices", 12)  # before JAX starts its backend

import jax.numpy as jnp
import numpy as np
from jax.sharding import AbstractMesh, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.array.devices import device_columns
from shardviz.kinds import KINDS
from shardviz.text.ranges import format_bytes, format_seconds, picture_dims

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from program_js_fixtures import write_program_fixtures
from tree_js_fixtures import write_tree_fixtures
from two_processes import run_two_processes


@dataclass(frozen=True)
class StandInTpu:
    """What a TPU device object carries, as JAX documents it (no TPU here)."""

    id: int
    coords: tuple[int, int, int]
    core_on_chip: int
    process_index: int = 0
    platform: str = "tpu"
    device_kind: str = "TPU v5"


def physical_layout() -> shardviz.Layout:
    """A 2x2 chip grid with two cores per chip, as mesh (x=2, y=2, core=2): a real
    layout of 8 CPU devices whose device columns are replaced by TPU stand-ins."""
    mesh = jax.make_mesh((2, 2, 2), ("x", "y", "core"), devices=jax.devices()[:8])
    real = shardviz.describe(NamedSharding(mesh, P("x", "y")), shape=(4, 8))
    fakes = tuple(StandInTpu(k, (x, y, 0), c) for k, (x, y, c) in enumerate(np.ndindex(2, 2, 2)))
    return replace(real, columns=device_columns(fakes))


def fixtures() -> dict[str, dict]:
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
    mesh3 = jax.make_mesh((2, 2, 2), ("a", "b", "c"), devices=jax.devices()[:8])
    auto = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    hostile = jax.make_mesh((2, 4), ("<img src=x onerror=alert(1)>", "</script>"), devices=jax.devices()[:8])
    pod = AbstractMesh((16, 16, 16), ("a", "b", "c"))
    out = {
        "mesh2x4_xy": x,
        "mesh3axis": jax.device_put(jnp.zeros((8, 8, 4)), NamedSharding(mesh3, P("a", ("b", "c")))),
        "replicated_sum": jax.jit(lambda a: a.sum(axis=0))(x),
        "auto_mesh": jax.device_put(jnp.zeros((4, 8)), NamedSharding(auto, P("x", "y"))),
        "single_device": jnp.arange(8.0),
        "scalar": jax.device_put(jnp.float32(1.0), NamedSharding(mesh, P())),
        "rank4": jax.device_put(jnp.zeros((2, 4, 6, 8)), NamedSharding(mesh, P(None, "x", None, "y"))),
        "pinned_host": jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P("x", "y"), memory_kind="pinned_host")),
        "hostile_names": jax.device_put(jnp.zeros((4, 8)), NamedSharding(hostile, P(*hostile.axis_names))),
    }
    out["x_none"] = jax.device_put(x, NamedSharding(mesh, P("x", None)))
    out["rank5"] = jax.device_put(jnp.zeros((4, 6, 8, 2, 3)), NamedSharding(mesh3, P("a", None, ("b", "c"))))
    payloads = {name: shardviz.describe(value).to_json() for name, value in out.items()}
    payloads["abstract_4096"] = shardviz.describe(NamedSharding(pod, P("a", ("b", "c"))), shape=(256, 4096)).to_json()
    pod512 = AbstractMesh((8, 8, 8), ("data", "tensor", "pipe"))
    payloads["abstract_512"] = shardviz.describe(
        NamedSharding(pod512, P("data", "tensor")), shape=(512, 4096)
    ).to_json()
    # The largest grid drawn as DOM cells (past 256 devices it is one canvas).
    pod256 = AbstractMesh((4, 8, 8), ("data", "tensor", "pipe"))
    payloads["abstract_256"] = shardviz.describe(
        NamedSharding(pod256, P("data", "tensor")), shape=(512, 4096)
    ).to_json()
    mesh8 = jax.make_mesh((8,), ("x",), devices=jax.devices()[:8])
    # ShardingWidget(shape=(64, 256)) with spec x: a what-if on real devices, thin tiles.
    payloads["what_if_thin"] = shardviz.describe(NamedSharding(mesh8, P("x")), shape=(64, 256)).to_json()
    payloads["physical"] = physical_layout().to_json()
    return payloads


def picture_dims_cases(payloads: dict[str, dict]) -> dict[str, list]:
    """The terminal picture's (rows, columns) for every fixture, by its own rule."""
    cases = {}
    for name, payload in payloads.items():
        counts = [sum(run[2] for run in runs) - 1 for runs in payload["tiles"]["bounds"]]
        _, row, col = picture_dims(counts)
        cases[name] = [row, col]
    return cases


def edit_estimate_cases() -> list[dict]:
    """Typed edits and the bytes each device holds after them, by JAX's own count
    (an addressable shard of the re-placed array), or None where the edit is refused."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
    mesh3 = jax.make_mesh((2, 2, 2), ("a", "b", "c"), devices=jax.devices()[:8])
    x3 = jax.device_put(jnp.zeros((8, 8, 4)), NamedSharding(mesh3, P("a", ("b", "c"))))
    edits = (
        [
            ("mesh2x4_xy", x, "spec_text", text)
            for text in ["", "x", "y, x", "None, (x, y)", "P('x', None)", "(y, x)", "x, y, None", "z", "x, x", "x,,"]
        ]
        + [
            ("mesh2x4_xy", x, "mesh_text", text)
            for text in [
                "x=8",
                "x=2, model=4",
                "a=2, b=2, c=2",
                "x=4, y=2",
                "y=2, x=4",
                "x=1, y=8",
                "x=2, y=2",
                "x=2:auto, y=4",
            ]
        ]
        + [("mesh3axis", x3, "spec_text", text) for text in ["a", "(c, b), a", "None, None, (a, b, c)", "a, b, c"]]
        + [("mesh3axis", x3, "mesh_text", text) for text in ["a=2, b=4", "a=8", "p=2, q=2, r=2", "a=2, c=2, b=2"]]
    )
    cases = []
    for fixture, array, trait, text in edits:
        widget = shardviz.ShardingWidget(array, name="x")
        widget.set_state({trait: text})
        refused = widget.error != ""
        nbytes = None if refused else int(widget.array.addressable_shards[0].data.nbytes)
        cases.append({"fixture": fixture, "trait": trait, "text": text, "bytes": nbytes, "error": widget.error})
    return cases


def format_bytes_cases() -> list[list[int | str]]:
    """``[count, format_bytes(count)]``, ties included (2.25 KiB, 52.5 MiB: Python rounds them to even)."""
    counts = [0, 1, 1023, 1024, 1536, 2304, 2560, 10 * 1024 - 1, 10 * 1024, 10752, 11776, 52.5 * 2**20, 53.5 * 2**20]
    counts += [int(k * 2**30) for k in (0.05, 0.25, 0.75, 9.95, 9.96, 1023.5)] + [2**40 * 5 // 2, 2**50]
    return [[int(c), format_bytes(int(c))] for c in counts]


def format_seconds_cases() -> list[list[float | str]]:
    """``[seconds, format_seconds(seconds)]``: each unit, its edges, a figure that rounds up into the next
    unit, exact ties (2.125 s, 62.5 ms rounded to even) and a fix's step of a tiny program (139 ps)."""
    times = [1e-3, 1.0, 0.505, 1.5, 52e-6, 2.19e-8, 2.07e-12, 1234.5, 3e-16, 999.96e-6, 999.4e-6, 999.5e-9]
    times += [2.125, 0.0625, 2.345e-5, 1.3887884267631104e-10, 2e-6, 7.25e-7, 12.5, -5e-3, 0.0]
    return [[t, format_seconds(t)] for t in times]


def main(target: pathlib.Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    payloads = fixtures()
    with tempfile.TemporaryDirectory() as tmp:
        payloads["multiprocess"] = run_two_processes(pathlib.Path(tmp))[0]["payload"]
    for name, payload in payloads.items():
        (target / f"{name}.json").write_text(json.dumps(payload, indent=1))
    answers = {
        "picture_dims": picture_dims_cases(payloads),
        "edit_estimates": edit_estimate_cases(),
        "format_bytes": format_bytes_cases(),
        "format_seconds": format_seconds_cases(),
    }
    (target / "python_answers.json").write_text(json.dumps(answers, indent=1))
    # The registry of kinds, for js/host/kinds.test.ts to hold js/host/kinds.ts equal to it.
    kinds = [{"name": kind.name, "version": kind.version} for kind in KINDS.values()]
    (target / "kinds.json").write_text(json.dumps(kinds, indent=1))
    print(f"wrote {len(payloads)} payloads and Python's answers to {target}")
    print(f"wrote {write_tree_fixtures(target)} tree fixtures to {target}")
    print(f"wrote {write_program_fixtures(target)} program fixtures to {target}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "js/fixtures"))
