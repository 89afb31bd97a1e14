"""The program widget's input edits say what the edit changed: which collectives appeared,
vanished, grew or shrank, on which lines, checked against JAX's compiled HLO of each trace.

The notice's figure is the program table's: bytes one device sends per call of the step, by the
ring formulas of a group of n (all-reduce 2 (n-1)/n of its result, all-gather (n-1)/n)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from compare_steps import dense
from shardviz.compare.edits import edit_notice, program_changes
from test_compare_diff import hlo_collectives


@pytest.fixture(scope="module")
def mesh():
    return jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("x", "y"))


def structs(mesh, w_spec, x_spec):
    return (
        jax.ShapeDtypeStruct((64, 32), np.float32, sharding=NamedSharding(mesh, w_spec)),
        jax.ShapeDtypeStruct((16, 64), np.float32, sharding=NamedSharding(mesh, x_spec)),
    )


def compiled(mesh, w_spec, x_spec):
    return jax.jit(dense).trace(*structs(mesh, w_spec, x_spec)).lower().compile().as_text()


def test_an_input_edit_names_the_collective_it_made_and_its_line(mesh):
    widget = shardviz.ProgramWidget(shardviz.trace(dense, *structs(mesh, P(None, None), P("x", None))))
    assert widget.program.collectives == ()
    assert widget.apply_edit(input_specs=["x", "None"]), widget.error
    old = hlo_collectives(compiled(mesh, P(None, None), P("x", None)))
    new = hlo_collectives(compiled(mesh, P("x", None), P(None, None)))
    appeared = set(new) - set(old)
    assert len(appeared) == 1
    ((line, kind),) = appeared
    # x has 4 devices: the ring sends 2 * 3/4 of an all-reduce's result, 3/4 of an all-gather's
    sent = new[(line, kind)] * {"all-reduce": 6, "all-gather": 3}[kind] // 4
    assert widget.notice == (
        f"Traced again: {kind} over x at compare_steps.py:{line} appeared ({shardviz_bytes(sent)} per call)."
    )
    # and back: the same collective vanished
    assert widget.apply_edit(input_specs=["None", "x"]), widget.error
    assert widget.notice == (
        f"Traced again: {kind} over x at compare_steps.py:{line} vanished ({shardviz_bytes(sent)} per call)."
    )


def shardviz_bytes(count):
    return f"{count / 1024:.1f} KiB" if count < 10 * 1024 else f"{count / 1024:.0f} KiB"


def test_growth_is_said_with_both_counts(mesh):
    before = shardviz.trace(dense, *structs(mesh, P("x", None), P("y", "x")))
    after = shardviz.trace(dense, *structs(mesh, P("x", None), P(None, "x")))
    old = hlo_collectives(compiled(mesh, P("x", None), P("y", "x")))
    new = hlo_collectives(compiled(mesh, P("x", None), P(None, "x")))
    ((line, kind),) = new
    assert (kind, new[(line, kind)], old[(line, kind)]) == ("all-reduce", 2048, 1024)  # [16, 32] f32 and half of it
    # sent over x's 4 devices: 2 * 3/4 of each result, 1536 and 3072 bytes
    assert edit_notice(before, after) == (
        f"Traced again: all-reduce over x at compare_steps.py:{line} grew (1.5 KiB -> 3.0 KiB per call)."
    )
    assert edit_notice(after, before).endswith("shrank (3.0 KiB -> 1.5 KiB per call).")
    assert edit_notice(before, before) == "Traced again: the same collectives on the same lines."
    assert [c.change for c in program_changes(before, after)] == ["grown"]


def test_a_scanned_layers_collectives_count_every_run_by_hand():
    import inspect

    from plan_functions import scanned_model
    from shardviz.compare.edits import collective_lines

    mesh = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    params = jax.ShapeDtypeStruct((6, 64, 64), np.float32, sharding=NamedSharding(mesh, P(None, "data", "model")))
    x = jax.ShapeDtypeStruct((16, 64), np.float32, sharding=NamedSharding(mesh, P("data", None)))
    lines, first = inspect.getsourcelines(scanned_model)
    layer = first + next(i for i, text in enumerate(lines) if "h @ w" in text)
    found = {c.key: (c.count, c.bytes) for c in collective_lines(shardviz.trace(scanned_model, params, x))}
    # by hand, per layer and device: each weight block [32, 16] f32 gathered over data into [64, 16] (4 KiB),
    # and the activations' columns [8, 16] gathered over model into [8, 64] (2 KiB); six layers
    # layers; each device sends the (n-1)/n of the result it lacks: 1/2 over data, 3/4 over model
    assert found[(f"plan_functions.py:{layer}", "all-gather", "data")] == (1, 6 * 64 * 16 * 4 // 2)
    assert found[(f"plan_functions.py:{layer}", "all-gather", "model")] == (1, 6 * 8 * 64 * 4 * 3 // 4)
