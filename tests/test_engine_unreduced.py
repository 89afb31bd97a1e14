"""An array left unreduced over a mesh axis (``P('x', unreduced={'y'})``, ``{U:y}`` in its type).

JAX's own answers: ``jax.typeof``'s string, and ``addressable_shards``, whose
data on the devices along ``y`` are partial sums that add up to the product.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.array.checks import check_spec, spec_partitions


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


@pytest.fixture(scope="module")
def product(mesh):
    """``a @ b`` with the contraction over ``y`` left unsummed, and the summed product to compare."""
    a_host = np.arange(64, dtype=np.float32).reshape(8, 8)
    b_host = np.arange(64, dtype=np.float32).reshape(8, 8) % 5
    with jax.set_mesh(mesh):
        a = jax.device_put(a_host, P("x", "y"))
        b = jax.device_put(b_host, P("y", None))
        partial = jax.jit(lambda a, b: jnp.matmul(a, b, out_sharding=P("x", unreduced={"y"})))(a, b)
    return partial, a_host @ b_host


def test_describe_lays_out_an_unreduced_array_as_jax_types_it(product):
    partial, _ = product
    assert "{U:y}" in str(jax.typeof(partial))  # JAX's own word that y is unreduced
    layout = shardviz.describe(partial)
    assert layout.type_str == str(jax.typeof(partial))
    assert layout.unreduced == ("y",)
    assert layout.spec == (("x",), ())
    assert all(s.data.shape == layout.shard_shape for s in partial.addressable_shards)


def test_the_devices_of_one_tile_hold_partial_sums_that_add_up_to_its_block(product):
    """Each tile's holders are the 4 devices along y; their shards differ, and sum to the product's rows."""
    partial, whole = product
    layout = shardviz.describe(partial)
    data = {s.device.id: np.asarray(s.data) for s in partial.addressable_shards}
    assert len(layout.tiles) == 2
    for tile in layout.tiles:
        assert len(tile.device_ids) == 4
        addends = [data[d] for d in tile.device_ids]
        assert not all(np.array_equal(addends[0], other) for other in addends[1:])  # not copies
        rows = slice(tile.start[0], tile.stop[0])
        np.testing.assert_allclose(sum(addends), whole[rows])


def test_the_picture_says_partial_sums_not_copies(product):
    text = shardviz.render_text(shardviz.describe(product[0]), width=100, color=False)
    assert "2 tiles × 4 partial sums" in text
    assert "unreduced over y=4" in text
    assert "copies," not in text


def test_a_shape_dtype_struct_with_unreduced_axes_is_laid_out_too(mesh):
    sharding = NamedSharding(mesh, P("x", unreduced={"y"}))
    struct = jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=sharding)
    layout = shardviz.describe(struct)
    assert layout.type_str == str(jax.typeof(struct)) and "{U:y}" in layout.type_str
    assert layout.unreduced == ("y",) and layout.shard_shape == (4, 8)


def test_a_plainly_replicated_array_still_says_copies(mesh):
    layout = shardviz.describe(NamedSharding(mesh, P("x")), shape=(8, 8))
    assert layout.unreduced == ()
    assert "2 tiles × 4 copies" in shardviz.render_text(layout, width=100, color=False)


def test_devices_that_also_hold_copies_of_partial_sums_are_holders():
    """By hand: on x=2, y=2, z=2 a tile of P('x', unreduced={'y'}) has 4 holders, 2 addends (y) held twice (z)."""
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Explicit,) * 3)
    layout = shardviz.describe(NamedSharding(mesh, P("x", unreduced={"y"})), shape=(8, 8))
    text = shardviz.render_text(layout, width=100, color=False)
    assert "2 tiles × 4 holders" in text and "4 partial sums" not in text
    assert "unreduced over y=2: the devices along y hold partial sums" in text


def test_two_unreduced_axes_are_both_named():
    """By hand: P('x', unreduced={'y', 'z'}) on x=2, y=2, z=2 leaves 4 addends per tile, one per device."""
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Explicit,) * 3)
    sharding = NamedSharding(mesh, P("x", unreduced={"y", "z"}))
    layout = shardviz.describe(jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=sharding))
    assert layout.type_str == str(jax.typeof(jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=sharding)))
    assert layout.type_str.endswith("{U:(y,z)}")  # as JAX prints it
    assert layout.unreduced == ("y", "z")
    text = shardviz.render_text(layout, width=120, color=False)
    assert "2 tiles × 4 partial sums" in text
    assert "unreduced over y=2 × z=2: the devices along y/z hold partial sums" in text


def test_a_single_device_array_has_no_unreduced_axes():
    layout = shardviz.describe(jax.device_put(np.zeros((4, 4), np.float32), jax.devices()[0]))
    assert layout.unreduced == ()
    assert "unreduced" not in shardviz.render_text(layout, width=100, color=False)


def test_the_checks_read_a_specs_partitions_or_plain_entries(mesh):
    assert spec_partitions(P("x", None, unreduced={"y"})) == ("x", None)
    assert spec_partitions(("x", None)) == ("x", None)
    check_spec(mesh, ("x", None), (8, 8))  # plain entries, as the editors pass them, fit
    with pytest.raises(shardviz.ShardingError, match="dimension 0 has size 3"):
        check_spec(mesh, P("x", unreduced={"y"}), (3, 8))
