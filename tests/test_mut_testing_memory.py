"""assert_fits on trees placed by hand: the fullest device, leaves in host memory, the message's parts.

Arrays sit on a mesh fsdp=4 tp=2 of the simulated devices (nothing is traced).
A float32[16,8] (512 B) split over fsdp holds 128 B on each device; the same
array in pinned host memory, replicated, 512 B on each device's host.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.testing.errors import MemoryBudgetExceeded
from shardviz.testing.memory import _tree_device_bytes, assert_fits
from shardviz.tree.describe import describe_tree


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(4, 2), ("fsdp", "tp"), axis_types=(AxisType.Explicit,) * 2)


def test_leaves_in_host_memory_are_not_counted_and_are_said(mesh):
    split = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("fsdp")))
    host = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P(), memory_kind="pinned_host"))
    tree = {"d": split, "h": host, "n": 3}
    assert assert_fits(tree, 128) == 128
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(tree, 10)
    assert str(info.value).splitlines() == [
        "the tree needs 128 B per device, over the budget of 10 B by 118 B",
        "  on device 0, 1, 2, 3, 4, 5, 6, 7 (leaves in device memory)",
        "",
        "largest leaves, bytes each device holds:",
        "      512 B  h  float32<host>[16,8]",
        "      128 B  d  float32[16@fsdp,8]",
        "(leaves in host memory, not counted: up to 512 B per device)",
        "if this is intended, raise bytes_per_device to 128 B or more",
    ]
    assert info.value.page.budget == "10 B per device" and info.value.page.figure == "128 B per device"


def test_more_than_eight_fullest_devices_are_counted(mesh):
    twelve = Mesh(np.asarray(jax.devices()[:12]), ("x",))
    tree = {
        "r": jax.device_put(jnp.ones(4), NamedSharding(twelve, P())),
        "s": jax.device_put(jnp.ones(4), NamedSharding(twelve, P())),
    }
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(tree, 1)
    lines = str(info.value).splitlines()
    assert lines[:2] == [
        "the tree needs 32 B per device, over the budget of 1 B by 31 B",
        "  on device 0, 1, 2, 3, 4, 5, 6, 7 and 4 more (leaves in device memory)",
    ]
    assert lines[4:6] == ["       16 B  r  float32[4]", "       16 B  s  float32[4]"]  # equal: in the tree's order
    assert lines[6] == "if this is intended, raise bytes_per_device to 32 B or more"
    eight = {"r": jax.device_put(jnp.ones(4), NamedSharding(mesh, P()))}
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(eight, 1)
    assert str(info.value).splitlines()[1] == "  on device 0, 1, 2, 3, 4, 5, 6, 7 (leaves in device memory)"


def test_the_fullest_device_adds_every_device_memory_kind():
    tree = SimpleNamespace(
        device_count=2,
        bytes_by_kind={"device": np.array([10, 30]), "hbm": np.array([25, 1]), "pinned_host": np.array([99, 99])},
    )
    assert _tree_device_bytes(tree) == 35
    assert _tree_device_bytes(SimpleNamespace(device_count=0, bytes_by_kind={})) == 0


def test_a_tree_on_no_device_needs_nothing():
    assert assert_fits(describe_tree({}), 0) == 0
    assert assert_fits(describe_tree({"a": np.ones(3)}), 0) == 0


@pytest.mark.parametrize(
    ("tree", "what"),
    [({}, "an empty tree"), ({"step": 3, "name": None, "lr": 0.1}, "a tree of 3 leaves, no array among them")],
)
def test_a_tree_with_no_array_is_refused_saying_what_it_was(tree, what):
    """A None leaf counts as a leaf, as the tree view shows it."""
    from shardviz.errors import ShardingError
    from shardviz.testing.memory import assert_sharded

    with pytest.raises(ShardingError) as info:
        assert_sharded(tree)
    assert str(info.value) == f"assert_sharded has nothing to check: it was given {what}; pass the parameters"


def test_more_than_ten_leaves_not_sharded_are_counted_and_those_on_no_mesh_told_how_to_place(mesh):
    from shardviz.testing.errors import NotShardedEnough
    from shardviz.testing.memory import assert_sharded

    tree = {f"r{k:02d}": jax.device_put(jnp.ones(4), NamedSharding(mesh, P())) for k in range(11)}
    tree["loose"] = jnp.ones(2)
    tree["host"] = np.ones(2, np.float32)
    tree["split"] = jax.device_put(jnp.ones((64, 8)), NamedSharding(mesh, P("fsdp")))
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(tree, 0.99)
    lines = str(info.value).splitlines()
    assert "  ... and 3 more" in lines
    assert lines[-1] == (
        "2 of them are on no mesh: place each with jax.device_put(x, NamedSharding(mesh, P(...))) "
        "(or jax.jit's out_shardings) before the step"
    )


def test_one_array_over_its_budget_says_its_shard_in_plain_text_with_a_page(mesh):
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("fsdp", "tp")))  # 512 B / 8 = 64 B each
    assert assert_fits(x, 64) == 64
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(x, "63 B")
    lines = str(info.value).splitlines()
    assert lines[:2] == ["float32[16@fsdp,8@tp] holds 64 B on each device, over the budget of 63 B per device", ""]
    assert lines[-1] == "if this is intended, raise bytes_per_device to 64 B or more"
    assert "\x1b[" not in str(info.value)
    assert info.value.page.budget == "63 B per device" and info.value.page.figure == "64 B per device"
    assert info.value.subject.shard_bytes == 64
