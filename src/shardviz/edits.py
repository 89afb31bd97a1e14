"""Turn what the user asked for (text or JAX objects) into real JAX objects.

The widget's edits all pass through :func:`resolve`: it parses and checks
the mesh, spec and memory kind, builds a mesh over this machine's devices
(or a virtual one for a what-if layout) and a NamedSharding, and reports a
ShardingError that says which control was at fault. Nothing here changes the
user's array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec

from .errors import ShardingError
from .grammar import MeshRequest, format_mesh, parse_mesh, parse_spec
from .layout import check_memory_kind, check_spec, memory_kinds_of

MeshLike = Mesh | AbstractMesh


class EditError(ShardingError):
    """A ShardingError that knows which editor caused it: 'spec', 'mesh' or 'memory_kind'."""

    def __init__(self, message: str, source: str):
        super().__init__(message)
        self.source = source


@dataclass(frozen=True)
class Target:
    """A resolved request: the sharding to show, with its parts."""

    mesh: MeshLike
    spec: PartitionSpec
    memory_kind: str

    @property
    def sharding(self) -> NamedSharding:
        kind = None if isinstance(self.mesh, AbstractMesh) and self.memory_kind == "device" else self.memory_kind
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)


def spec_from_text(text: str) -> PartitionSpec:
    try:
        return PartitionSpec(*parse_spec(text))
    except ShardingError as err:
        raise EditError(str(err), "spec") from None


def mesh_from_text(text: str, current: MeshLike | None, *, allow_virtual: bool) -> MeshLike:
    """A mesh for the typed text.

    Same sizes as the current mesh: keep its devices (names and types may
    change). Otherwise take the first devices of this machine in order; a
    mesh larger than the machine is a virtual what-if mesh when there is no
    array to place, and an error when there is.
    """
    try:
        request = parse_mesh(text)
    except ShardingError as err:
        raise EditError(str(err), "mesh") from None
    return mesh_from_request(request, current, allow_virtual=allow_virtual)


def mesh_from_request(request: MeshRequest, current: MeshLike | None, *, allow_virtual: bool) -> MeshLike:
    types = tuple(AxisType[t] for t in request.types)
    if current is not None and tuple(current.axis_sizes) == request.sizes:
        if isinstance(current, AbstractMesh):
            return AbstractMesh(request.sizes, request.names, axis_types=types)
        return Mesh(current.devices, request.names, axis_types=types)
    needed = math.prod(request.sizes)
    devices = jax.devices()
    if needed <= len(devices):
        return jax.make_mesh(request.sizes, request.names, axis_types=types, devices=devices[:needed])
    if allow_virtual:
        return AbstractMesh(request.sizes, request.names, axis_types=types)
    raise EditError(
        f"the mesh {format_mesh(request.names, request.sizes, request.types)} needs {needed} devices but this "
        f"machine has {len(devices)}; use at most {len(devices)}, or lay out a shape without an array for a what-if",
        "mesh",
    )


def check_target(
    mesh: MeshLike | None, spec: PartitionSpec, memory_kind: str, shape: tuple[int, ...], source: str
) -> Target:
    """Check that spec and memory kind fit the mesh and shape."""
    if mesh is None:
        if any(e is not None for e in spec):
            raise EditError("there is no mesh to split over; set a mesh first (e.g. x=2, y=4)", "spec")
        raise EditError("a single-device array has no mesh to edit; set a mesh first (e.g. x=2, y=4)", source)
    try:
        check_spec(mesh, spec, shape)
    except ShardingError as err:
        raise EditError(str(err), "mesh" if source == "mesh" else "spec") from None
    if not isinstance(mesh, AbstractMesh):
        try:
            check_memory_kind(memory_kind, memory_kinds_of(mesh))
        except ShardingError as err:
            raise EditError(str(err), "memory_kind") from None
    return Target(mesh, spec, memory_kind)


def as_spec(value: Any) -> PartitionSpec:
    """A PartitionSpec from a PartitionSpec, a spec text or a tuple of entries."""
    if isinstance(value, PartitionSpec):
        return value
    if isinstance(value, str):
        return spec_from_text(value)
    if isinstance(value, (tuple, list)):
        return PartitionSpec(*value)
    raise ShardingError(f"a spec must be a PartitionSpec or text such as 'x, None', not a {type(value).__name__}")
