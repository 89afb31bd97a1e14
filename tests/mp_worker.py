"""One process of a two-process JAX run on 127.0.0.1 (CPU, gloo collectives).

Run as ``python mp_worker.py PROCESS_ID PORT OUT_DIR``. Each process builds a
global 2x4 mesh and an array with ``jax.make_array_from_callback``, then
writes what shardviz and JAX each say about it to ``OUT_DIR/process-N.json``
for the parent test to compare. The process ends by itself.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import jax

LOCAL_DEVICES = 4


def main(process_id: int, port: int, out_dir: pathlib.Path) -> None:
    jax.config.update("jax_num_cpu_devices", LOCAL_DEVICES)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=2,
        process_id=process_id,
        initialization_timeout=60,
    )
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    mesh = jax.make_mesh((2, 4), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))
    data = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    arr = jax.make_array_from_callback((4, 8), sharding, lambda index: data[index])

    layout = shardviz.describe(arr)
    widget = shardviz.ShardingWidget(arr)
    previews = {d.id: widget.preview(d.id) for d in layout.devices}
    widget.set_state({"spec_text": "y, x"})
    after_edit = {"error": widget.error, "type_str": widget.layout.type_str, "typeof": str(jax.typeof(widget.array))}

    report = {
        "process_index": jax.process_index(),
        "payload": layout.to_json(),
        "devices": [
            {"id": d.id, "process_index": d.process_index, "addressable": d.addressable, "tile": d.tile}
            for d in layout.devices
        ],
        "jax": {
            "devices": [{"id": d.id, "process_index": d.process_index} for d in mesh.devices.flat],
            "local_ids": sorted(d.id for d in jax.local_devices()),
            "blocks": {
                str(d.id): [list(s.indices(n)[:2]) for s, n in zip(idx, (4, 8))]
                for d, idx in sharding.devices_indices_map((4, 8)).items()
            },
            "local_values": {str(s.device.id): np.asarray(s.data).tolist() for s in arr.addressable_shards},
            "typeof": str(jax.typeof(arr)),
        },
        "tiles": [{"start": t.start, "stop": t.stop, "device_ids": t.device_ids} for t in layout.tiles],
        "previews": {str(k): v for k, v in previews.items()},
        "after_edit": after_edit,
        "text": shardviz.render_text(arr, color=False, width=100),
        "tree": tree_device_bytes(mesh),
        "program": program_report(mesh, arr),
    }
    (out_dir / f"process-{process_id}.json").write_text(json.dumps(report))
    jax.distributed.shutdown()
    # Interpreter teardown can hang collecting gloo-backed arrays (seen here
    # about one run in three); the work is done, so leave at once.
    os._exit(0)


def tree_device_bytes(mesh) -> dict:
    """The tree engine's check: describe_tree's device_bytes for a small tree of global arrays,
    beside the per-device sums JAX's devices_indices_map gives (over every device, addressable
    or not) and the sums of this process's addressable_shards."""
    import math
    from collections import Counter

    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz

    def global_array(shape, dtype, *spec):
        data = np.arange(math.prod(shape)).astype(dtype).reshape(shape)
        sharding = NamedSharding(mesh, P(*spec))
        return jax.make_array_from_callback(shape, sharding, lambda index: data[index])

    tree = {
        "w": global_array((4, 8), np.float32, "x", "y"),
        "bias": global_array((8,), jnp.bfloat16, "y"),  # replicated over x
        "embed": global_array((6, 4), np.int8, "x"),  # replicated over y
        "scale": global_array((), np.float32),  # on every device
        "name": "tiny",  # not an array: costs nothing
    }
    layout = shardviz.describe_tree(tree)
    index_map_bytes: Counter[int] = Counter()
    addressable_bytes: Counter[int] = Counter()
    for x in jax.tree.leaves(tree):
        if not isinstance(x, jax.Array):
            continue
        for device, index in x.sharding.devices_indices_map(x.shape).items():
            block = math.prod(len(range(*s.indices(n))) for s, n in zip(index, x.shape))
            index_map_bytes[device.id] += block * x.dtype.itemsize
        for shard in x.addressable_shards:
            addressable_bytes[shard.device.id] += shard.data.nbytes
    return {
        "device_bytes": {str(k): v for k, v in layout.device_bytes.items()},
        "index_map_bytes": {str(k): v for k, v in index_map_bytes.items()},
        "addressable_bytes": {str(k): v for k, v in addressable_bytes.items()},
        "payload_process_count": layout.to_json()["process_count"],
        "text": layout.to_text(color=False, width=100),
    }


def program_report(mesh, arr) -> dict:
    """shardviz.trace of the column sums of ``arr`` (split over x and y): an all-reduce over x.

    Reports the collectives (groups as device ids) and the program payload's
    device columns, for the parent test to compare across processes.
    """
    import shardviz

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from decoding import decode_runs

    prog = shardviz.trace(lambda a: (a * 2).sum(axis=0), arr)
    payload = prog.to_json()
    return {
        "collectives": [
            {
                "kind": c.kind,
                "axes": list(c.axes) if c.axes is not None else None,
                "device_groups": [list(g) for g in prog.device_groups(c)],
                "result_bytes": c.result_bytes,
                "count": c.count,
            }
            for c in prog.collectives
        ],
        "device_ids": decode_runs(payload["devices"]["id"]),
        "addressable": decode_runs(payload["devices"]["addressable"]),
        "process": decode_runs(payload["devices"]["process"]),
        "process_count": payload["process_count"],
        "output_type": prog.outputs[0].type_str,
    }


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3]))
