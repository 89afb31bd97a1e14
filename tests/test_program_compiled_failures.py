"""Every way JAX's ``Compiled`` can fail to answer, swept: trace still works from another
source, or refuses with a ShardingError that names what JAX could not say.

``Compiled`` documents ``as_text()`` returning None where a backend cannot
print its executable, ``cost_analysis()`` and ``memory_analysis()`` as
best-effort (they may raise or return nothing), and its ``input_shardings``
and ``output_shardings`` fail to fit their trees when a function writes to
``Ref`` arguments. Each is forced here on a real compile; the answers that
remain are checked against JAX's own (the arguments' shardings, the compiled
module's collectives).
"""

from __future__ import annotations

import importlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError

compiling = importlib.import_module("shardviz.program.compiling.trace_here")


class Unanswered:
    """A real ``Compiled`` whose named attributes fail the way a backend's may."""

    def __init__(self, compiled: Any, broken: dict[str, Any]) -> None:
        self._compiled = compiled
        self._broken = broken

    def __getattr__(self, name: str) -> Any:
        if name in self._broken:
            how = self._broken[name]
            if isinstance(how, Exception):
                if name in ("input_shardings", "output_shardings", "_executable"):
                    raise how
                return lambda *a, **k: (_ for _ in ()).throw(how)
            return how
        return getattr(self._compiled, name)


@pytest.fixture
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"))


@pytest.fixture
def args(mesh):
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(jnp.ones((16, 4)), NamedSharding(mesh, P("y", None)))
    return a, b


def matmul(a, b):
    return a @ b


def traced_with(monkeypatch: pytest.MonkeyPatch, broken: dict[str, Any], fun: Any, *args: Any) -> shardviz.Program:
    real = compiling._compile

    def compile_then_break(lowered: Any, read_partitioner: bool, *early: Any) -> tuple[Any, Any, Any]:
        compiled, texts, module_reading = real(lowered, read_partitioner, *early)
        return Unanswered(compiled, broken), texts, module_reading

    monkeypatch.setattr(compiling, "_compile", compile_then_break)
    return shardviz.trace(fun, *args)


def test_input_shardings_unanswered_come_from_the_arguments(monkeypatch, args):
    prog = traced_with(monkeypatch, {"input_shardings": ValueError("Too many leaves for PyTreeDef")}, matmul, *args)
    assert [layout.spec for layout in prog.inputs] == [shardviz.describe(a).spec for a in args]
    (reduce,) = prog.collectives  # the contraction over y: what the compiled module holds
    assert reduce.kind == "all-reduce" and reduce.axes == ("y",)


def test_input_shardings_unanswered_with_a_numpy_argument_is_refused(monkeypatch, args):
    with pytest.raises(ShardingError, match=r"could not say its input shardings.*Too many leaves"):
        traced_with(
            monkeypatch,
            {"input_shardings": ValueError("Too many leaves for PyTreeDef")},
            matmul,
            args[0],
            np.ones((16, 4), np.float32),
        )


def test_output_shardings_unanswered_anywhere_is_refused_by_name(monkeypatch, args):
    broken = {"output_shardings": ValueError("Too many leaves"), "_executable": AttributeError("gone")}
    with pytest.raises(ShardingError, match=r"could not say its output shardings.*no other record"):
        traced_with(monkeypatch, broken, matmul, *args)


@pytest.mark.parametrize("answer", [None, "", RuntimeError("no text on this backend")])
def test_no_module_text_is_refused_not_shown_as_no_collectives(monkeypatch, args, answer):
    """Where XLA's dump gave no module to read while it compiled (a cached executable, a backend that
    dumps nothing), the executable's own text is the only source of the collectives."""
    monkeypatch.setattr(compiling, "_read_module_early", lambda *args: None)
    broken = {"as_text": answer if isinstance(answer, Exception) else (lambda: answer)}
    with pytest.raises(ShardingError, match="compiled module"):
        traced_with(monkeypatch, broken, matmul, *args)


@pytest.mark.parametrize(
    "cost",
    [None, [], [{}], {"flops": None}, {"flops": "n/a"}, {"flops": float("nan")}, RuntimeError("best effort")],
)
def test_cost_analysis_without_a_figure_gives_none(monkeypatch, args, cost):
    broken = {"cost_analysis": cost if isinstance(cost, Exception) else (lambda: cost)}
    prog = traced_with(monkeypatch, broken, matmul, *args)
    assert prog.flops is None and prog.bytes_accessed is None
    assert "flops per device: not reported" in str(prog)
    assert len(prog.collectives) == 1


@pytest.mark.parametrize("memory", [None, RuntimeError("best effort")])
def test_memory_analysis_without_an_answer_leaves_the_held_memory_and_no_xla_figure(monkeypatch, args, memory):
    """The memory a device holds is read from XLA's buffer assignment and live ranges, not from
    memory_analysis(); only the payload's second figure, memory_analysis()'s own, is then missing."""
    whole = shardviz.trace(matmul, *args)
    broken = {"memory_analysis": memory if isinstance(memory, Exception) else (lambda: memory)}
    prog = traced_with(monkeypatch, broken, matmul, *args)
    assert whole.memory is not None and prog.memory == whole.memory
    assert whole.to_json()["memory"] is not None and prog.to_json()["memory"] is None


def test_the_issues_ref_step_traces_on_one_device():
    """A jitted step writing to a Ref: JAX's own ``output_shardings`` fails to fit its tree."""

    @jax.jit
    def step(w_ref, x):
        w_ref[...] += x.sum()
        return {"loss": x.mean()}

    args = (jax.ref.new_ref(jnp.zeros(4)), jnp.ones((8, 4)))
    with pytest.raises(ValueError):
        step.trace(*args).lower().compile().output_shardings  # noqa: B018 - JAX's own failure
    prog = shardviz.trace(step, *args)
    ran = step(jax.ref.new_ref(jnp.zeros(4)), jnp.ones((8, 4)))
    assert prog.output_paths == ("out['loss']",)
    assert prog.outputs[0].type_str == str(jax.typeof(ran["loss"]))
    assert prog.input_paths == ("w_ref", "x") and prog.inputs[0].type_str == "Ref{float32[4]}"


def test_a_ref_input_laid_out_anew_is_refused_by_name(mesh):
    """Tracing again lays inputs out as ShapeDtypeStructs; a Ref in its place would no longer be
    written to (JAX refuses the write on an array), so a new spec for a Ref is refused, naming it,
    and the other inputs still take theirs."""
    from shardviz.program import retrace
    from shardviz.program.state import ProgramState

    def step(w_ref, x):
        w_ref[...] += x.sum(0)
        return x.mean()

    w = jax.ref.new_ref(jax.device_put(jnp.zeros(8), NamedSharding(mesh, P())))
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("x", None)))
    with pytest.raises(TypeError):  # JAX's own answer to a write into an array
        jax.jit(step).trace(jax.ShapeDtypeStruct((8,), jnp.float32), x)
    prog = shardviz.trace(step, w, x)
    with pytest.raises(ShardingError, match=r"w_ref is a Ref \(jax.ref.new_ref\)"):
        retrace(prog, ["y", None])
    state = ProgramState(prog)
    with pytest.raises(Exception) as info:
        state.with_specs(["y", state.input_specs[1]])
    assert getattr(info.value, "source", None) == "input:0" and "w_ref is a Ref" in str(info.value)
    moved, _ = state.with_specs([state.input_specs[0], "x, y"])
    assert moved.program.inputs[1].spec == (("x",), ("y",))
