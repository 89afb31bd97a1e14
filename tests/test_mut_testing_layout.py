"""assert_layout's reading of expected layouts and its comparison, part by part, with exact sentences.

Expected layouts are read without any array (type strings as ``jax.typeof``
prints them, spec text, PartitionSpecs); comparisons run against stand-ins
that carry only what ``differences`` reads; whole checks run on arrays placed
on a mesh x=2 y=4 of the simulated devices (nothing is traced).
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardingError
from shardviz.testing.errors import LayoutMismatch
from shardviz.testing.layout import (
    Expected,
    assert_layout,
    check_axes,
    differences,
    expectation,
    layout_marks,
    marks_text,
    no_marks,
    typed_text,
)


def marks(v=(), u=(), r=()):
    return {"V": frozenset(v), "U": frozenset(u), "R": frozenset(r)}


@pytest.mark.parametrize(
    ("text", "dtype", "memory", "shape", "spec", "written"),
    [
        ("float32[8@x,4]", "float32", "", (8, 4), (("x",), ()), marks()),
        (" bfloat16<host>[8@(x, y),16] ", "bfloat16", "host", (8, 16), (("x", "y"), ()), marks()),
        ("[8@x,4]", None, "", (8, 4), (("x",), ()), marks()),
        ("int8[]", "int8", "", (), (), marks()),
        ("float32[ 8 @ x ]{U:tp}", "float32", "", (8,), (("x",),), marks(u=["tp"])),
        ("float32[8]{V:(a, b), R:c}", "float32", "", (8,), ((),), marks(v=["a", "b"], r=["c"])),
        ("float32[8]{U:(a,), U:b}", "float32", "", (8,), ((),), marks(u=["a", "b"])),
        ("float32[8@()]", "float32", "", (8,), ((),), marks()),
    ],
)
def test_type_strings_read_part_by_part(text, dtype, memory, shape, spec, written):
    assert expectation(text) == Expected(text.strip(), dtype, memory, shape, spec, written)


def test_specs_read_as_their_axes_per_dimension():
    assert expectation(" x, None ") == Expected("x, None", None, None, None, (("x",), ()), marks())
    assert expectation("P(('x', 'y'))") == Expected("P(('x', 'y'))", None, None, None, (("x", "y"),), marks())
    spec = P("x", None, ("a", "b"), unreduced={"u"}, reduced={"r"})
    assert expectation(spec) == Expected(str(spec), None, None, None, (("x",), (), ("a", "b")), marks(u="u", r="r"))


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        (
            5,
            "the expected layout must be a type string such as 'float32[8@x,4]', a PartitionSpec or spec text such "
            "as \"P('x', None)\", or a Layout, not int",
        ),
        (
            "float32[8@x,4",
            "cannot read the type string 'float32[8@x,4': write it as jax.typeof prints it, e.g. 'float32[8@x,4]' "
            "or 'bfloat16<host>[8@(x,y),16]'",
        ),
        (
            "float32[8@x,four]",
            "cannot read dimension 1 ('four') of the type string 'float32[8@x,four]': write a size, optionally "
            "@axis or @(axis,axis)",
        ),
        ("floaty[8]", "the type string 'floaty[8]' names no dtype JAX knows: 'floaty'"),
        (
            "float32[8]{W:x}",
            "cannot read 'W:x' in the type string 'float32[8]{W:x}': the braces hold V:, U: or R: and axes, e.g. "
            "{U:tp} or {V:(data,model)}",
        ),
        (
            "float32[8]{U:(a,b), Q:(c)}",
            "cannot read 'Q:(c)' in the type string 'float32[8]{U:(a,b), Q:(c)}': the braces hold V:, U: or R: and "
            "axes, e.g. {U:tp} or {V:(data,model)}",
        ),
        (
            P(P.UNCONSTRAINED),
            "entry 0 of the expected PartitionSpec is UNCONSTRAINED: name mesh axes (or None); an "
            "unconstrained entry says nothing to check",
        ),
    ],
)
def test_expectations_written_wrong_are_refused_by_name(expected, message):
    with pytest.raises(ShardingError) as info:
        expectation(expected)
    assert str(info.value) == message


def test_an_expectation_naming_an_axis_twice_or_one_the_mesh_lacks_is_refused():
    check_axes(expectation("float32[8@x,4@y]{U:z}"), ("x", "y", "z"))
    with pytest.raises(ShardingError) as info:
        check_axes(expectation("float32[8@x,4@x]"), ("x", "y"))
    assert str(info.value) == "the expected layout 'float32[8@x,4@x]' uses the mesh axis 'x' twice"
    with pytest.raises(ShardingError) as info:
        check_axes(expectation("float32[8,4@z]"), ("x", "y"))
    assert str(info.value) == (
        "the expected layout 'float32[8,4@z]' splits dimension 1 by 'z', which is no axis of the array's mesh "
        "(axes: x y)"
    )
    with pytest.raises(ShardingError) as info:
        check_axes(expectation("x"), ())
    assert str(info.value) == (
        "the expected layout 'x' splits dimension 0 by 'x', which is no axis of the array's mesh "
        "(axes: none: the array sits on one device)"
    )
    with pytest.raises(ShardingError) as info:
        check_axes(expectation("float32[8]{R:(b,a)}"), ("x",))
    assert str(info.value) == (
        "the expected layout 'float32[8]{R:(b,a)}' names 'a' among its reduced axes, which is no axis of the "
        "array's mesh (axes: x)"
    )
    with pytest.raises(ShardingError, match=r"among its varying manual axes, .* \(axes: none\)$"):
        check_axes(expectation("float32[8]{V:a}"), ())


def laid_out(type_str, spec, *, dtype="float32", shape=(8, 4), memory_kind="device", sharding=None):
    return SimpleNamespace(
        dtype=dtype, shape=shape, spec=spec, type_str=type_str, memory_kind=memory_kind, sharding=sharding
    )


ACTUAL = laid_out("float32[8@x,4]", (("x",), ()))


def test_a_layout_as_expected_has_no_differences():
    assert differences(expectation("float32[8@x,4]"), ACTUAL) == []
    assert differences(expectation("x"), ACTUAL) == []  # a short spec leaves the last dimensions whole
    assert differences(expectation(P("x", None)), ACTUAL) == []


def test_each_part_that_differs_is_one_sentence():
    assert differences(expectation("bfloat16<host>[8@y,2@x]{U:u, R:(r,s)}"), ACTUAL) == [
        "dtype: expected bfloat16, actually float32",
        "memory: expected <host>, actually device",
        "unreduced axes (U:): expected u, actually none",
        "reduced axes (R:): expected r, s, actually none",
        "dim 0: expected split by y, actually split by x",
        "dim 1: size 2 expected, actually 4; expected split by x, actually not split",
    ]
    host = laid_out("float32<pinned_host>[8@x,4]", (("x",), ()), memory_kind="pinned_host")
    assert differences(expectation("float32[8@x,4]"), host) == ["memory: expected device memory, actually pinned_host"]
    assert differences(expectation("float32<pinned_host>[8@x,4]"), host) == []
    assert differences(expectation("x"), host) == []  # spec text says nothing of memory
    varying = laid_out("float32[8@x,4]{V:(a,b)}", (("x",), ()))
    assert differences(expectation("float32[8@x,4]"), varying) == [
        "varying manual axes (V:): expected none, actually a, b"
    ]
    assert differences(expectation(P(("x", "y"))), ACTUAL) == ["dim 0: expected split by x,y, actually split by x"]


def test_a_rank_that_differs_is_said_once():
    assert differences(expectation("float32[8@x,4,1]"), ACTUAL) == [
        "rank: expected 3 dimensions, actually 2 (shape (8, 4))"
    ]
    assert differences(expectation(P("x", None, None)), ACTUAL) == [
        "rank: the expected spec has 3 entries, the array only 2 dimensions"
    ]
    assert differences(expectation("int32[8@x,4,1]"), ACTUAL)[0] == "dtype: expected int32, actually float32"


def test_marks_text_and_marks_of_a_sharding():
    assert marks_text(no_marks()) == ""
    assert marks_text(marks(u=["tp"])) == "{U:tp}"
    assert marks_text(marks(v=["b", "a"], u=["c"], r=["e", "d"])) == "{V:(a,b), U:c, R:(d,e)}"
    spec = P("x", unreduced={"u"}, reduced={"r"})
    found = layout_marks(laid_out("float32[8@x,4]{V:v}", (("x",), ()), sharding=SimpleNamespace(spec=spec)))
    assert found == marks(v=["v"], u=["u"], r=["r"])
    assert layout_marks(laid_out("float32[8]", ((),), sharding=object())) == no_marks()


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.asarray(jax.devices()[:8]).reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def put(mesh, spec, shape=(8, 4)):
    return jax.device_put(jnp.zeros(shape, jnp.float32), NamedSharding(mesh, spec))


def test_typed_text_shows_every_axis(mesh):
    from shardviz.array.describe import describe

    assert typed_text(describe(put(mesh, P(("x", "y"), None)))) == "float32[8@(x,y),4]"
    assert typed_text(describe(put(mesh, P(None, "y")))) == "float32[8,4@y]"


def test_a_failure_names_each_difference_and_how_to_accept_the_layout(mesh):
    x = put(mesh, P("x", None))
    assert assert_layout(x, "float32[8@x,4]").type_str == "float32[8@x,4]"
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, "float32[8@y,4]")
    lines = str(info.value).splitlines()
    assert lines[:3] == [
        "the array is laid out as float32[8@x,4], not as expected float32[8@y,4]",
        "  dim 0: expected split by y, actually split by x",
        "",
    ]
    assert lines[-2:] == ["", "if the actual layout is intended, expect 'float32[8@x,4]'"]
    assert lines[3].startswith("expected:") and "actual:" in lines[3]
    page = info.value.page
    assert page.budget == "laid out as float32[8@y,4]" and page.figure == "laid out as float32[8@x,4]"
    assert page.columns == ("what differs",)
    assert page.rows == (("dim 0: expected split by y, actually split by x",),) and page.marked == (True,)
    assert info.value.expected.type_str == "float32[8@y,4]"
    assert info.value.subject.type_str == "float32[8@x,4]"


def test_the_expected_picture_takes_the_expected_shape_and_dtype(mesh):
    x = put(mesh, P("x", None))
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, "bfloat16[16@y,4]")
    assert info.value.expected.type_str == "bfloat16[16@y,4]"
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, P(("x", "y")))
    assert info.value.expected.type_str == "float32[8@(x,y),4]"


def test_an_expected_layout_that_cannot_be_laid_out_says_why(mesh):
    x = put(mesh, P("x", None), shape=(6, 4))
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, P("y"))
    assert info.value.expected.startswith("(the expected layout cannot be laid out on this mesh: ")
    assert "the expected layout cannot be laid out on this mesh" in str(info.value)


def test_a_sharding_takes_shape_and_dtype_from_the_type_string(mesh):
    sharding = NamedSharding(mesh, P("x"))
    assert assert_layout(sharding, "bfloat16[8@x,4]").dtype == "bfloat16"
    assert assert_layout(sharding, "float32[8@x,4]", dtype=jnp.float32).dtype == "float32"
    assert assert_layout(sharding, "[8@x,4]").shape == (8, 4)
    with pytest.raises(LayoutMismatch, match=r"dim 1: size 4 expected, actually 2"):
        assert_layout(sharding, "float32[8@x,4]", shape=(8, 2))  # a shape given wins over the string's


def test_a_partition_spec_with_unreduced_axes_is_compared_not_refused(mesh):
    """A PartitionSpec with unreduced or reduced axes cannot be unpacked (JAX refuses ``*spec``): its
    entries are read from ``spec.partitions``, and its U and R axes compared with the array's."""
    x = put(mesh, P("x", None))
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(x, P("x", None, unreduced={"y"}))
    assert info.value.page.rows == (("unreduced axes (U:): expected y, actually none",),)


def test_the_pictures_in_a_message_are_plain_text_even_where_colour_is_forced(mesh, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(put(mesh, P("x", None)), "float32[8@y,4]")
    assert "\x1b[" not in str(info.value)


def test_a_layout_as_the_expectation_brings_its_dtype_and_shape(mesh):
    from shardviz.array.describe import describe

    wanted = describe(put(mesh, P("x", None)))
    assert expectation(wanted) == Expected("float32[8@x,4]", "float32", "", (8, 4), (("x",), ()), marks())
    with pytest.raises(LayoutMismatch) as info:
        assert_layout(put(mesh, P("x", None), shape=(8, 2)), wanted)
    assert info.value.page.rows == (("dim 1: size 4 expected, actually 2",),)
