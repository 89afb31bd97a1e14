"""Parity with JAX on a large mesh of real simulated CPU devices, in a process of its own.

    python tests/large_mesh_parity.py N        (N = 512 or 4096)

JAX starts with N CPU devices (a pytest process already has its 12), then,
for several meshes and specs, compares shardviz with JAX's own answers:

- ``describe(x)`` of a real array against ``devices_indices_map``, the
  array's ``addressable_shards`` (replica ids) and ``jax.typeof``;
- the same mesh as an AbstractMesh (a what-if layout): the k-th virtual
  device's block and replica id against the k-th real device's;
- an array on a GSPMDSharding over the shuffled mesh (blocks read from
  ``devices_indices_map``, not from a mesh).

Prints ``PARITY <json>`` (what was checked) and leaves with ``os._exit``:
tearing 4096 devices down takes seconds and checks nothing. A failed check
prints its traceback and exits 1.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import traceback

N = int(sys.argv[1])
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={N}"
os.environ["JAX_PLATFORMS"] = "cpu"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # jax_truth

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.sharding_impls import GSPMDSharding  # noqa: E402  (jax.sharding no longer exports it)
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz  # noqa: E402
from jax_truth import assert_matches_jax, jax_blocks  # noqa: E402

# Per device count: mesh sizes, names, and (spec, shape) cases. Shapes are small
# (a few elements per device) and divisible by every split they meet.
CASES = {
    512: (
        (8, 8, 8),
        ("a", "b", "c"),
        [
            (P("a", ("b", "c")), (16, 128)),
            (P(("c", "a"), None), (64, 6)),
            (P(None, "b"), (3, 16)),  # replicated over a and c: 64 copies of each block
            (P(), (5, 7)),  # fully replicated
            (P("b", "a", "c"), (8, 8, 8)),
        ],
    ),
    4096: (
        (16, 16, 16),
        ("a", "b", "c"),
        [
            (P("a", ("b", "c")), (16, 256)),
            (P(("c", "b"), None), (256, 4)),
            (P(None, "a"), (2, 32)),  # replicated over b and c: 256 copies of each block
            (P(), (3, 5)),
        ],
    ),
}


def check_real_and_what_if(mesh: Mesh, spec: P, shape: tuple[int, ...], memory_kind: str = "device") -> None:
    real = NamedSharding(mesh, spec, memory_kind=memory_kind)
    host = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = jax.device_put(host, real)
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, shape, array=x)

    what_if = shardviz.describe(NamedSharding(mesh.abstract_mesh, spec, memory_kind=memory_kind), shape=shape)
    truth = jax_blocks(real, shape)
    replica = {s.device.id: s.replica_id for s in x.addressable_shards}
    real_ids = [d.id for d in mesh.devices.flat]
    tiles = what_if.tiles
    assert [d.id for d in what_if.devices] == list(range(mesh.devices.size))
    for k, dev in enumerate(what_if.devices):
        tile = tiles[dev.tile]
        assert tuple(zip(tile.start, tile.stop)) == truth[real_ids[k]], f"virtual device {k}"
        assert dev.replica_id == replica[real_ids[k]], f"replica id of virtual device {k}"
    assert what_if.type_str == str(jax.typeof(x))


def main() -> dict[str, object]:
    assert jax.device_count() == N, f"asked for {N} devices, JAX has {jax.device_count()}"
    sizes, names, cases = CASES[N]
    checked = []
    meshes = {
        "mesh order": jax.make_mesh(sizes, names, axis_types=(AxisType.Explicit,) * len(sizes)),
        # Devices in no particular order: shardviz must follow the mesh, not ids.
        "shuffled": Mesh(
            np.array(jax.devices(), dtype=object)[np.random.default_rng(N).permutation(N)].reshape(sizes),
            names,
            axis_types=(AxisType.Explicit,) * len(sizes),
        ),
    }
    for label, mesh in meshes.items():
        for spec, shape in cases:
            check_real_and_what_if(mesh, spec, shape)
            checked.append(f"{label} {spec} {shape}")
    spec, shape = cases[0]
    check_real_and_what_if(meshes["shuffled"], spec, shape, memory_kind="pinned_host")
    checked.append(f"shuffled {spec} {shape} pinned_host")

    # A sharding that is not a NamedSharding (blocks from devices_indices_map):
    # the GSPMDSharding JAX builds for the shuffled mesh's first case.
    mesh = meshes["shuffled"]
    gspmd = GSPMDSharding(tuple(mesh.devices.flat), NamedSharding(mesh, spec)._to_xla_hlo_sharding(len(shape)))
    x = jax.device_put(np.zeros(shape, np.float32), gspmd)
    assert type(x.sharding) is GSPMDSharding
    assert_matches_jax(shardviz.describe(x), x.sharding, shape, array=x)
    checked.append(f"GSPMDSharding of shuffled {spec} {shape}")

    return {"devices": N, "checked": checked}


if __name__ == "__main__":
    try:
        print("PARITY " + json.dumps(main()), flush=True)
        code = 0
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
