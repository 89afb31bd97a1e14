"""One byte figure for a collective, and one rule for a combined one, in every view.

XLA combines the all-reduces of two gradients into one instruction of two operands. The program's
table (its payload's lines), its totals, ``shardviz.testing``'s charges, the re-trace notice's
lines and ``compare``'s rows must all put each operand's bytes on the operand's own line, in the
same figure: bytes one device sends per call of the step. The figure is checked by hand against
the compiled module's own operand shapes and the ring formula of an all-reduce over n devices,
2 (n-1)/n of its result.
"""

from __future__ import annotations

import inspect
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.compare.edits import collective_lines
from shardviz.compare.rows import line_collectives
from shardviz.plan.estimate import estimate
from shardviz.plan.hardware import hardware_named as hardware
from shardviz.testing.collectives import line_charges


def two_layer_grad(w1, w2, x):
    def loss(w1, w2):
        h = jnp.tanh(x @ w1)
        return (h @ w2).sum()

    return jax.grad(loss, argnums=(0, 1))(w1, w2)


@pytest.fixture(scope="module")
def traced():
    mesh = jax.make_mesh((8,), ("data",), devices=jax.devices()[:8])
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    args = (
        jax.ShapeDtypeStruct((64, 32), jnp.float32, sharding=rep),
        jax.ShapeDtypeStruct((32, 16), jnp.float32, sharding=rep),
        jax.ShapeDtypeStruct((128, 64), jnp.float32, sharding=rows),
    )
    hlo = jax.jit(two_layer_grad).trace(*args).lower().compile().as_text()
    return shardviz.trace(two_layer_grad, *args), hlo


def test_the_combined_all_reduce_is_xlas_and_each_view_charges_its_operands_alike(traced):
    program, hlo = traced
    # XLA's own module: one all-reduce whose result is a tuple of the two gradients.
    combined = [
        ln for ln in hlo.splitlines() if re.search(r"= \(f32\[[\d,]+\][^)]*, f32\[[\d,]+\][^)]*\) all-reduce", ln)
    ]
    assert combined, "XLA did not combine the gradients' all-reduces on this JAX"
    (c,) = [c for c in program.collectives if len(c.parts) == 2]
    lines, first = inspect.getsourcelines(two_layer_grad)
    w1_line = first + next(i for i, t in enumerate(lines) if "x @ w1" in t)
    w2_line = first + next(i for i, t in enumerate(lines) if "h @ w2" in t)
    # By hand: each gradient's all-reduce over 8 devices sends 2 * 7/8 of its f32 result, once.
    sent = {w1_line: 2 * 7 * (64 * 32 * 4) // 8, w2_line: 2 * 7 * (32 * 16 * 4) // 8}
    assert sorted(p.source.line for p in c.parts) == sorted(sent)

    def on_our_lines(pairs):
        found: dict[int, int] = {}
        for line, count in pairs:
            number = int(str(line).rsplit(":", 1)[1]) if line and line != "?" else None
            if number in sent:
                found[number] = found.get(number, 0) + count
        return found

    # The program view's table: its payload's line groups, each with the bytes sent on its behalf.
    table = {g["line"]: g["wire_bytes"] for g in program.to_json()["lines"] if g["line"] in sent}
    totals = on_our_lines((t.key, t.wire_bytes) for t in program.totals.by_line)
    testing = on_our_lines(
        (f"{ch.source.file}:{ch.source.line}" if ch.source else "?", ch.wire_bytes) for ch in line_charges(program)
    )
    notice = on_our_lines((r.line, r.bytes) for r in collective_lines(program) if r.kind == "all-reduce")
    rows = on_our_lines(
        (r.line, r.bytes)
        for r in line_collectives(estimate(program, hardware("tpu-v5p")), program)
        if r.kind == "all-reduce"
    )
    assert totals == sent
    assert testing == sent
    assert notice == sent
    assert rows == sent
    assert table == sent


def test_compare_puts_the_second_gradients_bytes_on_its_own_line(traced):
    program, _ = traced
    (c,) = [c for c in program.collectives if len(c.parts) == 2]
    est = estimate(program, hardware("tpu-v5p"))
    rows = [r for r in line_collectives(est, program) if r.kind == "all-reduce"]
    lines = {int(r.line.rsplit(":", 1)[1]) for r in rows}
    assert lines == {p.source.line for p in c.parts}  # both lines, the second one not empty
    # The combined instruction's time is shared as its bytes are: the two shares add up to its own.
    (priced,) = [t for t, pc in zip(est.collectives, program.collectives, strict=True) if pc is c]
    assert np.isclose(sum(r.seconds for r in rows), priced.seconds)
