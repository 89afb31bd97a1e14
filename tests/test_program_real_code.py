"""The program view on code shaped like real training code, checked against JAX's own answers.

Modelled on public programs: JAX's training cookbook (a transformer step
whose train state is a tree of refs, with hand-written Adam), a Flax-style
scanned layer stack (written with ``jax.lax.scan``, as ``nn.scan`` lowers),
and a partial-manual ``jax.shard_map`` under ``jax.set_mesh``. Each check
compares with what JAX itself reports: the compiled module's instructions
and metadata, the real outputs' shardings when the step runs, the jaxpr's
source lines.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import textwrap
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.lines.frames import is_user_file
from shardviz.program.memory.totals import charges
from shardviz.program.result.report import render_program


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if snippet in text:
            return first + k
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def compiled_text(fun, *args) -> str:
    return jax.jit(fun).lower(*args).compile().as_text()


def collective_lines(text: str) -> list[str]:
    kinds = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
    pattern = re.compile(r"^\s*(ROOT )?%\S+ = .*? (" + "|".join(kinds) + r")(-start)?\(")
    return [ln.strip() for ln in text.splitlines() if pattern.search(ln)]


# --------------------------------------------------------------------------
# a cookbook-style transformer step: train state as refs, hand-written Adam


def init_transformer(key, vocab=32, d=16, ff=32, layers=2):
    keys = iter(jax.random.split(key, 4 + 4 * layers))
    params = {"embed": jax.random.normal(next(keys), (vocab, d)) * 0.02, "layers": []}
    for _ in range(layers):
        params["layers"].append(
            {
                "qkv": jax.random.normal(next(keys), (d, 3 * d)) * 0.02,
                "out": jax.random.normal(next(keys), (d, d)) * 0.02,
                "up": jax.random.normal(next(keys), (d, ff)) * 0.02,
                "down": jax.random.normal(next(keys), (ff, d)) * 0.02,
            }
        )
    return params


def transformer_loss(params, tokens):
    x = params["embed"][tokens]
    for layer in params["layers"]:
        q, k, v = jnp.split(x @ layer["qkv"], 3, axis=-1)
        att = jax.nn.softmax(q @ k.swapaxes(-1, -2) / 4.0, axis=-1)
        x = x + (att @ v) @ layer["out"]
        hidden = jax.nn.relu(x @ layer["up"])
        x = x + hidden @ layer["down"]
    logits = x @ params["embed"].T
    return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])


def train_step(state, tokens):
    loss, grads = jax.value_and_grad(transformer_loss)(jax.tree.map(lambda r: r[...], state["params"]), tokens)
    step = state["step"][...] + 1
    for p, g, mu, nu in zip(
        jax.tree.leaves(state["params"]),
        jax.tree.leaves(grads),
        jax.tree.leaves(state["mu"]),
        jax.tree.leaves(state["nu"]),
    ):
        mu[...] = 0.9 * mu[...] + 0.1 * g
        nu[...] = 0.999 * nu[...] + 0.001 * g * g
        p[...] -= 1e-3 * (mu[...] / (1 - 0.9**step)) / (jnp.sqrt(nu[...] / (1 - 0.999**step)) + 1e-8)
    state["step"][...] = step
    return {"loss": loss}


@pytest.fixture(scope="module")
def data_mesh():
    return Mesh(np.asarray(jax.devices()[:8]), ("data",))


def ref_state(data_mesh):
    replicated = NamedSharding(data_mesh, P())
    params = jax.device_put(init_transformer(jax.random.key(0)), replicated)
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {
        "params": jax.tree.map(jax.ref.new_ref, params),
        "mu": jax.tree.map(jax.ref.new_ref, zeros),
        "nu": jax.tree.map(jax.ref.new_ref, jax.tree.map(jnp.zeros_like, params)),
        "step": jax.ref.new_ref(jax.device_put(jnp.zeros((), jnp.int32), replicated)),
    }


def test_a_step_that_takes_refs_traces(data_mesh):
    tokens = jax.device_put(jnp.zeros((16, 8), jnp.int32), NamedSharding(data_mesh, P("data")))
    prog = shardviz.trace(jax.jit(train_step), ref_state(data_mesh), tokens)
    # JAX's own answer: run the step and read the output's sharding.
    ran = jax.jit(train_step)(ref_state(data_mesh), tokens)
    assert prog.output_paths == ("out['loss']",)
    assert prog.outputs[0].spec == shardviz.describe(ran["loss"]).spec
    # Every collective of the compiled module is read, none twice.
    text = compiled_text(train_step, ref_state(data_mesh), tokens)
    assert len(prog.collectives) == len(collective_lines(text))
    assert prog.totals.wire_bytes > 0


def test_every_gradient_of_a_combined_all_reduce_is_on_its_own_line(data_mesh):
    """Data parallel: XLA combines the gradients' all-reduces into one op of many
    operands; each operand's bytes belong to the line whose forward op it is the
    gradient of (the operand's producer in the module names that line)."""
    tokens = jax.device_put(jnp.zeros((16, 8), jnp.int32), NamedSharding(data_mesh, P("data")))
    prog = shardviz.trace(jax.jit(train_step), ref_state(data_mesh), tokens)
    combined = [c for c in prog.collectives if c.combined]
    assert combined, "XLA combined no all-reduce here: the case this test needs is gone"
    text = compiled_text(train_step, ref_state(data_mesh), tokens)
    for c in combined:
        operands = re.search(re.escape(c.name) + r" = .*? all-reduce\(([^)]*)\)", text)
        assert operands is not None
        listed = re.sub(r"/\*[^*]*\*/", "", operands.group(1))
        assert [p.operand for p in c.parts] == [o.strip().lstrip("%") for o in listed.split(",")]
        assert sum(p.result_bytes for p in c.parts) == c.result_bytes
        assert c.wire_bytes == sum(p.wire_bytes for p in c.parts)
    lines = {p.source.line for c in combined for p in c.parts if p.source is not None}
    assert len(lines) > 1, "a combined collective's bytes must spread over the lines that cause them"
    # by_line is the sum of the parts, and adds up to the total.
    assert sum(t.wire_bytes for t in prog.totals.by_line) == prog.totals.wire_bytes
    for c in combined:
        assert sum(sent for _, sent in charges(c)) == c.total_wire_bytes
    report = render_program(prog, width=100, color=False)
    assert f"of {combined[0].name}: they travel together" in report


def shared_sum_step(w_ref, x):
    w_ref[...] += x.sum()
    return {"loss": x.mean()}


def test_one_value_merged_twice_into_a_combined_all_reduce_keeps_both_lines(data_mesh):
    """XLA merges ``x.sum()`` and ``x.mean()`` into one reduce, then combines their
    two all-reduces into one whose operands are that same value twice. The
    producer cannot tell them apart; the get-tuple-element reading each result
    keeps the replaced all-reduce's metadata, so each operand stays on its line,
    and the report numbers the operands 1 and 2, not 1 and 1."""
    x = jax.device_put(jnp.ones((16, 6)), NamedSharding(data_mesh, P("data")))
    w_ref = jax.ref.new_ref(jax.device_put(jnp.zeros((4,)), NamedSharding(data_mesh, P())))
    text = jax.jit(shared_sum_step).trace(w_ref, x).lower().compile().as_text()
    prog = shardviz.trace(jax.jit(shared_sum_step), w_ref, x)
    combined = [c for c in prog.collectives if c.combined]
    assert combined, "XLA combined no all-reduce here: the case this test needs is gone"
    c = combined[0]
    operands = re.search(re.escape(c.name) + r" = .*? all-reduce\(([^)]*)\)", text)
    assert operands is not None
    names = [o.strip().lstrip("%") for o in re.sub(r"/\*[^*]*\*/", "", operands.group(1)).split(",")]
    assert len(set(names)) == 1 < len(names), "the operands are no longer one value merged twice"
    lines = sorted(p.source.line for p in c.parts if p.source is not None)
    assert lines == sorted([line_of(shared_sum_step, "x.sum()"), line_of(shared_sum_step, "x.mean()")])
    report = render_program(prog, width=100, color=False)
    assert f"operand 1 of 2 of {c.name}" in report
    assert f"operand 2 of 2 of {c.name}" in report


def mlp_loss(params, x):
    h = jax.nn.relu(x @ params["w1"])
    out = h @ params["w2"]
    return jnp.mean(out**2)


def mlp_step(params, x):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x)
    return loss, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def test_each_gradient_lands_on_the_line_it_is_the_gradient_of(data_mesh):
    rep = NamedSharding(data_mesh, P())
    params = {"w1": jax.device_put(jnp.ones((16, 32)), rep), "w2": jax.device_put(jnp.ones((32, 8)), rep)}
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(data_mesh, P("data")))
    prog = shardviz.trace(mlp_step, params, x)
    (c,) = [c for c in prog.collectives if c.combined]
    by_bytes = {p.result_bytes: p.source.line for p in c.parts}
    # w1's gradient (16x32 floats) is the transpose of line "x @ params['w1']", w2's of "h @ params['w2']".
    assert by_bytes[16 * 32 * 4] == line_of(mlp_loss, "x @ params")
    assert by_bytes[32 * 8 * 4] == line_of(mlp_loss, "h @ params")
    # The report names each line with its text, and the totals agree.
    by_line = {t.key.rsplit(":", 1)[1]: t.wire_bytes for t in prog.totals.by_line}
    assert by_line[str(line_of(mlp_loss, "x @ params"))] == 2 * 7 * 16 * 32 * 4 // 8
    report = render_program(prog, width=100, color=False)
    assert 'h = jax.nn.relu(x @ params["w1"])' in report
    assert "in 1 collective run" in report  # one run, not "1 collective runs"


# --------------------------------------------------------------------------
# whose line


def psum_over_model(xb, wb):
    return jax.lax.psum(xb @ wb, "model")


def test_partial_manual_shard_map_never_shows_shardvizs_own_file():
    """Tracing a partial-manual shard_map itself: the inputs' resharding all-gathers
    are recorded at shardviz's own ``lower()`` call; the user's line is where they
    called ``trace``."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        x = jax.device_put(jnp.ones((8, 16)), P("data", None))
        w = jax.device_put(jnp.ones((16, 4)), P(None, None))
        layer = jax.shard_map(
            psum_over_model, in_specs=(P(None, "model"), P("model", None)), out_specs=P(), axis_names={"model"}
        )
        prog = shardviz.trace(layer, x, w)
    called_at = line_of(test_partial_manual_shard_map_never_shows_shardvizs_own_file, "prog = shardviz.trace(layer")
    gathers = [c for c in prog.collectives if c.kind == "all-gather"]
    assert gathers, "no resharding all-gather here: the case this test needs is gone"
    for c in gathers:
        assert not is_user_file(c.stack[0].file), "JAX records shardviz's own frame innermost"
        assert c.source is not None and (c.source.file, c.source.line) == (__file__, called_at)
    psum = next(c for c in prog.collectives if c.kind == "all-reduce")
    assert psum.source.line == line_of(psum_over_model, "jax.lax.psum")
    assert psum.axes == ("model",)
    for c in prog.collectives:
        assert "shardviz" not in c.source.file.replace(__file__, "")


def test_a_librarys_line_is_not_the_users(tmp_path, monkeypatch):
    """A layer from an installed library (Flax's linear.py, say): the user's line is the call."""
    lib = tmp_path / "site-packages" / "fakeflax"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "linear.py").write_text(
        textwrap.dedent(
            """
            import jax.numpy as jnp

            def dense(x, kernel):
                y = x @ kernel
                return jnp.sum(y, axis=0)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    from fakeflax.linear import dense

    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))

    def model(x, kernel):
        return dense(x, kernel) * 2

    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("x", "y")))
    k = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("y", None)))
    prog = shardviz.trace(model, x, k)
    assert prog.collectives
    for c in prog.collectives:
        assert c.stack[0].file.endswith("linear.py"), "JAX records the library's frame innermost"
        assert c.source is not None and c.source.line == line_of(model, "dense(x, kernel)")
    sys.modules.pop("fakeflax.linear", None)
    sys.modules.pop("fakeflax", None)


def test_no_user_frame_is_said_so():
    from shardviz.program.model import SourceLocation

    prog = shardviz.trace(lambda a: a.sum(), jnp.ones(4))
    fake = shardviz.program.model.Collective(
        **{
            **{
                f.name: getattr(_any_collective(), f.name)
                for f in dataclasses.fields(shardviz.program.model.Collective)
            },
            "source": None,
            "stack": (SourceLocation(jax.__file__, 1),),
        }
    )
    report = render_program(dataclasses.replace(prog, collectives=(fake,)), width=100, color=False)
    assert "no line of yours" in report


def _any_collective():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    a = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", None)))
    return shardviz.trace(lambda v: v.sum(axis=0), a).collectives[0]


def test_with_sharding_constraint_resharding_is_on_the_constraints_line():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))

    def f(a, b):
        h = a @ b
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(None, None)))
        return h * 2

    a = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(jnp.ones((32, 8)), NamedSharding(mesh, P("y", None)))
    prog = shardviz.trace(f, a, b)
    text = compiled_text(f, a, b)
    gather = next(c for c in prog.collectives if c.kind == "all-gather")
    reduce = next(c for c in prog.collectives if c.kind == "all-reduce")
    # XLA's metadata names the dot's line for both (the reason for the move) ...
    assert all('op_name="jit(f)/dot_general"' in ln for ln in collective_lines(text))
    # ... the gather the constraint asks for is on the constraint's line, the sum stays on the dot's.
    assert gather.source.line == line_of(f, "with_sharding_constraint")
    assert gather.note and "with_sharding_constraint" in gather.note
    assert reduce.source.line == line_of(f, "h = a @ b") and not reduce.note
    assert line_of(f, "h = a @ b") in [s.line for s in gather.stack]  # what XLA said is kept
    # the note's wrapped lines stay under the gather's row, not back at the line heads' margin
    report = render_program(prog, width=60, color=False).splitlines()
    row = next(k for k, ln in enumerate(report) if ln.lstrip().startswith("all-gather"))
    note = []
    for ln in report[row + 1 :]:
        if not ln.startswith("      "):
            break
        note.append(ln)
    assert len(note) > 1 and "with_sharding_constraint" in " ".join(note)


# --------------------------------------------------------------------------
# names, sub-axes, dead values, permutes, memory, outputs


def test_sub_axis_groups_are_named():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))

    def f(a):
        return a.reshape(2, 4, 4).sum(axis=1)

    a = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("y", None)))
    prog = shardviz.trace(f, a)
    text = compiled_text(f, a)
    assert any(re.search(r"'axis_\d'=2", ln) for ln in collective_lines(text)), "no sub-axis groups in the module"
    assert prog.collectives
    for c in prog.collectives:
        assert c.axes is None and c.pieces is not None, c.hlo
        assert "?" not in c.axes_label and c.axes_label.startswith("y[sub 2 of 4")
        # the named pieces reproduce the groups: devices of a group share x and their y pair
        ids = np.vectorize(lambda d: d.id)(mesh.devices)
        for group in prog.device_groups(c):
            xs = {int(np.argwhere(ids == d)[0][0]) for d in group}
            assert len(xs) == 1 and len(group) == 2
    assert {t.key for t in prog.totals.by_axis if t.wire_bytes} == {"y"}
    assert "?" not in render_program(prog, width=100, color=False).split("total per call")[0]


def test_a_permute_to_itself_sends_nothing():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))

    @partial(jax.shard_map, mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))
    def stay(b):
        return jax.lax.ppermute(b, ("x", "y"), [(i, i) for i in range(8)])

    @partial(jax.shard_map, mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))
    def shift(b):
        return jax.lax.ppermute(b, "y", [(i, (i + 1) % 4) for i in range(4)])

    a = jax.device_put(jnp.ones((16,)), NamedSharding(mesh, P(("x", "y"))))
    (c,) = shardviz.trace(stay, a).collectives
    assert "source_target_pairs={{0,0},{1,1}" in c.hlo
    assert c.wire_bytes == 0 and c.group_size == 1
    (moving,) = shardviz.trace(shift, a).collectives
    assert moving.wire_bytes == moving.result_bytes == 8 and moving.axes == ("y",)


def test_dead_values_are_listed_and_say_why():
    def f(a):
        unused = jnp.sin(a)  # noqa: F841 - nothing reads it
        return a * 2

    traced = jax.jit(f).trace(jnp.ones(4))
    assert "sin" in str(traced.jaxpr)
    prog = shardviz.trace(f, jnp.ones(4))
    dead = [v for v in prog.values if v.primitive == "sin"]
    assert len(dead) == 1 and dead[0].sharding_from == "dead" and "never computed" in dead[0].note
    assert "sin" not in jax.jit(f).lower(jnp.ones(4)).compile().as_text()  # XLA dropped it indeed


def test_a_value_read_only_by_dead_values_is_dead_too():
    """``s = sin(a)`` read only by an unused ``cos(s)``: the printer names ``s`` (it is
    read), but XLA computes neither; both are dead, and the names stay the printer's."""

    def f(a):
        s = jnp.sin(a)
        c = jnp.cos(s)  # noqa: F841 - nothing reads it
        return a * 2

    printed = str(jax.jit(f).trace(jnp.ones(4)).jaxpr)
    compiled = jax.jit(f).lower(jnp.ones(4)).compile().as_text()
    assert "b:f32[4] = sin a" in printed and "_:f32[4] = cos b" in printed
    assert "sine" not in compiled and "cosine" not in compiled
    prog = shardviz.trace(f, jnp.ones(4))
    by_primitive = {v.primitive: v for v in prog.values}
    assert by_primitive["sin"].name == "b" and by_primitive["cos"].name == "_"
    # the names users see: a dead value is never named after its line's variable
    assert by_primitive["sin"].label == "%b" and by_primitive["cos"].label.startswith("%_")
    assert by_primitive["sin"].sharding_from == by_primitive["cos"].sharding_from == "dead"
    assert by_primitive["mul"].layout is not None


def test_a_write_to_a_ref_is_not_said_never_to_happen(data_mesh):
    """A ``w_ref[...] = new`` hands back the old value, which nothing reads: that value is
    dropped, but the write is in the compiled program (the ref's new value is an output)."""

    def step(w_ref, x):
        w_ref[...] = w_ref[...] * 0.5 + x.sum(0)
        return x.mean()

    w = jax.ref.new_ref(jax.device_put(jnp.zeros((6,)), NamedSharding(data_mesh, P())))
    x = jax.device_put(jnp.ones((16, 6)), NamedSharding(data_mesh, P("data")))
    printed = str(jax.jit(step).trace(w, x).jaxpr)
    assert re.search(r"\ba\[\.\.\.\] <- \w+", printed), "the write is no longer a swap of the whole ref"
    prog = shardviz.trace(step, w, x)
    (swap,) = [v for v in prog.values if v.primitive == "swap"]
    assert swap.sharding_from == "dead"
    assert "never computed" not in swap.note and "the write or call itself still happens" in swap.note
    # the values the write reads are needed: not dead
    written = [v for v in prog.values if v.source is not None and v.source.line == line_of(step, "w_ref[...] =")]
    assert [v.primitive for v in written if v.sharding_from == "dead"] == ["swap"]


def test_values_carry_the_users_names():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))  # axis names a jaxpr also uses

    def model(params, batch):
        h = jax.nn.relu(batch @ params["w1"])
        out = h @ params["w2"]
        return out.sum()

    params = {
        "w1": jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P(None, "y"))),
        "w2": jax.device_put(jnp.ones((32, 8)), NamedSharding(mesh, P("y", None))),
    }
    batch = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", None)))
    prog = shardviz.trace(model, params, batch)
    labels = [v.label for v in prog.values]
    assert labels[:3] == ["params['w1']", "params['w2']", "batch"]
    assert "h" in labels and "out" in labels
    h = prog.values[labels.index("h")]
    assert h.source.line == line_of(model, "h = jax.nn.relu")
    # never a bare jaxpr letter that reads as a mesh axis
    assert not set(labels) & {"x", "y"}
    # jaxpr names are kept as JAX prints them
    assert [v.name for v in prog.values if v.role == "input"] == ["a", "b", "c"]


def attention_scores(x, wqkv):
    q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
    s = jax.nn.softmax(q @ k.T, axis=-1)
    return (s @ v).sum()


def test_a_line_that_unpacks_a_split_names_each_part():
    """``q, k, v = jnp.split(...)``: the jaxpr's one split equation has three results, in
    the order the line names them."""
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", None)))
    w = jax.device_put(jnp.ones((16, 48)), NamedSharding(mesh, P(None, "y")))
    (split,) = [e for e in jax.jit(attention_scores).trace(x, w).jaxpr.eqns if e.primitive.name == "split"]
    assert len(split.outvars) == 3
    prog = shardviz.trace(attention_scores, x, w)
    parts = [v for v in prog.values if v.primitive == "split"]
    assert [v.label for v in parts] == ["q", "k", "v"]
    assert {v.source.line for v in parts} == {line_of(attention_scores, "q, k, v =")}
    assert [v.type_str for v in parts] == [str(o.aval) for o in split.outvars]


def test_an_unknown_layout_is_explained_without_xlas_internal_words(data_mesh):
    """Auto axes: a value XLA merged away or left open has no layout; the note says so in
    the user's words, not XLA's (no modules, instructions or annotations)."""
    rep = NamedSharding(data_mesh, P())
    params = {"w1": jax.device_put(jnp.ones((16, 32)), rep), "w2": jax.device_put(jnp.ones((32, 8)), rep)}
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(data_mesh, P("data")))
    prog = shardviz.trace(mlp_step, params, x)
    unknown = [v for v in prog.values if v.sharding_from == "unknown"]
    assert unknown, "every value's layout is known here: the case this test needs is gone"
    for v in unknown:
        assert v.note and not re.search(r"annotation|module|instruction|HLO", v.note), v.note


def test_an_output_laid_out_unlike_its_input_is_flagged():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))

    def step(params):
        new = params["w1"] * 2
        return {"w1": jax.lax.with_sharding_constraint(new, NamedSharding(mesh, P(None, "y")))}

    params = {"w1": jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P()))}
    prog = shardviz.trace(step, params)
    ran = jax.jit(step)(params)
    (change,) = prog.layout_changes
    assert (change.output, change.input) == ("out['w1']", "params['w1']")
    assert change.before == shardviz.describe(params["w1"]).spec
    assert change.after == shardviz.describe(ran["w1"]).spec == ((), ("y",))
    assert "out['w1'] P(None, 'y'), but params['w1'] is replicated" in render_program(prog, width=100, color=False)
    # a step that keeps its layouts flags nothing
    assert shardviz.trace(lambda p: {"w1": p["w1"] * 2}, params).layout_changes == ()


def test_memory_figures_are_explained_when_the_peak_is_below_the_scratch():
    prog = shardviz.trace(lambda a: (a @ a.T).sum(), jnp.ones((64, 64)))
    m = prog.memory
    assert m is not None
    smaller_peak = dataclasses.replace(m, temp_bytes=10 * (m.peak_bytes or 1), peak_bytes=m.peak_bytes or 1)
    without_timeline = dataclasses.replace(prog, memory=smaller_peak, memory_timeline=None)
    text = " ".join(render_program(without_timeline, width=100, color=False).split())
    assert "peak live" in text and "not every temporary is alive at the same time" in text
    # With XLA's live ranges read, one story: the peak they give, never XLA:CPU's peak beside the scratch.
    text = " ".join(render_program(dataclasses.replace(prog, memory=smaller_peak), width=100, color=False).split())
    assert "peak live" not in text and "from XLA's buffer live ranges" in text


# --------------------------------------------------------------------------
# a Flax-style scanned layer stack


def scanned_layers(stack, x):
    def body(carry, w):
        y = jnp.tanh(carry @ w)
        return y, None

    out, _ = jax.lax.scan(body, x, stack)
    return out.sum()


def test_scanned_layers_count_every_layer_and_name_the_line():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    stack = jax.device_put(jnp.ones((6, 16, 16)), NamedSharding(mesh, P(None, None, "model")))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(jax.grad(scanned_layers), stack, x)
    text = compiled_text(jax.grad(scanned_layers), stack, x)
    assert len(prog.collectives) == len(collective_lines(text))
    in_loop = [c for c in prog.collectives if c.count == 6]
    assert in_loop, "the layer's collectives run once per layer"
    for c in in_loop:
        assert c.source is not None and c.source.file == __file__
        assert c.source.line in {line_of(scanned_layers, "carry @ w"), line_of(scanned_layers, "jax.lax.scan")}


def test_notebook_cells_are_named_as_the_user_knows_them():
    """In a kernel, a function defined in a cell lives in IPython's temporary file: the
    report and the payload name it ``In [n]`` and show the cell's lines' text."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import jax, jax.numpy as jnp\nimport numpy as np", store_history=True)
        shell.run_cell(
            "def cell_loss(w, x):\n    h = jnp.tanh(x @ w)\n    return h.sum()\n",
            store_history=True,
        )
        number = shell.execution_count - 1
        shell.user_ns["mesh"] = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
        result = shell.run_cell(
            "from jax.sharding import NamedSharding, PartitionSpec as P\n"
            "import shardviz\n"
            "w = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P('y', None)))\n"
            "x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P(None, 'y')))\n"
            "prog = shardviz.trace(cell_loss, w, x)\n",
            store_history=True,
        )
        result.raise_error()
        prog = shell.user_ns["prog"]
        report = render_program(prog, width=100, color=False)
        assert f"In [{number}]:2 (cell_loss)  h = jnp.tanh(x @ w)" in report
        payload = prog.to_json()
        assert f"In [{number}]" in payload["file_labels"]
        assert [t for _, _, t in payload["line_texts"] if "jnp.tanh" in t] == ["h = jnp.tanh(x @ w)"]
        assert not any(label.endswith(".py") and label[:-3].isdigit() for label in payload["file_labels"])
    finally:
        InteractiveShell.clear_instance()


def test_a_constraint_after_an_activation_takes_its_resharding_too():
    """``h = relu(x @ w)`` then a constraint: XLA names the activation's op on the line before;
    the gathers the constraint asks for go to the constraint's line all the same."""
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))

    def constrained(w1, w2, x):
        h = jax.nn.relu(x @ w1)
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P()))
        return h @ w2

    w1 = jax.device_put(jnp.ones((64, 256)), NamedSharding(mesh, P(None, "model")))
    w2 = jax.device_put(jnp.ones((256, 64)), NamedSharding(mesh, P("model", None)))
    x = jax.device_put(jnp.ones((32, 64)), NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(constrained, w1, w2, x)
    text = compiled_text(constrained, w1, w2, x)
    relu_line, wsc_line = line_of(constrained, "jax.nn.relu"), line_of(constrained, "with_sharding_constraint")
    # XLA's own metadata: the gathers of h carry the activation's line.
    gathers_of_h = [c for c in prog.collectives if c.kind == "all-gather" and relu_line in [f.line for f in c.stack]]
    assert gathers_of_h and len([ln for ln in collective_lines(text) if "all-gather" in ln]) >= len(gathers_of_h)
    for c in gathers_of_h:
        assert c.source.line == wsc_line and f"line {relu_line}" in c.note


def dense(x, kernel):
    return x @ kernel


def block_with_helper(carry, layer):
    h = jax.nn.relu(dense(carry, layer["wi"]))
    y = dense(h, layer["wo"])
    return carry + y, None


def scanned_helper_loss(params, x):
    out, _ = jax.lax.scan(block_with_helper, x, params)
    return jnp.mean(out**2)


def test_a_helper_called_from_two_lines_says_which_call_each_collective_is_for():
    """A Flax-like layer stack whose layer calls one ``dense`` helper twice: every
    collective is on the helper's one line (the innermost line of the user's), and the
    report names the call each comes through, as the module's stack frames say."""
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    params = {
        "wi": jax.device_put(jnp.ones((3, 16, 32)), NamedSharding(mesh, P(None, None, "model"))),
        "wo": jax.device_put(jnp.ones((3, 32, 16)), NamedSharding(mesh, P())),
    }
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", None)))
    fun = jax.grad(scanned_helper_loss)
    prog = shardviz.trace(fun, params, x)
    text = compiled_text(fun, params, x)
    assert len(prog.collectives) == len(collective_lines(text))
    helper = line_of(dense, "x @ kernel")
    first, second = line_of(block_with_helper, 'dense(carry, layer["wi"])'), line_of(block_with_helper, "dense(h, ")
    charged = [(c, p) for c in prog.collectives for p in (c.parts or (None,))]
    assert {(p or c).source.line for c, p in charged} == {helper}
    callers = {(p or c).stack[1].line for c, p in charged}
    assert callers == {first, second}, "the module's frames no longer name both calls"
    report = render_program(prog, width=100, color=False)
    assert report.count(f"via {__file__.rsplit('/', 1)[-1]}:{first}") == sum(
        (p or c).stack[1].line == first for c, p in charged
    )
    assert f'via {__file__.rsplit("/", 1)[-1]}:{second}  y = dense(h, layer["wo"])' in report
