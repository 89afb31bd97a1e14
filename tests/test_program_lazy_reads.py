"""What a trace leaves for later: each collective's cause and XLA:CPU's memory timeline are worked
out on first read, once per program, and then show what they showed when a trace worked them out.

The figures are checked against hand analyses and JAX's own answers (``memory_analysis``), as in
tests/test_program_causes.py and tests/test_program_trace.py; the spies only count calls.
"""

from __future__ import annotations

import os
import pickle
import threading
import time

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.program.compiling import assemble
from shardviz.program.why.remat import captured_stderr
from shardviz.testing import CollectiveBudgetExceeded, assert_collectives

MESH = jax.make_mesh((4, 3), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
# x [8,12] split over 'a' on dimension 1 (the contracting one): each device holds a partial [8,6] sum
BECAUSE = "because x is split over 'a' on its contracting dimension 1"


def put(shape, spec, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(MESH, spec))


def contraction(x, w):
    return x @ w


def two_contractions(x, w, v):
    return x @ w, (x * 2) @ v


def operands():
    return put((8, 12), P(None, "a")), put((12, 6), P("a", None))


@pytest.fixture
def explain_calls(monkeypatch):
    """Each call of causes.explain_all made while a program is read (the calls' collective counts)."""
    calls: list[int] = []
    real = assemble.explain_all

    def counted(collectives, *rest):
        calls.append(len(collectives))
        return real(collectives, *rest)

    monkeypatch.setattr(assemble, "explain_all", counted)
    return calls


def test_a_trace_works_out_no_cause_until_one_is_read(explain_calls):
    prog = shardviz.trace(contraction, *operands())
    (c,) = prog.collectives
    # what needs no cause: the collective's kind and bytes (8x6 f32 summed), the totals, the other count
    assert (c.kind, c.result_bytes, c.axes) == ("all-reduce", 8 * 6 * 4, ("a",))
    assert prog.totals.wire_bytes == c.wire_bytes
    cpu = prog.with_bytes("cpu")
    repr(prog)
    assert explain_calls == []
    why = c.why
    assert explain_calls == [1]
    assert (why.cause, why.primitive, why.operand, why.dimension, why.axes) == (
        "partial-sums",
        "dot_general",
        0,
        1,
        ("a",),
    )
    assert why.text.startswith(BECAUSE)
    # read once for the program: the other count's collectives and every later reader share it
    assert cpu.collectives[0].why == why
    prog.explain()
    str(prog)
    prog.to_json()
    assert explain_calls == [1]


def _failed_budget(prog) -> str:
    with pytest.raises(CollectiveBudgetExceeded) as caught:
        assert_collectives(prog, allow={})
    return str(caught.value)


READERS = {
    "explain()": lambda prog: prog.explain(),
    "the report": str,
    "to_json's reasons": lambda prog: str(prog.to_json()["reasons"]),
    "testing's message": _failed_budget,
}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_each_reader_of_the_causes_works_them_out_once_and_shows_them(explain_calls, reader):
    prog = shardviz.trace(contraction, *operands())
    assert explain_calls == []
    shown = reader(prog)
    assert explain_calls == [1]
    assert BECAUSE in shown or "partial-sums" in shown, shown[:400]
    reader(prog)
    assert explain_calls == [1]


def test_threads_reading_the_causes_at_once_work_them_out_once(monkeypatch):
    """Eight threads (a widget's comm thread and the kernel's, say) read two collectives' causes
    together; the first works them out, slowly, and the others wait for its answer."""
    calls: list[int] = []
    real = assemble.explain_all

    def slow(collectives, *rest):
        calls.append(len(collectives))
        time.sleep(0.05)
        return real(collectives, *rest)

    monkeypatch.setattr(assemble, "explain_all", slow)
    x, w = operands()
    prog = shardviz.trace(two_contractions, x, w, put((12, 6), P("a", None)))
    assert [c.kind for c in prog.collectives].count("all-reduce") >= 1
    start = threading.Barrier(8)
    causes: list[str] = []

    def read(k: int) -> None:
        start.wait()
        causes.append(prog.collectives[k % len(prog.collectives)].why.cause)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [len(prog.collectives)]
    assert causes == ["partial-sums"] * 8


def test_a_pickled_program_carries_its_causes_worked_out(explain_calls):
    """A what-if trace's child pickles its Program back to the parent: the causes travel as worked out."""
    prog = shardviz.trace(contraction, *operands())
    (c,) = pickle.loads(pickle.dumps(prog.collectives))
    assert explain_calls == [1]
    assert c.why.cause == "partial-sums" and c.why.text.startswith(BECAUSE)


def test_a_cause_that_cannot_be_worked_out_is_a_sharding_error_each_time_it_is_read(monkeypatch):
    def broken(*args):
        raise KeyError("planted")

    monkeypatch.setattr(assemble, "explain_all", broken)
    prog = shardviz.trace(contraction, *operands())  # the trace itself does not need them
    assert prog.collectives[0].kind == "all-reduce"
    for _ in range(2):
        with pytest.raises(shardviz.ShardingError, match=r"why .* collectives are there.*KeyError"):
            _ = prog.collectives[0].why


def test_xla_cpus_memory_timeline_is_worked_out_only_for_with_bytes_cpu(monkeypatch):
    """The program's own memory is counted in its dtypes as a trace ends; XLA:CPU's timeline (bf16
    held as f32 copies) waits for ``with_bytes("cpu")``, and then its memory is memory_analysis()'s."""
    counted: list[bool] = []
    real = assemble.memory_timeline

    def spy(*args, **kwargs):
        counted.append(kwargs.get("device") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(assemble, "memory_timeline", spy)
    x, w = put((8, 12), P(None, "a"), jnp.bfloat16), put((12, 6), P("a", None), jnp.bfloat16)
    prog = shardviz.trace(contraction, x, w)
    assert counted == [True]
    # the device's count: 8x3 and 3x6 bf16 blocks in, the 8x6 bf16 sum out, per device
    assert (prog.memory.argument_bytes, prog.memory.output_bytes) == ((8 * 3 + 3 * 6) * 2, 8 * 6 * 2)
    prog.to_json()
    str(prog)
    assert counted == [True]
    cpu = prog.with_bytes("cpu")
    assert counted == [True, False]
    stats = jax.jit(contraction).lower(x, w).compile().memory_analysis()
    m = cpu.memory
    assert (m.argument_bytes, m.output_bytes, m.temp_bytes) == (
        stats.argument_size_in_bytes,
        stats.output_size_in_bytes,
        stats.temp_size_in_bytes,
    )
    assert cpu.memory_timeline is not None and cpu.memory_timeline.peak_bytes == m.peak_bytes
    assert prog.with_bytes("cpu").memory == m
    assert counted == [True, False]


def test_the_compiles_standard_error_is_caught_and_handed_on_leaving_no_descriptor_open(capfd):
    """What XLA writes to descriptor 2 is caught and written on; a compile that writes nothing leaves
    nothing behind (the spool is an unnamed in-memory file, closed at once)."""
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(10):
        with captured_stderr() as quiet:
            pass
        assert quiet == [""]
    with captured_stderr() as caught:
        os.write(2, b"[SPMD] a line from C++\n" * 3)
    assert caught == ["[SPMD] a line from C++\n" * 3]
    assert capfd.readouterr().err.count("[SPMD] a line from C++") == 3
    assert sorted(os.listdir("/proc/self/fd")) == before
