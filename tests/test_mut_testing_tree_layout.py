"""assert_tree_layout on small trees placed by hand: rules text and trees of specs, both ways.

The tree sits on a mesh fsdp=4 tp=2 of the simulated devices (no program is
traced): ``w1`` float32[16,8] split (fsdp, tp), ``w2`` float32[8,16] split
(tp, fsdp), ``b`` float32[16] replicated. Each split weight holds
16 * 8 * 4 / 8 = 64 B per device; the replicated bias its whole 64 B.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardingError
from shardviz.testing.errors import TreeLayoutMismatch
from shardviz.testing.tree_layout import assert_tree_layout
from shardviz.tree.describe import describe_tree

ACCEPT = "if the actual layouts are intended, change what 'expected by' names to say them"
COLUMNS = ("path", "expected", "actual", "per device", "expected by")


@pytest.fixture(scope="module")
def mesh():
    devices = np.asarray(jax.devices()[:8]).reshape(4, 2)
    return Mesh(devices, ("fsdp", "tp"), axis_types=(AxisType.Explicit,) * 2)


@pytest.fixture(scope="module")
def params(mesh):
    def put(shape, spec):
        return jax.device_put(jnp.ones(shape), NamedSharding(mesh, spec))

    return {"w1": put((16, 8), P("fsdp", "tp")), "w2": put((8, 16), P("tp", "fsdp")), "b": put((16,), P())}


def table(rows):
    """The failure's table: columns padded to their widest cell, the last one not."""
    widths = [max(len(r[c]) for r in (COLUMNS, *rows)) for c in range(4)]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[4] for r in (COLUMNS, *rows)]


def test_rules_that_hold_pass_and_return_the_tree(params):
    rules = "w1 = fsdp, tp\nw2 = tp, fsdp\n# the bias\nb = None\n"
    layout = assert_tree_layout(params, rules)
    assert layout.leaf_count == 3
    assert assert_tree_layout(layout, rules) is layout


def test_a_tree_of_specs_takes_each_kind_of_spec_and_none_for_unchecked(params, mesh):
    expected = {
        "w1": NamedSharding(mesh, P("fsdp", "tp")),
        "w2": "float32[8@tp,16@fsdp]",
        "b": None,
    }
    assert assert_tree_layout(params, expected).leaf_count == 3
    assert_tree_layout(params, {"w1": P("fsdp", "tp"), "w2": "tp, fsdp", "b": P()})


def test_leaves_laid_out_otherwise_are_one_table_with_what_differs(params):
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(params, "w1 = tp, fsdp\nb = None\n* = None")
    rows = [
        ("w1", "float32[16@tp,8@fsdp]", "float32[16@fsdp,8@tp]", "64 B", "line 1: w1 = tp, fsdp"),
        ("w2", "float32[8,16]", "float32[8@tp,16@fsdp]", "64 B", "line 3: * = None"),
    ]
    assert str(info.value).splitlines() == [
        "2 of the 3 array leaves checked are not laid out as the rules say (first match wins):",
        table(rows)[0],
        table(rows)[1],
        "      dim 0: expected split by tp, actually split by fsdp",
        "      dim 1: expected split by fsdp, actually split by tp",
        table(rows)[2],
        "      dim 0: expected not split, actually split by tp",
        "      dim 1: expected not split, actually split by fsdp",
        ACCEPT,
    ]
    page = info.value.page
    assert page.budget == "every array leaf laid out as the rules say (first match wins)"
    assert page.figure == "2 of 3 leaves differ"
    assert page.columns == (*COLUMNS, "what differs")
    assert page.rows == (
        (
            *rows[0],
            "dim 0: expected split by tp, actually split by fsdp; dim 1: expected split by fsdp, actually split by tp",
        ),
        (
            *rows[1],
            "dim 0: expected not split, actually split by tp; dim 1: expected not split, actually split by fsdp",
        ),
    )
    assert page.marked == (True, True)
    assert info.value.subject.leaf_count == 3


def test_one_leaf_of_a_tree_of_specs_says_is_and_names_its_path(params):
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(params, {"w1": P("fsdp", "tp"), "w2": "float32[8@tp,16]", "b": None})
    rows = [("w2", "float32[8@tp,16]", "float32[8@tp,16@fsdp]", "64 B", "['w2']")]
    assert str(info.value).splitlines() == [
        "1 of the 2 array leaves checked is not laid out as the tree of specs says:",
        *table(rows)[:2],
        "      dim 1: expected not split, actually split by fsdp",
        ACCEPT,
    ]
    assert info.value.page.budget == "every array leaf laid out as the tree of specs says"


def test_a_leaf_no_rule_states_fails_and_asks_for_a_rule(params):
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(params, "w* = fsdp")
    rows = [
        ("b", "(no rule)", "float32[16]", "64 B", "-"),
        ("w1", "float32[16@fsdp,8]", "float32[16@fsdp,8@tp]", "64 B", "line 1: w* = fsdp"),
        ("w2", "float32[8@fsdp,16]", "float32[8@tp,16@fsdp]", "64 B", "line 1: w* = fsdp"),
    ]
    header, b, w1, w2 = table(rows)
    assert str(info.value).splitlines() == [
        "3 of the 3 array leaves checked are not laid out as the rules say (first match wins):",
        header,
        b,
        "      no rule states its layout: add one (e.g. a last line '* = None')",
        w1,
        "      dim 1: expected not split, actually split by tp",
        w2,
        "      dim 0: expected split by fsdp, actually split by tp",
        "      dim 1: expected not split, actually split by fsdp",
        ACCEPT,
    ]


def test_a_numpy_leaf_is_on_no_mesh_and_its_bytes_are_the_hosts(params):
    tree = {**params, "host": np.ones((4,), np.float32)}
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(tree, "w1 = fsdp, tp\nw2 = tp, fsdp\n* = None")
    rows = [("host", "float32[4]", "ndarray float32[4]", "host", "line 3: * = None")]
    assert str(info.value).splitlines() == [
        "1 of the 4 array leaves checked is not laid out as the rules say (first match wins):",
        *table(rows),
        "      a NumPy array in host memory: on no device, so laid out on no mesh",
        ACCEPT,
    ]
    # in a tree of specs, its expected text drawn from its own shape and dtype
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout({"host": np.ones((4, 2), np.float32)}, {"host": P()})
    assert info.value.page.rows[0][:5] == ("host", "float32[4,2]", "ndarray float32[4,2]", "host", "['host']")


def test_a_rule_that_sets_no_leaf_is_refused_with_how_paths_read(params):
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, "* = None\nw1 = fsdp, tp")
    assert str(info.value) == (
        "line 2: w1 sets no leaf of the tree (it matches none, or earlier lines take every leaf it matches); "
        "paths read like 'b'"
    )
    with pytest.raises(ShardingError, match=r"^line 1: nothing\.\* sets no leaf of the tree"):
        assert_tree_layout(params, "nothing.* = None\n* = None")
    with pytest.raises(ShardingError, match=r"paths read like '\(the tree has no array leaves\)'$"):
        assert_tree_layout({"step": 3}, "w = None")
    with pytest.raises(
        ShardingError, match=r"^assert_tree_layout was given rules text with no rule: write GLOB = SPEC, one per line$"
    ):
        assert_tree_layout(params, "# nothing\n\n")


def test_an_axis_the_leafs_mesh_lacks_is_refused_naming_rule_and_leaf(params):
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, "w1 = data\n* = None")
    assert str(info.value).startswith("line 1: w1 = data, for leaf 'w1': the expected layout ")
    assert "which is no axis of the array's mesh (axes: fsdp tp)" in str(info.value)
    with pytest.raises(ShardingError, match=r"^\['b'\], for leaf 'b': "):
        assert_tree_layout(params, {"w1": None, "w2": None, "b": "pipe"})


def test_a_tree_of_specs_that_does_not_fit_names_what_is_missing_and_extra(params):
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, {"w1": P(), "w2": P(), "c": P(), "d": P()})
    assert str(info.value) == (
        "the tree of expected specs does not fit the tree: no spec for ['b']; no leaf at ['c'], ['d'] "
        "(give a spec, or None for a leaf not checked, at each array leaf's path)"
    )
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, {"w1": P(), "w2": P(), "b": P(), **{f"x{k}": P() for k in range(6)}})
    assert str(info.value) == (
        "the tree of expected specs does not fit the tree: no leaf at ['x0'], ['x1'], ['x2'], ['x3'], ['x4'] ... "
        "(give a spec, or None for a leaf not checked, at each array leaf's path)"
    )
    many = {f"k{k}": jnp.ones(2) for k in range(7)}
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(many, {"k0": None})
    assert str(info.value) == (
        "the tree of expected specs does not fit the tree: no spec for ['k1'], ['k2'], ['k3'], ['k4'], ['k5'] ... "
        "(give a spec, or None for a leaf not checked, at each array leaf's path)"
    )
    with pytest.raises(ShardingError, match=r"^cannot flatten the tree of expected specs: "):
        assert_tree_layout(params, {1: P(), "a": P()})


def test_a_leaf_that_is_no_array_needs_no_spec(params):
    tree = {**params, "step": 3}
    assert_tree_layout(tree, {"w1": P("fsdp", "tp"), "w2": P("tp", "fsdp"), "b": P(), "step": None})
    assert_tree_layout(tree, {"w1": P("fsdp", "tp"), "w2": P("tp", "fsdp"), "b": P(), "step": P("fsdp")})
    assert_tree_layout(tree, "w1 = fsdp, tp\nw2 = tp, fsdp\nb = None")


def test_more_than_forty_leaves_that_differ_are_counted(mesh):
    rep = NamedSharding(mesh, P())
    tree = {f"w{k:02d}": jax.device_put(jnp.ones(8), rep) for k in range(42)}
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(describe_tree(tree), "* = fsdp")
    lines = str(info.value).splitlines()
    assert lines[0] == "42 of the 42 array leaves checked are not laid out as the rules say (first match wins):"
    assert lines[-2:] == ["  ... and 2 more leaves", ACCEPT]
    assert sum(line.startswith("  w") for line in lines) == 40
    assert len(info.value.page.rows) == 42 and info.value.page.marked == (True,) * 42


def test_a_rule_names_its_spec_alone_even_when_its_glob_holds_an_equals_sign(params):
    """The rules grammar splits a line at its last "=" (a key may hold one); the expected layout a refusal
    quotes is the spec, not the glob's tail."""
    with pytest.raises(ShardingError) as info:
        assert_tree_layout({"a = b": params["w1"]}, "a = b = pipe")
    assert str(info.value) == (
        "line 1: a = b = pipe, for leaf 'a = b': the expected layout 'pipe' splits dimension 0 by 'pipe', "
        "which is no axis of the array's mesh (axes: fsdp tp)"
    )


def test_an_axis_refusal_quotes_the_rules_spec(params):
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, "w1 = data\n* = None")
    assert str(info.value) == (
        "line 1: w1 = data, for leaf 'w1': the expected layout 'data' splits dimension 0 by 'data', which is no "
        "axis of the array's mesh (axes: fsdp tp)"
    )


def test_a_dimension_split_by_two_axes_is_written_with_both(params):
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(params, "w1 = (fsdp, tp)\nw2 = tp, fsdp\nb = None")
    assert info.value.page.rows[0][:3] == ("w1", "float32[16@(fsdp,tp),8]", "float32[16@fsdp,8@tp]")


def test_exactly_five_missing_or_extra_specs_are_all_named(params):
    five = {f"k{k}": jnp.ones(2) for k in range(6)}
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(five, {"k0": None})
    assert "no spec for ['k1'], ['k2'], ['k3'], ['k4'], ['k5'] (give" in str(info.value)
    with pytest.raises(ShardingError) as info:
        assert_tree_layout(params, {"w1": P(), "w2": P(), "b": P(), **{f"x{k}": P() for k in range(5)}})
    assert "no leaf at ['x0'], ['x1'], ['x2'], ['x3'], ['x4'] (give" in str(info.value)


def test_exactly_forty_leaves_that_differ_are_all_listed(mesh):
    rep = NamedSharding(mesh, P())
    tree = {f"w{k:02d}": jax.device_put(jnp.ones(8), rep) for k in range(40)}
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(tree, "* = fsdp")
    assert str(info.value).splitlines()[-2] == "      dim 0: expected split by fsdp, actually not split"


def test_a_none_leaf_keeps_its_place_in_a_tree_of_specs(params):
    tree = {"a": None, **params}
    assert assert_tree_layout(tree, {"a": None, "w1": P("fsdp", "tp"), "w2": P("tp", "fsdp"), "b": P()}) is not None
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(tree, {"a": None, "w1": P("fsdp", "tp"), "w2": P("tp", "fsdp"), "b": P("fsdp")})
    assert [row[0] for row in info.value.page.rows] == ["b"]


def test_a_leaf_on_one_device_has_no_mesh_axes_and_memory_is_compared(params):
    assert assert_tree_layout({"loose": jnp.ones(4)}, "* = None").leaf_count == 1
    with pytest.raises(ShardingError, match=r"\(axes: none: the array sits on one device\)$"):
        assert_tree_layout({"loose": jnp.ones(4)}, "* = fsdp")
    with pytest.raises(TreeLayoutMismatch) as info:
        assert_tree_layout(params, {"w1": "float32<pinned_host>[16@fsdp,8@tp]", "w2": None, "b": None})
    assert info.value.page.rows[0][-1] == "memory: expected <pinned_host>, actually device"
