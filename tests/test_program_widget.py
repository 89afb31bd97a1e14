"""The program widget's state, and the array widget's last move: edits as
the front end sends them, checked against fresh compiles and JAX's HLO."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ProgramWidget, ShardingWidget


@pytest.fixture
def mesh():
    return jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8], axis_types=(AxisType.Auto,) * 2)


@pytest.fixture
def inputs(mesh):
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", None)))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P(None, None)))
    return a, b


def matmul(a, b):
    return a @ b


def hlo_kinds(fun, *args) -> list[str]:
    """The collective opcodes in JAX's own compiled module, as a check independent of our parser."""
    text = jax.jit(fun).lower(*args).compile().as_text()
    return sorted(re.findall(r"= [^ ]+ (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)\(", text))


def test_an_input_spec_edit_retraces_and_the_collectives_follow(inputs, mesh):
    a, b = inputs
    w = ProgramWidget(shardviz.trace(matmul, a, b))
    assert w.input_specs == ["x", ""] and [c.kind for c in w.program.collectives] == []
    # Split the contracting dimension over y on both sides: the partial products need an all-reduce over y.
    w.set_state({"input_specs": ["x, y", "y"]})
    assert w.error == "", w.error
    kinds = sorted(c.kind for c in w.program.collectives)
    a2 = jax.device_put(a, NamedSharding(mesh, P("x", "y")))
    b2 = jax.device_put(b, NamedSharding(mesh, P("y", None)))
    assert kinds == hlo_kinds(matmul, a2, b2) and kinds
    assert {tuple(c.axes) for c in w.program.collectives} == {("y",)}
    assert [layout.type_str for layout in w.program.inputs] == [str(jax.typeof(a2)), str(jax.typeof(b2))]
    assert w.input_specs == ["x, y", "y"] and w.payload == w.program.to_json()
    assert a.sharding.spec == P("x", None) and not a.is_deleted()  # the user's arrays stay


def test_a_bad_spec_names_its_input_and_keeps_the_last_good_picture(inputs):
    a, b = inputs
    w = ProgramWidget(shardviz.trace(matmul, a, b))
    before = dict(w.payload)
    w.set_state({"input_specs": ["x", "q"]})
    assert w.error_source == "input:1" and "axis 'q' is not in the mesh" in w.error
    assert w.payload == before and w.input_specs == ["x", ""]
    w.set_state({"input_specs": ["x"]})
    assert w.error_source == "general" and "needs 2 spec texts" in w.error
    w.set_state({"input_specs": "x, y"})  # not a list: refused, not raised
    assert w.error_source == "general" and "list of spec texts" in w.error
    w.set_state({"input_specs": ["x", ""]})
    assert w.error == ""


def test_a_program_that_fails_under_the_new_shardings_is_refused(mesh):
    explicit = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8], axis_types=(AxisType.Explicit,) * 2)
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(explicit, P("x", None)))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(explicit, P(None, None)))
    w = ProgramWidget(shardviz.trace(matmul, a, b))
    before = dict(w.payload)
    # Explicit axes: a contracting dimension sharded on both sides needs out_sharding=, so tracing fails.
    w.set_state({"input_specs": ["x, y", "y"]})
    assert w.error_source == "program" and w.error
    assert w.payload == before


def test_show_and_save_html_take_a_program(inputs, tmp_path):
    from shardviz.widgets.show import widget_for

    prog = shardviz.trace(matmul, *inputs)
    assert isinstance(widget_for(prog), ProgramWidget)
    page = open(shardviz.save_html(prog, tmp_path / "p.html"), encoding="utf-8").read()
    assert '"kind":"program"' in page and "<title>shardviz: program matmul</title>" in page
    assert shardviz.render_text(prog, width=80, color=False) == prog.render(width=80, color=False)


def test_the_array_widget_says_what_each_edit_moves(mesh):
    x = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("x", "y")))
    w = ShardingWidget(x)
    assert w.last_move is None and w.move == {}
    w.set_state({"spec_text": "None, None"})  # gather everything onto every device
    assert w.error == ""
    move = w.last_move
    identity = jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))
    assert sorted(c.kind for c in move.collectives) == hlo_kinds(identity, x)
    assert move.collectives and w.move["wire_bytes"] == move.totals.wire_bytes > 0
    assert [c["kind"] for c in w.move["collectives"]] == [c.kind for c in move.collectives]
    np.testing.assert_array_equal(np.asarray(w.array), np.asarray(x))
    w.set_state({"spec_text": "q"})  # a refusal moves nothing and keeps the last move
    assert w.error and w.last_move is move


def test_a_move_onto_other_devices_says_why_it_is_not_one_program(mesh):
    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", "y")))
    w = ShardingWidget(x)
    w.mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[4:12])
    assert w.last_move is None and "error" in w.move and w.move["error"]
