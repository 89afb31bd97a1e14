"""Public programs rebuilt from their sources, each checked as a user would read its program view.

- JAX's "Distributed arrays and automatic parallelization" tutorial: ``predict``'s four-layer
  loop and its gradient on a 4x2 mesh of batch and model axes (the shardings of the tutorial's
  "4-way batch data parallelism and 2-way model tensor parallelism"), and its
  ``with_sharding_constraint`` example, at the tutorial's sizes (ShapeDtypeStructs: no data);
- JAX's shard_map tutorial: FSDP with tensor parallelism (``loss_fsdp_tp``) and the SPMD
  pipeline (``spmd_pipeline``, a Python loop of ``ppermute``s that shift stages);
- the scaling book's JAX chapter (jax-stuff.md): the jitted ``matmul_square`` and the collective
  matmul (``fori_loop(..., unroll=True)`` of ``ppermute``s); the book's code predates the
  varying-axes checks, so its shard_map runs with ``check_vma=False``;
- JAX's explicit-sharding notebook: an einsum whose output sharding asks for a reduce-scatter;
- Flax's Linen GSPMD guide (``flax_on_pjit``): the for-loop ``MLP`` of ``DotReluDot`` layers and
  its optax Adam training step under ``nn.with_partitioning``;
- Flax's NNX GSPMD guide: ``DotReluDot`` with ``nnx.with_partitioning`` and an ``nnx.Optimizer``
  step, traced through ``nnx.split`` / ``nnx.merge``.

The training cookbook is rebuilt in tests/test_program_cookbook.py. Each program is checked:
every collective has a line of the user's or the output it lays out; the collectives of each
layer (a loop's pass, a Flax module's scope) are told apart and land on the layer the bytes
(JAX's shapes) say; and on several, the peak and what is live at it, counted by hand.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_value_keys
from nnx_guide import guide_step
from program_checks import (
    assert_every_collective_has_a_cause,
    assert_every_collective_has_a_line_or_an_output,
    assert_layers_told_apart,
    charges,
)
from shardviz.program.lines.scopes import is_gradient
from shardviz.program.result.report import render_program

MiB = 1 << 20


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


def compiled_collectives(text: str) -> list[str]:
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [ln for ln in text.splitlines() if re.search(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", ln)]


def auto_mesh(shape, names):
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape), devices=jax.devices()[:8])


# --------------------------------------------------------------------------
# Distributed arrays and automatic parallelization


def predict(params, inputs):
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jnp.maximum(outputs, 0)
    return outputs


def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))


@pytest.fixture(scope="module")
def tutorial_grad():
    mesh = auto_mesh((4, 2), ("batch", "model"))

    def struct(shape, *spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, P(*spec)))

    batch = (struct((8192, 784), "batch", None), struct((8192, 10), "batch", None))
    params = [
        (struct((784, 8192)), struct((8192,))),
        (struct((8192, 8192), None, "model"), struct((8192,), "model")),
        (struct((8192, 8192), "model", None), struct((8192,))),
        (struct((8192, 10)), struct((10,))),
    ]
    gradfun = jax.grad(loss)
    text = jax.jit(gradfun).lower(params, batch).compile().as_text()
    return shardviz.trace(gradfun, params, batch), text


def test_the_tutorials_predict_tells_each_layers_collectives_apart(tutorial_grad):
    prog, text = tutorial_grad
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    seen = assert_layers_told_apart(prog)
    line = line_of(predict, "outputs = jnp.dot(inputs, W) + b")
    assert {p for _, p in seen[(__file__, line)]} == {1, 2, 3, 4}
    # Each gradient's bytes say which layer's parameter it is (per device: W2 is split over model,
    # b2 too, W3 over its rows), so each operand of the combined all-reduce names its own pass.
    per_device = {
        784 * 8192 * 4: 1,
        8192 * 8192 * 4 // 2: None,  # W2 and W3 alike: passes 2 and 3
        8192 * 4 // 2: 2,
        8192 * 10 * 4: 4,
        10 * 4: 4,
    }
    parts = [p for c in prog.collectives for p in c.parts]
    assert len(parts) == 8
    for p in parts:
        expected = per_device.get(p.result_bytes, "b1 or b3")
        if expected == "b1 or b3":
            assert p.result_bytes == 8192 * 4 and p.pass_number in (1, 3)
        elif expected is None:
            assert p.pass_number in (2, 3)
        else:
            assert p.pass_number == expected, (p.result_bytes, p.pass_number)
    assert sorted(p.pass_number for p in parts) == [1, 1, 2, 2, 3, 3, 4, 4]
    # The model-axis all-reduces: the forward one of layer 3 (W3 split on its contracting rows)
    # and the backward one of layer 2 (the gradient flowing back through W2, split on its columns).
    model = sorted((is_gradient(c.op_name), c.pass_number) for c in prog.collectives if c.axes == ("model",))
    assert model == [(False, 3), (True, 2)]


def constrained(x):
    x = x + 1
    y = jax.lax.with_sharding_constraint(x, NamedSharding(CONSTRAINT_MESH, P()))
    return y


CONSTRAINT_MESH = auto_mesh((4, 2), ("batch", "model"))


def test_the_tutorials_constraint_example_puts_its_gathers_on_the_constraint_and_peaks_where_counted():
    """x of 8192 x 8192 floats (256 MiB) split 4 x 2 (32 MiB per device), then replicated: its 224
    MiB not yet on a device are gathered, on the constraint's line (XLA's metadata names the add).
    XLA gathers first over model (to 2048 x 8192, 64 MiB), then over batch into the output, and adds
    one last. By hand, at the second gather: the argument (32 MiB), the half-gathered copy (64 MiB)
    and the output (256 MiB): 352 MiB, the peak."""
    x = jax.ShapeDtypeStruct((8192, 8192), jnp.float32, sharding=NamedSharding(CONSTRAINT_MESH, P("batch", "model")))
    prog = shardviz.trace(constrained, x)
    text = jax.jit(constrained).lower(x).compile().as_text()
    assert len(prog.collectives) == len(compiled_collectives(text)) == 2
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"layout-mismatch"})
    gathers = {c.name: c for c in prog.collectives}
    assert {c.kind for c in gathers.values()} == {"all-gather"}
    assert {c.source.line for c in gathers.values()} == {line_of(constrained, "with_sharding_constraint")}
    assert sum(c.wire_bytes for c in gathers.values()) == 256 * MiB - 32 * MiB
    (last,) = [n for n, c in gathers.items() if "f32[8192,8192]" in c.hlo]
    (half,) = [n for n in gathers if n != last]
    assert re.search(rf"%{re.escape(half)} = f32\[2048,8192\]", text)
    t = prog.memory_timeline
    assert t.steps[t.peak_step] == last
    assert t.peak_bytes == 32 * MiB + 64 * MiB + 256 * MiB
    assert t.bytes_by_kind() == {"argument": 32 * MiB, "output": 256 * MiB, "saved": 0, "temporary": 64 * MiB}
    assert prog.memory.argument_bytes == 32 * MiB and prog.memory.output_bytes == 256 * MiB


# --------------------------------------------------------------------------
# shard_map tutorial: FSDP + TP, and the SPMD pipeline


@functools.partial(jax.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
def predict_fsdp_tp(params_frag, inputs):
    for W_frag, b_frag in params_frag:
        W = jax.lax.all_gather(W_frag, "batch", tiled=True)
        b = jax.lax.all_gather(b_frag, "batch", tiled=True)
        block_result = jnp.dot(inputs, W)
        outputs = jax.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b
        inputs = jax.nn.relu(outputs)
    return outputs


def loss_fsdp_tp(local_params, local_batch):
    inputs, targets = local_batch
    predictions = predict_fsdp_tp(local_params, inputs)
    sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), "feats")
    return jax.lax.pmean(jnp.mean(sq_err), "batch")


LAYER_SIZES = [784, 128, 128, 128, 128, 128, 8]


def init_params(key, layer_sizes, batch_size):
    keys = jax.random.split(key, len(layer_sizes) + 2)
    params = [
        (jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros((n,)))
        for k, m, n in zip(keys, layer_sizes[:-1], layer_sizes[1:])
    ]
    inputs = jax.random.normal(keys[-2], (batch_size, layer_sizes[0]))
    targets = jax.random.normal(keys[-1], (batch_size, layer_sizes[-1]))
    return params, (inputs, targets)


def test_the_fsdp_tp_gradient_numbers_each_layers_gathers_and_scatters():
    mesh = auto_mesh((4, 2), ("batch", "feats"))
    params, batch = init_params(jax.random.key(0), LAYER_SIZES, 32)
    with jax.set_mesh(mesh):
        batch = jax.device_put(batch, P("batch", "feats"))
        params = jax.device_put(params, P(("feats", "batch")))
        fun = jax.shard_map(loss_fsdp_tp, in_specs=(P(("feats", "batch")), P("batch", "feats")), out_specs=P())
        grad = jax.grad(fun)
        prog = shardviz.trace(grad, params, batch)
        text = jax.jit(grad).lower(params, batch).compile().as_text()
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"shard-map"})
    seen = assert_layers_told_apart(prog)
    w_line = line_of(predict_fsdp_tp, 'W = jax.lax.all_gather(W_frag, "batch"')
    assert {p for _, p in seen[(__file__, w_line)]} == set(range(1, 7))
    # Each layer's W gather brings its whole W to every device of a batch group: the bytes say the layer.
    for c in prog.collectives:
        if c.kind == "all-gather" and c.source.line == w_line and not is_gradient(c.op_name):
            m, n = LAYER_SIZES[c.pass_number - 1], LAYER_SIZES[c.pass_number]
            assert c.result_bytes == m * n * 4 // 2, (c.pass_number, c.result_bytes)


L, S, B, K, M = 4, 2, 8, 2, 4  # the tutorial's pipeline: 4 inner layers, 2 stages, microbatches of 8


def spmd_pipeline(fn, stage_params, inputs):
    stage = jax.lax.axis_index("stages")
    outputs = jnp.zeros_like(inputs) * jnp.nan
    state = jnp.zeros((L // S, B, 128)) * jnp.nan
    for i in range(M + L - 1):
        state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
        state = jax.vmap(fn)(stage_params, state)
        outputs = outputs.at[(i - L + 1) % K].set(jnp.where(stage == S - 1, state[-1], outputs[(i - L + 1) % K]))
        state, inputs, outputs = shift(i, state, inputs, outputs)
    outputs = jax.lax.ppermute(outputs, "stages", [(i, (i + 1) % S) for i in range(S)])
    return outputs


def shift(i, state, inputs, outputs):
    sh = lambda x, d: jax.lax.ppermute(x, "stages", [(i, (i + d) % S) for i in range(S)])  # noqa: E731
    state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
    if (i % K) == (-1 % K):
        inputs = sh(inputs, +1)
    if ((i - L + 1) % K) == (-1 % K):
        outputs = sh(outputs, +1)
    return state, inputs, outputs


def predict_pp(params, inputs):
    (W_first, b_first), inner_params, (W_last, b_last) = params
    inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
    inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]), inner_params, inputs)
    return jnp.dot(inputs, W_last) + b_last


def loss_pp(params, batch):
    inputs, targets = batch
    predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
    local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
    return jax.lax.pmean(local_loss, "stages")


def test_the_pipelines_shifts_are_numbered_by_the_loops_pass():
    """Seven passes of the pipeline's loop each shift the stage state (one ppermute through the
    ``sh`` helper, called from the state's line); the inputs and outputs shift only on some passes."""
    mesh = jax.make_mesh((S,), ("stages",), axis_types=(AxisType.Auto,), devices=jax.devices()[:S])
    params, batch = init_params(jax.random.key(0), LAYER_SIZES, 32)
    first, *inner, last = params
    ws, bs = zip(*inner)
    stacked = jax.device_put((jnp.stack(ws[:L]), jnp.stack(bs[:L])), NamedSharding(mesh, P("stages")))
    rep = NamedSharding(mesh, P())
    first = (jax.device_put(first[0], rep), jax.device_put(first[1], rep))
    last = (jax.device_put(jnp.zeros((128, 8)), rep), jax.device_put(jnp.zeros((8,)), rep))
    batch = jax.device_put((batch[0][:32], batch[1][:32]), NamedSharding(mesh, P("stages")))
    fun = jax.shard_map(loss_pp, mesh=mesh, in_specs=((P(), P("stages"), P()), P("stages")), out_specs=P())
    prog = shardviz.trace(fun, (first, stacked, last), batch)
    text = jax.jit(fun).lower((first, stacked, last), batch).compile().as_text()
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"shard-map"})
    sh_line, state_line = line_of(shift, "sh = lambda"), line_of(shift, "state = jnp.roll(state")
    permutes = [c for c in prog.collectives if c.kind == "collective-permute"]
    assert {c.source.line for c in permutes} >= {sh_line}
    shifts = [c for c in permutes if c.source.line == sh_line and c.stack[1].line == state_line]
    # the last pass's shifted state is read by nothing: XLA drops that one
    assert len(shifts) == M + L - 2
    assert sorted(c.pass_number for c in shifts) == list(range(1, M + L - 1))
    assert {c.passes for c in shifts} == {M + L - 1}
    # each reads the stage state the pass before made: XLA's order of the chain is the passes'
    chain = sorted(shifts, key=lambda c: c.pass_number)
    assert [text.index(f"%{c.name} = ") for c in chain] == sorted(text.index(f"%{c.name} = ") for c in chain)


# --------------------------------------------------------------------------
# the scaling book's JAX chapter


def matmul_square(In, W):
    return jnp.einsum("bd,df->bf", jnp.square(In), W)


def test_the_books_jitted_matmul_all_reduces_on_the_einsums_line():
    mesh = auto_mesh((2, 4), ("X", "Y"))
    In = jax.ShapeDtypeStruct((8, 2048), jnp.bfloat16, sharding=NamedSharding(mesh, P("X", "Y")))
    W = jax.ShapeDtypeStruct((2048, 8192), jnp.bfloat16, sharding=NamedSharding(mesh, P("Y", None)))
    fun = jax.jit(matmul_square, out_shardings=NamedSharding(mesh, P("X", None)))
    prog = shardviz.trace(fun, In, W)
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    reduces = [c for c in prog.collectives if c.kind == "all-reduce"]
    assert reduces and all(c.axes == ("Y",) for c in reduces)
    assert all(c.source.line == line_of(matmul_square, "jnp.einsum") for c in reduces)
    # the book's local view: [4, 8192] per device, summed over Y (XLA:CPU sums bf16 in f32)
    assert all(re.search(r"(bf16|f32)\[4,8192\]", c.hlo) for c in reduces)


def collective_matmul_allgather_lhs_contracting(lhs, rhs):
    axis_size = jax.lax.psum(1, axis_name="Y")
    chunk_size = lhs.shape[1]

    def f(i, carrys):
        accum, lhs = carrys
        rhs_chunk = jax.lax.dynamic_slice_in_dim(rhs, i * chunk_size, chunk_size)
        update = lhs @ rhs_chunk
        lhs = jax.lax.ppermute(lhs, axis_name="Y", perm=[(j, (j - 1) % axis_size) for j in range(axis_size)])
        return accum + update, lhs

    accum = jnp.zeros((lhs.shape[0], rhs.shape[1]), dtype=lhs.dtype)
    accum, lhs = jax.lax.fori_loop(0, axis_size - 1, f, (accum, lhs), unroll=True)
    i = axis_size - 1
    rhs_chunk = jax.lax.dynamic_slice_in_dim(rhs, i * chunk_size, chunk_size)
    update = lhs @ rhs_chunk
    return accum + update


def test_the_books_collective_matmul_numbers_each_unrolled_permute():
    """``fori_loop(..., unroll=True)``: XLA runs the loop's three trips one after another, each
    with its own collective-permute on the ppermute's line; each reads the one before."""
    mesh = auto_mesh((2, 4), ("X", "Y"))
    A = jax.ShapeDtypeStruct((1024, 2048), jnp.int32, sharding=NamedSharding(mesh, P("X", "Y")))
    W = jax.ShapeDtypeStruct((2048, 8192), jnp.int32, sharding=NamedSharding(mesh, P(None, "Y")))
    fun = jax.jit(
        jax.shard_map(
            collective_matmul_allgather_lhs_contracting,
            mesh=mesh,
            in_specs=(P("X", "Y"), P(None, "Y")),
            out_specs=P("X", "Y"),
            check_vma=False,
        )
    )
    prog = shardviz.trace(fun, A, W)
    text = fun.lower(A, W).compile().as_text()
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"shard-map"})
    permutes = [c for c in prog.collectives if c.kind == "collective-permute"]
    assert len(permutes) == len(compiled_collectives(text)) == 3
    assert {c.source.line for c in permutes} == {line_of(collective_matmul_allgather_lhs_contracting, "ppermute")}
    # XLA's own chain: each permute reads the previous one's result
    operand = {c.name: re.search(rf"%{re.escape(c.name)} = .*?collective-permute\(%?([^),]+)", text) for c in permutes}
    order = sorted(permutes, key=lambda c: c.pass_number)
    assert [c.pass_number for c in order] == [1, 2, 3] and {c.passes for c in order} == {3}
    for before, after in itertools.pairwise(order):
        assert operand[after.name].group(1).lstrip("%") == before.name
    # one device's block of lhs: 1024/2 x 2048/4 int32 = 1 MiB per permute
    assert all(c.result_bytes == 512 * 512 * 4 for c in permutes)


# --------------------------------------------------------------------------
# the explicit-sharding notebook


def explicit_matmul(x, y):
    return jnp.einsum("xy,yz->xz", x, y, out_sharding=P("X", "Y"))


def test_the_explicit_notebooks_einsum_reduce_scatters_on_its_line():
    mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2, devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        x = jax.device_put(np.arange(8 * 16.0).reshape(8, 16), P("X", "Y"))
        y = jax.device_put(np.arange(16 * 8.0).reshape(16, 8), P("Y", None))
        prog = shardviz.trace(explicit_matmul, x, y)
        ran = jax.jit(explicit_matmul)(x, y)
        text = jax.jit(explicit_matmul).lower(x, y).compile().as_text()
    assert prog.sharding_mode == "explicit"
    assert prog.outputs[0].spec == shardviz.describe(ran).spec == (("X",), ("Y",))
    assert len(prog.collectives) == len(compiled_collectives(text)) >= 1
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    assert {c.source.line for c in prog.collectives} == {line_of(explicit_matmul, "jnp.einsum")}
    assert all("Y" in (c.axes or ()) for c in prog.collectives)


# --------------------------------------------------------------------------
# Flax: the Linen GSPMD guide


def linen_program(depth: int = 1024, layers: int = 4) -> tuple[Callable, object, jax.Array, object]:
    import flax.linen as nn
    import optax
    from flax.training import train_state

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices()[:8])

    def mesh_sharding(spec):
        return NamedSharding(mesh, spec)

    class DotReluDot(nn.Module):
        depth: int
        dense_init: Callable = nn.initializers.xavier_normal()

        @nn.compact
        def __call__(self, x):
            y = nn.Dense(
                self.depth, kernel_init=nn.with_partitioning(self.dense_init, (None, "model")), use_bias=False
            )(x)
            y = jax.nn.relu(y)
            y = jax.lax.with_sharding_constraint(y, mesh_sharding(P("data", "model")))
            W2 = self.param("W2", nn.with_partitioning(self.dense_init, ("model", None)), (self.depth, x.shape[-1]))
            z = jnp.dot(y, W2)
            z = jax.lax.with_sharding_constraint(z, mesh_sharding(P("data", None)))
            return z, None

    class MLP(nn.Module):
        num_layers: int
        depth: int

        @nn.compact
        def __call__(self, x):
            for _ in range(self.num_layers):
                x, _ = DotReluDot(self.depth)(x)
            return x

    model = MLP(layers, depth)
    optimizer = optax.adam(learning_rate=0.001)
    x_sharding = mesh_sharding(P("data", None))
    x = jax.device_put(jnp.ones((8, depth)), x_sharding)

    def init_fn(k, x, model, optimizer):
        variables = model.init(k, x)
        return train_state.TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optimizer)

    abstract = jax.eval_shape(functools.partial(init_fn, model=model, optimizer=optimizer), jax.random.key(0), x)
    state_sharding = nn.get_sharding(abstract, mesh)
    init = jax.jit(
        init_fn, static_argnums=(2, 3), in_shardings=(mesh_sharding(P()), x_sharding), out_shardings=state_sharding
    )
    state = init(jax.random.key(0), x, model, optimizer)

    @functools.partial(jax.jit, in_shardings=(state_sharding, x_sharding), out_shardings=state_sharding)
    def train_step(state, x):
        def loss_unrolled(params):
            y = model.apply({"params": params}, x)
            return y.sum()

        grads = jax.grad(loss_unrolled)(state.params)
        return state.apply_gradients(grads=grads)

    return train_step, state, x, mesh


@pytest.fixture(scope="module")
def linen():
    pytest.importorskip("flax")
    train_step, state, x, mesh = linen_program()
    with jax.set_mesh(mesh):
        prog = shardviz.trace(train_step, state, x)
        text = train_step.lower(state, x).compile().as_text()
    return prog, text, state, x


def test_the_linen_guides_layers_are_told_apart_by_their_module_paths(linen):
    prog, text, _, _ = linen
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    assert_layers_told_apart(prog)
    layers = {f"MLP/DotReluDot_{k}" for k in range(4)}
    found = {(part or c).scope for c, part in charges(prog)}
    assert {s.removesuffix("/Dense_0") for s in found} == layers
    # each layer's two kernel gradients travel in the combined all-reduce over data, one each
    grads = [p for c in prog.collectives for p in c.parts]
    assert sorted(p.scope for p in grads) == sorted([f"{s}/Dense_0" for s in layers] + list(layers))
    assert "MLP/DotReluDot_2" in render_program(prog, width=120, color=False)


def test_the_linen_steps_peak_holds_the_state_and_the_new_state(linen):
    """By hand, per device: each of the 8 kernels (1024 x 1024 floats, split 4 ways over model) is
    1 MiB, and Adam keeps mu and nu alike: 24 MiB of state. The step returns a new state as large
    (nothing is donated), so at its end both are live: 48 MiB and the scalars, the peak."""
    prog, _, state, x = linen
    per_device = sum(leaf.addressable_shards[0].data.nbytes for leaf in jax.tree.leaves(state))
    per_device += x.addressable_shards[0].data.nbytes
    assert 24 * MiB <= per_device < 24 * MiB + 64 * 1024
    t = prog.memory_timeline
    by_kind = t.bytes_by_kind()
    assert by_kind["argument"] == per_device
    assert by_kind["output"] == per_device - x.addressable_shards[0].data.nbytes
    assert t.peak_bytes == by_kind["argument"] + by_kind["output"] + by_kind["temporary"] + by_kind["saved"]
    assert t.peak_bytes - per_device * 2 <= 64 * 1024
    held = {g.label for g, _ in t.at_peak if g.kind == "argument"}
    assert "state.params['DotReluDot_3']['W2'].value" in held
    assert "state.opt_state[0].nu['DotReluDot_0']['Dense_0']['kernel'].value" in held


# --------------------------------------------------------------------------
# Flax: the NNX GSPMD guide


def test_the_nnx_guides_step_has_every_collective_on_its_line():
    guide = guide_step()
    DotReluDot = guide.model_class
    with jax.set_mesh(guide.mesh):
        prog = shardviz.trace(guide.train_step, guide.state, guide.x, guide.y)
        text = jax.jit(guide.train_step).lower(guide.state, guide.x, guide.y).compile().as_text()
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert_every_collective_has_a_line_or_an_output(prog)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    lines = {(part or c).source.line for c, part in charges(prog)}
    assert (
        line_of(DotReluDot.__call__, "z = jnp.dot") in lines and line_of(DotReluDot.__call__, "self.dot1(x)") in lines
    )
    # the kernels' gradients are summed over data: per device, 1024 x 1024 / 4 floats each
    grads = [p for c in prog.collectives for p in c.parts if p.result_bytes == 1024 * 256 * 4]
    assert {p.source.line for p in grads} == {
        line_of(DotReluDot.__call__, "z = jnp.dot"),
        line_of(DotReluDot.__call__, "self.dot1(x)"),
    }
    # by hand: two kernels and both Adam moments, 1 MiB each per device, and the same again returned
    t = prog.memory_timeline
    assert t.bytes_by_kind()["argument"] >= 6 * MiB and t.peak_bytes >= 12 * MiB


# --------------------------------------------------------------------------
# the payload of a 24-layer training step


def test_a_24_layer_unrolled_training_steps_payload_stays_under_200_kb():
    """The issue's bound (a size, not a time): a Python loop of 24 layers, its gradient and an SGD
    update, every pass's values listed; the compact JSON a program view receives."""
    import json

    mesh = auto_mesh((2, 4), ("data", "model"))
    w_in = jax.ShapeDtypeStruct((24, 256, 1024), jnp.float32, sharding=NamedSharding(mesh, P(None, None, "model")))
    w_out = jax.ShapeDtypeStruct((24, 1024, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "model", None)))
    x = jax.ShapeDtypeStruct((64, 256), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))

    def forward(params, x):
        w_in, w_out = params
        for k in range(24):
            h = jnp.tanh(x @ w_in[k])
            x = x + h @ w_out[k]
        return (x**2).mean()

    def step(params, x):
        loss, grads = jax.value_and_grad(forward)(params, x)
        return loss, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    prog = shardviz.trace(step, (w_in, w_out), x)
    assert_every_collective_has_a_cause(prog, {"partial-sums"})
    assert len(prog.values) > 24 * 10
    assert {v.pass_number for v in prog.values if v.label == "h"} == set(range(1, 25))
    payload = prog.to_json()
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    # reasons included (issue 40): each value's key is sent as an index into its stems, which a loop's passes share
    assert size < 200_000, size
    assert decode_value_keys(payload) == [v.key for v in prog.values]
