"""The program payload (docs/program-payload.md): everything a front end
needs, decoded back and checked against the Program and against JAX."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_runs, decode_value_keys
from shardviz.program.result.value_keys import encode_keys


def mesh_2x4(types=(AxisType.Auto, AxisType.Auto), order=None):
    devices = np.asarray(jax.devices()[:8])
    if order is not None:
        devices = devices[list(order)]
    return Mesh(devices.reshape(2, 4), ("x", "y"), axis_types=types)


def layer_stack(layers: int, mesh: Mesh):
    """A stack of MLP layers as one scan, and its gradient: the benchmark's program, smaller."""
    d, f, b = 64, 128, 32
    win = jax.device_put(jnp.ones((layers, d, f)), NamedSharding(mesh, P(None, None, "y")))
    wout = jax.device_put(jnp.ones((layers, f, d)), NamedSharding(mesh, P(None, "y", None)))
    x = jax.device_put(jnp.ones((b, d)), NamedSharding(mesh, P("x", None)))

    def loss(params, x):
        def layer(h, p):
            wi, wo = p
            return h + jnp.tanh(h @ wi) @ wo, None

        return (jax.lax.scan(layer, x, params)[0] ** 2).mean()

    return jax.value_and_grad(loss), ((win, wout), x)


@pytest.fixture(scope="module")
def stack_program():
    mesh = mesh_2x4(order=(3, 1, 7, 5, 0, 2, 6, 4))
    fn, args = layer_stack(24, mesh)
    return mesh, shardviz.trace(fn, *args)


def test_kind_version_and_json(stack_program):
    _, prog = stack_program
    payload = prog.to_json()
    assert payload["kind"] == "program" and payload["version"] == 2
    text = json.dumps(payload)  # plain JSON: no NumPy scalars left
    assert json.loads(text) == payload


def test_a_24_layer_stack_with_its_gradient_stays_small(stack_program):
    _, prog = stack_program
    size = len(json.dumps(prog.to_json(), separators=(",", ":")))
    assert size < 200_000, size


def test_each_values_key_is_sent_as_its_stem_and_read_back_whole(stack_program):
    _, prog = stack_program
    payload = prog.to_json()
    assert decode_value_keys(payload) == [v.key for v in prog.values]
    assert len(set(decode_value_keys(payload))) == len(prog.values)
    # by hand: three inputs (params' two leaves and x) are three stems, and the scan's body is listed once
    assert len(payload["key_stems"]) < len(prog.values) and payload["key_stems"][:3] == [
        "in:params[0]",
        "in:params[1]",
        "in:x",
    ]


@given(st.lists(st.text(alphabet="ab#0123", max_size=6), max_size=12))
def test_any_list_of_keys_is_read_back_exactly(keys):
    """Repeats, `#` where no stem repeats, `#0`, `#01` and one key twice: what the decoder gives is what was sent."""
    stems, indices = encode_keys(keys)
    assert decode_value_keys({"key_stems": stems, "values": {"key_stem": indices}}) == keys
    assert all(0 <= i < len(stems) for i in indices)


def test_a_keys_repeats_share_its_stem():
    stems, indices = encode_keys(["x|dot", "x|dot#1", "in:a#1", "x|dot#2", "x|dot#4", "y", "y"])
    assert stems == ["x|dot", "in:a#1", "x|dot#4", "y", "y"]
    assert indices == [0, 0, 1, 0, 2, 3, 4]
    # a dict key with `#` in it is part of the stem, its repeat's number the last `#`
    assert encode_keys(["in:p['a#1']", "in:p['a#1']#1"]) == (["in:p['a#1']"], [0, 0])


def test_mesh_and_devices_as_the_array_payload_sends_them(stack_program):
    mesh, prog = stack_program
    payload = prog.to_json()
    array_payload = prog.inputs[0].to_json()
    assert payload["mesh"] == array_payload["mesh"]
    for column in ("id", "process", "addressable", "kind"):
        assert payload["devices"][column] == array_payload["devices"][column]
    assert payload["kinds"] == array_payload["kinds"]
    assert decode_runs(payload["devices"]["id"]) == [d.id for d in mesh.devices.flat]


def test_every_value_can_be_laid_out_from_its_spec(stack_program):
    """shape, dtype and spec are enough: JAX's own devices_indices_map of the
    spec on the payload's mesh gives each device the block the Layout says."""
    mesh, prog = stack_program
    payload = prog.to_json()
    values = payload["values"]
    assert len(values["name"]) == len(prog.values)
    checked = 0
    for i, v in enumerate(prog.values):
        row = payload["types"][values["type"][i]]
        assert values["name"][i] == v.name
        assert payload["roles"][values["role"][i]] == v.role
        assert row["type_str"] == v.type_str and row["shape"] == list(v.shape)
        assert payload["origins"][values["from"][i]] == v.sharding_from
        if v.layout is None:
            assert row["spec"] is None
            continue
        assert row["spec"] == [list(e) for e in v.layout.spec]
        sharding = NamedSharding(mesh, P(*(tuple(e) if e else None for e in row["spec"])))
        truth = sharding.devices_indices_map(tuple(row["shape"]))
        by_id = {d.id: d for d in mesh.devices.flat}
        for dev in v.layout.devices:
            tile = v.layout.tiles[dev.tile]
            block = tuple(s.indices(n)[:2] for s, n in zip(truth[by_id[dev.id]], v.shape))
            assert block == tuple(zip(tile.start, tile.stop)), (v.name, dev.id)
        checked += 1
    assert checked > 10


def test_lines_group_every_value_and_collective_once(stack_program):
    _, prog = stack_program
    payload = prog.to_json()
    seen_values = sorted(i for line in payload["lines"] for i in line["values"])
    seen_collectives = sorted(i for line in payload["lines"] for i in line["collectives"])
    assert seen_values == list(range(len(prog.values)))
    assert seen_collectives == list(range(len(prog.collectives)))
    for k, line in enumerate(payload["lines"]):
        for i in line["values"]:
            v = prog.values[i]
            assert payload["values"]["line"][i] == k
            assert (line["line"], payload["files"][line["file"]] if line["file"] is not None else None) == (
                (v.source.line, v.source.file) if v.source else (None, None)
            )
        assert line["wire_bytes"] == sum(prog.collectives[i].total_wire_bytes for i in line["collectives"])


def test_bodies_fold_the_scan(stack_program):
    _, prog = stack_program
    payload = prog.to_json()
    for i, v in enumerate(prog.values):
        chain = []
        k = payload["values"]["body"][i]
        while k != -1:
            chain.append(payload["bodies"][k])
            k = payload["bodies"][k]["parent"]
        assert [(b["primitive"], b["trip_count"]) for b in reversed(chain)] == [
            (b.primitive, b.trip_count) for b in v.bodies
        ]
    assert any(b["primitive"] == "scan" and b["trip_count"] == 24 for b in payload["bodies"])


def test_collectives_decode_to_their_groups(stack_program):
    _, prog = stack_program
    payload = prog.to_json()
    assert decode_runs(payload["assignment"]) == [int(i) for i in prog.assignment]
    for c, row in zip(prog.collectives, payload["collectives"]):
        groups = payload["group_sets"][row["groups"]]
        sizes = decode_runs(groups["sizes"])
        flat = decode_runs(groups["positions"])
        decoded, start = [], 0
        for n in sizes:
            decoded.append(tuple(flat[start : start + n]))
            start += n
        assert tuple(decoded) == c.groups
        assert row["axes"] == (list(c.axes) if c.axes is not None else None)
        assert (row["kind"], row["count"], row["wire_bytes"], row["result_bytes"]) == (
            c.kind,
            c.count,
            c.wire_bytes,
            c.result_bytes,
        )
        assert row["hlo"] == c.hlo[: len(row["hlo"])]
    assert payload["totals"]["wire_bytes"] == prog.totals.wire_bytes
    assert [t[0] for t in payload["totals"]["by_axis"]] == ["x", "y"]


def test_permute_pairs_and_single_device_payloads():
    mesh = mesh_2x4()

    def ring(v):
        shifted = jax.lax.ppermute(v, "y", [(i, (i + 1) % 4) for i in range(4)])
        return shifted

    f = jax.shard_map(ring, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    prog = shardviz.trace(f, jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P("x", "y"))))
    payload = prog.to_json()
    (row,) = payload["collectives"]
    groups = payload["group_sets"][row["groups"]]
    (c,) = prog.collectives
    assert list(zip(decode_runs(groups["sources"]), decode_runs(groups["targets"]))) == list(c.pairs)

    single = shardviz.trace(lambda v: v + 1, jnp.ones(3)).to_json()
    assert single["mesh"] is None and single["devices"] is None and single["collectives"] == []
    row = single["types"][single["values"]["type"][0]]
    assert decode_runs(row["devices"]) == [jax.devices()[0].id]


def test_source_listing_in_the_payload():
    def scaled(v):
        doubled = v * 2
        return doubled + 1

    prog = shardviz.trace(scaled, jnp.ones(3))
    payload = prog.to_json()
    src = payload["source"]
    assert payload["files"][src["file"]] == __file__
    assert src["lines"][0].strip() == "def scaled(v):" and len(src["lines"]) == 3
    listing = payload["values"]["listing_line"]
    assert listing[1] == src["first_line"] + 1  # doubled = v * 2
