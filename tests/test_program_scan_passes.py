"""A collective in a scan's body is one collective run once per trip; a Python loop's are one per pass.

Expectations come from the compiled module's text by hand: which computation
each all-reduce sits in (the entry, or the body of a ``while`` XLA kept with its
``known_trip_count``) and the order the schedule runs them in.
"""

from __future__ import annotations

import inspect
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.lines.passes import count_scan_trips, is_scan_trip
from shardviz.program.model import Body

LAYERS = 4


def norm(h):
    return h * jax.lax.rsqrt(jnp.mean(jnp.square(h), axis=-1, keepdims=True) + 1e-6)


def layer(x, w):
    x = x + jnp.matmul(norm(x @ w["a"]), w["b"], out_sharding=P("data", None))
    return x, None


def scanned(ws, x):
    return jax.lax.scan(layer, x, ws)[0].sum()


def scanned_unrolled(ws, x):
    return jax.lax.scan(layer, x, ws, unroll=True)[0].sum()


def looped(ws, x):
    for i in range(LAYERS):
        x, _ = layer(x, {name: w[i] for name, w in ws.items()})
    return x.sum()


LAYER_LINE = inspect.getsourcelines(layer)[1] + 1


@pytest.fixture(scope="module")
def mesh():
    devices = np.asarray(jax.devices()[:8]).reshape(4, 2)
    return Mesh(devices, ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def arguments(mesh):
    ws = {
        "a": jax.ShapeDtypeStruct((LAYERS, 16, 32), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model"))),
        "b": jax.ShapeDtypeStruct((LAYERS, 32, 16), jnp.float32, sharding=NamedSharding(mesh, P(None, "model", None))),
    }
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    return ws, x


def computations_of_all_reduces(text: str) -> dict[str, str]:
    """Each all-reduce's computation, as the compiled module's text lists them."""
    out, current = {}, ""
    for line in text.splitlines():
        head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if head:
            current = line.split()[1 if line.startswith("ENTRY") else 0].lstrip("%")
            continue
        found = re.match(r"^\s+(?:ROOT )?%?(all-reduce[\w.\-]*) = ", line)
        if found:
            out[found.group(1)] = current
    return out


def traced(fn, mesh):
    with jax.set_mesh(mesh):
        prog = shardviz.trace(fn, *arguments(mesh))
        text = jax.jit(fn).lower(*arguments(mesh)).compile().as_text()
    return prog, text


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradient"])
def test_a_scan_xla_keeps_as_a_loop_gives_its_collectives_a_count_and_no_pass(mesh, gradient):
    """The bug: a kept scan's trips were taken as a Python loop's passes, so two collectives of one
    trip (levels 1 and 2 of the body's data flow) were labelled "pass 2 of 4" and "pass 3 of 4"."""
    prog, text = traced(jax.grad(scanned) if gradient else scanned, mesh)
    trips = re.findall(r"known_trip_count[^0-9]*(\d+)", text)
    assert trips and set(trips) == {str(LAYERS)}
    bodies = set(re.findall(r"\bwhile\(.*?body=%?([\w.\-]+)", text))
    where = computations_of_all_reduces(text)
    in_loop = [c for c in prog.collectives if c.source is not None and c.source.line == LAYER_LINE]
    assert in_loop and all(where[c.name] in bodies for c in in_loop)
    for c in in_loop:
        assert c.count == LAYERS, c.name
        assert c.pass_number is None and c.passes is None, (c.name, c.pass_number, c.passes)
        assert "pass" not in c.where_label


@pytest.mark.parametrize("fn", [looped, scanned_unrolled], ids=["python-loop", "scan-unrolled"])
def test_a_loop_traced_or_unrolled_numbers_one_collective_per_pass_in_schedule_order(mesh, fn):
    """A Python loop (and a scan JAX unrolls) leaves no while: four all-reduces of the layer's matmul
    in the entry computation, each once per call, the schedule running pass 1's first."""
    prog, text = traced(fn, mesh)
    assert "while" not in text
    entry = text[text.index("ENTRY") :]
    on_line = [c for c in prog.collectives if c.source is not None and c.source.line == LAYER_LINE]
    assert len(on_line) == LAYERS and all(c.count == 1 for c in on_line)
    in_schedule = sorted(on_line, key=lambda c: entry.index(f"%{c.name} = "))
    assert [c.pass_number for c in in_schedule] == list(range(1, LAYERS + 1))
    assert {c.passes for c in on_line} == {LAYERS}


def test_a_top_level_scans_lines_count_its_trips_and_say_so():
    """By hand: a line of a 2-trip scan's body runs twice; a Python loop's line in it keeps its 2 passes;
    a line of a while body, of a scan nested in another, of a 1-trip scan or of a scan of unknown
    length counts nothing."""
    scan2 = Body("scan", 2, None)
    lines = [((("f.py", k),), "", False, None) for k in range(6)]
    body_line, python_line, while_line, nested_line, once_line, unknown_line = lines
    place_passes = {python_line: 2}
    bodies = [
        (scan2,),
        (scan2,),
        (scan2,),
        (Body("while", None, None),),
        (scan2, scan2),
        (Body("scan", 1, None),),
        (Body("scan", None, None),),
        (scan2,),
    ]
    places = [body_line, body_line, python_line, while_line, nested_line, once_line, unknown_line, None]
    counted = count_scan_trips(bodies, places, place_passes)
    assert counted == {body_line}
    assert place_passes == {python_line: 2, body_line: 2}


def test_only_a_scan_lines_collective_run_more_than_once_per_call_is_a_trip():
    here, other = ((("f.py", 1),), "", False, None), ((("f.py", 2),), "", False, None)
    assert is_scan_trip(here, frozenset({here}), 2)
    assert not is_scan_trip(here, frozenset({here}), 1)  # XLA unrolled it: one collective per trip
    assert not is_scan_trip(other, frozenset({here}), 2)  # a Python loop's line inside a kept loop
