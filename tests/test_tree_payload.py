"""The tree payload, decoded as a front end would, says what JAX says about the tree."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_runs
from tree_truth import addressable_device_bytes, nonzero

MAX_BYTES_PER_LEAF = 150


def decode_paths(encoded: list[list]) -> list[str]:
    """Undo the shared-prefix encoding: [k, *rest] keeps the previous path's first k segments."""
    out, previous = [], []
    for k, *rest in encoded:
        segments = previous[:k] + rest
        out.append(".".join(segments))
        previous = segments
    return out


def dotted(key_path) -> str:
    """A leaf's dotted path, from JAX's key objects."""
    parts = []
    for key in key_path:
        if isinstance(key, jax.tree_util.DictKey):
            parts.append(str(key.key))
        elif isinstance(key, jax.tree_util.SequenceKey):
            parts.append(str(key.idx))
        elif isinstance(key, jax.tree_util.GetAttrKey):
            parts.append(key.name)
        else:
            parts.append(str(key.key))
    return ".".join(parts)


def type_of(payload: dict, i: int) -> str:
    """A leaf's type string, rebuilt from its group's pieces and its shape (or carried whole)."""
    leaves = payload["leaves"]
    group = payload["groups"][leaves["group"][i]]
    if not group["type"]:
        return dict(leaves["type"])[i]
    pieces, shape = group["type"], leaves["shape"][i]
    return pieces[0] + "".join(f"{n}{p}" for n, p in zip(shape, pieces[1:]))


@pytest.fixture
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])


def test_payload_decodes_to_jax_answers(mesh):
    def put(shape, *spec, kind=None, dtype=jnp.float32):
        return jax.device_put(jnp.zeros(shape, dtype), NamedSharding(mesh, P(*spec), memory_kind=kind))

    tree = {
        "embed": put((64, 16), None, "model"),
        "layers": [{"w": put((16, 16), "data", "model", dtype=jnp.bfloat16), "b": put((16,))} for _ in range(3)],
        "host": put((8, 8), "model", kind="pinned_host"),
        "count": jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[9])),
        "lr": 0.5,
        "none": None,
    }
    payload = shardviz.describe_tree(tree).to_json()
    text = json.dumps(payload, allow_nan=False)  # plain JSON types only
    assert json.loads(text) == payload
    assert (payload["kind"], payload["version"]) == ("tree", 1)

    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    leaves = payload["leaves"]
    assert leaves["count"] == len(flat)
    assert decode_paths(leaves["path"]) == [dotted(p) for p, _ in flat]
    other = dict(leaves["other"])
    for i, (_, x) in enumerate(flat):
        if not isinstance(x, jax.Array):
            assert leaves["group"][i] == -1 and leaves["bytes"][i] == 0
            assert other[i] == ("None" if x is None else type(x).__name__)
            continue
        group = payload["groups"][leaves["group"][i]]
        assert type_of(payload, i) == str(jax.typeof(x))
        assert leaves["shape"][i] == list(x.shape)
        assert leaves["bytes"][i] == x.addressable_shards[0].data.nbytes
        assert group["dtype"] == str(x.dtype) and group["itemsize"] == x.dtype.itemsize
        assert group["memory_kind"] == x.sharding.memory_kind
        shard = [n // d for n, d in zip(x.shape, group["divisors"])]
        assert shard == list(x.sharding.shard_shape(x.shape))
        if isinstance(x.sharding, NamedSharding):
            spec = list(x.sharding.spec) + [None] * (x.ndim - len(x.sharding.spec))
            assert group["spec"] == [[] if e is None else [e] if isinstance(e, str) else list(e) for e in spec]
            assert payload["meshes"][group["mesh"]]["names"] == list(x.sharding.mesh.axis_names)
        else:
            ids = decode_runs(payload["devices"]["id"])
            assert [ids[p] for p in decode_runs(group["devices"])] == [d.id for d in x.sharding.device_set]

    # Per-device bytes, per memory kind, in the order of the device columns.
    ids = decode_runs(payload["devices"]["id"])
    decoded = {kind: dict(zip(ids, decode_runs(runs))) for kind, runs in payload["device_bytes"].items()}
    assert nonzero(decoded) == nonzero(addressable_device_bytes(tree))
    mesh_payload = payload["meshes"][0]
    assert [ids[p] for p in decode_runs(mesh_payload["devices"])] == [d.id for d in mesh.devices.flat]
    assert ids == [d.id for d in mesh.devices.flat] + [9]
    assert payload["devices"]["count"] == 9
    assert decode_runs(payload["devices"]["addressable"]) == [1] * 9
    assert payload["total_bytes"] == sum(x.nbytes for x in jax.tree.leaves(tree) if isinstance(x, jax.Array))

    audit = payload["audit"]
    assert audit["replicated"][0]["message"].startswith("embed is replicated over data")
    assert audit["imbalance"]["max_devices"] == [9] or audit["imbalance"]["min_devices"] == [9]


def test_ten_thousand_leaves_on_4096_devices_fit_the_budget():
    mesh = AbstractMesh((16, 16, 16), ("data", "model", "seq"), axis_types=(AxisType.Explicit,) * 3)
    specs = [P(("data", "model"), None), P(None, "model"), P(), P("data")]
    shapes = [(4096, 1024), (512, 4096), (4096,), (8192,)]
    tree = {
        f"layer_{i:04d}": {
            name: jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec))
            for name, shape, spec in zip(("attn_q", "mlp_out", "norm_scale", "bias"), shapes, specs)
        }
        for i in range(2500)
    }
    tl = shardviz.describe_tree(tree)
    text = json.dumps(tl.to_json(), separators=(",", ":"))
    assert tl.leaf_count == 10_000
    assert len(text.encode()) / tl.leaf_count <= MAX_BYTES_PER_LEAF
    # Per-device bytes stay one run each: 4096 equal values.
    payload = json.loads(text)
    assert payload["device_bytes"]["device"] == [[tl.device_bytes[0], 0, 4096]]
    per_leaf = {name: math.prod(NamedSharding(mesh, spec).shard_shape(shape)) * 2
                for name, shape, spec in zip(("attn_q", "mlp_out", "norm_scale", "bias"), shapes, specs)}  # fmt: skip
    assert tl.device_bytes[4095] == 2500 * sum(per_leaf.values())


def test_paths_share_whole_segments_so_keys_with_dots_survive(mesh):
    x = jax.device_put(jnp.zeros(8), NamedSharding(mesh, P()))
    tree = {"a": {"b.c": x, "d": [x, x]}, "a.b": x}
    payload = shardviz.describe_tree(tree).to_json()
    assert payload["leaves"]["path"] == [[0, "a", "b.c"], [1, "d", "0"], [2, "1"], [0, "a.b"]]
    assert decode_paths(payload["leaves"]["path"]) == ["a.b.c", "a.d.0", "a.d.1", "a.b"]
