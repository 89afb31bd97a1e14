"""What-if trees on an AbstractMesh: no devices needed, checked against shard_shape arithmetic.

The trees come from ``jax.eval_shape(jax.jit(init, out_shardings=...), key)``
under ``jax.sharding.use_abstract_mesh``, as a user plans a run on a pod
slice this machine does not have (4096 and 8960 devices).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError
from tree_truth import array_leaves, shard_shape_device_bytes

VOCAB, MODEL, HIDDEN, LAYERS = 32000, 5120, 10240, 4  # divisible by 16 x 16 and by 16 x 20


class ScaleByAdamState(NamedTuple):  # optax's Adam state, built by hand
    count: Any
    mu: Any
    nu: Any


def init_params(key):
    keys = jax.random.split(key, 1 + 2 * LAYERS)
    return {
        "embed": jax.random.normal(keys[0], (VOCAB, MODEL), jnp.bfloat16),
        "layers": [
            {
                "mlp_in": jax.random.normal(keys[1 + 2 * i], (MODEL, HIDDEN), jnp.bfloat16),
                "mlp_out": jax.random.normal(keys[2 + 2 * i], (HIDDEN, MODEL), jnp.bfloat16),
                "norm": jnp.ones((MODEL,), jnp.float32),
            }
            for i in range(LAYERS)
        ],
    }


def init_train_state(key):
    params = init_params(key)
    adam = ScaleByAdamState(
        count=jnp.zeros((), jnp.int32),
        mu=jax.tree.map(lambda p: jnp.zeros(p.shape, jnp.float32), params),
        nu=jax.tree.map(lambda p: jnp.zeros(p.shape, jnp.float32), params),
    )
    return {"params": params, "opt_state": adam, "step": jnp.zeros((), jnp.int32)}


def fsdp_shardings(mesh: AbstractMesh, state_shapes) -> Any:
    """Matrices split over (data, model) on their first dimension; vectors and scalars replicated."""

    def spec_for(x):
        if len(x.shape) == 2:
            return NamedSharding(mesh, P(tuple(mesh.axis_names[:2]), None))
        return NamedSharding(mesh, P())

    return jax.tree.map(spec_for, state_shapes)


def what_if(mesh: AbstractMesh):
    with jax.sharding.use_abstract_mesh(mesh):
        key = jax.eval_shape(lambda: jax.random.key(0))
        shapes = jax.eval_shape(init_train_state, key)
        shardings = fsdp_shardings(mesh, shapes)
        return jax.eval_shape(jax.jit(init_train_state, out_shardings=shardings), key)


@pytest.mark.parametrize(
    ("sizes", "names"),
    [((16, 16, 16), ("data", "model", "seq")), ((16, 20, 28), ("data", "model", "seq"))],
    ids=["4096", "8960"],
)
def test_eval_shape_tree_on_a_pod_slice(sizes, names):
    mesh = AbstractMesh(sizes, names, axis_types=(AxisType.Explicit,) * 3)
    state = what_if(mesh)
    tl = shardviz.describe_tree(state)
    n = math.prod(sizes)
    assert tl.device_count == n and tl.mesh is not None and tl.mesh.abstract
    # Virtual ids 0..N-1, each holding the shard_shape arithmetic's bytes.
    assert list(tl.device_bytes) == list(range(n))
    assert {k: dict(v) for k, v in tl.device_bytes_by_kind.items()} == shard_shape_device_bytes(state)
    for leaf, (where, x) in zip(tl.leaves, array_leaves(state), strict=True):
        assert leaf.type_str == str(jax.typeof(x)), where
        assert leaf.shard_shape == tuple(x.sharding.shard_shape(x.shape)), where
        assert leaf.bytes_per_device == math.prod(x.sharding.shard_shape(x.shape)) * x.dtype.itemsize
        assert not leaf.has_array
    assert tl.total_bytes == sum(math.prod(x.shape) * x.dtype.itemsize for _, x in array_leaves(state))
    # seq splits nothing, so every leaf is replicated over it; model splits only the matrices.
    assert tl.replicated_bytes["seq"] == tl.device_bytes[0]
    norms = [leaf for leaf in tl.leaves if leaf.path.endswith("norm")]
    assert norms and all(leaf.replicated_axes == names and leaf.replication == n for leaf in norms)


def test_what_if_audit_names_the_replicated_embedding():
    """The issue's example: embed is replicated over model, whose 4 divide its dim 1 (4096)."""
    mesh = AbstractMesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    tree = {
        "embed": jax.ShapeDtypeStruct((8192, 4096), jnp.float32, sharding=NamedSharding(mesh, P("data", None))),
        "w": jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16, sharding=NamedSharding(mesh, P("data", "model"))),
    }
    tl = shardviz.describe_tree(tree)
    first = tl.audit.replicated[0]
    assert first.message == (
        "embed is replicated over model; dim 1 (4096) is divisible by model=4: sharding it saves 48 MiB per device"
    )
    assert (first.path, first.axis, first.dim, first.saving) == ("embed", "model", 1, 48 * 2**20)
    # JAX agrees that splitting dim 1 over model frees that much per device.
    split = NamedSharding(mesh, P("data", "model"))
    after = math.prod(split.shard_shape((8192, 4096))) * 4
    assert tl.leaves[0].bytes_per_device - after == first.saving
    assert tl.audit.replicated_count == 1 and dict(tl.audit.replicated_saving) == {"model": first.saving}
    assert tl.audit.largest == (0, 1)
    assert tl.audit.imbalance is None


def test_audit_prefers_a_dimension_not_yet_split_and_says_when_it_is():
    mesh = AbstractMesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    odd = jax.ShapeDtypeStruct((64, 6), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    tl = shardviz.describe_tree(
        {"odd": odd, "scalar": jax.ShapeDtypeStruct((), jnp.float32, sharding=NamedSharding(mesh, P()))}
    )
    (finding,) = tl.audit.replicated  # a scalar has no dimension to split
    # dim 1 (6) is divisible by model=2 and not yet split: it wins over dim 0.
    assert (finding.dim, finding.shard_extent) == (1, 6)
    tl = shardviz.describe_tree(
        {"odd": jax.ShapeDtypeStruct((64, 5), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))}
    )
    (finding,) = tl.audit.replicated
    assert (finding.dim, finding.dim_size, finding.shard_extent) == (0, 64, 16)
    assert "dim 0 (64, 16 per shard) is divisible by model=2" in finding.message
    assert NamedSharding(mesh, P(("data", "model"), None)).shard_shape((64, 5)) == (8, 5)
    assert finding.saving == 16 * 5 * 4 - 8 * 5 * 4


def test_auto_axes_and_memory_kinds_on_an_abstract_mesh():
    mesh = AbstractMesh((8, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Explicit))
    tree = {
        "a": jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=NamedSharding(mesh, P("x", "y"))),
        "h": jax.ShapeDtypeStruct((16,), jnp.float32, sharding=NamedSharding(mesh, P("x"), memory_kind="pinned_host")),
    }
    tl = shardviz.describe_tree(tree)
    assert tl.leaves[0].type_str == str(jax.typeof(tree["a"])) == "float32[16,4@y]"
    # typeof of a ShapeDtypeStruct drops the host space that the real array shows; the tree
    # says what the array would say, as shardviz.describe does.
    assert tl.leaves[1].type_str == shardviz.describe(tree["h"]).type_str == "float32<host>[16]"
    assert {k: dict(v) for k, v in tl.device_bytes_by_kind.items()} == shard_shape_device_bytes(tree)


def test_sentinel_like_axis_names_fall_back_to_typeof_per_leaf():
    """Axis names made of digits could confuse the cut of the typeof string: then JAX types each leaf."""
    from shardviz.tree import describe as tree_describe

    # The stand-in size for dimension 1 (unsplit), spelled as an axis name that splits dimension 0.
    name = str(tree_describe._SENTINEL_BASE + 2)
    mesh = AbstractMesh((2,), (name,), axis_types=(AxisType.Explicit,))
    sharding = NamedSharding(mesh, P(name))
    tree = [jax.ShapeDtypeStruct((2 * k, 3), jnp.float32, sharding=sharding) for k in (1, 2, 3)]
    tl = shardviz.describe_tree(tree)
    assert [leaf.type_str for leaf in tl.leaves] == [str(jax.typeof(x)) for x in tree]
    assert sorted(tl.type_overrides) == [0, 1, 2]  # each typed by JAX itself
    payload = tl.to_json()
    assert payload["groups"][0]["type"] == [] and payload["leaves"]["type"][0] == [0, str(jax.typeof(tree[0]))]


def test_eval_shape_without_out_shardings_names_the_leaf_with_none():
    mesh = AbstractMesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.sharding.use_abstract_mesh(mesh):
        key = jax.eval_shape(lambda: jax.random.key(0))
        shapes = jax.eval_shape(init_train_state, key)
    with pytest.raises(ShardingError, match=r"leaf 'opt_state.count' \(int32\[\]\) has no sharding"):
        shardviz.describe_tree(shapes)
