"""Bad input to shardviz.trace: a ShardingError naming the argument (or the
function), with JAX's own message attached; the user's arrays untouched."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingError
from shardviz.program import retrace


@pytest.fixture
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


@pytest.fixture
def arr(mesh):
    return jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))


def jax_message(fn, *args):
    """What JAX itself says when asked to do the same."""
    with pytest.raises(Exception) as info:
        fn(*args)
    return str(info.value)


def test_function_that_raises_while_tracing(arr):
    def broken(x):
        raise RuntimeError("the model is not ready")

    with pytest.raises(ShardingError) as info:
        shardviz.trace(broken, arr)
    text = str(info.value)
    assert "broken raised while tracing" in text
    assert "RuntimeError: the model is not ready" in text
    assert "x: float32[4,8]" in text
    assert isinstance(info.value.__cause__, RuntimeError)


def test_shape_mismatch_names_the_arguments():
    a, b = jnp.ones((3, 4)), jnp.ones((5, 6))

    def matmul(lhs, rhs):
        return lhs @ rhs

    with pytest.raises(ShardingError) as info:
        shardviz.trace(matmul, a, b)
    text = str(info.value)
    assert "lhs: float32[3,4]" in text and "rhs: float32[5,6]" in text
    assert jax_message(jax.jit(matmul).trace, a, b) in text


def test_tracer_passed_in(arr):
    seen = {}

    def inside(x):
        with pytest.raises(ShardingError) as info:
            shardviz.trace(lambda v: v * 2, x)
        seen["text"] = str(info.value)
        return x

    jax.jit(inside)(arr)
    text = seen["text"]
    assert "argument v is a tracer (float32[4,8])" in text
    assert "The 'sharding' attribute is not available on traced array" in text  # JAX's words


def test_deleted_argument(arr):
    arr.delete()
    with pytest.raises(ShardingError) as info:
        shardviz.trace(lambda a, b: a + b, jnp.ones((4, 8)), arr)
    text = str(info.value)
    assert "argument b has been deleted" in text
    assert jax_message(arr.block_until_ready) in text


def test_donated_argument(mesh, arr):
    step = jax.jit(lambda v: v + 1, donate_argnums=0)
    step(arr)
    assert arr.is_deleted()
    with pytest.raises(ShardingError, match=r"argument params\['w'\] has been deleted .*donation"):
        shardviz.trace(lambda params: params["w"] * 2, {"w": arr})


def test_non_array_leaf_names_its_path(arr):
    def f(batch):
        return batch["x"] * 2

    with pytest.raises(ShardingError) as info:
        shardviz.trace(f, {"x": arr, "label": "cats"})
    text = str(info.value)
    assert "argument batch['label'] is a str" in text
    assert jax_message(jax.typeof, "cats") in text  # JAX: not a valid JAX type
    assert "static_argnums" in text


def test_python_scalars_and_numpy_are_taken_as_jit_takes_them(arr):
    prog = shardviz.trace(lambda a, n, m: a * n + m.sum(), arr, 3, np.ones(5, np.float32))
    assert [layout.type_str for layout in prog.inputs] == [str(jax.typeof(v)) for v in (arr, 3, np.ones(5, np.float32))]


def test_not_a_function(arr):
    with pytest.raises(ShardingError, match="needs a function to trace, got a int"):
        shardviz.trace(3, arr)


def test_user_arrays_survive_every_refusal(mesh, arr):
    before = np.asarray(arr)
    for fn, args in [
        (lambda x: x @ x, (arr,)),
        (lambda x, s: x, (arr, "s")),
    ]:
        with pytest.raises(ShardingError):
            shardviz.trace(fn, *args)
    assert not arr.is_deleted() and arr.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_array_equal(np.asarray(arr), before)


def test_retrace_refusals(arr):
    prog = shardviz.trace(lambda a: a.sum(axis=0), arr)
    with pytest.raises(ShardingError, match="needs 1 specs"):
        retrace(prog, [])
    with pytest.raises(ShardingError, match=r"^a: dimension 1: axis 'z' is not in the mesh"):
        retrace(prog, ["x, z"])
    with pytest.raises(ShardingError, match=r"^a: dimension 0 has size 4, which x=2 × y=4"):
        retrace(prog, ["(x, y), None"])
    with pytest.raises(ShardingError, match="expected a PartitionSpec"):
        retrace(prog, [3])


@pytest.mark.parametrize("axis", ["ü", "轴", "a\\C", "a\\"])
def test_axis_names_xla_aborts_on_are_refused_before_compiling(axis):
    """XLA 0.10.2 aborts the process compiling a mesh axis name with a non-ASCII
    character or a backslash (checked in a subprocess when this test was written);
    trace must refuse such a program rather than take the kernel down."""
    mesh = jax.make_mesh((2,), (axis,), devices=jax.devices()[:2])
    x = jax.device_put(jnp.ones(4), NamedSharding(mesh, P(axis)))
    with pytest.raises(ShardingError, match=r"rename those axes to plain ASCII"):
        shardviz.trace(lambda a: a * 2, x)
    assert not x.is_deleted()


@pytest.mark.parametrize("axis", ['a"b', "a b", "<img src=x>", "x'y"])
def test_other_odd_axis_names_trace(axis):
    mesh = jax.make_mesh((2,), (axis,), devices=jax.devices()[:2])
    x = jax.device_put(jnp.ones(4), NamedSharding(mesh, P(axis)))
    assert shardviz.trace(lambda a: a * 2, x).inputs[0].spec == ((axis,),)


def test_the_array_widget_survives_a_move_it_cannot_compile():
    mesh = jax.make_mesh((2, 4), ("ü", "y"), devices=jax.devices()[:8])
    w = shardviz.ShardingWidget(jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("ü"))))
    w.set_state({"spec_text": "None, y"})
    assert w.error == "" and w.last_move is None and "plain ASCII" in w.move["error"]
