"""shardviz.testing.assert_layout against JAX's own answers: ``jax.typeof`` strings and the arrays' shardings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz.testing import LayoutMismatch, assert_layout

EXPLICIT = (AxisType.Explicit, AxisType.Explicit)
AUTO = (AxisType.Auto, AxisType.Auto)


def mesh(types=EXPLICIT) -> Mesh:
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=types)


def put(spec, types=EXPLICIT, shape=(8, 4), dtype=jnp.float32, memory_kind=None):
    return jax.device_put(jnp.zeros(shape, dtype), NamedSharding(mesh(types), spec, memory_kind=memory_kind))


@pytest.mark.parametrize(
    "spec",
    [P(), P("x"), P(None, "y"), P(("x", "y")), P("y", "x"), P(("y", "x"), None)],
)
def test_jax_typeof_strings_pass(spec):
    x = put(spec)
    layout = assert_layout(x, str(jax.typeof(x)))
    assert layout.type_str == str(jax.typeof(x))
    assert_layout(x, spec)  # the PartitionSpec the array was put with
    assert_layout(x, x.sharding.spec)
    assert_layout(jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), str(jax.typeof(x)))
    assert_layout(x.sharding, str(jax.typeof(x)))  # a sharding takes shape and dtype from the string
    assert_layout(x.sharding, spec, shape=x.shape)


def test_spec_text_and_short_specs_pass():
    x = put(P("x", None))
    assert_layout(x, "P('x', None)")
    assert_layout(x, "x, None")
    assert_layout(x, "x")  # a short spec leaves the last dimensions whole, as JAX reads it
    assert_layout(x, P("x"))
    assert_layout(x, "[8@x,4]")  # no dtype: dimensions only


def test_auto_axes_compare_the_sharding_where_typeof_shows_none():
    x = put(P("x", None), types=AUTO)
    assert str(jax.typeof(x)) == "float32[8,4]"  # Auto axes: JAX's type leaves the sharding out
    assert x.sharding.spec == P("x", None)
    assert_layout(x, "float32[8@x,4]")
    with pytest.raises(LayoutMismatch, match=r"dim 0: expected not split, actually split by x"):
        assert_layout(x, "float32[8,4]")


def test_a_different_split_fails_with_both_pictures():
    x = put(P("x", None))
    wanted = put(P("y", None))
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, str(jax.typeof(wanted)))
    message = str(info.value)
    assert message.startswith(f"the array is laid out as {jax.typeof(x)}, not as expected {jax.typeof(wanted)}")
    assert "  dim 0: expected split by y, actually split by x" in message
    assert "dim 1" not in message.split("\n\n")[0]
    assert "expected:" in message and "actual:" in message
    # each picture names the layout it draws and the devices JAX puts each block on
    assert str(jax.typeof(wanted)) in message.split("\n\n", 1)[1]
    for array in (wanted, x):
        holders: dict[tuple, list[int]] = {}
        for device, index in array.sharding.devices_indices_map(array.shape).items():
            rows = index[0].indices(array.shape[0])[:2]
            holders.setdefault(rows, []).append(device.id)
        for (start, stop), ids in holders.items():
            assert f"{start}:{stop} │ CPU {min(ids)}" in message  # the block's row, from its first device
    assert info.value.subject.type_str == str(jax.typeof(x))
    assert isinstance(info.value, AssertionError)


def test_dtype_size_rank_and_memory_differences_are_named():
    x = put(P("x", None))
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, "bfloat16[8@x,2@y]")
    message = str(info.value)
    assert "dtype: expected bfloat16, actually float32" in message
    assert "dim 1: size 2 expected, actually 4; expected split by y, actually not split" in message
    with pytest.raises(LayoutMismatch, match=r"rank: expected 3 dimensions, actually 2"):
        assert_layout(x, "float32[8@x,4,1]")
    with pytest.raises(LayoutMismatch, match=r"rank: the expected spec has 3 entries"):
        assert_layout(x, P("x", None, None))

    host = put(P("x", None), memory_kind="pinned_host")
    assert_layout(host, str(jax.typeof(host)))
    assert "<host>" in str(jax.typeof(host))
    with pytest.raises(LayoutMismatch, match=r"memory: expected device memory, actually pinned_host"):
        assert_layout(host, "float32[8@x,4]")
    with pytest.raises(LayoutMismatch, match=r"memory: expected <host>, actually device"):
        assert_layout(x, "float32<host>[8@x,4]")


def test_an_expected_layout_that_cannot_be_laid_out_is_still_a_failure_with_a_reason():
    x = put(P("x", None), shape=(6, 4))  # x=2 divides 6; y=4 does not
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, P("y"))
    assert "the expected layout cannot be laid out on this mesh" in str(info.value)


@pytest.mark.parametrize(
    ("expected", "fragment"),
    [
        (5, "the expected layout must be a type string"),
        ("float32[8@z,4]", "splits dimension 0 by 'z', which is no axis of the array's mesh (axes: x y)"),
        (P("x", "x"), "uses the mesh axis 'x' twice"),
        ("float32[8@x,4", "cannot read the type string"),
        ("float32[8@x,four]", "cannot read dimension 1 ('four')"),
        ("floaty[8@x,4]", "names no dtype JAX knows: 'floaty'"),
        (P(P.UNCONSTRAINED), "entry 0 of the expected PartitionSpec"),
        ("P('x'", "opens P( but never closes it"),
    ],
)
def test_bad_expectations_raise_sharding_error(expected, fragment):
    x = put(P("x", None))
    with pytest.raises(shardviz.ShardingError) as info:
        assert_layout(x, expected)
    assert fragment in str(info.value)


def test_bad_subjects_raise_sharding_error():
    with pytest.raises(shardviz.ShardingError, match="got a str, which lives on the host"):
        assert_layout("not an array", "float32[8]")
    with pytest.raises(shardviz.ShardingError, match="shape"):
        assert_layout(NamedSharding(mesh(), P("x")), P("x"))  # no shape anywhere
