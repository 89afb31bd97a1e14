"""The leaf table's spec column reads each leaf's group spec from the tree payload and writes it as
Python writes a PartitionSpec, with no trailing None (js/payload/tree.ts, ``leafSpec``). On an Auto
mesh the type string names no axis, so this is the only place a leaf's sharding shows: the payload's
spec, so written, must be JAX's own ``leaf.sharding.spec`` where the leaf's spec has no trailing None,
and lay the leaf out as JAX does where it has."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz


def column_spec(group: dict) -> P:
    """The spec the column writes for a group: its entries, trailing unsplit ones dropped."""
    entries = [None if not axes else axes[0] if len(axes) == 1 else tuple(axes) for axes in group["spec"]]
    while entries and entries[-1] is None:
        entries.pop()
    return P(*entries)


def test_each_leafs_spec_in_the_payload_is_jaxs_on_an_auto_mesh() -> None:
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8], axis_types=(AxisType.Auto,) * 2)
    specs = {
        "embed": P("data", "model"),
        "w": P(None, "model"),
        "bias": P("model"),
        "scale": P(),
        "both": P(("data", "model")),
    }
    shapes = {"embed": (64, 32), "w": (32, 16), "bias": (16,), "scale": (), "both": (64,)}
    params = jax.jit(
        lambda: {k: jnp.zeros(s) for k, s in shapes.items()},
        out_shardings={k: NamedSharding(mesh, s) for k, s in specs.items()},
    )()
    # A leaf whose spec was written with a trailing None, which JAX keeps as written.
    params["padded"] = jax.device_put(jnp.zeros((8, 8)), NamedSharding(mesh, P("data", None)))
    assert str(params["padded"].sharding.spec) == "P('data', None)"
    payload = shardviz.describe_tree(params).to_json()
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    groups = payload["leaves"]["group"]
    assert len(groups) == len(leaves)
    for (path, leaf), g in zip(leaves, groups):
        name = path[0].key
        assert "@" not in str(jax.typeof(leaf))  # Auto axes: the type says nothing of the sharding
        shown = column_spec(payload["groups"][g])
        if name == "padded":
            assert str(shown) == "P('data',)"
            assert NamedSharding(mesh, shown).is_equivalent_to(leaf.sharding, leaf.ndim)
        else:
            assert shown == leaf.sharding.spec, (name, shown, leaf.sharding.spec)
            assert str(shown) == str(leaf.sharding.spec)
