"""shardviz.testing.assert_fits and assert_sharded against JAX's own answers.

A program's figure is read from ``Compiled.memory_analysis()``; a tree's
per-device bytes from each array's ``addressable_shards``; which leaves are
sharded from ``sharding.is_fully_replicated``.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import MemoryBudgetExceeded, NotShardedEnough, assert_fits, assert_sharded
from shardviz.text.ranges import format_bytes

MESH = Mesh(
    np.asarray(jax.devices()[:8]).reshape(4, 2), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Explicit)
)


def put(shape, spec, dtype=jnp.float32):
    return jax.device_put(jnp.ones(shape, dtype), NamedSharding(MESH, spec))


def params():
    return {
        "embed": put((64, 32), P(None, "model")),
        "w_big": put((64, 64), P()),  # replicated: the largest leaf
        "w_out": put((32, 16), P("data", "model")),
        "bias": put((16,), P()),
        "step": 3,  # not an array: costs nothing
    }


def device_bytes_from_jax(tree) -> dict[int, int]:
    """Bytes each device holds of the tree's arrays, summed from their addressable shards."""
    out: dict[int, int] = {}
    for leaf in jax.tree.leaves(tree):
        if isinstance(leaf, jax.Array):
            for shard in leaf.addressable_shards:
                out[shard.device.id] = out.get(shard.device.id, 0) + shard.data.nbytes
    return out


def sharded_fraction_from_jax(tree) -> float:
    arrays = [x for x in jax.tree.leaves(tree) if isinstance(x, jax.Array)]
    return sum(x.nbytes for x in arrays if not x.sharding.is_fully_replicated) / sum(x.nbytes for x in arrays)


# ---------------------------------------------------------------------------- assert_fits


def step(p, x):
    h = jnp.tanh(x @ p["w_big"])
    return h @ p["embed"]


def test_a_program_fits_by_memory_analysis_both_ways():
    p = {k: v for k, v in params().items() if k != "step"}
    x = put((16, 64), P("data"))
    prog = shardviz.trace(step, p, x)
    m = jax.jit(step).lower(p, x).compile().memory_analysis()
    figure = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    assert assert_fits(prog, figure) == figure
    assert_fits(prog, f"{figure} B")
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(prog, figure - 1)
    message = str(info.value)
    assert f"the program step needs {format_bytes(figure)} ({figure} B) per device" in message
    assert (
        f"arguments {format_bytes(m.argument_size_in_bytes)}, outputs {format_bytes(m.output_size_in_bytes)}" in message
    )
    # the largest argument per device is the replicated w_big, as JAX lays it out
    per_device = {jax.tree_util.keystr(k): v.addressable_shards[0].data.nbytes for k, v in jax.tree.leaves_with_path(p)}
    assert max(per_device, key=per_device.get) == "['w_big']"
    first_argument = message.split("largest arguments, per device:\n")[1].splitlines()[0]
    assert first_argument.split() == [
        *format_bytes(per_device["['w_big']"]).split(),
        "p['w_big']",
        str(jax.typeof(p["w_big"])),
    ]
    assert info.value.subject is prog


def test_donation_counts_aliased_bytes_once():
    x = put((64, 64), P("data"))
    donated = jax.jit(lambda a: a * 2, donate_argnums=0)
    prog = shardviz.trace(donated, x)
    m = donated.lower(x).compile().memory_analysis()
    figure = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    assert assert_fits(prog, figure) == figure


def test_a_tree_fits_by_its_fullest_device_both_ways():
    p = params()
    truth = device_bytes_from_jax(p)
    most = max(truth.values())
    assert assert_fits(p, most) == most
    assert assert_fits(shardviz.describe_tree(p), most) == most
    with pytest.raises(MemoryBudgetExceeded) as info:
        assert_fits(p, most - 1)
    message = str(info.value)
    assert f"the tree needs {format_bytes(most)} ({most} B) per device" in message
    fullest = sorted(d for d, n in truth.items() if n == most)
    assert f"on device {', '.join(map(str, fullest))}" in message
    leaves = message.split("largest leaves, bytes each device holds:\n")[1].splitlines()
    assert "w_big" in leaves[0] and format_bytes(p["w_big"].addressable_shards[0].data.nbytes) in leaves[0]
    assert str(jax.typeof(p["w_big"])) in leaves[0]


def test_one_array_fits_by_its_shard_both_ways():
    x = put((64, 32), P("data", "model"))
    per_device = x.addressable_shards[0].data.nbytes
    assert assert_fits(x, per_device) == per_device
    with pytest.raises(
        MemoryBudgetExceeded, match=rf"{re.escape(str(jax.typeof(x)))} holds 1.0 KiB \({per_device} B\) on each device"
    ):
        assert_fits(x, per_device - 1)


def test_what_if_trees_on_an_abstract_mesh():
    mesh = AbstractMesh((64, 64), ("data", "model"))
    tree = {"w": jax.ShapeDtypeStruct((8192, 8192), jnp.bfloat16, sharding=NamedSharding(mesh, P("data", "model")))}
    per_device = 8192 * 8192 * 2 // 4096
    assert assert_fits(tree, "32 KiB") == per_device == 32 * 1024
    with pytest.raises(MemoryBudgetExceeded):
        assert_fits(tree, "31 KiB")


@pytest.mark.parametrize(
    ("budget", "fragment"),
    [
        ("16 parsecs", "is not a size"),
        ([16], "must be a byte count"),
        (None, "must be a byte count"),
        (-5, "0 or more bytes"),
        (float("inf"), "whole number of bytes"),
    ],
)
def test_bad_budgets_raise_sharding_error(budget, fragment):
    with pytest.raises(shardviz.ShardingError, match=fragment):
        assert_fits(params(), budget)


@pytest.mark.parametrize(
    ("text", "count"),
    [("16 GiB", 16 * 2**30), ("16GiB", 16 * 2**30), ("1.5 MiB", 3 * 2**19), ("2 GB", 2 * 10**9), ("512", 512)],
)
def test_budget_strings(text, count):
    assert shardviz.testing.parse_bytes(text, "budget") == count


# ---------------------------------------------------------------------------- assert_sharded


def test_sharded_fraction_both_ways():
    p = params()
    fraction = sharded_fraction_from_jax(p)
    assert 0 < fraction < 1
    assert assert_sharded(p, fraction) == pytest.approx(fraction)
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(p, min(1.0, fraction + 0.01))
    message = str(info.value)
    assert message.startswith(f"{fraction:.1%} of the tree's")
    listed = message.splitlines()[2:]
    # the biggest replicated leaves by path, largest first, as JAX says they are replicated
    replicated = sorted(
        (
            (path, x)
            for path, x in jax.tree.leaves_with_path(p)
            if isinstance(x, jax.Array) and x.sharding.is_fully_replicated
        ),
        key=lambda kv: -kv[1].nbytes,
    )
    assert [jax.tree_util.keystr(path) for path, _ in replicated] == ["['w_big']", "['bias']"]
    assert listed[0].startswith("  w_big  float32[64,64]  16 KiB")
    assert "replicated over data, model" in listed[0]
    assert any(line.startswith("  bias ") for line in listed)
    assert info.value.subject.leaf_count == 5


def test_sharded_over_named_axes_follows_maxtext():
    """With axes=, a leaf counts only when split by every named axis (MaxText's fsdp check)."""
    p = params()
    both = [x for x in jax.tree.leaves(p) if isinstance(x, jax.Array) and set(x.sharding.spec) >= {"data", "model"}]
    arrays = [x for x in jax.tree.leaves(p) if isinstance(x, jax.Array)]
    fraction = sum(x.nbytes for x in both) / sum(x.nbytes for x in arrays)
    assert assert_sharded(p, fraction, axes=("data", "model")) == pytest.approx(fraction)
    with pytest.raises(NotShardedEnough, match=r"split by every one of data, model"):
        assert_sharded(p, 0.5, axes=("data", "model"))
    assert assert_sharded(p, 0.0, axes="model") > fraction


def test_a_mesh_of_one_device_on_a_machine_of_many_is_not_sharded():
    one = Mesh(np.asarray(jax.devices()[:1]).reshape(1, 1), ("data", "model"))
    tree = shardviz.describe_tree({"w": jax.device_put(jnp.ones((8, 8)), NamedSharding(one, P()))})
    assert tree.machine_devices == jax.device_count() > 1
    with pytest.raises(
        NotShardedEnough, match=r"w  float32\[8,8\]  256 B, 256 B per device, on a mesh with no axis larger"
    ):
        assert_sharded(tree, 1.0)
    # where the process has one device, nothing can be split and the check passes
    assert assert_sharded(dataclasses.replace(tree, machine_devices=1), 1.0) == 1.0
    # MaxText: sharding axes of size 1 ask for nothing
    assert assert_sharded(tree, 1.0, axes=("data",)) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"min_fraction": 1.5}, "min_fraction must be a number from 0 to 1"),
        ({"min_fraction": "0.9"}, "min_fraction must be a number from 0 to 1"),
        ({"min_fraction": 0.5, "axes": ("fsdp",)}, "axes names 'fsdp', which no mesh of the tree has"),
        ({"min_fraction": 0.5, "axes": (1,)}, "axes names mesh axes"),
    ],
)
def test_bad_sharded_arguments_raise_sharding_error(kwargs, fragment):
    with pytest.raises(shardviz.ShardingError, match=fragment):
        assert_sharded(params(), **kwargs)


def test_a_leaf_on_no_mesh_counts_as_not_sharded():
    loose = jnp.ones((256, 256))  # committed to one device, no mesh
    assert isinstance(loose.sharding, jax.sharding.SingleDeviceSharding)
    tree = {"w": put((256, 256), P("data", "model")), "loose": loose}
    with pytest.raises(NotShardedEnough) as info:
        assert_sharded(tree, 0.9)
    message = str(info.value)
    assert message.startswith("50.0% of the tree's 512 KiB is sharded")
    assert "1 leaf, 256 KiB, is not; the largest:" in message
    assert "  loose  float32[256,256]  256 KiB, 256 KiB per device, on one device, on no mesh" in message
