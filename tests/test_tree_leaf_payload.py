"""What the tree payload carries so a front end can lay a leaf out without the kernel.

Each mesh's ``memory_kinds`` and ``machine_order`` and the payload's
``machine_devices`` must say what JAX says about those devices; the leaf
layouts the browser reproduces (tests/tree_js_fixtures.py) must be JAX's.
"""

from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_runs
from jax_truth import assert_matches_jax
from tree_js_fixtures import multi_mesh_tree, random_tree

ORDER = ("device", "pinned_host", "unpinned_host")


def jax_memory_kinds(devices) -> list[str]:
    """The memory kinds every one of `devices` addresses, as JAX lists them, in shardviz's order."""
    common = set.intersection(*({m.kind for m in d.addressable_memories()} for d in devices))
    return sorted(common, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))


def test_meshes_carry_what_jax_says_about_their_devices():
    tree = multi_mesh_tree()
    payload = shardviz.describe_tree(tree).to_json()
    assert payload["machine_devices"] == jax.device_count() == 12
    meshes = [tree["first"].sharding.mesh, tree["second"]["w"].sharding.mesh]
    assert [m["names"] for m in payload["meshes"]] == [list(m.axis_names) for m in meshes]
    for entry, mesh in zip(payload["meshes"], meshes):
        ids = [d.id for d in mesh.devices.flat]
        assert entry["memory_kinds"] == jax_memory_kinds(mesh.devices.flat)
        assert entry["machine_order"] == (ids == [d.id for d in jax.devices()[: len(ids)]])
        columns = decode_runs(payload["devices"]["id"])
        assert [columns[p] for p in decode_runs(entry["devices"])] == ids
        assert not {"coords", "core_on_chip", "slice_index"} & set(entry)  # CPU devices have none
    assert [m["machine_order"] for m in payload["meshes"]] == [True, False]


def test_an_abstract_mesh_lists_the_kinds_jax_accepts_on_this_machine():
    mesh = AbstractMesh((4, 8), ("data", "model"))
    tree = {"w": jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=NamedSharding(mesh, P("data")))}
    entry = shardviz.describe_tree(tree).to_json()["meshes"][0]
    assert entry["memory_kinds"] == jax_memory_kinds(jax.local_devices()[:1])
    assert entry["machine_order"] is False
    # Every kind listed is one JAX takes for a sharding on this mesh.
    for kind in entry["memory_kinds"]:
        jax.typeof(jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=NamedSharding(mesh, P(), memory_kind=kind)))


def test_leaf_layouts_of_the_parity_trees_are_jax_answers():
    """The Python side of the browser's parity cases, checked against JAX on a sample of random trees."""
    rng = random.Random(7)
    checked = 0
    for _ in range(12):
        tree = random_tree(rng)
        tl = shardviz.describe_tree(tree)
        for i, (_, x) in enumerate(jax.tree_util.tree_flatten_with_path(tree)[0]):
            if not isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
                continue
            layout = tl.leaf_layout(i)
            manual = AxisType.Manual in x.sharding.mesh.axis_types  # JAX's shard_shape does not take them
            if isinstance(x.sharding.mesh, AbstractMesh):  # no index maps on virtual devices: JAX's arithmetic
                if not manual:
                    assert layout.shard_shape == tuple(x.sharding.shard_shape(x.shape))
                assert [d.id for d in layout.devices] == list(range(x.sharding.mesh.size))
            else:
                assert_matches_jax(layout, x.sharding, x.shape, array=x if isinstance(x, jax.Array) else None)
            assert layout.type_str == str(jax.typeof(x)) or layout.memory_kind == "pinned_host"
            payload = layout.to_json()
            mesh = tl.meshes[tl.groups[int(tl.leaf_group[i])].mesh]
            assert payload["memory_kinds"] == list(mesh.memory_kinds)
            assert payload["devices"]["machine_order"] == mesh.machine_order
            assert payload["machine_devices"] == tl.machine_devices
            checked += 1
    assert checked > 20


def test_a_leaf_off_every_mesh_is_left_to_the_kernel():
    devices = jax.devices()
    mesh = Mesh(np.array(devices[:4]), ("x",))
    tree = {"a": jax.device_put(jnp.zeros(4), NamedSharding(mesh, P("x"))), "n": jax.device_put(1, devices[7])}
    payload = shardviz.describe_tree(tree).to_json()
    group = payload["groups"][payload["leaves"]["group"][1]]
    assert group["mesh"] is None and group["sharding"] == SingleDeviceSharding.__name__
    ids = decode_runs(payload["devices"]["id"])
    assert [ids[p] for p in decode_runs(group["devices"])] == [7]


def test_physical_device_attributes_travel_per_mesh():
    """TPU devices carry coords, core_on_chip and slice_index (CPUs have none): each mesh sends its own, in its
    order, run-encoded as the array payload's device columns, so a leaf laid out in the browser keeps them."""
    import dataclasses

    from shardviz.array.model import PhysicalColumns

    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    tl = shardviz.describe_tree({"w": jax.device_put(jnp.zeros((8, 8)), NamedSharding(mesh, P("data")))})
    coords = np.array([[k % 4, k // 4, 0] for k in range(8)], dtype=np.int64)
    physical = PhysicalColumns(
        coords=coords, core_on_chip=np.zeros(8, dtype=np.int64), slice_index=np.ones(8, dtype=np.int64)
    )
    fake = dataclasses.replace(tl, meshes=(dataclasses.replace(tl.meshes[0], physical=physical),))
    entry = fake.to_json()["meshes"][0]
    assert [decode_runs(column) for column in entry["coords"]] == [coords[:, d].tolist() for d in range(3)]
    assert decode_runs(entry["core_on_chip"]) == [0] * 8 and decode_runs(entry["slice_index"]) == [1] * 8
