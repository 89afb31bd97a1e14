"""Values under Auto axes laid out as XLA's partitioner chose (program/values/layouts.py), read from a module
written as XLA dumps it just before SPMD partitioning.

The module below is what XLA prints for ``auto_mlp``, cut down to the instructions that matter, with
each instruction's ``stack_frame_id`` pointing at the line and column JAX itself recorded for the
equation (the jaxpr's own source info), and shardings chosen by hand. Each expected PartitionSpec is
read off by hand: ``{devices=[2,2]<=[4]}`` cuts rows in two and columns in two over devices 0-3 in
mesh order (``P('x', 'y')``); ``{devices=[2,1,2]<=[4] last_tile_dim_replicate}`` cuts only rows, each
half held by two devices (``P('x', None)``). These tests came from mutation testing (docs/mutation.md):
the Auto-axes path had no fast test; test_program_axes.py checks it on programs XLA compiles.
The last tests check what ``values()`` hands on besides each value's own layout: a call's output
taking what its innermost call's value was given, each value's scope, and a scan's trips (the
expected scopes and trips read off the programs by hand). Nothing is compiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.array.describe import describe
from shardviz.program import hlo
from shardviz.program.hlo import parse_sharding
from shardviz.program.lines.jaxpr_walk import JaxprValue, walk
from shardviz.program.model import Value
from shardviz.program.values.layouts import ValueReader
from shardviz.program.values.xla_shardings import index_module


def auto_mlp(x, w):
    h = x @ w
    y = jnp.tanh(h)
    s = jnp.sin(y)
    return s * 2


SHARDINGS = {
    # primitive -> (the instruction XLA made for the equation, its sharding or None)
    "dot_general": ("dot.1 = f32[8,6]{1,0} dot(%x.1, %w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                    "{devices=[2,2]<=[4]}"),
    "tanh": ("tanh.1 = f32[8,6]{1,0} tanh(%dot.1)", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"),
    "mul": ("multiply.1 = f32[8,6]{1,0} multiply(%tanh.1, %tanh.1)", None),  # left open by XLA
}  # fmt: skip


def before_partitioning(walked: Sequence[JaxprValue], shardings: dict[str, Any] = SHARDINGS) -> str:
    """The module, each equation's instruction at the line and column JAX recorded for it; ``sin``'s
    equation has no instruction of its own (XLA merged it away)."""
    locations, frames, body = [], [], []
    for k, v in enumerate(w for w in walked if w.primitive in shardings):
        f = v.frames[0]
        locations.append(
            f"{k + 1} {{file_name_id=1 function_name_id=1 line={f.line} end_line={f.line} "
            f"column={f.column} end_column={f.column}}}"
        )
        frames.append(f"{k + 1} {{file_location_id={k + 1} parent_frame_id=1}}")
        text, sharding = shardings[str(v.primitive)]
        placed = "" if sharding is None else f", sharding={sharding}"
        root = "ROOT " if v.primitive == "mul" else ""
        op_name = f"jit(auto_mlp)/{v.primitive}"
        body.append(f'  {root}%{text}{placed}, metadata={{op_name="{op_name}" stack_frame_id={k + 1}}}')
    return "\n".join(
        [
            "HloModule jit_auto_mlp, num_partitions=4",
            "",
            "FileNames",
            f'1 "{__file__}"',
            "",
            "FunctionNames",
            '1 "auto_mlp"',
            "",
            "FileLocations",
            *locations,
            "",
            "StackFrames",
            *frames,
            "",
            "",
            "ENTRY %main.1 (x.1: f32[8,4], w.1: f32[4,6]) -> f32[8,6] {",
            "  %x.1 = f32[8,4]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}",
            "  %w.1 = f32[4,6]{1,0} parameter(1), sharding={replicated}",
            *body,
            "}",
            "",
        ]
    )


def value_reader(jaxpr: Any, **given: Any) -> ValueReader:
    """A ValueReader of ``jaxpr`` that knows nothing but what ``given`` says (no mesh, no layouts)."""
    known: dict[str, Any] = {
        "mode": "none",
        "mesh": None,
        "assignment": None,
        "to_mesh": None,
        "single_device": False,
        "inputs": (),
        "outputs": (),
        "before_partitioning": None,
        "source": None,
    }
    return ValueReader(jaxpr=jaxpr, **{**known, **given})


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def read(mesh: Mesh | None, text: str | None = "") -> tuple[ValueReader, dict[str | None, Value]]:
    closed = jax.make_jaxpr(auto_mlp)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    walked = walk(closed)
    reader = value_reader(
        closed.jaxpr,
        mode="auto",
        mesh=mesh,
        assignment=None if mesh is None else tuple(mesh.devices.flat),
        before_partitioning=before_partitioning(walked) if text == "" else text,
    )
    values = reader.values(walked)
    return reader, {v.primitive: v for v in values if v.role != "input"}


def test_the_mesh_devices_are_in_partition_order(mesh: Mesh) -> None:
    assert [d.id for d in mesh.devices.flat] == [0, 1, 2, 3]  # what the hand-read specs below assume


def test_an_auto_value_is_laid_out_as_xla_chose_it_before_partitioning(mesh: Mesh) -> None:
    _, made = read(mesh)
    dot, tanh = made["dot_general"], made["tanh"]
    assert (dot.sharding_from, dot.note) == ("xla", "")
    assert dot.layout.sharding == NamedSharding(mesh, P("x", "y"))
    assert dot.layout.spec == (("x",), ("y",)) and dot.layout.shape == (8, 6)
    assert (tanh.sharding_from, tanh.note) == ("xla", "")
    assert tanh.layout.sharding == NamedSharding(mesh, P("x", None))
    assert tanh.layout.spec == (("x",), ())


def test_an_auto_value_xla_left_open_or_merged_away_says_why(mesh: Mesh) -> None:
    _, made = read(mesh)
    mul, sin = made["mul"], made["sin"]
    assert (mul.layout, mul.sharding_from) == (None, "unknown")
    assert mul.note == (
        "XLA chose no layout for it ahead of splitting the program (it often leaves small values such as scalars open)"
    )
    assert (sin.layout, sin.sharding_from) == (None, "unknown")
    assert sin.note == (
        "XLA merged it into another operation or dropped it before choosing layouts, so it never got a layout "
        "of its own"
    )


def test_xlas_choices_are_read_once_and_only_when_a_value_needs_them(mesh: Mesh) -> None:
    reader, _ = read(mesh)
    assert reader.index is reader.index  # parsed once
    assert sorted(k[0] for k in reader.index) == ["dot_general", "mul", "tanh"]
    unread, made = read(mesh, None)
    assert unread.index is None
    assert made["tanh"].note == (
        "XLA's layout choices could not be read for this compile (a cached executable keeps none)"
    )


def test_xlas_choices_without_a_mesh_say_so(mesh: Mesh) -> None:
    _, made = read(None)
    assert made["tanh"].layout is None
    assert made["tanh"].note == (
        "XLA chose {devices=[2,1,2]<=[4] last_tile_dim_replicate}, but the program has no mesh to read it on"
    )


def test_the_frames_written_into_the_module_are_the_equations_own(mesh: Mesh) -> None:
    closed = jax.make_jaxpr(auto_mlp)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    dot = next(w for w in walk(closed) if w.primitive == "dot_general")
    first: Any = auto_mlp.__code__.co_firstlineno
    assert (dot.frames[0].file, dot.frames[0].line) == (__file__, first + 1)


def reader_on(mesh: Mesh, assignment: Any, to_mesh: Any = None) -> ValueReader:
    closed = jax.make_jaxpr(auto_mlp)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    return value_reader(
        closed.jaxpr,
        mode="auto",
        mesh=mesh,
        assignment=assignment,
        to_mesh=to_mesh,
    )


def test_partitions_placed_out_of_mesh_order_are_read_at_their_place_in_the_mesh(mesh: Mesh) -> None:
    # partitions 0, 1, 2, 3 sit at mesh positions 0, 2, 1, 3: the rows' first half (partitions 0 and 1)
    # is held at (x, y) = (0, 0) and (1, 0), so the rows are cut along y, not x
    rows = parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")
    placed = reader_on(mesh, tuple(mesh.devices.flat), np.array([0, 2, 1, 3]))
    assert placed._from_hlo(rows, (8, 4), "float32")[0].spec == (("y",), ())
    assert reader_on(mesh, tuple(mesh.devices.flat))._from_hlo(rows, (8, 4), "float32")[0].spec == (("x",), ())


def test_xla_choices_that_name_no_mesh_place_are_unknown(mesh: Mesh) -> None:
    def unsayable(text: str) -> tuple[Any, str, str]:
        return (None, "unknown", f"XLA split it in a way no PartitionSpec over this mesh can say ({text})")

    devices = tuple(mesh.devices.flat)
    # one device, but no record of which device each partition is
    one = "{maximal device=1}"
    assert reader_on(mesh, None)._from_hlo(parse_sharding(one), (), "float32") == unsayable(one)
    # a partition position past the last device
    past = "{maximal device=4}"
    assert reader_on(mesh, devices)._from_hlo(parse_sharding(past), (8, 4), "float32") == unsayable(past)
    # rows cut in two, each half held per device by manual code: no PartitionSpec of this mesh
    manual = "{devices=[2,1,2]<=[4] last_tile_dims={manual}}"
    assert reader_on(mesh, devices)._from_hlo(parse_sharding(manual), (8, 4), "float32") == unsayable(manual)


# --- what values() hands on besides each value's own layout ----------------------------------------------


def _tanh(t):
    return jnp.tanh(t)


inner = jax.jit(_tanh)
middle = jax.jit(lambda t: inner(t))
passed_through = jax.jit(lambda t: t)


def called(x, w):
    y = middle(x @ w)
    return passed_through(y) * 2


def test_a_calls_outputs_take_the_layout_xla_chose_for_what_the_innermost_call_makes(mesh: Mesh) -> None:
    closed = jax.make_jaxpr(called)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    walked = walk(closed)
    text = before_partitioning(walked, {k: v for k, v in SHARDINGS.items() if k != "mul"})
    reader = value_reader(
        closed.jaxpr,
        mode="auto",
        mesh=mesh,
        assignment=tuple(mesh.devices.flat),
        before_partitioning=text,
    )
    values = reader.values(walked)
    calls = [v for v in values if v.primitive in ("jit", "pjit")]
    assert len(calls) == 3  # middle's, inner's (inside middle) and the pass-through's
    tanh = next(v for v in values if v.primitive == "tanh")
    assert tanh.layout.spec == (("x",), ())  # as chosen for the tanh
    # the two calls around it (no instruction of their own) take it, two calls deep
    for v in calls[:2]:
        assert (v.layout, v.sharding_from, v.note) == (tanh.layout, "xla", "")
    # the pass-through's body hands back its own input: no value of the walk to share with
    assert calls[2].layout is None and calls[2].sharding_from == "unknown"


def scoped(x, ws):
    for i, w in enumerate(ws):
        with jax.named_scope(f"layer_{i}"):
            x = jnp.tanh(x @ w)
    return x


def test_named_scopes_tell_a_loops_passes_apart_so_none_is_numbered() -> None:
    closed = jax.make_jaxpr(scoped)(jnp.ones((4, 4)), [jnp.ones((4, 4))] * 2)
    walked = walk(closed)
    values = reader_of(closed).values(walked)
    tanhs = [v for v in values if v.primitive == "tanh"]
    assert [v.scope for v in tanhs] == ["layer_0", "layer_1"]
    assert [(v.pass_number, v.passes) for v in tanhs] == [(None, None), (None, None)]


def trips(x, ws):
    def body(c, w):
        c = jnp.tanh(c @ w)
        return c, None

    c, _ = jax.lax.scan(body, x, ws)
    return c


def test_a_scans_body_lines_run_once_per_trip() -> None:
    closed = jax.make_jaxpr(trips)(jnp.ones((4, 4)), jnp.ones((3, 4, 4)))
    reader = reader_of(closed)
    reader.values(walk(closed))
    body_line = trips.__code__.co_firstlineno + 2
    (counted,) = reader.trip_places
    assert counted[0][0] == (__file__, body_line)
    assert reader.place_passes[counted] == 3
    (tanh,) = [v for v in reader.values(walk(closed)) if v.primitive == "tanh"]
    assert [(b.primitive, b.trip_count) for b in tanh.bodies] == [("scan", 3)]


def reader_of(closed: Any) -> ValueReader:
    return value_reader(closed.jaxpr)


def ref_twice(w_ref, x):
    w = w_ref[...]
    new = w * 2
    w_ref[...] = new
    again = w_ref[...]
    return again + x, new


def test_a_whole_read_of_a_ref_takes_what_the_ref_holds_only_where_nothing_else_says() -> None:
    x = jnp.ones((4, 4))
    closed = jax.make_jaxpr(ref_twice)(jax.new_ref(x), x)
    walked = walk(closed)
    held = describe(x * 2)
    reader = reader_of(closed)
    reader.outputs = (describe(x), held)
    values = reader.values(walked)
    reads = [v for v in values if v.primitive == "get"]
    # the argument has no layout here: the first read stays unknown, and the second still takes
    # what was written (new, an output)
    assert [(v.sharding_from, v.note) for v in reads] == [("unknown", "the program has no mesh"), ("compiled", "")]
    assert reads[1].layout is held
    new = next(v for v in values if v.primitive == "mul")
    assert (new.layout, new.sharding_from, new.note) == (held, "compiled", "")


def test_a_read_of_a_ref_whose_type_names_its_layout_keeps_it() -> None:
    mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    rows = NamedSharding(mesh, P("x", None))
    x = jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=rows)
    with jax.set_mesh(mesh):
        closed = jax.make_jaxpr(ref_twice)(jax.new_ref(jax.device_put(jnp.ones((4, 4)), rows)), x)
    walked = walk(closed)
    argument = describe(jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=rows))
    reader = value_reader(
        closed.jaxpr,
        mode="explicit",
        mesh=mesh,
        assignment=tuple(mesh.devices.flat),
        inputs=(argument, argument),
    )
    reads = [v for v in reader.values(walked) if v.primitive == "get"]
    assert [v.sharding_from for v in reads] == ["jaxpr", "jaxpr"]  # the type said it: not "argument"
    assert reads[0].layout.spec == (("x",), ())


# --- names: what the lines bind, through calls and around gradients ----------------------------------


def labels_of(f: Any, *args: Any) -> dict[str, list[str]]:
    """Each primitive's values' labels, in order."""
    closed = jax.make_jaxpr(f)(*args)
    out: dict[str, list[str]] = {}
    for v in reader_of(closed).values(walk(closed)):
        if v.role != "input":
            out.setdefault(str(v.primitive), []).append(v.label)
    return out


X4 = jnp.ones((4, 4))


def dead_chain(x):
    z = jnp.sin(x)
    u = jnp.cos(z)  # noqa: F841
    return x * 2


def after_grad(x):
    g = jax.grad(lambda t: jnp.sum(jnp.sin(t)))(x)
    y = jnp.cos(g)
    return y * 2


def times_three(x):
    return x * 3


def plus_one(x):
    return x + 1


def two_helpers(x):
    h = jnp.tanh(times_three(x))
    p = plus_one(h)
    return p


def mid_call(x):
    return times_three(x)


def outer_call(x):
    return mid_call(x)


def two_deep(x):
    pred = mid_call(x)
    return pred - 1


def three_deep(x):
    pred = outer_call(x)
    return pred - 1


def binds_y(x):
    y = times_three(x)
    return y - 1


def caller_of_binds_y(x):
    pred = binds_y(x)
    return pred / 2


def test_a_value_read_only_by_a_dead_value_is_named_by_nothing() -> None:
    labels = labels_of(dead_chain, X4)
    assert labels["sin"][0].startswith("%") and labels["cos"][0].startswith("%")


def test_a_line_after_a_gradient_still_names_its_value() -> None:
    assert labels_of(after_grad, X4)["cos"][-1] == "y"


def test_a_helpers_value_is_named_by_its_calls_line_unless_that_line_names_its_own() -> None:
    labels = labels_of(two_helpers, X4)
    assert labels["tanh"] == ["h"]
    assert labels["mul"][0].startswith("%")  # h = jnp.tanh(times_three(x)): the line's own value is h
    assert labels["add"] == ["p"]  # p = plus_one(h), checked after the line that named its own


def test_a_helpers_value_is_named_by_the_first_line_out_that_binds_one_name() -> None:
    assert labels_of(two_deep, X4)["mul"] == ["pred"]  # two calls out
    assert labels_of(three_deep, X4)["mul"] == ["pred"]  # three calls out
    # binds_y's line names it y; the line calling binds_y names only what binds_y hands back
    labels = labels_of(caller_of_binds_y, X4)
    assert labels["mul"] == ["y"] and labels["sub"] == ["pred"]


def nested_scopes(x):
    with jax.named_scope("outer"), jax.named_scope("inner"):
        y = jnp.tanh(x)
    return y * 2


def test_a_values_key_holds_its_whole_scope() -> None:
    closed = jax.make_jaxpr(nested_scopes)(X4)
    (tanh,) = [v for v in reader_of(closed).values(walk(closed)) if v.primitive == "tanh"]
    assert tanh.key.endswith("|tanh|outer/inner")


def test_xlas_choices_read_once_elsewhere_are_used_as_given(mesh: Mesh) -> None:
    closed = jax.make_jaxpr(auto_mlp)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    walked = walk(closed)
    reader = value_reader(
        closed.jaxpr,
        mode="auto",
        mesh=mesh,
        assignment=tuple(mesh.devices.flat),
        index=index_module(hlo.parse_module(before_partitioning(walked))),
    )
    (tanh,) = [v for v in reader.values(walked) if v.primitive == "tanh"]
    assert (tanh.sharding_from, tanh.layout.spec) == ("xla", (("x",), ()))


def test_an_explicit_value_read_with_no_mesh_is_unknown() -> None:
    closed = jax.make_jaxpr(jnp.tanh)(X4)
    reader = reader_of(closed)
    reader.mode = "explicit"  # and no mesh to read its type on
    (tanh,) = [v for v in reader.values(walk(closed)) if v.primitive == "tanh"]
    assert (tanh.layout, tanh.sharding_from, tanh.note) == (None, "unknown", "its type in the jaxpr names no layout")


def one_line_loop(x, ws):
    for w in ws:
        x = jnp.tanh(x @ w)
    return jnp.sum(x)


def test_a_one_line_loop_of_two_passes_names_each_passes_last_value_and_no_gradient() -> None:
    labels = labels_of(one_line_loop, X4, [X4, X4])
    assert labels["tanh"] == ["x", "x"] and all(label.startswith("%") for label in labels["dot_general"])
    closed = jax.make_jaxpr(jax.grad(one_line_loop))(X4, [X4, X4])
    walked = walk(closed)
    reader = reader_of(closed)
    values = reader.values(walked)
    assert len(reader.passes) == len(walked)  # every value's pass, handed on for the collectives
    backward = [v for v, w in zip(values, walked) if any(p.startswith("transpose") for p in w.name_stack)]
    assert backward and all(v.label.startswith("%") for v in backward)
