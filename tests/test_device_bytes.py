"""Collectives counted as the device moves them: in the program's dtypes, where XLA:CPU widens bf16 to f32.

Checked against the compiled module's own text (its collectives' element
types and shapes, read here with a regular expression, without shardviz),
JAX's own dtypes (``jax.make_jaxpr``, ``jax.eval_shape``) and hand counts
from the arrays' shapes: a ring all-reduce sends 2 (n-1)/n of its result per
device, an all-gather (n-1)/n.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError
from shardviz.plan.estimate import widening_note
from shardviz.program.memory.device_bytes import (
    MadeDtypes,
    count_on_device,
    counted_dtype,
    device_dtype,
    other_total,
    short_dtype,
)
from shardviz.program.model import SourceLocation, Value
from shardviz.program.result.report import render_program
from shardviz.testing import CollectiveBudgetExceeded, assert_collectives
from shardviz.testing.errors import SnapshotChanged
from shardviz.testing.snapshot import assert_collectives_snapshot

sys.path.insert(0, str(Path(__file__).parent))
from cookbook_bf16 import SPECS, Sizes, abstract_batch, abstract_state, jitted_train_step, shapes

ITEMSIZE = {"bf16": 2, "f16": 2, "f32": 4, "s32": 4}
# `%name = f32[16,32]{1,0} all-gather(...)` or a tuple of shapes: the module's result buffers
_COLLECTIVE = re.compile(r"= (\([^()]*\)|\S+) (all-reduce|all-gather|reduce-scatter)(-start)?\(")
_ARRAY = re.compile(r"\b(bf16|f16|f32|s32)\[([\d,]*)\]")


def module_collectives(text: str) -> list[tuple[str, list[tuple[str, int]]]]:
    """Each collective of a compiled module's text: its kind and its results' element types and bytes."""
    out = []
    for m in _COLLECTIVE.finditer(text):
        arrays = [
            (t, math.prod(int(d) for d in dims.split(",") if d) * ITEMSIZE[t]) for t, dims in _ARRAY.findall(m[1])
        ]
        out.append((m[2], arrays))
    return out


def ring(kind: str, result: int, n: int) -> int:
    return {"all-reduce": 2 * (n - 1) * result // n, "all-gather": (n - 1) * result // n}[kind]


@pytest.fixture(scope="module")
def data8():
    return Mesh(np.asarray(jax.devices()[:8]), ("data",), axis_types=(AxisType.Auto,))


def two_products(a16, w16, a32, w32):
    return a16 @ w16, a32 @ w32  # one line, two dtypes: a bf16 product and an f32 one


def _two_product_args(mesh):
    split = NamedSharding(mesh, P(None, "data"))
    rows = NamedSharding(mesh, P("data", None))
    return (
        jax.ShapeDtypeStruct((64, 128), jnp.bfloat16, sharding=split),
        jax.ShapeDtypeStruct((128, 32), jnp.bfloat16, sharding=rows),
        jax.ShapeDtypeStruct((64, 256), jnp.float32, sharding=split),
        jax.ShapeDtypeStruct((256, 16), jnp.float32, sharding=rows),
    )


def test_a_line_that_makes_two_dtypes_counts_each_product_in_its_own(data8):
    args = _two_product_args(data8)
    # JAX: the line makes one bf16 and one f32 product (of shapes 64x32 and 64x16)
    jaxpr = jax.make_jaxpr(two_products)(*args)
    made = [
        (str(e.outvars[0].aval.dtype), e.outvars[0].aval.shape) for e in jaxpr.eqns if e.primitive.name == "dot_general"
    ]
    assert sorted(made) == [("bfloat16", (64, 32)), ("float32", (64, 16))]
    # XLA:CPU: both partial sums are all-reduced as f32 (one combined collective or two)
    text = jax.jit(two_products).lower(*args).compile().as_text()
    module = module_collectives(text)
    assert {t for _, arrays in module for t, _ in arrays} == {"f32"}
    assert sorted(b for _, arrays in module for _, b in arrays) == [64 * 16 * 4, 64 * 32 * 4]
    prog = shardviz.trace(two_products, *args)
    # On the device the bf16 product moves 2 bytes an element, the f32 one 4: each counted in its own dtype
    device = ring("all-reduce", 64 * 32 * 2, 8) + ring("all-reduce", 64 * 16 * 4, 8)
    cpu = ring("all-reduce", 64 * 32 * 4, 8) + ring("all-reduce", 64 * 16 * 4, 8)
    assert prog.totals.wire_bytes == device
    assert prog.with_bytes("cpu").totals.wire_bytes == cpu
    items = [p for c in prog.collectives for p in (c.parts or (c,))]
    assert sorted((i.on_device.dtype, i.result_bytes) for i in items) == [("bfloat16", 4096), ("float32", 4096)]
    assert sorted((i.on_cpu.dtype, i.on_cpu.result_bytes) for i in items) == [("float32", 4096), ("float32", 8192)]
    for c in prog.collectives:  # a collective's own figures are its operands' sums, in whole bytes
        assert c.result_bytes == sum(p.result_bytes for p in (c.parts or (c,)))
        assert all(type(n) is int for p in (c, *c.parts) for n in (p.result_bytes, p.wire_bytes))
    combined = [c for c in prog.collectives if c.combined]
    if combined:  # XLA:CPU merged the two all-reduces: its dtypes are its operands'
        (c,) = combined
        assert sorted(c.on_device.dtype.split(", ")) == ["bfloat16", "float32"] and c.on_cpu.dtype == "float32"
        assert widening_note(c) == "1 of its 2 operands are bfloat16 on the device: XLA:CPU moved them as 32-bit floats"
        payload = prog.to_json()["collectives"][prog.collectives.index(c)]
        assert [q["dtype"] for q in payload["parts"]] == [p.on_device.dtype for p in c.parts]
        assert [q["other"] is None for q in payload["parts"]] == [p.on_device.dtype == "float32" for p in c.parts]
        cpu = prog.with_bytes("cpu").to_json()["collectives"][prog.collectives.index(c)]
        assert cpu["dtype"] == "float32" and [q["dtype"] for q in cpu["parts"]] == ["float32", "float32"]


def test_the_estimate_reads_the_collectives_device_bytes(data8):
    prog = shardviz.trace(two_products, *_two_product_args(data8))
    est = prog.estimate("tpu-v5e")
    assert sum(t.bytes for t in est.collectives) == 64 * 32 * 2 + 64 * 16 * 4  # each all-reduce's result, on chip
    assert any("bfloat16 on the device" in t.note or "are bfloat16 on the device" in t.note for t in est.collectives)


def test_a_float32_program_has_one_count():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    a = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("x", "y")))
    prog = shardviz.trace(lambda v: v.sum(axis=1), a)
    (c,) = prog.collectives
    assert not c.widened and c.on_device == c.on_cpu and c.on_device.dtype == "float32"
    assert prog.with_bytes("cpu").totals == prog.totals
    payload = prog.to_json()
    assert payload["totals"]["other_wire_bytes"] is None and payload["collectives"][0]["other"] is None
    assert payload["collectives"][0]["dtype"] == "float32" and payload["bytes_from"] == "device"
    assert "XLA:CPU" not in render_program(prog, width=100, color=False)


def test_with_bytes_switches_everything_and_back(data8):
    prog = shardviz.trace(two_products, *_two_product_args(data8))
    cpu = prog.with_bytes("cpu")
    assert isinstance(cpu, shardviz.Program) and cpu.bytes_from == "cpu" and prog.bytes_from == "device"
    back = cpu.with_bytes("device")
    assert back.totals == prog.totals and [c.wire_bytes for c in back.collectives] == [
        c.wire_bytes for c in prog.collectives
    ]
    for c in cpu.collectives:
        assert (c.result_bytes, c.wire_bytes) == (c.on_cpu.result_bytes, c.on_cpu.wire_bytes)
        for p in c.parts:
            assert (p.result_bytes, p.wire_bytes) == (p.on_cpu.result_bytes, p.on_cpu.wire_bytes)
    assert cpu.totals.by_axis[0].wire_bytes == cpu.totals.wire_bytes > prog.totals.wire_bytes
    payload = cpu.to_json()
    assert payload["bytes_from"] == "cpu" and payload["totals"]["other_wire_bytes"] == prog.totals.wire_bytes
    with pytest.raises(ShardingError, match="'device' or 'cpu'"):
        prog.with_bytes("tpu")


def _value(file, line, column, primitive, dtype):
    return Value(
        name="a", role="intermediate", primitive=primitive, type_str=dtype, shape=(), dtype=dtype, layout=None,
        sharding_from="jaxpr", note="", source=SourceLocation(file, line, column), stack=(), listing_line=None,
        bodies=(),
    )  # fmt: skip


def test_values_are_found_by_expression_then_by_line():
    made = MadeDtypes(
        [
            _value("m.py", 3, 4, "dot_general", "bfloat16"),
            _value("m.py", 3, 20, "dot_general", "float32"),
            _value("m.py", 5, 4, "reduce_sum", "float32"),
            _value("m.py", 5, 4, "dot_general", "bfloat16"),
        ]
    )
    assert made.made(SourceLocation("m.py", 3, 4), "jit(f)/dot_general") == {"bfloat16"}
    assert made.made(SourceLocation("m.py", 3, 20), "jit(f)/dot_general") == {"float32"}
    # no value carries the collective's column: the whole line's values of that primitive
    assert made.made(SourceLocation("m.py", 3, 9), "jit(f)/dot_general") == {"bfloat16", "float32"}
    assert made.made(SourceLocation("m.py", 5, 4), "reduce_sum") == {"float32"}
    assert made.made(SourceLocation("m.py", 6, 4), "dot_general") == set()
    assert made.made(None, "dot_general") == set() and made.made(SourceLocation("m.py", 3, 4), "") == set()
    # XLA's op_name: the primitive is its last part however deep the transformations
    assert made.made(SourceLocation("m.py", 3, 4), "jit(f)/transpose(jvp(f))/dot_general") == {"bfloat16"}
    # inputs (no primitive) and values of no line of the user's are not made by any expression
    unplaced = replace(_value("m.py", 3, 4, "dot_general", "float32"), source=None)
    assert MadeDtypes([unplaced, _value("m.py", 3, 4, None, "float32")]).by_line == {}


@pytest.mark.parametrize(
    ("made", "module", "device"),
    [
        ({"bfloat16"}, "float32", "bfloat16"),
        ({"float16"}, "float32", "float16"),
        ({"bfloat16"}, "float64", "bfloat16"),
        ({"bfloat16", "float32"}, "float32", "float32"),  # two dtypes on the expression: not narrowed as one
        ({"bfloat16", "float16"}, "float32", "float32"),
        ({"float32"}, "float32", "float32"),
        ({"bfloat16"}, "bfloat16", "bfloat16"),
        ({"int8"}, "float32", "float32"),  # only a narrow float is widened by XLA:CPU
        ({"bfloat16"}, "int32", "int32"),
        ({"float16"}, "bfloat16", "bfloat16"),  # as narrow already: nothing was widened
        ({"bfloat16"}, "float16", "float16"),
        (set(), "float32", "float32"),
        ({"bfloat16"}, "", ""),  # the module's type unknown
    ],
)
def test_the_device_dtype_is_the_one_narrow_float_the_program_made(made, module, device):
    assert device_dtype(made, module) == device


# ------------------------------------------------------------------ the training cookbook, in bfloat16


@pytest.fixture(scope="module")
def cookbook():
    sizes = Sizes()
    mesh = jax.make_mesh((8,), ("fsdp",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        state, batch = abstract_state(sizes, mesh), abstract_batch(sizes, mesh)
        prog = shardviz.trace(jitted_train_step, sizes, state, batch)
        text = jitted_train_step.trace(sizes, state, batch).lower().compile().as_text()
        loss = jax.eval_shape(jitted_train_step, sizes, state, batch)["train_loss"]
    return sizes, prog, text, state, loss


def _hand_count(sizes: Sizes, itemsize: int, loss_bytes: int) -> int:
    """FSDP: each weight sharded over fsdp is gathered once; every gradient is all-reduced whole
    over the 8 devices (as XLA:CPU's module does it); the loss's float32 sum is all-reduced too."""
    n = 8
    total = ring("all-reduce", loss_bytes, n)
    layer_specs = {k: v for k, v in SPECS.items() if k in ("qkv", "att_out", "mlp_in", "mlp_out")}
    weights = [(s, SPECS[k]) for k, s in shapes(sizes).items() if k != "layers"]
    weights += [(s, layer_specs[k]) for blk in shapes(sizes)["layers"] for k, s in blk.items()]
    for shape, spec in weights:
        nbytes = math.prod(shape) * itemsize
        total += ring("all-reduce", nbytes, n)
        if any(spec):
            total += ring("all-gather", nbytes, n)
    return total


def test_the_cookbook_step_counts_its_bf16_collectives_as_bf16(cookbook):
    sizes, prog, text, state, loss = cookbook
    assert {str(a.dtype) for a in jax.tree.leaves(state["params"])} == {"bfloat16"}  # JAX's dtypes
    assert str(loss.dtype) == "float32"
    module = module_collectives(text)
    assert {t for _, arrays in module for t, _ in arrays} == {"f32"}, "XLA:CPU moves the bf16 weights as f32"
    # The CPU module's own figure: the rings over its f32 buffers, read from its text
    on_cpu = sum(ring(kind, b, 8) for kind, arrays in module for _, b in arrays)
    assert prog.with_bytes("cpu").totals.wire_bytes == on_cpu == _hand_count(sizes, 4, 4)
    # On a TPU or GPU: the weights' bf16, two bytes an element; the loss stays float32
    assert prog.totals.wire_bytes == _hand_count(sizes, 2, 4)
    assert prog.totals.wire_bytes == (on_cpu - ring("all-reduce", 4, 8)) // 2 + ring("all-reduce", 4, 8)
    gathers = [c for c in prog.collectives if c.kind == "all-gather"]
    sharded = {math.prod(s) * 2 for k, s in shapes(sizes).items() if k != "layers" and any(SPECS[k])}
    sharded |= {math.prod(s) * 2 for blk in shapes(sizes)["layers"] for s in blk.values()}
    assert gathers and all(c.result_bytes in sharded and c.on_device.dtype == "bfloat16" for c in gathers)


def test_every_collective_of_the_cookbook_step_has_a_cause_its_embedding_gradient_partial_sums(cookbook):
    """By hand: each collective is an FSDP gather of a weight (a layout mismatch) or a gradient summed over
    'fsdp' (partial sums); the embedding's gradient is a scatter-add of the split cotangent, summed too."""
    _, prog, _, _, _ = cookbook
    whys = [c.why for c in prog.collectives] + [p.why for c in prog.collectives for p in c.parts]
    assert "unknown" not in {w.cause for w in whys}
    (embedding,) = [w for w in whys if w.primitive == "scatter-add"]
    assert embedding.cause == "partial-sums" and embedding.axes == ("fsdp",) and embedding.dimension == 0
    assert embedding.expression.startswith('h = params["embedding"].at[tokens].get(')


def test_the_cookbook_report_says_bf16_and_xla_cpus_own_figure(cookbook):
    _, prog, text, _, _ = cookbook
    report = render_program(prog, width=100, color=False)
    rows = [ln for ln in report.splitlines() if re.match(r"\s+(all-gather|all-reduce)\s", ln)]
    assert rows and all(" bf16 " in ln for ln in rows if not ln.rstrip().endswith("7 B"))
    on_cpu = sum(ring(kind, b, 8) for kind, arrays in module_collectives(text) for _, b in arrays)
    from shardviz.text.ranges import format_bytes

    assert f"(in XLA:CPU's module: {format_bytes(on_cpu)})" in report
    assert "f32 in XLA:CPU's module" in report and "program.with_bytes('cpu')" in report
    cpu_report = render_program(prog.with_bytes("cpu"), width=100, color=False)
    assert f"total per call: {format_bytes(on_cpu)} sent" in cpu_report
    assert "bf16 on the device" in cpu_report


def test_budgets_check_the_device_count_unless_told_otherwise(cookbook):
    sizes, prog, _, _, _ = cookbook
    between = (_hand_count(sizes, 2, 4) + _hand_count(sizes, 4, 4)) // 2
    assert assert_collectives(prog, max_wire_bytes=between) is prog
    with pytest.raises(CollectiveBudgetExceeded) as err:
        assert_collectives(prog.with_bytes("cpu"), max_wire_bytes=between)
    assert "as XLA:CPU's module moves them" in str(err.value) and " f32 " in str(err.value)
    with pytest.raises(CollectiveBudgetExceeded) as err:
        assert_collectives(prog, max_wire_bytes=1000)
    assert "in the program's dtypes" in str(err.value) and " bf16 " in str(err.value)


# ------------------------------------------------------------------ snapshots


def matmul(a, w):
    return a @ w


def _matmul_program(dtype, mesh):
    a = jax.ShapeDtypeStruct((64, 128), dtype, sharding=NamedSharding(mesh, P(None, "data")))
    w = jax.ShapeDtypeStruct((128, 32), dtype, sharding=NamedSharding(mesh, P("data", None)))
    return shardviz.trace(matmul, a, w)


def test_a_snapshot_tells_bf16_from_f32(data8, tmp_path):
    path = tmp_path / "snap.json"
    bf16 = _matmul_program(jnp.bfloat16, data8)
    f32 = _matmul_program(jnp.float32, data8)
    # XLA:CPU's module moves the same f32 buffer for both
    assert bf16.with_bytes("cpu").totals.wire_bytes == f32.totals.wire_bytes == ring("all-reduce", 64 * 32 * 4, 8)
    assert bf16.totals.wire_bytes == ring("all-reduce", 64 * 32 * 2, 8)
    recorded = assert_collectives_snapshot(bf16, path, "step", update=True)
    assert recorded.recorded
    with pytest.raises(SnapshotChanged, match="all-reduces"):
        assert_collectives_snapshot(f32, path, "step")  # the same step in f32 moves twice the bytes
    assert assert_collectives_snapshot(bf16, path, "step").notes == ()


def test_a_snapshot_recorded_as_xla_cpu_counted_is_compared_that_way(data8, tmp_path):
    import json

    path = tmp_path / "snap.json"
    bf16 = _matmul_program(jnp.bfloat16, data8)
    assert_collectives_snapshot(bf16.with_bytes("cpu"), path, "step", update=True)
    assert json.loads(path.read_text())["snapshots"]["step"]["bytes_from"] == "cpu"
    result = assert_collectives_snapshot(bf16, path, "step")
    assert len(result.notes) == 1 and "compared counted that way" in result.notes[0]
    # a snapshot from before shardviz counted the program's dtypes has no bytes_from: XLA:CPU's count
    data = json.loads(path.read_text())
    del data["snapshots"]["step"]["bytes_from"]
    path.write_text(json.dumps(data))
    result = assert_collectives_snapshot(bf16, path, "step")
    assert len(result.notes) == 1 and "as XLA:CPU's module moves them" in result.notes[0]
    # re-recorded, it counts the program's dtypes and says nothing more
    assert_collectives_snapshot(bf16, path, "step", update=True)
    assert json.loads(path.read_text())["snapshots"]["step"]["bytes_from"] == "device"
    assert assert_collectives_snapshot(bf16, path, "step").notes == ()


# ------------------------------------------------------------------ collectives read from hand-written HLO


def _collective(hlo: str, kind: str, result_bytes: int, group_size: int = 4, **fields):
    """A Collective as ``trace`` reads one, its bytes the module's; ``hlo`` one line of XLA's text."""
    from shardviz.program.memory.wire import wire_bytes
    from shardviz.program.model import Collective

    base = dict(
        kind=kind, name="c", axes=("x",), group_size=group_size, groups=(tuple(range(group_size)),),
        groups_form="list", pairs=(), result_bytes=result_bytes, operand_count=1, count=1, count_exact=True,
        wire_bytes=wire_bytes(kind, result_bytes, group_size), source=SourceLocation("m.py", 3, 4), stack=(),
        listing_line=None, op_name="jit(f)/dot_general", hlo=hlo, channel_id=1,
    )  # fmt: skip
    return Collective(**{**base, **fields})


BF16_PRODUCT = [_value("m.py", 3, 4, "dot_general", "bfloat16")]


def test_an_async_starts_results_are_the_module_buffers_read():
    # all-gather-start returns (operand, result): the result half is what the device moves
    start = _collective(
        "%ag = (f32[4]{0}, f32[16]{0}) all-gather-start(f32[4]{0} %p), dimensions={0}", "all-gather", 64
    )
    (c,) = count_on_device([start], BF16_PRODUCT)
    assert (c.on_cpu.dtype, c.on_device.dtype, c.result_bytes, c.wire_bytes) == ("float32", "bfloat16", 32, 24)
    # a permute's start adds two u32 contexts after (operand, result)
    permute = _collective(
        "%cp = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(f32[8]{0} %p), "
        "source_target_pairs={{0,1},{1,0}}",
        "collective-permute", 32, group_size=2, pairs=((0, 1), (1, 0)),
    )  # fmt: skip
    (c,) = count_on_device([permute], BF16_PRODUCT)
    assert (c.on_cpu.dtype, c.result_bytes, c.wire_bytes) == ("float32", 16, 16), "a permute sends its block"
    # a combined all-reduce-start returns its results only, one per operand
    from shardviz.program.model import CollectivePart

    parts = tuple(
        CollectivePart(f"%p{k}", n, 2 * 3 * n // 4, SourceLocation("m.py", 3, 4), (), None, "jit(f)/dot_general")
        for k, n in enumerate((64, 32))
    )
    combined = _collective(
        "%ar = (f32[16]{0}, f32[8]{0}) all-reduce-start(f32[16]{0} %p0, f32[8]{0} %p1), to_apply=%add",
        "all-reduce", 96, parts=parts, operand_count=2, wire_bytes=sum(p.wire_bytes for p in parts),
    )  # fmt: skip
    (c,) = count_on_device([combined], BF16_PRODUCT)
    assert [(p.on_cpu.dtype, p.result_bytes) for p in c.parts] == [("float32", 32), ("float32", 16)]
    assert (c.on_device.dtype, c.result_bytes, c.wire_bytes) == ("bfloat16", 48, 2 * 3 * 48 // 4)
    # a combined all-gather-start returns ((operands...), (results...)): one result per operand
    gparts = tuple(
        CollectivePart(f"%p{k}", n, 3 * n // 4, SourceLocation("m.py", 3, 4), (), None, "jit(f)/dot_general")
        for k, n in enumerate((64, 32))
    )
    gathered = _collective(
        "%ag = ((f32[4]{0}, f32[2]{0}), (f32[16]{0}, f32[8]{0})) all-gather-start(f32[4]{0} %p0, f32[2]{0} %p1), "
        "dimensions={0}",
        "all-gather", 96, parts=gparts, operand_count=2, wire_bytes=sum(p.wire_bytes for p in gparts),
    )  # fmt: skip
    (c,) = count_on_device([gathered], BF16_PRODUCT)
    assert [(p.on_cpu.dtype, p.on_device.dtype, p.result_bytes) for p in c.parts] == [
        ("float32", "bfloat16", 32),
        ("float32", "bfloat16", 16),
    ]


def test_a_module_type_that_cannot_be_read_keeps_the_modules_bytes():
    garbled = _collective("not an instruction", "all-reduce", 64)
    mixed = _collective("%a = (f32[4]{0}, s32[4]{0}) all-to-all(f32[4]{0} %p, s32[4]{0} %q)", "all-to-all", 32)
    same = _collective("%a = (f32[4]{0}, f32[4]{0}) all-to-all(f32[4]{0} %p, f32[4]{0} %q)", "all-to-all", 32)
    counted = count_on_device([garbled, mixed, same], BF16_PRODUCT)
    for c in counted[:2]:
        assert (c.on_device.dtype, c.on_cpu.dtype, c.result_bytes) == ("", "", c.on_cpu.result_bytes)
        assert not c.widened and widening_note(c) == "" and counted_dtype(c, "device") == ""
    assert (counted[2].on_cpu.dtype, counted[2].on_device.dtype, counted[2].result_bytes) == ("float32", "bfloat16", 16)
    # a combined collective whose module text holds fewer results than it has operands
    from shardviz.program.model import CollectivePart

    parts = tuple(
        CollectivePart(f"%p{k}", 16, 24, SourceLocation("m.py", 3, 4), (), None, "x/dot_general") for k in range(2)
    )
    short = _collective("%ar = f32[4]{0} all-reduce(f32[4]{0} %p), to_apply=%add", "all-reduce", 32, parts=parts)
    (c,) = count_on_device([short], BF16_PRODUCT)
    assert [p.on_cpu.dtype for p in c.parts] == ["", ""] and c.result_bytes == 32


def test_hand_made_collectives_without_counts_read_as_they_are():
    bare = _collective("%ar = f32[4]{0} all-reduce(f32[4]{0} %p), to_apply=%add", "all-reduce", 16)
    assert counted_dtype(bare, "device") == counted_dtype(bare, "cpu") == "" and bare.device_result_bytes == 16
    assert widening_note(bare) == "" and not bare.widened
    (widened,) = count_on_device([bare], BF16_PRODUCT)
    assert widening_note(widened) == "bfloat16 on the device: XLA:CPU moved it as a 32-bit float"
    assert (counted_dtype(widened, "device"), counted_dtype(widened, "cpu")) == ("bfloat16", "float32")
    assert widened.device_result_bytes == 8 and bare.device_result_bytes == 16


def test_short_dtype_names():
    assert short_dtype("bfloat16") == "bf16" and short_dtype("float32, bfloat16") == "f32+bf16"
    assert short_dtype("bfloat16, float32") == "bf16+f32"
    assert short_dtype("float8_e4m3fn") == "float8_e4m3fn" and short_dtype("") == "?"


def stacked_bf16(x, ws):
    # two layers in a scan: each layer's bf16 partial sums are all-reduced, a loop of 2
    def layer(h, w):
        return jax.nn.relu(h @ w), None

    return jax.lax.scan(layer, x, ws)[0]


def test_the_other_total_counts_every_collective_and_its_runs(data8):
    x = jax.ShapeDtypeStruct((64, 128), jnp.bfloat16, sharding=NamedSharding(data8, P(None, "data")))
    ws = jax.ShapeDtypeStruct((2, 128, 128), jnp.bfloat16, sharding=NamedSharding(data8, P(None, "data", None)))
    prog = shardviz.trace(stacked_bf16, x, ws)
    looped = [c for c in prog.collectives if c.count == 2 and c.widened]
    assert looped, [(c.kind, c.count, c.on_device) for c in prog.collectives]
    cpu = sum(c.on_cpu.wire_bytes * c.count for c in prog.collectives)
    assert other_total(prog) == cpu == prog.with_bytes("cpu").totals.wire_bytes
    assert other_total(prog.with_bytes("cpu")) == prog.totals.wire_bytes
    assert prog.to_json()["totals"]["other_wire_bytes"] == cpu
    # beside a collective without counts (made by hand), its own bytes count for both
    bare = _collective("%ar = f32[4]{0} all-reduce(f32[4]{0} %p), to_apply=%add", "all-reduce", 16)
    both = replace(prog, collectives=(*prog.collectives, bare))
    assert other_total(both) == cpu + bare.wire_bytes


def test_a_program_without_a_mesh_switches_its_count():
    prog = shardviz.trace(lambda a: a * 2, jnp.ones(4, jnp.bfloat16))
    assert prog.mesh is None and prog.with_bytes("cpu").totals == prog.totals
