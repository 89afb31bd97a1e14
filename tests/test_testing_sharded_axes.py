"""``assert_sharded`` sizes each leaf's mesh axes by the leaf's own mesh.

Two meshes of one tree may give an axis name two sizes: a leaf split only by
an axis of size 1 on its own mesh is held whole on every device, however
large the same name is on another mesh.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.testing import NotShardedEnough, assert_sharded


def test_a_leaf_split_only_by_a_size_one_axis_is_not_sharded():
    devices = jax.devices()
    one_wide = Mesh(np.asarray(devices[:4]).reshape(1, 4), ("x", "y"))  # x has size 1 here
    four_wide = Mesh(np.asarray(devices[4:8]).reshape(4, 1), ("x", "y"))  # and size 4 here
    big = jax.device_put(jnp.ones((1024, 8)), NamedSharding(one_wide, P("x")))
    small = jax.device_put(jnp.ones((64, 8)), NamedSharding(four_wide, P("x")))
    # JAX holds the big leaf whole on each of its devices: the axis it names has size 1
    assert big.addressable_shards[0].data.shape == (1024, 8)
    assert small.addressable_shards[0].data.shape == (16, 8)
    tree = {"big": big, "small": small}
    # by hand: only small is split, 64*8*4 B of 1024*8*4 + 64*8*4 B
    fraction = (64 * 8 * 4) / (1024 * 8 * 4 + 64 * 8 * 4)
    assert assert_sharded(tree, 0.0) == pytest.approx(fraction)
    with pytest.raises(NotShardedEnough, match=r"big  float32\[1024,8\]"):
        assert_sharded(tree, 0.5)
    with pytest.raises(NotShardedEnough):
        assert_sharded(tree, 0.5, axes="x")
