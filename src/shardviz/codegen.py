"""Python source that rebuilds a layout's mesh and sharding ("copy code")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .layout import Layout


def _spec_source(spec: tuple[tuple[str, ...], ...]) -> str:
    entries = list(spec)
    while entries and not entries[-1]:
        entries.pop()
    parts = []
    for axes in entries:
        if not axes:
            parts.append("None")
        elif len(axes) == 1:
            parts.append(repr(axes[0]))
        else:
            parts.append("(" + ", ".join(repr(a) for a in axes) + ")")
    return "P(" + ", ".join(parts) + ")"


def sharding_code(layout: Layout) -> str:
    """Source for the mesh and sharding; ``x`` stands for the user's array."""
    memory = "" if layout.memory_kind == "device" else f", memory_kind={layout.memory_kind!r}"
    mesh = layout.mesh
    if mesh is None:
        device = int(layout.columns.ids[0])
        return "\n".join(
            [
                "import jax",
                "",
                f"device = next(d for d in jax.devices() if d.id == {device})",
                f"sharding = jax.sharding.SingleDeviceSharding(device{memory})",
                "x = jax.device_put(x, sharding)",
            ]
        )
    types = ", ".join(f"AxisType.{t}" for t in mesh.axis_types)
    types_arg = f"({types},)" if len(mesh.axis_types) == 1 else f"({types})"
    if mesh.abstract:
        make = f"mesh = AbstractMesh({tuple(mesh.axis_sizes)!r}, {tuple(mesh.axis_names)!r}, axis_types={types_arg})"
        imports = "from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P"
        tail = [f"shape = jax.ShapeDtypeStruct({layout.shape!r}, jax.numpy.{layout.dtype}, sharding=sharding)"]
    else:
        make = f"mesh = jax.make_mesh({tuple(mesh.axis_sizes)!r}, {tuple(mesh.axis_names)!r}, axis_types={types_arg})"
        imports = "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P"
        tail = ["x = jax.device_put(x, sharding)"]
    return "\n".join(
        [
            "import jax",
            imports,
            "",
            make,
            f"sharding = NamedSharding(mesh, {_spec_source(layout.spec)}{memory})",
            *tail,
        ]
    )
