"""Layers told apart (scopes, loop passes), collectives charged to outputs, names, and memory over the program.

Each check compares with JAX's or XLA's own answers: the compiled module's
instructions and op_names, per-pass shapes chosen so that bytes identify the
pass, ``memory_analysis()``, and hand counts of the buffers a program must hold.
"""

from __future__ import annotations

import inspect
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.lines.scopes import is_gradient, scope_of_name_stack, scope_of_op_name
from shardviz.program.result.report import render_program


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


# --------------------------------------------------------------------------
# scopes


def test_scopes_are_read_from_op_names_as_xla_prints_them():
    assert scope_of_op_name("jit(f)/transpose(jvp(layers_0))/dot_general") == "layers_0"
    assert scope_of_op_name("jit(f)/jvp(outer)/inner/tanh") == "outer/inner"
    assert scope_of_op_name("jit(f)/jvp()/while/body/closed_call/block/jit(inner)/dot_general") == "block"
    assert scope_of_op_name("jit(f)/transpose(jvp())/while/body/block/block/checkpoint/dot_general") == "block"
    assert scope_of_op_name("jit(f)/dot_general") == ""
    assert scope_of_name_stack("transpose(jvp(outer))/inner") == "outer/inner"


def scoped_layers(ws, x):
    for i, w in enumerate(ws):
        with jax.named_scope(f"layers_{i}"):
            x = jnp.tanh(x @ w)
    return x.sum()


def test_named_scopes_tell_each_layers_collectives_apart(mesh):
    ws = [jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P("model", None))) for _ in range(3)]
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", None)))
    text = jax.jit(jax.grad(scoped_layers)).lower(ws, x).compile().as_text()
    prog = shardviz.trace(jax.grad(scoped_layers), ws, x)
    assert prog.collectives
    for c in prog.collectives:
        charges = c.parts or (c,)
        for ch in charges:
            # the scope is what XLA's op_name says, for this instruction (or the operand's maker)
            assert ch.scope in {"layers_0", "layers_1", "layers_2"}, (ch.scope, c.op_name)
        if not c.parts:
            (op,) = [ln for ln in text.splitlines() if re.search(rf"%{re.escape(c.name)} = ", ln)]
            assert f"({c.scope})" in op or f"/{c.scope}/" in op
    scopes = {ch.scope for c in prog.collectives for ch in (c.parts or (c,))}
    assert scopes == {"layers_0", "layers_1", "layers_2"}
    report = render_program(prog, width=100, color=False)
    assert "layers_1" in report
    payload = prog.to_json()
    assert {c["scope"] for c in payload["collectives"]} <= scopes | {""}
    assert "layers_0" in payload["values"]["scope"]


# --------------------------------------------------------------------------
# passes of a Python loop with no scopes


def widening(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x.sum()


def test_a_python_loops_passes_are_numbered_in_order(mesh):
    """Each layer is wider than the last, so the bytes of a pass's all-reduce say which pass it is."""
    widths = [16, 32, 48, 64]
    ws = [
        jax.device_put(jnp.ones((a, b)), NamedSharding(mesh, P("model", None))) for a, b in itertools.pairwise(widths)
    ]
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", "model")))
    prog = shardviz.trace(widening, ws, x)
    line = line_of(widening, "x = jnp.tanh(x @ w)")
    reduces = [c for c in prog.collectives if c.kind == "all-reduce" and c.source.line == line]
    assert len(reduces) == 3, [c.hlo for c in prog.collectives]
    for c in reduces:
        # the forward all-reduce of pass k holds this pass's product: batch/2 x widths[k] floats
        k = next(k for k, w in enumerate(widths[1:]) if c.result_bytes == 4 * 4 * w)
        assert (c.pass_number, c.passes) == (k + 1, 3)
    # the line names its value on every pass, each pass's value its own
    xs = [v for v in prog.values if v.label == "x" and v.source is not None and v.source.line == line]
    assert [v.pass_number for v in xs] == [1, 2, 3]
    assert [v.shape for v in xs] == [(8, w) for w in widths[1:]]
    assert "pass 2 of 3" in render_program(prog, width=100, color=False)


def two_line_layers(ws, x):
    for w in ws:
        h = x @ w
        x = jnp.tanh(h)
    return x.sum()


def backward_widening(ws, x):
    return jax.grad(two_line_layers)(ws, x)


def test_a_backward_pass_numbers_its_gradients_by_the_forward_pass(mesh):
    widths = [16, 32, 48, 64]
    rep = NamedSharding(mesh, P())
    ws = [jax.device_put(jnp.ones((a, b)), rep) for a, b in itertools.pairwise(widths)]
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(backward_widening, ws, x)
    parts = [p for c in prog.collectives for p in c.parts] or [c for c in prog.collectives if c.kind == "all-reduce"]
    assert len(parts) == 3
    for p in parts:
        k = next(k for k, (a, b) in enumerate(itertools.pairwise(widths)) if p.result_bytes == 4 * a * b)
        assert (p.pass_number, p.passes) == (k + 1, 3), (p.result_bytes, p.pass_number)


def one_dense(x, w):
    y = jnp.einsum("bi,io->bo", x, w)
    return y


def calls_helper_twice(x, w1, w2):
    a = one_dense(x, w1)
    b = one_dense(jnp.tanh(a), w2)
    return b.sum()


def test_a_helper_line_called_twice_is_named_both_times():
    prog = shardviz.trace(calls_helper_twice, jnp.ones((4, 8)), jnp.ones((8, 8)), jnp.ones((8, 8)))
    line = line_of(one_dense, "y = jnp.einsum")
    made = [v for v in prog.values if v.source is not None and v.source.line == line and v.primitive == "dot_general"]
    assert len(made) == 2
    assert [v.label for v in made] == ["y", "y"]


def tuple_of_products(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    return (q * k * v).sum()


def test_a_tuple_of_expressions_names_each_part():
    prog = shardviz.trace(tuple_of_products, jnp.ones((4, 8)), jnp.ones((8, 3)), jnp.ones((8, 3)), jnp.ones((8, 3)))
    products = [v for v in prog.values if v.primitive == "dot_general"]
    assert [v.label for v in products] == ["q", "k", "v"]


@jax.jit
def attention(p, x):
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    weights = jax.nn.softmax(q @ k.swapaxes(-1, -2) / 4.0, axis=-1)
    return (weights @ v) @ p["wo"]


@jax.jit
def feed_forward(p, x):
    return jax.nn.gelu(x @ p["w1"]) @ p["w2"]


def rms_norm(x):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def parallel_block(p, x):
    h = rms_norm(x)
    a, m = attention(p, h), feed_forward(p, h)
    return x + a + m


def transformer_loss(params, x):
    for p in params:
        x = parallel_block(p, x)
    return jnp.mean(x**2)


def test_a_transformers_residual_sums_and_jitted_calls_read_one_pass_per_layer():
    """A three-layer transformer trained data-parallel: ``x + a + m`` is two adds of one pass, not
    two passes; ``a, m = attention(...), feed_forward(...)`` names both jitted calls; each layer's
    weight gradients are reduced over the batch once per pass (q, k, v: three; w1, w2: two; wo: one)."""
    mesh = Mesh(np.asarray(jax.devices()[:8]), ("data",))
    weights = ("wq", "wk", "wv", "wo", "w1", "w2")
    params = [{k: jax.device_put(jnp.ones((32, 32)) / 32, NamedSharding(mesh, P())) for k in weights}] * 3
    x = jax.device_put(jnp.ones((16, 8, 32)), NamedSharding(mesh, P("data")))
    prog = shardviz.trace(jax.value_and_grad(transformer_loss), params, x)

    def forward(snippet, fn=parallel_block):
        line = line_of(fn, snippet)
        return [v for v in prog.values if v.source and v.source.line == line and not is_gradient(v.key)]

    calls = [v for v in forward("a, m = attention") if v.label in ("a", "m")]
    assert [(v.label, v.primitive, v.pass_number, v.passes) for v in calls] == [
        (name, "jit", k, 3) for k in (1, 2, 3) for name in ("a", "m")
    ]
    adds = forward("return x + a + m")
    assert [(v.primitive, v.pass_number, v.passes) for v in adds] == [("add", k, 3) for k in (1, 1, 2, 2, 3, 3)]
    assert [v.label for v in adds[1::2]] == ["x", "x", "x"]  # what `x = parallel_block(p, x)` binds
    parts = [p for c in prog.collectives for p in (c.parts or (c,)) if c.kind == "all-reduce"]
    for snippet, fn, per_pass in (
        ("q, k, v = ", attention, 3),
        ("return (weights @ v)", attention, 1),
        ("return jax.nn.gelu", feed_forward, 2),
    ):
        found = sorted(p.pass_number for p in parts if p.source and p.source.line == line_of(fn, snippet))
        assert found == [k for k in (1, 2, 3) for _ in range(per_pass)], snippet
        assert {p.passes for p in parts if p.source and p.source.line == line_of(fn, snippet)} == {3}


def test_unread_results_are_labelled_apart_and_keys_are_unique():
    def f(a):
        _, idx = jax.lax.top_k(a, 2)
        _, idx2 = jax.lax.top_k(a * 2, 2)
        return idx + idx2

    printed = str(jax.jit(f).trace(jnp.ones(8)).jaxpr)
    assert printed.count("_:") >= 2
    prog = shardviz.trace(f, jnp.ones(8))
    unread = [v for v in prog.values if v.name == "_"]
    assert len(unread) >= 2 and len({v.label for v in unread}) == len(unread)
    keys = [v.key for v in prog.values]
    assert len(set(keys)) == len(keys)
    # the same program traced again gives the same keys
    assert [v.key for v in shardviz.trace(f, jnp.ones(8)).values] == keys


# --------------------------------------------------------------------------
# collectives XLA adds for an output's layout


def doubled(x):
    y = x * 2
    return y


def test_an_output_layouts_collectives_are_charged_to_that_output(mesh):
    x = jax.device_put(jnp.ones((64, 64)), NamedSharding(mesh, P("data", "model")))
    fun = jax.jit(doubled, out_shardings=NamedSharding(mesh, P()))
    text = fun.lower(x).compile().as_text()
    gathers = [ln for ln in text.splitlines() if " all-gather(" in ln]
    assert gathers and not any("metadata" in ln for ln in gathers), "XLA now names a line: the case is gone"
    prog = shardviz.trace(fun, x)
    assert prog.collectives
    for c in prog.collectives:
        assert (c.charged_to, c.charged_role) == ("out", "output")
        assert c.source is not None and c.source.line == line_of(doubled, "y = x * 2")
    report = render_program(prog, width=100, color=False)
    assert "no source line" not in report and "laying out output out" in report


# --------------------------------------------------------------------------
# the widget re-traces under the traced mesh


def explicit_step(w, x):
    h = jnp.dot(x, w, out_sharding=P("data", None))
    return jax.sharding.reshard(h, P())


def test_an_input_edit_retraces_under_the_mesh_the_program_was_traced_with():
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2, devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        w = jax.device_put(jnp.ones((16, 32)), P(None, "model"))
        x = jax.device_put(jnp.ones((8, 16)), P("data", None))
        prog = shardviz.trace(explicit_step, w, x)
    widget = shardviz.ProgramWidget(prog)
    widget.input_specs = ["None, None", "data, None"]
    assert widget.error == ""
    assert widget.program.inputs[0].spec == ((), ())


# --------------------------------------------------------------------------
# memory over the program


def mlp_stack(ws, x, remat):
    def layer(h, w):
        h = jnp.tanh(h @ w)
        return h, None

    body = jax.checkpoint(layer) if remat else layer
    return jax.lax.scan(body, x, ws)[0]


def scanned_step(remat):
    def loss(ws, x):
        return (mlp_stack(ws, x, remat) ** 2).mean()

    def step(ws, x):
        value, grads = jax.value_and_grad(loss)(ws, x)
        return value, ws - 0.1 * grads

    return step


@pytest.fixture(scope="module")
def scanned(mesh):
    ws = jax.device_put(jnp.ones((6, 128, 128)), NamedSharding(mesh, P(None, None, "model")))
    x = jax.device_put(jnp.ones((256, 128)), NamedSharding(mesh, P("data", None)))
    return ws, x


def test_saved_activations_are_live_at_the_peak_and_gone_after_the_backward_pass(scanned):
    """A scanned MLP keeps each layer's activations for the gradient: stacked, 6 layers of the
    per-device batch (128 x 128 floats = 64 KiB each). With jax.checkpoint only the carries are kept."""
    ws, x = scanned
    plain = shardviz.trace(scanned_step(False), ws, x).memory_timeline
    remat = shardviz.trace(scanned_step(True), ws, x).memory_timeline
    layer_bytes = 6 * 128 * 128 * 4
    for timeline in (plain, remat):
        saved = [(g, n) for g, n in timeline.at_peak if g.kind == "saved"]
        assert saved, [(g.kind, g.label) for g, _ in timeline.at_peak]
        last = len(timeline.steps) - 1
        assert timeline.bytes_by_kind(last)["saved"] == 0  # gone once the backward pass is done
    kept_plain = plain.bytes_by_kind()["saved"]
    kept_remat = remat.bytes_by_kind()["saved"]
    assert kept_remat >= layer_bytes // 4  # at least each layer's input, split over the model axis
    assert kept_plain > kept_remat
    assert remat.peak_bytes < plain.peak_bytes


def test_the_peak_is_xlas_where_there_are_no_temporaries_and_never_above_what_it_reserves():
    prog = shardviz.trace(lambda a: (a @ a.T).sum(), jnp.ones((128, 128)))
    m, t = prog.memory, prog.memory_timeline
    assert m.temp_bytes == 0 and t.peak_bytes == m.peak_bytes == m.argument_bytes + m.output_bytes
    prog = shardviz.trace(lambda a: jnp.tanh(jnp.tanh(a @ a) @ a) @ a, jnp.ones((128, 128)))
    m, t = prog.memory, prog.memory_timeline
    # at the last product: the argument, the product before and the result: three 64 KiB arrays
    assert t.peak_bytes == 3 * 128 * 128 * 4 <= m.reserved_bytes
    assert m.peak_bytes == t.peak_bytes  # one peak: Program.memory's is the timeline's
    assert t.xla_peak_bytes < t.peak_bytes  # XLA:CPU's own peak leaves the temporaries out


def test_a_donated_argument_is_counted_once(mesh):
    w = jax.device_put(jnp.ones((128, 128)), NamedSharding(mesh, P(None, "model")))
    x = jax.device_put(jnp.ones((64, 128)), NamedSharding(mesh, P("data", None)))

    def update(w, x):
        return w - 0.1 * jax.grad(lambda w: (jnp.tanh(x @ w) ** 2).mean())(w)

    donated = shardviz.trace(jax.jit(update, donate_argnums=0), w, x)
    assert donated.memory.alias_bytes == 128 * 32 * 4
    t = donated.memory_timeline
    groups = {g.label: g for g in t.groups}
    assert groups["w"].most_bytes == 128 * 32 * 4  # the new w written over the old: one buffer
    assert not any(g.kind == "output" for g in t.groups)
    kept = shardviz.trace(jax.jit(update), w, x).memory_timeline
    assert any(g.kind == "output" and g.label == "out" for g in kept.groups)


def adam_update(params, mu, nu, x):
    grads = jax.grad(lambda p: jnp.sum(jnp.tanh(x @ p["w1"]) @ p["w2"]))(params)
    mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, mu, grads)
    nu = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, nu, grads)
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, mu, nu)
    return params, mu, nu


def test_an_optimizer_updates_peak_holds_parameters_gradients_and_both_moments():
    params = {"w1": jnp.ones((64, 64)), "w2": jnp.ones((64, 64))}
    zeros = jax.tree.map(jnp.zeros_like, params)
    prog = shardviz.trace(adam_update, params, zeros, zeros, jnp.ones((32, 64)))
    t = prog.memory_timeline
    live = {g.label: n for g, n in t.at_peak}
    families = {g.family for g, _ in t.at_peak if g.kind == "argument"}
    assert {"params", "mu", "nu"} <= families
    for path in ("params['w1']", "params['w2']", "mu['w1']", "mu['w2']", "nu['w1']", "nu['w2']"):
        assert live[path] == 64 * 64 * 4
    # the gradients: two 64 x 64 arrays made on the grad line, live at the peak or already in outputs
    held = sum(n for g, n in t.at_peak if g.kind in ("temporary", "output"))
    assert held >= 2 * 64 * 64 * 4
    assert t.peak_bytes <= prog.memory.reserved_bytes


def test_assert_fits_names_what_is_live_at_the_peak():
    from shardviz.testing import assert_fits

    params = {"w1": jnp.ones((64, 64)), "w2": jnp.ones((64, 64))}
    zeros = jax.tree.map(jnp.zeros_like, params)
    prog = shardviz.trace(adam_update, params, zeros, zeros, jnp.ones((32, 64)))
    with pytest.raises(AssertionError) as err:
        assert_fits(prog, 1024)
    text = str(err.value)
    assert "live then" in text and "argument mu['w1']" in text and "argument params['w2']" in text


def test_the_payload_carries_memory_over_the_program_and_the_source_blocks(scanned):
    ws, x = scanned
    prog = shardviz.trace(scanned_step(False), ws, x)
    payload = prog.to_json()
    memory = payload["memory_timeline"]
    t = prog.memory_timeline
    assert memory["step_bytes"] == list(t.step_bytes) and len(memory["step_bytes"]) == memory["steps"]
    assert max(memory["step_bytes"]) == memory["peak_bytes"] == memory["step_bytes"][memory["peak_step"]]
    # the buffers live at the peak add up to the peak (none that small is left out here)
    b = memory["buffers"]
    live = [k for k in range(len(b["group"])) if b["start"][k] <= memory["peak_step"] <= b["end"][k]]
    assert memory["buffers_left_out"] > 0 or sum(b["bytes"][k] for k in live) == memory["peak_bytes"]
    names = {f["name"] for f in payload["functions"]}
    assert {"layer", "mlp_stack", "loss", "step"} <= names
    blocks = {f["name"]: k for k, f in enumerate(payload["functions"])}
    calls = {(c[0], c[2]) for c in payload["calls"]}
    assert (blocks["mlp_stack"], blocks["layer"]) in calls and (blocks["loss"], blocks["mlp_stack"]) in calls
