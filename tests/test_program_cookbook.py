"""A training step shaped like the one in JAX's training cookbook, traced and checked against JAX.

The shape of that step: a static config, Explicit mesh axes set with
``jax.set_mesh`` and FSDP-style parameter specs, einsums that name their
output sharding, a loss function defined inside the step, and train state
(parameters and Adam moments) held in ``Ref``s that a hand-written Adam
update writes in place through ``jax.tree.map``. The model here is small and
written for this test; what is checked is shardviz's reading of it against
the compiled module and the real step's outputs.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.lines.frames import is_user_file
from shardviz.program.result.report import render_program


@jax.tree_util.register_static
@dataclass(frozen=True)
class Settings:
    vocab: int = 64
    seq: int = 8
    width: int = 32
    heads: int = 8
    head_width: int = 4
    hidden: int = 64
    depth: int = 2
    lr: float = 1e-3
    b1: float = 0.9
    b2: float = 0.999
    act: P = field(default_factory=lambda: P("fsdp", None, None))


def new_params(cfg: Settings, key: jax.Array) -> dict:
    keys = iter(jax.random.split(key, 3 + 4 * cfg.depth))

    def draw(shape, spec):
        return jax.random.normal(next(keys), shape, out_sharding=spec) * 0.05

    return {
        "tokens": draw((cfg.vocab, cfg.width), P(None, None)),
        "positions": draw((cfg.seq, cfg.width), P(None, None)),
        "blocks": [
            {
                "qkv": draw((3, cfg.width, cfg.heads, cfg.head_width), P(None, "fsdp", None, None)),
                "proj": draw((cfg.heads, cfg.head_width, cfg.width), P("fsdp", None, None)),
                "up": draw((cfg.width, cfg.hidden), P("fsdp", None)),
                "down": draw((cfg.hidden, cfg.width), P(None, "fsdp")),
            }
            for _ in range(cfg.depth)
        ],
        "unembed": draw((cfg.width, cfg.vocab), P("fsdp", None)),
    }


def forward(cfg: Settings, params: dict, ids: jax.Array) -> jax.Array:
    x = params["tokens"].at[ids].get(out_sharding=cfg.act)
    x = x + params["positions"]
    for blk in params["blocks"]:
        qkv = jnp.einsum("btd,cdhk->btchk", x, blk["qkv"], out_sharding=P("fsdp", None, None, None, None))
        att = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=True)
        x = x + jnp.einsum("bthk,hkd->btd", att, blk["proj"], out_sharding=cfg.act)
        up = jax.nn.gelu(jnp.einsum("btd,df->btf", x, blk["up"], out_sharding=cfg.act))
        x = x + jnp.einsum("btf,fd->btd", up, blk["down"], out_sharding=cfg.act)
    return jnp.einsum("btd,dv->btv", x, params["unembed"], out_sharding=cfg.act)


def adam(cfg: Settings, p: jax.Ref, g: jax.Array, m: jax.Ref, v: jax.Ref, t: jax.Array) -> None:
    m[...] = cfg.b1 * m[...] + (1 - cfg.b1) * g
    v[...] = cfg.b2 * v[...] + (1 - cfg.b2) * g * g
    m_hat = m[...] / (1 - cfg.b1**t)
    v_hat = v[...] / (1 - cfg.b2**t)
    p[...] -= cfg.lr * m_hat / (jnp.sqrt(v_hat) + 1e-8)


@jax.jit
def cookbook_step(cfg: Settings, state: dict, batch: dict) -> dict:
    def loss_fn(params):
        logits = forward(cfg, params, batch["inputs"])
        targets = jax.nn.one_hot(batch["targets"], cfg.vocab)
        return -(targets * jax.nn.log_softmax(logits)).sum(-1).mean()

    params = jax.tree.map(jax.ref.get, state["params"])
    loss, grads = jax.value_and_grad(loss_fn)(params)
    state["count"][...] += 1
    jax.tree.map(partial(adam, cfg, t=state["count"][...]), state["params"], grads, state["mu"], state["nu"])
    return {"loss": loss}


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("fsdp",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:8])


def fresh_state(cfg: Settings) -> dict:
    params = new_params(cfg, jax.random.key(0))
    return {
        "params": jax.tree.map(jax.ref.new_ref, params),
        "mu": jax.tree.map(lambda a: jax.ref.new_ref(jnp.zeros_like(a)), params),
        "nu": jax.tree.map(lambda a: jax.ref.new_ref(jnp.zeros_like(a)), params),
        "count": jax.ref.new_ref(jnp.zeros((), jnp.int32)),
    }


def compiled_collectives(text: str) -> list[str]:
    kinds = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    return [ln for ln in text.splitlines() if re.search(rf"^\s*(ROOT )?%\S+ = .*? ({kinds})(-start)?\(", ln)]


@pytest.fixture(scope="module")
def traced(mesh):
    cfg = Settings()
    with jax.set_mesh(mesh):
        ids = jax.device_put(np.arange(16 * cfg.seq).reshape(16, cfg.seq) % cfg.vocab, P("fsdp"))
        batch = {"inputs": ids, "targets": ids}
        prog = shardviz.trace(cookbook_step, cfg, fresh_state(cfg), batch)
        text = cookbook_step.trace(cfg, fresh_state(cfg), batch).lower().compile().as_text()
        ran = cookbook_step(cfg, fresh_state(cfg), batch)
    return cfg, prog, text, ran


def test_the_step_traces_with_its_refs_and_reads_every_collective(traced):
    _, prog, text, ran = traced
    assert prog.sharding_mode == "explicit"
    assert prog.output_paths == ("out['loss']",)
    assert prog.outputs[0].spec == shardviz.describe(ran["loss"]).spec
    assert "state['params']['blocks'][0]['qkv']" in prog.input_paths
    assert len(prog.collectives) == len(compiled_collectives(text))
    assert sum(t.wire_bytes for t in prog.totals.by_line) == prog.totals.wire_bytes


def test_each_gradient_in_the_combined_all_reduce_is_on_the_einsum_that_uses_its_weight(traced):
    """XLA combines the gradients' all-reduces into one; each operand goes to the line
    whose weight it is the gradient of. Weights of a unique size are told apart by their
    bytes (JAX's shapes), and each must land on the line that uses that weight."""
    cfg, prog, _, _ = traced
    combined = [c for c in prog.collectives if c.combined]
    assert combined, "XLA combined no all-reduce here: the case this test needs is gone"
    parts = [p for c in combined for p in c.parts]
    nbytes = {
        "qkv": 3 * cfg.width * cfg.heads * cfg.head_width * 4,
        "proj": cfg.heads * cfg.head_width * cfg.width * 4,
        "positions": cfg.seq * cfg.width * 4,
    }
    assert len(set(nbytes.values())) == len(nbytes)
    uses = {
        "qkv": line_of(forward, '"btd,cdhk->btchk"'),
        "proj": line_of(forward, '"bthk,hkd->btd"'),
        "positions": line_of(forward, 'params["positions"]'),
    }
    for name, size in nbytes.items():
        mine = [p for p in parts if p.result_bytes == size]
        assert mine, f"no operand of {name}'s gradient size in the combined all-reduce"
        assert {p.source.line for p in mine} == {uses[name]}, name
    assert len({p.source.line for p in parts}) >= 5, "the gradients must spread over the lines that use them"


def test_no_line_shown_is_shardvizs_jaxs_or_a_librarys(traced):
    _, prog, _, _ = traced
    for c in prog.collectives:
        for where in [c.source, *(p.source for p in c.parts)]:
            assert where is not None and is_user_file(where.file) and where.file == __file__
    for v in prog.values:
        assert v.source is None or v.source.file == __file__


def test_the_report_and_the_payload_show_the_lines_with_their_text(traced):
    _, prog, _, _ = traced
    report = render_program(prog, width=120, color=False)
    assert 'jnp.einsum("btd,cdhk->btchk", x, blk["qkv"]' in report
    assert "they travel together" in report
    payload = prog.to_json()
    texts = {text for _, _, text in payload["line_texts"]}
    # lines of the loss function and of the helpers it calls, not only the traced function's
    assert 'logits = forward(cfg, params, batch["inputs"])' in texts
    assert any('blk["proj"]' in t for t in texts)
    assert "m[...] = cfg.b1 * m[...] + (1 - cfg.b1) * g" in texts


def test_the_adam_writes_are_not_called_never_computed(traced):
    _, prog, _, _ = traced
    writes = [v for v in prog.values if v.primitive == "swap"]
    assert writes and all("never computed" not in v.note for v in writes)


def test_every_collective_has_a_line_and_each_blocks_collectives_are_told_apart(traced):
    """The blocks' loop runs twice: every collective on a line of it names its pass, and
    the gradients of each block's weights (told apart by pass) are one per block."""
    from program_checks import assert_every_collective_has_a_line_or_an_output, assert_layers_told_apart

    cfg, prog, _, _ = traced
    assert_every_collective_has_a_line_or_an_output(prog)
    seen = assert_layers_told_apart(prog)
    qkv_line = line_of(forward, '"btd,cdhk->btchk"')
    assert {p for _, p in seen[(__file__, qkv_line)]} == set(range(1, cfg.depth + 1))
