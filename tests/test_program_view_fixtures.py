"""The programs the browser tests draw (tests/program_js_fixtures.py), checked against JAX.

The front-end tests hold the program view to ``program_truth.json``: what JAX
says about each program, read without shardviz. Here that reader is checked
against shardviz's own reading of the same compiles (two independent readers
agreeing), and the payload fields the browser relies on are checked against
JAX: each type row's itemsize, the inputs' and outputs' types, the device
order that maps partition positions to devices.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_runs
from program_js_fixtures import jax_truth, programs, value_parity
from shardviz import ProgramWidget

NAMES = sorted(programs())


@pytest.fixture(scope="module")
def traced() -> dict[str, tuple[shardviz.Program, dict]]:
    return {name: (shardviz.trace(fun, *args), jax_truth(fun, args)) for name, (fun, args) in programs().items()}


def canonical(groups) -> tuple[tuple[int, ...], ...]:
    return tuple(sorted(tuple(sorted(g)) for g in groups))


@pytest.mark.parametrize("name", NAMES)
def test_the_truth_reader_and_shardviz_read_the_same_collectives(traced, name):
    prog, truth = traced[name]
    ours = Counter((c.kind, canonical(prog.device_groups(c)) if not c.pairs else None) for c in prog.collectives)
    theirs = Counter((c["kind"], canonical(c["groups"]) if c["pairs"] is None else None) for c in truth["collectives"])
    assert ours == theirs
    assert all(c["groups"] is not None or c["pairs"] is not None for c in truth["collectives"])
    payload = prog.to_json()
    ids = decode_runs(payload["devices"]["id"]) if payload["devices"] else []
    assignment = decode_runs(payload["assignment"]) if payload["assignment"] else []
    for c, row in zip(prog.collectives, payload["collectives"]):
        if not c.pairs:
            continue
        sets = payload["group_sets"][row["groups"]]
        pairs = zip(decode_runs(sets["sources"]), decode_runs(sets["targets"]))
        got = sorted([int(ids[assignment[s]]), int(ids[assignment[t]])] for s, t in pairs)
        assert got == sorted(next(t["pairs"] for t in truth["collectives"] if t["kind"] == c.kind))


@pytest.mark.parametrize("name", NAMES)
def test_types_itemsizes_and_memory_are_jax_s(traced, name):
    prog, truth = traced[name]
    payload = prog.to_json()
    assert [payload["types"][i["type"]]["type_str"] for i in payload["inputs"]] == truth["input_types"]
    assert [payload["types"][o["type"]]["type_str"] for o in payload["outputs"]] == truth["output_types"]
    for row in payload["types"]:
        if row["spec"] is not None:
            assert row["itemsize"] == jnp.dtype(row["dtype"]).itemsize
    memory = payload["memory"]
    assert {k: memory[k] for k in truth["memory"]} == truth["memory"]
    assert payload["flops"] == truth["flops"]


def test_the_permuted_mesh_maps_positions_through_its_device_order(traced):
    prog, truth = traced["permuted"]
    mesh = prog.origin.mesh
    assert [d.id for d in mesh.devices.flat] != sorted(d.id for d in mesh.devices.flat)
    (reduce,) = prog.collectives
    # The groups are rows of the mesh (all-reduce over y), as device ids in the mesh's own order.
    assert canonical(prog.device_groups(reduce)) == canonical(mesh.device_ids.tolist())
    assert canonical(truth["collectives"][0]["groups"]) == canonical(mesh.device_ids.tolist())


def test_value_layouts_for_the_browser_are_describe_s(traced):
    prog, _ = traced["explicit"]
    parity = value_parity(prog)
    laid = [(v, p) for v, p in zip(prog.values, parity) if p is not None]
    assert len(laid) == len(prog.values)  # Explicit axes: every value's type carries its sharding
    for v, p in laid:
        assert p["type_str"] == v.type_str  # the jaxpr's type is describe's type for that sharding


def test_a_spec_written_another_way_is_no_edit_and_clears_an_error():
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8], axis_types=(AxisType.Auto,) * 2)
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", None)))
    w = ProgramWidget(shardviz.trace(lambda v: v * 2, a))
    shown = w.program
    w.set_state({"input_specs": ["q"]})
    assert w.error_source == "input:0" and w.program is shown
    # Python's own spec again, as the front end sends it to clear the error: no re-trace.
    w.set_state({"input_specs": ["x, None "]})
    assert w.error == "" and w.error_source == "" and w.program is shown and w.input_specs == ["x"]
    np.testing.assert_array_equal(np.asarray(a), np.ones((8, 16)))


def line_with(fun, text: str) -> int:
    """The file line number of the first line of ``fun``'s source holding ``text`` (read with inspect)."""
    import inspect

    lines, first = inspect.getsourcelines(fun)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_values_of_a_body_lead_to_the_line_that_calls_the_body(traced):
    import program_js_fixtures as pf

    prog, _ = traced["two_scans"]
    calls = [line_with(pf.two_scans, "first, _ = jax.lax.scan("), line_with(pf.two_scans, "second, _ = jax.lax.scan(")]
    inside = [v for v in prog.values if v.bodies]
    assert inside and {v.source_line for v in inside} == {line_with(pf.layer, "return h + jnp.dot(")}
    # JAX keeps only the body's own frames; the scan's frames complete the stack, each scan its own.
    assert {v.listing_line for v in inside} == set(calls)
    for v in inside:
        assert v.listing_line == v.bodies[0].source.line
    prog, _ = traced["shard_map"]
    manual = [v for v in prog.values if v.sharding_from == "manual"]
    call = line_with(pf.make_ring(prog.origin.mesh), "jax.shard_map(")
    assert manual and {v.listing_line for v in manual} == {call}
