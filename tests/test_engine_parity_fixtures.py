"""The Python side of the browser engine's parity cases, checked against JAX.

The cases (tests/make_engine_parity_fixtures.py) are answers of the Python widget,
and the local engine is held to them byte for byte. Here a sample of them, made
with the same seed, is rebuilt from what each payload says (mesh, devices in mesh
order, spec, memory kind, shape, dtype) into real JAX objects, and JAX itself is
asked: blocks and holders (``devices_indices_map``), replica ids
(``addressable_shards``) and the type (``jax.typeof``) through
``jax_truth.assert_matches_jax``; and describing those objects gives the payload back.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import make_engine_parity_fixtures as gen
import shardviz
from jax_truth import assert_matches_jax
from shardviz.array.payload import layout_payload

SAMPLE = 260


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    return gen.make_cases(gen.SEED, SAMPLE)


def rebuilt_mesh(payload: dict[str, Any]) -> Mesh | AbstractMesh:
    mesh = payload["mesh"]
    types = tuple(AxisType[t] for t in mesh["types"])
    if mesh["abstract"]:
        return AbstractMesh(tuple(mesh["sizes"]), tuple(mesh["names"]), axis_types=types)
    by_id = {d.id: d for d in jax.devices()}
    ids = [start + i * step for start, step, count in payload["devices"]["id"] for i in range(count)]
    grid = np.array([by_id[i] for i in ids]).reshape(mesh["sizes"])
    return Mesh(grid, tuple(mesh["names"]), axis_types=types)


def rebuilt_spec(payload: dict[str, Any]) -> P:
    return P(*[None if not axes else axes[0] if len(axes) == 1 else tuple(axes) for axes in payload["spec"]])


def expected_type(sharding: Any, shape: tuple[int, ...], dtype: str, array: jax.Array | None) -> str:
    """JAX's type for the layout: typeof the array, or of a ShapeDtypeStruct (in host memory when pinned_host)."""
    if array is not None:
        return str(jax.typeof(array))
    aval = jax.typeof(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
    if sharding.memory_kind == "pinned_host":
        aval = aval.update(memory_space=jax.memory.Space.Host)
    return str(aval)


def stand_in(sharding: NamedSharding) -> NamedSharding | None:
    """The same mesh shape, names, device order and spec on real devices, with Manual axes made
    Explicit: JAX answers devices_indices_map and replica ids for it (not for Manual axes, nor for an
    AbstractMesh). None when the machine lacks the devices. Axis types do not move blocks."""
    mesh = sharding.mesh
    types = tuple(AxisType.Explicit if t == AxisType.Manual else t for t in mesh.axis_types)
    if isinstance(mesh, AbstractMesh):
        count = math.prod(mesh.axis_sizes)
        if count > len(jax.devices()):
            return None
        grid = np.array(jax.devices()[:count]).reshape(mesh.axis_sizes)
    else:
        grid = mesh.devices
    return NamedSharding(Mesh(grid, mesh.axis_names, axis_types=types), sharding.spec)


def check_against_jax(payload: dict[str, Any]) -> None:
    """Rebuild the JAX objects a payload describes, describe them again, and ask JAX."""
    shape, dtype = tuple(payload["shape"]), payload["dtype"]
    if payload["mesh"] is None:
        device = next(d for d in jax.devices() if d.id == payload["devices"]["id"][0][0])
        sharding: Any = jax.sharding.SingleDeviceSharding(device, memory_kind=payload["memory_kind"])
    else:
        mesh = rebuilt_mesh(payload)
        kind = payload["memory_kind"]
        memory = None if isinstance(mesh, AbstractMesh) and kind == "device" else kind
        sharding = NamedSharding(mesh, rebuilt_spec(payload), memory_kind=memory)
    weak = payload["type_str"].startswith("~")
    array = None
    if payload["has_array"] or weak:
        # A weak type comes only from a Python scalar (the generator's weak layouts are float32 scalars).
        array = jax.device_put(0.0 if weak else jnp.zeros(shape, dtype), sharding)
        layout = dataclasses.replace(shardviz.describe(array), has_array=payload["has_array"])
    else:
        platform = payload["kinds"][0]["platform"] if payload["devices"]["virtual"] else None
        layout = shardviz.describe(sharding, shape=shape, dtype=dtype, platform=platform or None)
    # The Python engine, given the JAX objects the payload describes, writes the payload back (the spec
    # the user set before a mesh edit cut it is history, not a JAX object: it is given as the payload has it).
    asked = payload.get("user_spec")
    user_spec = None if asked is None else tuple(tuple(axes) for axes in asked)
    assert layout_payload(layout, array_name=payload["array_name"], user_spec=user_spec) == payload
    # And JAX agrees with the layout: its type, and (on the stand-in) shard shape, blocks, holders and replica ids.
    assert payload["type_str"] == expected_type(sharding, shape, dtype, array)
    if payload["mesh"] is None:
        assert_matches_jax(layout, sharding, shape, array=array)
        return
    real = stand_in(sharding)
    if real is None:  # an AbstractMesh larger than the machine: its blocks are proven on the smaller ones
        return
    # Blocks and holders from devices_indices_map (no data is allocated for them).
    real_layout = shardviz.describe(real, shape=shape, dtype=dtype)
    assert_matches_jax(real_layout, real, shape)
    assert [(t.start, t.stop) for t in real_layout.tiles] == [(t.start, t.stop) for t in layout.tiles]
    assert [d.tile for d in real_layout.devices] == [d.tile for d in layout.devices]
    if not payload["devices"]["virtual"]:
        assert [d.id for d in real_layout.devices] == [d.id for d in layout.devices]
    # Replica ids from addressable_shards, on an array of one element per block (same blocks, same copies).
    grid = tuple(n and len(cuts) - 1 for n, cuts in zip(shape, layout.blocks.bounds))
    placed = jax.device_put(jnp.zeros(grid, dtype), real)
    replicas = {s.device.id: s.replica_id for s in placed.addressable_shards}
    assert [replicas[d.id] for d in real_layout.devices] == [d.replica_id for d in layout.devices]


def payloads_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    used = set()
    for case in data["cases"]:
        used.add(case["start"])
        for answer in (case["python"], case.get("offline") or {}):
            if "payload" in answer:
                used.add(answer["payload"])
    return [data["payloads"][i] for i in sorted(used)]


def test_sample_is_varied(sample: dict[str, Any]) -> None:
    cases = sample["cases"]
    assert len(cases) >= SAMPLE
    labels = {case["kernel_only"] for case in cases}
    assert {None, "devices", "memory"} <= labels
    payloads = payloads_of(sample)
    assert any(p["mesh"] and p["mesh"]["abstract"] for p in payloads)
    assert any(p["has_array"] for p in payloads)
    assert any(p["mesh"] and "Manual" in p["mesh"]["types"] for p in payloads)
    assert any(not p["devices"]["machine_order"] and not p["devices"]["virtual"] for p in payloads)
    assert any("error" in case["python"] for case in cases)
    assert any(case["python"].get("notice") for case in cases)


def test_every_payload_of_the_sample_is_what_jax_says(sample: dict[str, Any]) -> None:
    for payload in payloads_of(sample):
        check_against_jax(payload)


def test_cases_are_reproducible() -> None:
    first, second = gen.make_cases(gen.SEED, 30), gen.make_cases(gen.SEED, 30)
    assert first == second
    assert gen.make_cases(gen.SEED + 1, 30) != first
