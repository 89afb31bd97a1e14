"""The registry of kinds (src/shardviz/kinds.py): each entry's name and version
are what its payload says, and its widget shows that kind. js/host/kinds.test.ts
holds js/host/kinds.ts to the same list (through js/fixtures/kinds.json)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.kinds import KINDS


def double(a):
    return a * 2


def test_each_kind_names_the_kind_and_version_its_payload_carries():
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", "y")))
    program = shardviz.trace(double, x)
    moved = shardviz.trace(double, jax.device_put(x, NamedSharding(mesh, P("y", "x"))))
    examples = {"array": x, "tree": {"a": x, "b": x}, "program": program, "compare": shardviz.diff(program, moved)}
    assert set(KINDS) == set(examples)
    for name, kind in KINDS.items():
        assert kind.name == name == shardviz.api.kind_of(examples[name])
        payload = shardviz.api.as_result(examples[name]).to_json()
        assert (payload["kind"], payload["version"]) == (kind.name, kind.version)
        widget = kind.widget_class()(examples[name])
        assert widget.payload["kind"] == name
