"""Python source that rebuilds a layout ("copy code"), ready to paste and run.

The snippet defines only names that start with ``layout_`` (so it does not
overwrite a notebook's ``mesh`` or ``sharding``) and says so in its first
line. It re-places the user's array under the variable name the widget was
given (or found); without one it uses the marked placeholder ``ARRAY``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import LayoutData

PLACEHOLDER = "ARRAY"


def spec_source(spec: Sequence[Sequence[str]]) -> str:
    parts = []
    for axes in spec:  # one entry per dimension: explicit beats terse here
        if not axes:
            parts.append("None")
        elif len(axes) == 1:
            parts.append(repr(axes[0]))
        else:
            parts.append("(" + ", ".join(repr(a) for a in axes) + ")")
    return "P(" + ", ".join(parts) + ")"


def _real_mesh_source(layout: LayoutData, types_arg: str) -> tuple[list[str], str]:
    """make_mesh when the mesh takes the first devices in order, else Mesh over explicit ids."""
    mesh = layout.mesh
    assert mesh is not None
    ids = layout.columns.ids
    sizes, names = tuple(mesh.axis_sizes), tuple(mesh.axis_names)
    if layout.columns.machine_order:
        devices = "" if len(ids) == layout.machine_devices else f", devices=jax.devices()[:{len(ids)}]"
        make = f"layout_mesh = jax.make_mesh({sizes!r}, {names!r}, axis_types={types_arg}{devices})"
        return [make], "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P"
    lines = [
        "layout_devices_by_id = {d.id: d for d in jax.devices()}",
        f"layout_devices = np.array([layout_devices_by_id[i] for i in {ids.tolist()!r}]).reshape({sizes!r})",
        f"layout_mesh = Mesh(layout_devices, {names!r}, axis_types={types_arg})",
    ]
    return lines, "import numpy as np\nfrom jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P"


def sharding_code(layout: LayoutData, array_name: str | None = None) -> str:
    """Source that rebuilds the layout's mesh and sharding and re-places the array.

    ``array_name`` is the user's variable for the array; None writes the
    placeholder ``ARRAY``. A layout with no array defines a ShapeDtypeStruct.
    """
    name = array_name or PLACEHOLDER
    memory = "" if layout.memory_kind == "device" else f", memory_kind={layout.memory_kind!r}"
    mesh = layout.mesh
    if mesh is None:
        device = int(layout.columns.ids[0])
        body = [
            f"layout_device = next(d for d in jax.devices() if d.id == {device})",
            f"layout_sharding = jax.sharding.SingleDeviceSharding(layout_device{memory})",
        ]
        imports = ""
    else:
        types = ", ".join(f"AxisType.{t}" for t in mesh.axis_types)
        types_arg = f"({types},)" if len(mesh.axis_types) == 1 else f"({types})"
        if mesh.abstract:
            sizes, names = tuple(mesh.axis_sizes), tuple(mesh.axis_names)
            body = [f"layout_mesh = AbstractMesh({sizes!r}, {names!r}, axis_types={types_arg})"]
            imports = "from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P"
        else:
            body, imports = _real_mesh_source(layout, types_arg)
        body.append(f"layout_sharding = NamedSharding(layout_mesh, {spec_source(layout.spec)}{memory})")
    defined = ", ".join(line.split(" = ", 1)[0] for line in body)
    if layout.has_array:
        tail = [f"{name} = jax.device_put({name}, layout_sharding)"]
        note = f"# Defines {defined}; re-places {name} on this layout."
        if array_name is None:
            note += f" Replace {PLACEHOLDER} with your array."
    else:
        shape, dtype = tuple(layout.shape), layout.dtype
        tail = [f"layout_struct = jax.ShapeDtypeStruct({shape!r}, jax.numpy.{dtype}, sharding=layout_sharding)"]
        note = f"# Defines {defined}, layout_struct (a what-if array with no data)."
    head = [note, "import jax"] + ([imports] if imports else [])
    return "\n".join([*head, "", *body, *tail])
