"""Tests that catch a wrong line or a wrong name: each fails on one bug a review planted.

Each check is against JAX's or XLA's own answer (the jaxpr's equations and
avals, the compiled module's text, NumPy's item sizes, XLA's own parser) or
a hand count, never against shardviz's own output saved earlier. The bug
each test catches is named in its docstring.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from jaxlib import _hlo

import shardviz
from shardviz.errors import ShardingError
from shardviz.program import hlo
from shardviz.program.lines.scopes import is_gradient

assembling = importlib.import_module("shardviz.program.compiling.assemble")
compiling = importlib.import_module("shardviz.program.compiling.trace_here")


def line_of(fn, snippet: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if snippet in text)


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


# --------------------------------------------------------------------------
# lines


def scanned_loss(ws, x):
    def layer(h, w):
        h = jnp.tanh(h @ w)
        return h, None

    return jax.lax.scan(layer, x, ws)[0].sum()


def test_a_nested_layers_dot_and_its_all_reduce_stay_on_the_matmuls_line(mesh):
    """Bug: ``SourceListing.line_of`` searching the stack outermost first. Both the
    matmul's line and the scan's call line are lines of the traced function's listing;
    the innermost one is where the dot is."""
    ws = jax.device_put(jnp.ones((6, 32, 32)), NamedSharding(mesh, P(None, "model", None)))
    x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", None)))
    matmul, call = line_of(scanned_loss, "jnp.tanh(h @ w)"), line_of(scanned_loss, "jax.lax.scan(layer")
    prog = shardviz.trace(scanned_loss, ws, x)
    (dot,) = [v for v in prog.values if v.primitive == "dot_general"]
    assert {f.line for f in dot.stack} >= {matmul, call}, "the dot's stack no longer holds both lines"
    assert dot.listing_line == matmul
    in_body = [c for c in prog.collectives if c.count == 6]
    assert in_body, [c.hlo for c in prog.collectives]
    for c in in_body:
        assert {f.line for f in c.stack} >= {matmul, call}
        assert c.listing_line == matmul and c.source.line == matmul
    payload = prog.to_json()
    assert matmul in {entry["listing_line"] for entry in payload["lines"]}


def test_shardvizs_own_failure_reading_a_program_is_not_said_to_be_a_failed_compile(monkeypatch):
    """Bug: an internal error while assembling the Program reported as "did not compile",
    which blames the user's program for shardviz's bug."""

    def broken(*args, **kwargs):
        raise KeyError("a field shardviz expected")

    monkeypatch.setattr(assembling, "program_totals", broken)
    with pytest.raises(ShardingError) as err:
        compiling.trace_here(lambda a: (a * 2).sum(), jnp.ones(8))
    text = str(err.value)
    assert "did not compile" not in text and "did not lower" not in text
    assert "a bug in shardviz" in text and "KeyError" in text
    monkeypatch.undo()
    assert compiling.trace_here(lambda a: (a * 2).sum(), jnp.ones(8)).values  # the same program reads fine


def test_shardvizs_own_failure_reading_the_jaxpr_while_xla_compiles_is_a_bug_in_shardviz(monkeypatch):
    """The jaxpr is read on a worker thread while XLA compiles: a failure there still reaches the
    caller, after the compile, as shardviz's own bug, never as a failed compile or a hang."""

    def broken(*args, **kwargs):
        raise KeyError("a name shardviz expected")

    monkeypatch.setattr(assembling, "name_values", broken)
    with pytest.raises(ShardingError) as err:
        compiling.trace_here(lambda a: (a * 2).sum(), jnp.ones(8))
    text = str(err.value)
    assert "did not compile" not in text and "did not lower" not in text
    assert "a bug in shardviz" in text and "KeyError" in text and "a name shardviz expected" in text


def test_a_failed_compile_is_said_to_be_one_even_when_the_jaxpr_reading_beside_it_fails(monkeypatch):
    """XLA's refusal is the user's to fix and is named as such; the worker thread's own failure,
    which the caller never waits for then, does not replace it."""

    def xla_refuses(lowered, read_partitioner, *early):
        raise RuntimeError("INVALID_ARGUMENT: a refusal of XLA's")

    def broken(*args, **kwargs):
        raise KeyError("a name shardviz expected")

    monkeypatch.setattr(compiling, "_compile", xla_refuses)
    monkeypatch.setattr(assembling, "name_values", broken)
    with pytest.raises(ShardingError) as err:
        compiling.trace_here(lambda a: (a * 2).sum(), jnp.ones(8))
    text = str(err.value)
    assert "traced but did not compile" in text and "a refusal of XLA's" in text
    assert "a bug in shardviz" not in text and "KeyError" not in text


# --------------------------------------------------------------------------
# names


def two_layer_loss(w1, w2, x):
    h = jnp.tanh(x @ w1)
    y = h @ w2
    return (y**2).sum()


def test_gradient_values_are_not_named_after_the_forward_lines_variable():
    """Bug: a backward value (a transpose's) named ``h`` or ``y`` because it sits on that line.
    The gradient of ``y = h @ w2`` with respect to ``h`` is read by line ``h``'s backward step:
    handed on from the line, but it is not what the line binds."""
    args = jnp.ones((8, 16)), jnp.ones((16, 4)), jnp.ones((2, 8))
    jaxpr = jax.jit(jax.grad(two_layer_loss, argnums=(0, 1))).trace(*args).jaxpr
    transposed = [e for e in jaxpr.eqns if is_gradient(str(e.source_info.name_stack))]
    assert transposed, "JAX no longer marks the backward equations with transpose"
    prog = shardviz.trace(jax.grad(two_layer_loss, argnums=(0, 1)), *args)
    y_line = line_of(two_layer_loss, "y = h @ w2")
    backward_on_y = [v for v in prog.values if is_gradient(v.key) and v.source and v.source.line == y_line]
    assert backward_on_y, "no backward value on y's line: the case this test needs is gone"
    named = {v.label: v for v in prog.values if v.label in ("h", "y")}
    assert set(named) == {"h", "y"}
    for v in named.values():
        assert not is_gradient(v.key), (v.label, v.key)
    assert named["h"].primitive == "tanh" and named["y"].primitive == "dot_general"
    assert all(not v.label.isidentifier() or v.label in ("h", "y") for v in backward_on_y if v.role != "output")
    assert not any(v.label in ("h", "y") for v in backward_on_y)


def walrus_line(x, w):
    h = jnp.tanh(z := x @ w)
    return h.sum() + z.sum()


def test_a_line_names_the_last_value_it_hands_on_not_the_first():
    """Bug: the first of a line's handed-on values named after what it binds. Here the dot
    (``z``) and the tanh (``h``) are both read on the next line; ``h =`` binds the tanh."""
    prog = shardviz.trace(walrus_line, jnp.ones((4, 8)), jnp.ones((8, 8)))
    on_line = [v for v in prog.values if v.source is not None and v.source.line == line_of(walrus_line, "h = ")]
    assert [v.primitive for v in on_line] == ["dot_general", "tanh"]
    assert on_line[1].label == "h" and on_line[0].label != "h"


def one_line_loop(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x.sum()


def test_each_pass_of_a_one_line_loop_names_its_last_value():
    """Bug: the first value of a pass (the dot) named ``x`` instead of the last (the tanh)."""
    ws = [jnp.ones((8, 8)) for _ in range(3)]
    prog = shardviz.trace(one_line_loop, ws, jnp.ones((4, 8)))
    named = [v for v in prog.values if v.label == "x" and v.role != "input"]
    assert [v.primitive for v in named] == ["tanh"] * 3
    assert [v.pass_number for v in named] == [1, 2, 3]


def dead_on_a_named_line(a):
    s = jnp.sin(a)
    c = jnp.cos(s)  # noqa: F841 - nothing reads it
    return a * 2


def test_dead_values_are_given_no_names():
    """Bug: a value XLA never computes named after its line's variable (``s``). The jaxpr
    reads ``s`` (in the unused ``cos``), so only its deadness says it is no user's value."""
    printed = str(jax.jit(dead_on_a_named_line).trace(jnp.ones(4)).jaxpr)
    assert "cos b" in printed, "the dead sin is no longer read by the dead cos"
    prog = shardviz.trace(dead_on_a_named_line, jnp.ones(4))
    dead = [v for v in prog.values if v.sharding_from == "dead"]
    assert {v.primitive for v in dead} == {"sin", "cos"}
    assert all(v.label.startswith("%") for v in dead), [v.label for v in dead]


def several_statements(x, w):
    h = x @ w; y = jnp.tanh(h)  # noqa: E702  # fmt: skip
    return y.sum()


def test_a_line_with_several_statements_names_no_value_after_its_first_statement():
    """Bug: the first statement's target (``h``) given to what the line hands on, which is the
    second statement's ``y``. Which statement made a value is not known, so none is named."""
    prog = shardviz.trace(several_statements, jnp.ones((4, 8)), jnp.ones((8, 8)))
    on_line = [v for v in prog.values if v.source is not None and v.source.line == line_of(several_statements, "h =")]
    assert [v.primitive for v in on_line] == ["dot_general", "tanh"]
    assert not {v.label for v in on_line} & {"h"}


# --------------------------------------------------------------------------
# bytes and counts


def gathered_flags(mesh):
    def inner(b):
        return jax.lax.all_gather(b > 0, "model", tiled=True)

    return jax.shard_map(inner, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", None), check_vma=False)


def test_a_bool_array_counts_one_byte_per_element(mesh):
    """Bug: ``pred`` counted as 1 bit. XLA stores a bool in a byte, as NumPy does."""
    a = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", "model")))
    fun = gathered_flags(mesh)
    (gather_eqn,) = [e for e in jax.make_jaxpr(fun)(a).eqns[0].params["jaxpr"].eqns if "all_gather" in str(e)]
    out_aval = gather_eqn.outvars[0].aval
    expected = int(np.prod(out_aval.shape)) * np.dtype(np.bool_).itemsize
    prog = shardviz.trace(fun, a)
    (c,) = prog.collectives
    assert c.kind == "all-gather" and " pred[" in c.hlo
    assert c.result_bytes == expected == 32 * 8
    assert hlo.Shape("pred", (32, 8)).byte_size == np.zeros((32, 8), np.bool_).nbytes


SHARED_CALLEE = """HloModule shared, num_partitions=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%shared (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, \
to_apply=%add
}

%cond (c: (s32[], f32[8])) -> pred[] {
  %c = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (b: (s32[], f32[8])) -> (s32[], f32[8]) {
  %b = (s32[], f32[8]{0}) parameter(0)
  %j = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %v = f32[8]{0} get-tuple-element(%b), index=1
  %called = f32[8]{0} call(%v), to_apply=%shared
  ROOT %t = (s32[], f32[8]{0}) tuple(%next, %called)
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %first = f32[8]{0} call(%a), to_apply=%shared
  %second = f32[8]{0} call(%first), to_apply=%shared
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %second)
  %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, \
backend_config={"known_trip_count":{"n":"3"}}
  ROOT %out = f32[8]{0} get-tuple-element(%loop), index=1
}
"""


def test_a_callee_shared_by_several_callers_runs_for_each_of_them():
    """Bug: a shared callee's runs taken as the most of its callers' instead of their sum.
    ``%shared`` is called twice from the entry and once per trip (3 trips) of a loop: 5 runs."""
    _hlo.hlo_module_from_text(SHARED_CALLEE)  # XLA's own parser reads the module
    module = hlo.parse_module(SHARED_CALLEE)
    counts = hlo.execution_counts(module)
    assert (counts["shared"].count, counts["shared"].exact) == (2 + 3, True)
    assert counts["body"].count == 3 and counts["cond"].count == 4
    (op,) = hlo.collective_ops(module)
    assert (op.kind, op.count, op.count_exact) == ("all-reduce", 5, True)


# --------------------------------------------------------------------------
# an async -start whose -done is not in the module


FIXTURE = pathlib.Path(__file__).with_name("fixtures") / "hlo" / "async_start_only.hlo"


def test_an_async_start_without_its_done_returns_its_results_half():
    """Bug: the ``-start`` tuple's operands half (or the whole tuple) taken for the result.
    A ``-start`` returns (operands..., results...) in one tuple, flat for one operand
    and nested for several; with no ``-done`` in the module, the results are read there."""
    text = FIXTURE.read_text()
    printed = _hlo.hlo_module_from_text(text).to_string()  # XLA's own printer keeps these shapes
    assert re.search(r"\(f32\[8\]\{0\}, f32\[32\]\{0\}\) all-gather-start", printed)
    found = {op.inst.name: op for op in hlo.collective_ops(hlo.parse_module(text))}
    assert not any(inst.opcode.endswith("-done") for _, inst in hlo.parse_module(text).instructions())
    one = found["all-gather-start"]
    assert (one.kind, one.result.byte_size, one.operand_count) == ("all-gather", 32 * 4, 1)
    two = found["all-gather-start.1"]
    assert (two.kind, two.operand_count) == ("all-gather", 2)
    assert two.result.byte_size == (32 + 16) * 4
    assert [s.byte_size for s in two.result.tuple_shapes] == [32 * 4, 16 * 4]
    permute = found["collective-permute-start"]
    assert (permute.kind, permute.result.byte_size) == ("collective-permute", 8 * 4)


# --------------------------------------------------------------------------
# reads of a Ref under Auto axes


def test_a_ref_read_under_auto_axes_is_laid_out_as_what_the_ref_holds(mesh):
    """XLA makes no instruction for ``w = w_ref[...]`` (the value is the ref's buffer), so the
    partitioner's dump has no layout for it: it is laid out as the ref's array, and after a
    whole write, as the value written. A read after a write to part of the ref is no one
    value's, and is not claimed."""
    constraint = NamedSharding(mesh, P("data", None))

    def step(w_ref, x):
        w = w_ref[...]
        h = jnp.tanh(x @ w)
        w_ref[...] = jax.lax.with_sharding_constraint(w * 0.5, constraint)
        again = w_ref[...]
        w_ref[0] = again[1]
        after_row = w_ref[...]
        return h.sum() + again.sum() + after_row.sum()

    array = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P(None, "model")))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", None)))
    prog = shardviz.trace(step, jax.ref.new_ref(array), x)
    assert prog.sharding_mode == "auto"
    reads = {v.label: v for v in prog.values if v.primitive == "get" and v.shape == (16, 32)}
    assert set(reads) == {"w", "again", "after_row"}
    assert reads["w"].spec == shardviz.describe(array).spec == ((), ("model",))
    assert reads["w"].sharding_from == "argument"
    assert reads["again"].spec == (("data",), ())  # the constraint's P("data", None)
    assert reads["again"].sharding_from == "xla"
    assert reads["after_row"].sharding_from == "unknown"


def first_row(a):
    row = a[1:2]
    return (row * 2).sum()


def test_a_value_xla_splits_unevenly_is_said_so_and_the_trace_goes_on(mesh):
    """XLA keeps a one-row slice of an array split over ``data`` split over ``data`` too, padding
    the blocks; JAX has no such layout, so the value's layout is unknown and says why (the trace
    used to fail on it with shardviz's own ShardingError)."""
    a = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", "model")))
    prog = shardviz.trace(first_row, a)
    (row,) = [v for v in prog.values if v.label == "row"]
    assert row.shape == (1, 32) and row.sharding_from == "unknown"
    assert "unevenly" in row.note and "devices=[2,4]" in row.note
    with pytest.raises(ValueError):  # JAX's own answer: no sharding of 1 row over 2 devices
        jax.device_put(jnp.ones((1, 32)), NamedSharding(mesh, P("data", None))).block_until_ready()


# --------------------------------------------------------------------------
# where XLA's dumps go


def test_without_dev_shm_the_dump_goes_to_the_temporary_folder(monkeypatch, tmp_path):
    """Where /dev/shm is missing or not writable, the trace dumps into the system's temporary
    folder and reads memory over the program all the same."""
    real_access = compiling.os.access
    monkeypatch.setattr(compiling.os, "access", lambda p, mode: False if p == "/dev/shm" else real_access(p, mode))
    monkeypatch.setattr(compiling.tempfile, "tempdir", str(tmp_path))
    assert compiling._dump_parent() is None
    prog = compiling.trace_here(lambda a: jnp.tanh(a @ a).sum(), jnp.ones((64, 64)))
    assert prog.memory_timeline is not None and prog.memory_timeline.peak_bytes >= 64 * 64 * 4
    assert list(tmp_path.iterdir()) == []  # the private folder is gone again


def test_with_no_folder_to_dump_into_the_program_is_read_without_memory_over_it(monkeypatch):
    monkeypatch.setattr(compiling, "_dump_parent", lambda: "/proc/no-such-folder-for-shardviz")
    prog = compiling.trace_here(lambda a: jnp.tanh(a @ a).sum(), jnp.ones((64, 64)))
    assert prog.memory_timeline is None and prog.memory is not None
    assert prog.to_json()["memory_timeline"] is None
    # with no live ranges, fits and assert_fits take what XLA reserves, never its lower peak
    m = jax.jit(lambda a: jnp.tanh(a @ a).sum()).lower(jnp.ones((64, 64))).compile().memory_analysis()
    reserved = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
    assert prog.memory.held_bytes == reserved
