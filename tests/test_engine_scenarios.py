"""The tutorials' scenarios, by name, each checked against JAX's own answers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from jax_truth import assert_matches_jax


@pytest.fixture
def mesh_2x4():
    return jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])


def test_2x4_mesh_with_x_y(mesh_2x4):
    arr = jnp.arange(32.0).reshape(4, 8)
    x = jax.device_put(arr, NamedSharding(mesh_2x4, P("x", "y")))
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, x.shape, array=x)
    assert layout.type_str == "float32[4@x,8@y]"
    assert len(layout.tiles) == 8 and layout.shard_shape == (2, 2)
    assert np.array_equal(np.asarray(arr), np.asarray(x))  # nothing was changed


def test_jit_sum_axis0_is_replicated_over_x_as_cpu_0_and_4(mesh_2x4):
    """The tutorial's 'CPU 0,4': summing away x leaves each column block on two devices."""
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh_2x4, P("x", "y")))
    result = jax.jit(lambda a: a.sum(axis=0))(x)
    layout = shardviz.describe(result)
    assert_matches_jax(layout, result.sharding, result.shape, array=result)
    assert layout.spec == (("y",),)
    first = layout.tiles[0]
    assert first.device_ids == (0, 4) and (first.start, first.stop) == ((0,), (2,))
    assert sorted(d.replica_id for d in layout.devices if d.tile == 0) == [0, 1]


def test_elementwise_keeps_the_sharding(mesh_2x4):
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh_2x4, P("x", "y")))
    y = jax.jit(lambda a: 2 * jnp.sin(a) + 1)(x)
    assert shardviz.describe(y).tiles == shardviz.describe(x).tiles


def test_explicit_mesh_int32_4_at_X_2():
    mesh = jax.make_mesh(
        (2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit), devices=jax.devices()[:8]
    )
    x = jax.device_put(np.arange(8, dtype=np.int32).reshape(4, 2), NamedSharding(mesh, P("X", None)))
    layout = shardviz.describe(x)
    assert layout.type_str == "int32[4@X,2]" == str(jax.typeof(x))
    assert_matches_jax(layout, x.sharding, x.shape, array=x)


def test_broadcast_add_gives_4_at_X_8_at_Y():
    mesh = jax.make_mesh(
        (2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit), devices=jax.devices()[:8]
    )
    col = jax.device_put(np.arange(4, dtype=np.int32).reshape(4, 1), NamedSharding(mesh, P("X", None)))
    row = jax.device_put(np.arange(8, dtype=np.int32).reshape(1, 8), NamedSharding(mesh, P(None, "Y")))
    z = jax.jit(lambda a, b: a + b)(col, row)
    layout = shardviz.describe(z)
    assert layout.type_str == "int32[4@X,8@Y]" == str(jax.typeof(z))
    assert_matches_jax(layout, z.sharding, z.shape, array=z)


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_axis_order_inside_one_entry(order):
    """P(('a','b'), None) walks the 2x2 mesh row-major; ('b','a') column-major."""
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    x = jax.device_put(jnp.zeros((8, 4)), NamedSharding(mesh, P(order, None)))
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, x.shape, array=x)
    rows = [t.device_ids for t in layout.tiles]
    assert rows == ([(0,), (1,), (2,), (3,)] if order == ("a", "b") else [(0,), (2,), (1,), (3,)])


@pytest.mark.parametrize("kind", ["device", "pinned_host", "unpinned_host"])
def test_memory_kinds(mesh_2x4, kind):
    x = jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh_2x4, P("x", "y"), memory_kind=kind))
    layout = shardviz.describe(x)
    assert layout.memory_kind == kind == x.sharding.memory_kind
    assert set(layout.memory_kinds) == {m.kind for m in jax.devices()[0].addressable_memories()}
    assert_matches_jax(layout, x.sharding, x.shape, array=x)
    assert ("<host>" in layout.type_str) == (kind == "pinned_host")


def test_one_dimensional_array_over_8_devices():
    mesh = jax.make_mesh((8,), ("d",), devices=jax.devices()[:8])
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d")))
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, x.shape, array=x)
    assert [t.device_ids for t in layout.tiles] == [(i,) for i in range(8)]


def test_shard_map_outputs(mesh_2x4):
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh_2x4, P("x", "y")))
    doubled = jax.shard_map(lambda b: b * 2, mesh=mesh_2x4, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)
    summed = jax.shard_map(lambda b: jax.lax.psum(b, "x"), mesh=mesh_2x4, in_specs=P("x", "y"), out_specs=P(None, "y"))(
        x
    )
    for out in (doubled, summed):
        assert_matches_jax(shardviz.describe(out), out.sharding, out.shape, array=out)
    assert shardviz.describe(summed).type_str == str(jax.typeof(summed))


def test_auto_mesh_has_no_axis_annotations():
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P("x", "y")))
    layout = shardviz.describe(x)
    assert layout.type_str == "float32[4,8]" == str(jax.typeof(x))
    assert layout.mesh.axis_types == ("Auto", "Auto")


def test_tuple_entry_typeof_grammar():
    mesh = jax.make_mesh((2, 2, 3), ("X", "Y", "Z"))
    sharding = NamedSharding(mesh, P(("X", "Y"), "Z"))
    x = jax.device_put(jnp.zeros((8, 6)), sharding)
    assert shardviz.describe(x).type_str == "float32[8@(X,Y),6@Z]"
    assert shardviz.describe(sharding, shape=(8, 6)).type_str == "float32[8@(X,Y),6@Z]"


def test_scalar_and_fully_replicated(mesh_2x4):
    x = jax.device_put(jnp.float32(3.0), NamedSharding(mesh_2x4, P()))
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, (), array=x)
    assert layout.is_fully_replicated and len(layout.tiles) == 1
    assert layout.tiles[0].device_ids == tuple(range(8))


def test_what_if_on_a_pod_slice_larger_than_the_machine():
    for sizes in ((16, 16, 16), (8, 8, 140)):
        mesh = jax.sharding.AbstractMesh(sizes, ("a", "b", "c"))
        layout = shardviz.describe(NamedSharding(mesh, P("a", ("b", "c"))), shape=(256, 8960 * 4))
        n = int(np.prod(sizes))
        assert layout.device_count == n and len(layout.tiles) == n
        assert layout.shard_shape == NamedSharding(mesh, P("a", ("b", "c"))).shard_shape((256, 8960 * 4))
        assert layout.mesh.abstract and not any(d.addressable for d in layout.devices[:3])
        payload = layout.to_json()
        assert payload["devices"]["count"] == n


def test_payload_does_not_grow_with_the_array(mesh_2x4):
    import json

    small = shardviz.describe(NamedSharding(mesh_2x4, P("x", "y")), shape=(4, 8))
    large = shardviz.describe(NamedSharding(mesh_2x4, P("x", "y")), shape=(4 * 10**6, 8 * 10**6))
    grow = len(json.dumps(large.to_json())) - len(json.dumps(small.to_json()))
    # Only the digits of the shape and cut points change.
    assert grow < 200


def test_describe_never_reads_addressable_shards(mesh_2x4, monkeypatch):
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh_2x4, P("x", "y")))

    def forbidden(self):
        raise AssertionError("describe read addressable_shards")

    monkeypatch.setattr(type(x), "addressable_shards", property(forbidden))
    layout = shardviz.describe(x)
    layout.to_json()
    assert len(layout.devices) == 8
