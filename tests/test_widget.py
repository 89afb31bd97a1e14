"""Widget state: set traits as the front end does, check payload, error and
that the user's array is never changed; Python-side setters raise instead."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from jax_truth import assert_matches_jax
from shardviz import ShardingError, ShardingWidget


@pytest.fixture
def mesh():
    return jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])


@pytest.fixture
def x(mesh):
    return jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))


def frontend(widget: ShardingWidget, **traits) -> None:
    """Deliver an edit the way ipywidgets delivers a message from the browser."""
    widget.set_state(traits)


def assert_untouched(x, expected_sharding) -> None:
    assert not x.is_deleted()
    assert x.sharding == expected_sharding
    np.testing.assert_array_equal(np.asarray(x), np.arange(32.0).reshape(4, 8))


def test_initial_state_matches_describe(x):
    w = ShardingWidget(x)
    plain = shardviz.describe(x).to_json()
    # The widget knows the array's variable name (for "copy code"); describe does not.
    assert w.payload["array_name"] == "x" and plain["array_name"] is None
    assert {k: v for k, v in w.payload.items() if k not in ("array_name", "code")} == {
        k: v for k, v in plain.items() if k not in ("array_name", "code")
    }
    assert (w.spec_text, w.mesh_text, w.memory_kind, w.error) == ("x, y", "x=2, y=4", "device", "")
    assert w.array is x and w.spec == P("x", "y")


def test_spec_edit_from_frontend(x):
    w = ShardingWidget(x)
    frontend(w, spec_text="y, x")
    assert w.error == ""
    assert w.payload["type_str"] == "float32[4@y,8@x]"
    assert str(jax.typeof(w.array)) == "float32[4@y,8@x]"
    assert_matches_jax(w.layout, w.array.sharding, (4, 8), array=w.array)
    np.testing.assert_array_equal(np.asarray(w.array), np.asarray(x))
    assert_untouched(x, NamedSharding(x.sharding.mesh, P("x", "y")))


@pytest.mark.parametrize("text", ["P('y', None)", "y, None", "'y'", 'PartitionSpec("y")', "(y,), None"])
def test_spec_text_forms(x, text):
    w = ShardingWidget(x)
    frontend(w, spec_text=text)
    assert w.error == ""
    assert w.layout.spec == (("y",), ()) and w.payload["spec"] == [["y"], []]
    assert w.spec_text == "y"  # canonical form comes back


def test_tuple_spec_and_order(x):
    w = ShardingWidget(x)
    frontend(w, spec_text="(y, x), None")
    assert (
        w.error_source == "spec"
        and w.error
        == "dimension 0 has size 4, which y=4 × x=2 cannot split evenly into 8 blocks (JAX has no uneven shards); axes of this mesh that divide 4: x=2, y=4"
    )
    frontend(w, spec_text="None, (y, x)")
    assert w.error == "" and w.layout.type_str == "float32[4,8@(y,x)]"
    assert_matches_jax(w.layout, w.array.sharding, (4, 8), array=w.array)


@pytest.mark.parametrize(
    ("edit", "source", "message"),
    [
        ({"spec_text": "z, None"}, "spec", r"axis 'z' is not in the mesh"),
        ({"spec_text": "x, x"}, "spec", r"axis 'x' is used twice"),
        ({"spec_text": "x, y, None"}, "spec", r"3 entries but the array has rank 2"),
        ({"spec_text": "(x, y)"}, "spec", r"dimension 0 has size 4"),
        ({"spec_text": "x,, y"}, "spec", r"unexpected ','"),
        ({"spec_text": "__import__('os').system('true')"}, "spec", r"expected a comma|unexpected"),
        ({"spec_text": "P('x'"}, "spec", r"never closes"),
        ({"mesh_text": "x=2 y=4"}, "mesh", r"expected a comma"),
        ({"mesh_text": "x=0"}, "mesh", r"size '0'"),
        ({"mesh_text": "x=2, x=4"}, "mesh", r"appears twice"),
        ({"mesh_text": "x=16, y=16"}, "mesh", r"needs 256 devices but this machine has 12"),
        ({"mesh_text": "x=2:fast, y=4"}, "mesh", r"unknown axis type 'fast'"),
        ({"mesh_text": ""}, "mesh", r"mesh text is empty"),
        ({"mesh_text": "x=1048577"}, "mesh", r"1,048,577 devices; shardviz lays out at most 1,048,576"),
        ({"memory_kind": "hbm"}, "memory_kind", r"memory kind 'hbm'.*device, pinned_host, unpinned_host"),
        ({"memory_kind": ""}, "memory_kind", r"non-empty"),
    ],
)
def test_bad_edits_keep_the_last_good_picture(x, edit, source, message):
    w = ShardingWidget(x)
    before = dict(w.payload)
    frontend(w, **edit)
    assert w.error, edit
    assert re.search(message, w.error), w.error
    assert w.error_source == source
    assert w.payload == before
    assert w.array is x
    assert_untouched(x, NamedSharding(x.sharding.mesh, P("x", "y")))
    # The next good edit clears the alert.
    frontend(w, spec_text="y, x", mesh_text="x=2, y=4", memory_kind="device")
    assert w.error == "" and w.error_source == ""
    assert w.layout.type_str == "float32[4@y,8@x]"


def test_mesh_edit_builds_a_real_mesh(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="x=4, y=2")
    assert w.error == ""
    assert w.mesh.axis_sizes == (4, 2)
    assert str(jax.typeof(w.array)) == w.layout.type_str == "float32[4@x,8@y]"
    assert_matches_jax(w.layout, w.array.sharding, (4, 8), array=w.array)


def test_mesh_and_spec_in_one_message(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="a=2, b=4", spec_text="b, a")
    assert w.error == ""
    assert w.layout.type_str == "float32[4@b,8@a]"


def test_auto_axes_and_explicit_view(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="x=2:auto, y=4:auto")
    assert w.error == "" and w.layout.type_str == "float32[4,8]"
    assert w.mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert w.mesh_text == "x=2:auto, y=4:auto"
    frontend(w, mesh_text="x=2, y=4")  # the "Explicit view" the front end offers
    assert w.layout.type_str == "float32[4@x,8@y]"


@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host", "device"])
def test_memory_kind_edit(x, kind):
    w = ShardingWidget(x)
    frontend(w, memory_kind=kind)
    assert w.error == ""
    assert w.array.sharding.memory_kind == kind == w.layout.memory_kind
    assert w.layout.type_str == str(jax.typeof(w.array))
    assert_untouched(x, NamedSharding(x.sharding.mesh, P("x", "y")))


def test_python_setters_raise_and_change_nothing(x, mesh):
    w = ShardingWidget(x)
    before = dict(w.payload)
    with pytest.raises(ShardingError, match=r"axis 'q' is not in the mesh"):
        w.spec = P("q")
    with pytest.raises(ShardingError, match=r"memory kind 'hbm'"):
        w.memory_kind = "hbm"
    with pytest.raises(ShardingError, match=r"needs 64 devices"):
        w.mesh = "x=8, y=8"
    assert w.payload == before and w.memory_kind == "device" and w.error == ""
    w.spec = P(None, ("x", "y"))
    assert w.layout.type_str == "float32[4,8@(x,y)]"
    w.memory_kind = "pinned_host"
    assert w.array.sharding.memory_kind == "pinned_host"
    w.mesh = jax.make_mesh((4, 2), ("x", "y"), devices=jax.devices()[4:12])
    assert sorted(d.id for d in w.layout.devices) == list(range(4, 12))
    assert_matches_jax(w.layout, w.array.sharding, (4, 8), array=w.array)


def test_python_writes_to_editor_traits_behave_like_the_frontend(x):
    w = ShardingWidget(x)
    w.spec_text = "nope"
    assert "axis 'nope' is not in the mesh" in w.error and w.error_source == "spec"
    w.spec_text = "y"
    assert w.error == "" and w.layout.spec == (("y",), ())


def test_what_if_without_an_array():
    w = ShardingWidget(shape=(64, 256))
    assert w.array is None and w.layout.device_count == len(jax.devices())
    frontend(w, mesh_text="a=16, b=16, c=16", spec_text="a, (b, c)")
    assert w.error == ""
    assert w.mesh == AbstractMesh((16, 16, 16), ("a", "b", "c"), axis_types=(AxisType.Explicit,) * 3)
    assert w.layout.device_count == 4096 and w.layout.type_str == "float32[64@a,256@(b,c)]"


def test_widget_from_sharding_and_shape_dtype_struct(mesh):
    s = NamedSharding(mesh, P("x"))
    w = ShardingWidget(s, shape=(8, 2), dtype="int8")
    assert w.layout.type_str == "int8[8@x,2]" and w.array is None
    w2 = ShardingWidget(jax.ShapeDtypeStruct((8, 2), jnp.int8, sharding=s))
    assert w2.payload == w.payload


def test_widget_constructor_arguments(x):
    w = ShardingWidget(x, spec=P("y"), memory_kind="pinned_host")
    assert w.layout.type_str == "float32<host>[4@y,8]"
    with pytest.raises(ShardingError, match=r"needs an array, a Layout, a sharding, or shape="):
        ShardingWidget()
    with pytest.raises(ShardingError, match=r"ndarray"):
        ShardingWidget(np.zeros(3))


def test_single_device_array_gets_a_mesh_by_edit():
    a = jnp.arange(8.0)
    w = ShardingWidget(a)
    assert w.mesh_text == "" and w.payload["mesh"] is None
    frontend(w, spec_text="x")
    assert "no mesh" in w.error and w.error_source == "spec"
    frontend(w, mesh_text="x=4", spec_text="x")
    assert w.error == "" and w.layout.type_str == "float32[8@x]"
    assert_matches_jax(w.layout, w.array.sharding, (8,), array=w.array)


def test_preview_is_bounded_and_local(mesh):
    big = jax.device_put(jnp.arange(64 * 64, dtype=jnp.float32).reshape(64, 64), NamedSharding(mesh, P("x", "y")))
    w = ShardingWidget(big)
    reply = w.preview(5)
    shard = next(s for s in big.addressable_shards if s.device.id == 5)
    assert (reply["rows"], reply["cols"]) == (8, 8)
    expected = np.asarray(shard.data)[:8, :8]
    assert reply["values"] == [[str(v) for v in row] for row in expected.tolist()]
    assert reply["index"] == [[32, 64], [16, 32]]
    assert w.preview(99)["error"] == "device 99 is not part of this layout"
    assert "nothing to preview" in ShardingWidget(shape=(4, 4)).preview(0)["error"]


def test_preview_picks_dims_of_nd_arrays(mesh):
    a = jax.device_put(
        jnp.arange(2 * 4 * 6 * 8, dtype=jnp.int32).reshape(2, 4, 6, 8), NamedSharding(mesh, P(None, "x", None, "y"))
    )
    w = ShardingWidget(a)
    reply = w.preview(0, dims=(1, 2))
    expected = np.asarray(a)[0, 0:2, 0:6, 0]
    assert reply["values"] == [[str(v) for v in row] for row in expected.tolist()]


def test_preview_message_round_trip(x):
    w = ShardingWidget(x)
    sent = []
    w.send = sent.append
    w._handle_custom_msg({"kind": "preview", "device": 3, "dims": [0, 1]}, [])
    assert sent and sent[0]["device"] == 3 and sent[0]["values"] == [["6.0", "7.0"], ["14.0", "15.0"]]
    w._handle_custom_msg({"kind": "other"}, [])
    assert len(sent) == 1


def test_show_displays_and_returns(x, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    w = shardviz.show(x)
    assert shown == [w] and isinstance(w, ShardingWidget)


@pytest.mark.parametrize(
    "make",
    [
        lambda: jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8]),
        lambda: jax.make_mesh((3, 4), ("a", "b"), axis_types=(AxisType.Auto, AxisType.Explicit)),
        lambda: jax.sharding.Mesh(np.array(jax.devices()[::-1][:6]).reshape(2, 3), ("p", "q")),
    ],
)
@pytest.mark.parametrize("kind", ["device", "pinned_host"])
def test_copy_code_rebuilds_the_same_sharding(make, kind):
    mesh = make()
    spec = P(mesh.axis_names[1], None)
    original = jax.device_put(jnp.zeros((mesh.axis_sizes[1] * 2, 3)), NamedSharding(mesh, spec, memory_kind=kind))
    code = ShardingWidget(original).payload["code"]
    # The snippet re-places the array under the name the widget was given it by.
    namespace = {"original": jnp.zeros((mesh.axis_sizes[1] * 2, 3))}
    exec(code, namespace)  # the test runs the snippet a user would paste
    ndim = original.ndim
    assert namespace["layout_sharding"].is_equivalent_to(original.sharding, ndim)
    assert namespace["original"].sharding.is_equivalent_to(original.sharding, ndim)
    assert [d.id for d in namespace["layout_sharding"].mesh.devices.flat] == [d.id for d in mesh.devices.flat]
    defined = {k for k in namespace if k != "__builtins__"} - {
        "original",
        "jax",
        "np",
        "AxisType",
        "Mesh",
        "NamedSharding",
        "P",
    }
    assert defined <= {"layout_devices_by_id", "layout_devices", "layout_mesh", "layout_sharding"}
    assert code.splitlines()[0].startswith("# Defines ")


def test_copy_code_for_what_if_and_single_device():
    w = ShardingWidget(NamedSharding(AbstractMesh((16, 16), ("a", "b")), P("a", "b")), shape=(32, 32))
    namespace: dict = {}
    exec(w.payload["code"], namespace)
    assert namespace["layout_sharding"] == NamedSharding(AbstractMesh((16, 16), ("a", "b")), P("a", "b"))
    assert namespace["layout_struct"].shape == (32, 32)
    single = jax.device_put(jnp.ones(3), jax.devices()[5])
    namespace = {"single": jnp.ones(3)}
    exec(ShardingWidget(single).payload["code"], namespace)
    assert namespace["single"].sharding.is_equivalent_to(single.sharding, 1)
    assert namespace["single"].devices() == {jax.devices()[5]}


def test_copy_code_without_a_known_name_uses_a_marked_placeholder(x):
    code = shardviz.ShardingWidget(x * 1).payload["code"]  # a new array, bound to no name
    assert "Replace ARRAY with your array." in code.splitlines()[0]
    namespace = {"ARRAY": jnp.zeros((4, 8))}
    exec(code, namespace)
    assert namespace["ARRAY"].sharding.is_equivalent_to(x.sharding, 2)


def test_show_at_the_end_of_a_cell_draws_one_widget(tmp_path):
    """In a real kernel: show() as a cell's last line gives one view; a bare
    `w` in a later cell gives a view again."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import jax\njax.config.update('jax_num_cpu_devices', 8)\nimport jax.numpy as jnp, shardviz"
        ),
        nbformat.v4.new_code_cell("w = shardviz.show(jnp.arange(8.0))\nw"),
        nbformat.v4.new_code_cell("shardviz.show(jnp.arange(8.0))"),
        nbformat.v4.new_code_cell("w"),
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()

    def views(cell):
        return [o for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]

    assert [len(views(c)) for c in nb.cells[1:]] == [1, 1, 1]


# --------------------------------------------------------------------------
# editors hold Python's state; a mesh edit carries the spec over


def test_a_refused_edit_puts_the_last_good_text_back_and_the_next_edit_clears_the_error(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="x=2, y=4, z=")
    assert w.error_source == "mesh" and w.error
    # Python's traits show what Python holds, not the rejected text.
    assert (w.mesh_text, w.spec_text) == ("x=2, y=4", "x, y")
    frontend(w, mesh_text="x=2:auto, y=4")
    assert w.error == "" and w.error_source == ""
    assert w.mesh_text == "x=2:auto, y=4" and w.layout.mesh.axis_types == ("Auto", "Explicit")
    assert w.array.sharding.mesh.axis_types == (AxisType.Auto, AxisType.Explicit)


@pytest.mark.parametrize(
    ("mesh_text", "expected_spec", "said"),
    [
        # renamed in place: the spec follows the name
        ("x=2, model=4", P("x", "model"), ["dimension 1: axis 'y' is now 'model'"]),
        # a vanished axis is dropped
        (
            "x=8",
            P(),
            [
                "dimension 0: dropped axis 'x', since x=8 no longer divides 4",
                "dimension 1: dropped axis 'y', which the new mesh lacks",
            ],
        ),
        (
            "a=2, b=2, c=2",
            P(),
            ["dropped axis 'x', which the new mesh lacks", "dropped axis 'y', which the new mesh lacks"],
        ),
        # an axis that no longer divides its dimension is dropped
        ("x=3, y=4", P(None, "y"), ["dimension 0: dropped axis 'x', since x=3 no longer divides 4"]),
    ],
)
def test_a_mesh_edit_adapts_the_spec_and_says_so(x, mesh_text, expected_spec, said):
    w = ShardingWidget(x)
    frontend(w, mesh_text=mesh_text)
    assert w.error == "", w.error
    for sentence in said:
        assert sentence in w.notice
    # JAX's answer for the spec built here, independently of the adaptation.
    expected = NamedSharding(w.array.sharding.mesh, expected_spec)
    assert w.array.sharding.is_equivalent_to(expected, 2)
    assert_matches_jax(w.layout, expected, (4, 8), array=w.array)
    assert_untouched(x, NamedSharding(x.sharding.mesh, P("x", "y")))
    frontend(w, spec_text="None")
    assert w.notice == ""  # a notice speaks of the edit that made it only


def test_adapt_spec_is_a_describe_level_helper(mesh):
    new = jax.make_mesh((4, 2), ("x", "model"), devices=jax.devices()[:8])
    adapted = shardviz.adapt_spec(P(("x", "y"), None), (8, 6), mesh, new)
    # (x=4, model=2) still divides 8 after the rename y -> model
    assert adapted.spec == P(("x", "model"))
    assert adapted.changes == ("dimension 0: axis 'y' is now 'model'",)
    NamedSharding(new, adapted.spec).shard_shape((8, 6))  # JAX accepts it
    adapted = shardviz.adapt_spec(P(("x", "y"), None), (4, 6), mesh, new)
    assert adapted.spec == P("x")
    assert adapted.changes == (
        "dimension 0: axis 'y' is now 'model'",
        "dimension 0: dropped axis 'model', since model=2 no longer divides 4 with the axes before it",
    )


def test_an_edit_that_needs_no_adaptation_gives_no_notice(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="x=4, y=2")
    assert w.notice == "" and w.error == "" and w.layout.spec == (("x",), ("y",))


# --------------------------------------------------------------------------
# refusals versus shardviz's own failures


def test_a_failure_inside_shardviz_is_internal_not_a_refusal(x, monkeypatch, caplog):
    w = ShardingWidget(x)
    before = dict(w.payload)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("shardviz.array.placement.describe", broken)
    assert w.apply_edit(spec_text="y, x") is False  # never raises into the kernel
    assert w.error_source == "internal"
    assert "This is a bug in shardviz" in w.error and "RuntimeError: a bug" in w.error
    assert w.payload == before and w.spec_text == "x, y"
    assert any("shardviz failed" in r.getMessage() and r.exc_info for r in caplog.records)
    monkeypatch.undo()
    frontend(w, spec_text="y, x")
    assert w.error == "" and w.error_source == ""


def test_a_refusal_is_not_internal(x):
    w = ShardingWidget(x)
    frontend(w, spec_text="q")
    assert w.error_source == "spec" and "This is a bug" not in w.error


def test_a_widget_shows_a_layout(x):
    layout = shardviz.describe(x)
    w = ShardingWidget(layout)
    assert w.layout.type_str == layout.type_str and w.array is None
    assert w.payload["has_array"] is False  # the array is not part of a Layout
    frontend(w, spec_text="y")
    assert w.error == "" and w.layout.type_str == "float32[4@y,8]"


def test_a_mesh_of_as_many_devices_keeps_them_in_mesh_order():
    devices = np.array(jax.devices()[:8])[[3, 1, 7, 5, 0, 2, 6, 4]]
    mesh = jax.sharding.Mesh(devices.reshape(2, 4), ("x", "y"))
    arr = jax.device_put(jnp.zeros((8, 8)), NamedSharding(mesh, P("x", "y")))
    w = ShardingWidget(arr)
    frontend(w, mesh_text="a=4, b=2")
    assert w.error == ""
    assert [d.id for d in w.array.sharding.mesh.devices.flat] == [d.id for d in devices]
    assert w.payload["devices"]["machine_order"] is False
    namespace = {"arr": jnp.zeros((8, 8))}
    exec(w.payload["code"], namespace)  # rebuilds the same permuted mesh
    assert [d.id for d in namespace["layout_mesh"].devices.flat] == [d.id for d in devices]


def test_jax_refusing_a_mesh_edit_blames_the_mesh_and_says_something(x):
    """JAX 0.10.2 cannot place an array on a mesh of only Manual axes, and says so
    with a bare AssertionError: the refusal belongs to the mesh editor, not the spec's."""
    with pytest.raises(AssertionError):
        jax.device_put(x, NamedSharding(jax.make_mesh((2,), ("a",), axis_types=(AxisType.Manual,)), P()))
    w = ShardingWidget(x)
    before = dict(w.payload)
    frontend(w, mesh_text="a=2:manual")
    assert w.error_source == "mesh"
    assert w.error == "JAX refused to place the array there: AssertionError with no message"
    assert w.payload == before and w.mesh_text == "x=2, y=4"


# ----------------------------------------------------------------------------
# issue 19.3: the move line says what each move is


def test_a_memory_kind_move_is_a_host_transfer_of_each_devices_block(x):
    w = ShardingWidget(x)
    frontend(w, memory_kind="pinned_host")
    assert w.error == ""
    moved = w.array
    assert moved.sharding.memory_kind == "pinned_host"
    # JAX's own block per device: what each device copies into host memory.
    block = {s.data.nbytes for s in moved.addressable_shards}
    assert w.move["memory"] == {"from": "device", "to": "pinned_host", "bytes": block.pop()}
    frontend(w, memory_kind="device")
    assert w.move["memory"]["from"] == "pinned_host" and w.move["memory"]["to"] == "device"


def test_a_permute_move_counts_its_pairs_as_the_compiled_module_has_them(x, mesh):
    w = ShardingWidget(x)
    frontend(w, spec_text="y, x")
    permutes = [c for c in w.move["collectives"] if c["kind"] == "collective-permute"]
    identity = jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P("y", "x")))
    text = identity.lower(x).compile().as_text()
    lists = re.findall(r"collective-permute\([^\n]*source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", text)
    # Pairs whose source is its own target move nothing; the others are devices sending to a partner.
    moving = [sum(a != b for a, b in re.findall(r"\{(\d+),(\d+)\}", pairs)) for pairs in lists]
    assert permutes and [p["pairs"] for p in permutes] == moving and all(moving)


def test_a_mesh_on_fewer_devices_says_why_its_move_is_no_program(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="data=3")
    assert w.error == "" and len(w.array.sharding.device_set) == 3
    message = w.move["error"]
    assert "3 devices" in message and "was on 8" in message and "device_put" in message
    assert "traced but did not lower" not in message and "_identity" not in message
    # JAX indeed refuses the one program that would do it.
    with pytest.raises(Exception, match="incompatible devices"):
        jax.jit(lambda a: a, out_shardings=w.array.sharding).lower(x)


# ----------------------------------------------------------------------------
# issue 30.6: a mesh on fewer devices says so, and the spec the user set comes back where it fits


def test_a_mesh_on_fewer_devices_than_the_machine_says_which_it_takes(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="data=3")
    assert w.error == ""
    # JAX put the array on the machine's first three devices.
    assert sorted(d.id for d in w.array.sharding.device_set) == [0, 1, 2]
    assert f"This mesh takes 3 of the machine's {jax.device_count()} devices (0-2): the array was copied" in w.notice
    what_if = ShardingWidget(shape=(4, 8), mesh="x=2, y=4", spec="x, y")
    frontend(what_if, mesh_text="data=3")
    assert (
        f"3 of the machine's {jax.device_count()} devices (0-2): a what-if layout, no array placed." in what_if.notice
    )
    frontend(what_if, mesh_text="d=3")  # the same three devices again: nothing to say about them
    assert "of the machine's" not in what_if.notice


def test_the_spec_the_user_set_comes_back_when_the_mesh_fits_it_again(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="data=3")
    assert w.spec_text == "" and w.spec == P()
    assert w.payload["user_spec"] == [["x"], ["y"]]
    frontend(w, mesh_text="x=2, y=4")
    assert w.spec_text == "x, y" and "user_spec" not in w.payload
    assert w.notice.startswith("The spec is P('x', 'y') again, as you set it: it fits this mesh.")
    # JAX holds the array as it was given: the same blocks on the same devices.
    assert w.array.sharding.is_equivalent_to(x.sharding, x.ndim)


def test_a_spec_that_fits_only_in_part_keeps_what_fits_and_remembers_the_rest(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="data=3")
    frontend(w, mesh_text="x=4")
    assert w.spec == P("x") and w.payload["user_spec"] == [["x"], ["y"]]
    assert w.notice == (
        "The spec you set, P('x', 'y'), fits this mesh only in part: "
        "dimension 1: dropped axis 'y', which the new mesh lacks. "
        f"This mesh takes 4 of the machine's {jax.device_count()} devices (0-3): the array was copied onto them."
    )
    assert w.array.sharding.spec == P("x")  # what JAX holds follows the spec shown


def test_a_spec_typed_while_cut_becomes_the_users_spec(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="data=2")
    assert w.payload["user_spec"] == [["x"], ["y"]]
    frontend(w, spec_text="data")
    assert w.error == "" and "user_spec" not in w.payload
    frontend(w, mesh_text="x=2, y=4")
    assert w.spec == P() and w.notice.startswith("The spec changed with the mesh: dimension 0: dropped axis 'data'")


def test_a_renamed_axis_carries_the_users_spec_along(x):
    w = ShardingWidget(x)
    frontend(w, mesh_text="a=2, b=4")
    assert w.spec == P("a", "b") and "user_spec" not in w.payload
    frontend(w, mesh_text="a=8, b=1")  # b no longer splits dimension 1: remembered all the same
    assert w.payload["user_spec"] == [["a"], ["b"]]
    frontend(w, mesh_text="a=2, b=4")
    assert w.spec == P("a", "b") and "again" in w.notice
