"""Turn what the user asked for (text or JAX objects) into real JAX objects.

Every edit of the array view passes through here: the mesh, spec and memory
kind are parsed and checked, a mesh is built over this machine's devices (or
a virtual one for a what-if layout), and a refusal is an :class:`EditError`
that says which control was at fault. Nothing here changes the user's array.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec

from ..errors import ShardingError
from .checks import check_memory_kind, check_spec, entry_axes
from .devices import memory_kinds_of
from .grammar import MeshRequest, format_mesh, parse_mesh, parse_spec

MeshLike = Mesh | AbstractMesh


class EditError(ShardingError):
    """A ShardingError that knows which control caused it: 'spec', 'mesh' or 'memory_kind'
    (or a view's own control, such as a rules line)."""

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

    As many devices as the current mesh: keep its devices in their mesh
    order, reshaped (names and types may change). Otherwise take the first
    devices of this machine in order; a
    mesh larger than the machine is a virtual what-if mesh when there is no
    array to place, and an error when there is.
    """
    try:
        request = parse_mesh(text)
    except ShardingError as err:
        raise EditError(str(err), "mesh") from None
    return mesh_from_request(request, current, allow_virtual=allow_virtual)


def mesh_from_request(request: MeshRequest, current: MeshLike | None, *, allow_virtual: bool) -> MeshLike:
    """The mesh a request stands for: another virtual mesh for a what-if; the
    current devices when their number is unchanged (reshaped in their mesh
    order); else this machine's first devices."""
    types = tuple(AxisType[t] for t in request.types)
    needed = math.prod(request.sizes)
    if isinstance(current, AbstractMesh):
        # A what-if stays a what-if: its devices are numbered, whatever their count.
        return AbstractMesh(request.sizes, request.names, axis_types=types)
    if current is not None and math.prod(current.axis_sizes) == needed:
        return Mesh(current.devices.reshape(request.sizes), request.names, axis_types=types)
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


@dataclass(frozen=True)
class AdaptedSpec:
    """A spec carried over to another mesh, and what changed on the way (plain sentences)."""

    spec: PartitionSpec
    changes: tuple[str, ...]


def adapt_spec(spec: PartitionSpec, shape: Sequence[int], old_mesh: Any, new_mesh: Any) -> AdaptedSpec:
    """Carry ``spec`` from ``old_mesh`` over to ``new_mesh`` for an array of ``shape``.

    - an axis renamed in place (same position, a name neither mesh shares) is renamed;
    - an axis the new mesh lacks is dropped;
    - axes that no longer divide their dimension are dropped, minor first,
      keeping the major axes that still divide it.

    The result always fits the new mesh and the shape.
    """
    new_names = tuple(str(n) for n in new_mesh.axis_names)
    sizes = dict(zip(new_names, (int(s) for s in new_mesh.axis_sizes)))
    renamed = _renames(old_mesh, new_mesh)
    entries: list[Any] = []
    changes: list[str] = []
    for d, entry in enumerate(spec):
        kept: list[str] = []
        cuts = 1
        for axis in entry_axes(entry):
            name = renamed.get(str(axis), str(axis))
            if name != axis:
                changes.append(f"dimension {d}: axis {axis!r} is now {name!r}")
            if name not in sizes:
                changes.append(f"dimension {d}: dropped axis {axis!r}, which the new mesh lacks")
                continue
            if shape[d] % (cuts * sizes[name]):
                changes.append(
                    f"dimension {d}: dropped axis {name!r}, since {name}={sizes[name]} no longer divides "
                    f"{shape[d]}" + (" with the axes before it" if kept else "")
                )
                continue
            kept.append(name)
            cuts *= sizes[name]
        entries.append(None if not kept else kept[0] if len(kept) == 1 else tuple(kept))
    while entries and entries[-1] is None:
        entries.pop()
    return AdaptedSpec(PartitionSpec(*entries), tuple(changes))


def _renames(old_mesh: Any, new_mesh: Any) -> dict[str, str]:
    """Axes renamed in place: same position, a name neither mesh shares (meshes of as many axes)."""
    old_names = tuple(str(n) for n in old_mesh.axis_names) if old_mesh is not None else ()
    new_names = tuple(str(n) for n in new_mesh.axis_names)
    if len(old_names) != len(new_names):
        return {}
    return {o: n for o, n in zip(old_names, new_names) if o != n and o not in new_names and n not in old_names}


def renamed_spec(spec: PartitionSpec, old_mesh: Any, new_mesh: Any) -> PartitionSpec:
    """``spec`` with the axes :func:`adapt_spec` renames renamed, and nothing dropped."""
    renamed = _renames(old_mesh, new_mesh)
    if not renamed:
        return spec
    return PartitionSpec(
        *(
            None
            if entry is None
            else tuple(renamed.get(str(a), str(a)) for a in entry)
            if isinstance(entry, (tuple, list))
            else renamed.get(str(entry), str(entry))
            for entry in spec
        )
    )
