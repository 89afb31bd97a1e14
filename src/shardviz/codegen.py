"""Python source that rebuilds a layout's mesh and sharding ("copy code")."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import jax
import numpy as np

if TYPE_CHECKING:
    from .layout import Layout


def _spec_source(spec: tuple[tuple[str, ...], ...]) -> str:
    parts = []
    for axes in spec:  # one entry per dimension: explicit beats terse here
        if not axes:
            parts.append("None")
        elif len(axes) == 1:
            parts.append(repr(axes[0]))
        else:
            parts.append("(" + ", ".join(repr(a) for a in axes) + ")")
    return "P(" + ", ".join(parts) + ")"


@functools.lru_cache(maxsize=8)
def _first_device_ids(count: int) -> np.ndarray:
    return np.array([d.id for d in jax.devices()[:count]], dtype=np.int64)


def _real_mesh_source(layout: Layout, types_arg: str) -> tuple[str, str]:
    """make_mesh when the mesh takes the first devices in order, else Mesh over explicit ids."""
    mesh = layout.mesh
    assert mesh is not None
    ids = layout.columns.ids
    sizes, names = tuple(mesh.axis_sizes), tuple(mesh.axis_names)
    if np.array_equal(ids, _first_device_ids(len(ids))):
        devices = "" if len(ids) == jax.device_count() else f", devices=jax.devices()[:{len(ids)}]"
        make = f"mesh = jax.make_mesh({sizes!r}, {names!r}, axis_types={types_arg}{devices})"
        return make, "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P"
    make = "\n".join(
        [
            "by_id = {d.id: d for d in jax.devices()}",
            f"devices = np.array([by_id[i] for i in {ids.tolist()!r}]).reshape({sizes!r})",
            f"mesh = Mesh(devices, {names!r}, axis_types={types_arg})",
        ]
    )
    return make, "import numpy as np\nfrom jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P"


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
        make, imports = _real_mesh_source(layout, types_arg)
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
