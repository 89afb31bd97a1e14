"""What JAX itself says about a layout, and checks of a Layout against it.

Every engine test compares shardviz with these answers, read straight from
JAX (``devices_indices_map``, ``addressable_shards``, ``jax.typeof``), never
with a copy of shardviz's own output.
"""

from __future__ import annotations

from collections import defaultdict

import jax
from jax.sharding import NamedSharding

import shardviz


def normalized_block(index: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """A devices_indices_map entry as concrete (start, stop) pairs."""
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape))


def jax_blocks(sharding, shape) -> dict[int, tuple[tuple[int, int], ...]]:
    """device id -> block, from JAX's devices_indices_map."""
    return {d.id: normalized_block(idx, shape) for d, idx in sharding.devices_indices_map(tuple(shape)).items()}


def assert_matches_jax(layout: shardviz.Layout, sharding, shape, *, array: jax.Array | None = None) -> None:
    """The layout's blocks, devices, replica ids and type equal JAX's answers."""
    shape = tuple(shape)
    truth = jax_blocks(sharding, shape)
    assert layout.shape == shape
    assert layout.device_count == len(truth)
    assert layout.shard_shape == tuple(sharding.shard_shape(shape))
    assert layout.memory_kind == (sharding.memory_kind or "device")

    # Every device holds the block JAX says it holds.
    tiles = layout.tiles
    for dev in layout.devices:
        tile = tiles[dev.tile]
        assert tuple(zip(tile.start, tile.stop)) == truth[dev.id], f"device {dev.id}"

    # Tiles are exactly the unique blocks, each with exactly its holders.
    holders: dict[tuple, set[int]] = defaultdict(set)
    for device_id, block in truth.items():
        holders[block].add(device_id)
    assert {tuple(zip(t.start, t.stop)): set(t.device_ids) for t in tiles} == dict(holders)

    if isinstance(sharding, NamedSharding):
        mesh = sharding.mesh
        assert layout.mesh is not None
        assert layout.mesh.axis_names == tuple(str(n) for n in mesh.axis_names)
        assert layout.mesh.axis_sizes == tuple(mesh.axis_sizes)
        assert layout.mesh.axis_types == tuple(t.name for t in mesh.axis_types)
        # Devices come in mesh order, and their coordinates point back to them.
        assert [d.id for d in layout.devices] == [d.id for d in mesh.devices.flat]
        for dev in layout.devices:
            assert mesh.devices[dev.mesh_coords].id == dev.id
        spec = tuple(sharding.spec) + (None,) * (len(shape) - len(sharding.spec))
        expected = tuple(() if e is None else (e if isinstance(e, tuple) else (e,)) for e in spec)
        assert layout.spec == tuple(tuple(str(a) for a in e) for e in expected)

    if array is not None:
        assert layout.type_str == str(jax.typeof(array))
        replica = {s.device.id: s.replica_id for s in array.addressable_shards}
        for dev in layout.devices:
            if dev.addressable:
                assert dev.replica_id == replica[dev.id], f"replica id of device {dev.id}"
        assert layout.shard_bytes == array.addressable_shards[0].data.nbytes
