"""Values under Auto axes laid out as XLA's partitioner chose (program/values.py), read from a module
written as XLA dumps it just before SPMD partitioning.

The module below is what XLA prints for ``auto_mlp``, cut down to the instructions that matter, with
each instruction's ``stack_frame_id`` pointing at the line and column JAX itself recorded for the
equation (the jaxpr's own source info), and shardings chosen by hand. Each expected PartitionSpec is
read off by hand: ``{devices=[2,2]<=[4]}`` cuts rows in two and columns in two over devices 0-3 in
mesh order (``P('x', 'y')``); ``{devices=[2,1,2]<=[4] last_tile_dim_replicate}`` cuts only rows, each
half held by two devices (``P('x', None)``). These tests came from mutation testing (docs/mutation.md):
the Auto-axes path had no fast test; test_program_axes.py checks it on programs XLA compiles.
Nothing is compiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.program.jaxpr_walk import JaxprValue, walk
from shardviz.program.model import Value
from shardviz.program.values import ValueReader


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


def before_partitioning(walked: Sequence[JaxprValue]) -> str:
    """The module, each equation's instruction at the line and column JAX recorded for it; ``sin``'s
    equation has no instruction of its own (XLA merged it away)."""
    locations, frames, body = [], [], []
    for k, v in enumerate(w for w in walked if w.primitive in SHARDINGS):
        f = v.frames[0]
        locations.append(
            f"{k + 1} {{file_name_id=1 function_name_id=1 line={f.line} end_line={f.line} "
            f"column={f.column} end_column={f.column}}}"
        )
        frames.append(f"{k + 1} {{file_location_id={k + 1} parent_frame_id=1}}")
        text, sharding = SHARDINGS[str(v.primitive)]
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


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def read(mesh: Mesh | None, text: str | None = "") -> tuple[ValueReader, dict[str | None, Value]]:
    closed = jax.make_jaxpr(auto_mlp)(jnp.ones((8, 4)), jnp.ones((4, 6)))
    walked = walk(closed)
    reader = ValueReader(
        mode="auto",
        mesh=mesh,
        assignment=None if mesh is None else tuple(mesh.devices.flat),
        to_mesh=None,
        single_device=False,
        inputs=(),
        outputs=(),
        jaxpr=closed.jaxpr,
        before_partitioning=before_partitioning(walked) if text == "" else text,
        source=None,
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
