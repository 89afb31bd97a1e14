"""print(program): readable at 80 columns and with NO_COLOR."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import strip_ansi
from shardviz.program.result.report import render_program, spec_text
from shardviz.text import ansi


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def a_rather_long_function_name_for_a_model_step(params_with_a_long_name, batch_of_inputs):
    hidden = batch_of_inputs @ params_with_a_long_name["w"]
    total = jax.lax.fori_loop(0, batch_of_inputs.shape[0] // 8, lambda i, h: jnp.tanh(h), hidden)
    return total.sum(axis=0)


@pytest.fixture(scope="module")
def program(mesh):
    params = {"w": jax.device_put(jnp.ones((32, 8)), NamedSharding(mesh, P("y", None)))}
    x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("x", "y")))
    return shardviz.trace(a_rather_long_function_name_for_a_model_step, params, x)


def test_fits_80_columns_and_any_width_from_60(program):
    for width in (60, 72, 80, 120):
        text = program.render(width=width, color=False)
        assert max(len(line) for line in text.splitlines()) <= width, width


def test_no_color_means_no_escape_codes(program, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b" not in str(program)
    assert "\x1b" not in program.render(width=80)


def test_colour_only_marks_the_axis_bars(program):
    colored = program.render(width=80, color=True)
    plain = program.render(width=80, color=False)
    assert "\x1b[" in colored and strip_ansi(colored) == plain
    for line in colored.splitlines():
        if "\x1b" in line:
            assert "█" in line


def test_says_what_the_issue_asks(program):
    text = program.render(width=80, color=False)
    lines = text.splitlines()
    # inputs and outputs with their types
    assert "params_with_a_long_name['w']" in text and "float32[32,8]  P('y')" in text
    assert any("batch_of_inputs" in line and "float32[16,32]  P('x', 'y')" in line for line in lines)
    assert any(line.strip().startswith("out") and "float32[8]" in line for line in lines)
    # the collectives, per line: kind, axes, bytes x count
    for c in program.collectives:
        rows = [line for line in lines if line.strip().startswith(c.kind) and f"x{c.count}" in line]
        assert rows, c
    assert any("@ params_with_a_long_name" in line for line in lines)  # the line's own source
    # totals per axis and memory per device
    assert "per mesh axis" in text and "memory per device: arguments" in text
    assert f"{program.totals.runs} collective runs" in text


def test_unknown_counts_and_groups_are_marked(mesh):
    def loop(x, n):
        return jax.lax.fori_loop(0, n, lambda i, h: h.sum(axis=0, keepdims=True) + h, x)

    prog = shardviz.trace(loop, jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("x", "y"))), 3)
    text = prog.render(width=80, color=False)
    assert any(not c.count_exact for c in prog.collectives)
    assert "x1+" in text and "at least" in text


def test_single_device_report():
    text = shardviz.trace(lambda v: v * 2, jnp.ones(4)).render(width=80, color=False)
    assert "no mesh (one device)" in text and "collectives: none" in text


def test_spec_text():
    assert spec_text((("x",), ())) == "P('x')"
    assert spec_text(((), ("x", "y"))) == "P(None, ('x', 'y'))"
    assert spec_text(((), ())) == "replicated"


def test_axis_marks_use_the_widget_axis_palette():
    """The bars' colours are the widget's axis colours (js/util/palette.ts AXIS_BASE)."""
    import pathlib
    import re

    palette = (pathlib.Path(__file__).parent.parent / "js" / "util" / "palette.ts").read_text()
    base = re.search(r"const AXIS_BASE = \[([^\]]*)\]", palette).group(1)
    hexes = re.findall(r'"(#[0-9A-Fa-f]{6})"', base)
    assert hexes and [ansi.axis_rgb(i) for i in range(len(hexes))] == [
        tuple(int(h[k : k + 2], 16) for k in (1, 3, 5)) for h in hexes
    ]


def test_counts_of_one_read_in_the_singular():
    """A one-device mesh and a program of one value: '1 device', '1 value' (not '1 devices')."""
    mesh = Mesh(np.asarray(jax.devices()[:1]), ("x",))
    a = jax.device_put(jnp.ones(4), NamedSharding(mesh, P()))
    prog = shardviz.trace(lambda v: v, a)
    assert len(prog.values) == 1 and prog.num_partitions == 1
    head = render_program(prog, width=100, color=False).splitlines()[:3]
    assert head[1].endswith("), 1 device") and head[2].startswith("1 value,"), head
