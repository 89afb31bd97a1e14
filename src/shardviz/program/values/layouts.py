"""Each jaxpr value's layout, from the best source there is, or why there is none.

- inputs and outputs: the arguments' own layouts and the compiled program's
  output shardings;
- a program on one device: that device;
- Explicit axes: the value's type (``aval.sharding``), as ``jax.typeof`` prints it;
- Auto (or mixed) axes: what XLA's partitioner chose, from its module just
  before SPMD partitioning (:mod:`shardviz.program.values.xla_shardings`), turned
  into a PartitionSpec only when it is exactly one
  (:func:`shardviz.program.values.axes.tiles_to_spec`);
- inside shard_map: a per-device block, no global layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from ...array.checks import spec_from_entries
from ...array.describe import describe
from ...array.layout import Layout
from .. import hlo
from ..lines.jaxpr_walk import JaxprValue
from ..lines.naming import NamedValues, name_values
from ..model import SourceListing, Value
from . import axes as _axes
from .xla_shardings import find_sharding, index_module

# How a value's note begins when XLA splits it in padded blocks (its size does not divide over the axes).
UNEVEN_SPLIT = "XLA split it unevenly"

Found = tuple[Layout | None, str, str]  # layout, where it came from, why not


class ValueReader:
    """Builds :class:`Value` records for one traced program."""

    def __init__(
        self,
        *,
        mode: str,
        mesh: Mesh | None,
        assignment: tuple[Any, ...] | None,
        to_mesh: np.ndarray | None,
        single_device: bool,
        inputs: tuple[Layout, ...],
        outputs: tuple[Layout, ...],
        jaxpr: Any,
        before_partitioning: str | None,
        source: SourceListing | None,
        input_paths: Sequence[str] = (),
        output_paths: Sequence[str] = (),
        index: Any = None,
    ) -> None:
        self.mode = mode
        self.mesh = mesh
        self.assignment = assignment  # devices in partition order
        self.to_mesh = to_mesh
        self.single = assignment[0] if single_device and assignment else None
        self.inputs = inputs
        self.outputs = outputs
        self.before_partitioning = before_partitioning
        self.source = source
        self.input_paths = tuple(input_paths)
        self.output_paths = tuple(output_paths)
        self.jaxpr = jaxpr
        self._index: Any = index  # the partitioner's choices by key, when already read
        self._cache: dict[tuple[Any, ...], Layout] = {}
        self._from_xla: dict[tuple[str, tuple[int, ...], str], Found] = {}

    @property
    def index(self) -> Any:
        """The pre-partitioning module's instructions by key, read on first need."""
        if self._index is None and self.before_partitioning:
            self._index = index_module(hlo.parse_module(self.before_partitioning))
        return self._index

    def values(self, walked: Sequence[JaxprValue]) -> tuple[Value, ...]:
        """Every value, named from the jaxpr and laid out."""
        return self.laid_out(name_values(walked, self.jaxpr, self.source, self.input_paths, self.output_paths))

    def laid_out(self, named: NamedValues) -> tuple[Value, ...]:
        """The values ``named`` with their layouts; a call's output and its inner twin (the same array)
        share what either knows, and a whole read of a Ref is laid out as what the ref holds then."""
        self.passes, self.place_passes, self.trip_places = named.passes, named.place_passes, named.trip_places
        found = [self._found(w, i) for w, i in zip(named.walked, named.io_index)]
        changed = True
        while changed:  # calls nest (a jit inside a custom_jvp): pass knowledge along the chain
            changed = False
            for i, j in named.twins:
                mine, theirs = found[i], found[j]
                if mine[0] is None and theirs[0] is not None:
                    found[i] = (theirs[0], theirs[1], "")
                    changed = True
                elif theirs[0] is None and mine[0] is not None:
                    found[j] = (mine[0], mine[1], "")
                    changed = True
        # XLA reads a ref's buffer and makes no value of its own for a whole read of it
        for i, j in named.ref_holds:
            if found[i][1] == "unknown" and found[j][0] is not None:
                found[i] = (found[j][0], found[j][1], "")
        return tuple(
            replace(v, layout=layout, sharding_from=origin, note=note)
            for v, (layout, origin, note) in zip(named.values, found)
        )

    def _found(self, v: JaxprValue, io_index: int | None) -> Found:
        if v.role == "input" and io_index is not None and io_index < len(self.inputs):
            return self.inputs[io_index], "argument", ""
        if v.role == "output" and io_index is not None and io_index < len(self.outputs):
            return self.outputs[io_index], "compiled", ""
        aval = v.aval
        return self._layout(v, tuple(int(d) for d in getattr(aval, "shape", ())), str(getattr(aval, "dtype", "")))

    # ----------------------------------------------------------------------

    def _layout(self, v: JaxprValue, shape: tuple[int, ...], dtype: str) -> Found:
        if v.dead and v.effect:
            return (
                None,
                "dead",
                (
                    f"nothing reads what this {v.primitive} hands back, so XLA keeps no copy of it; "
                    "the write or call itself still happens"
                ),
            )
        if v.dead:
            return None, "dead", "nothing needs it, so XLA leaves it out: it is never computed"
        if v.manual:
            return None, "manual", "inside shard_map: each device holds its own block (its type says which axes vary)"
        if self.single is not None:
            return self._single(shape, dtype, self.single), "single device", ""
        if self.mode == "explicit":
            return self._from_type(v, shape, dtype)
        if self.mode == "none":
            return None, "unknown", "the program has no mesh"
        if self.index is None:
            why = "XLA's layout choices could not be read for this compile (a cached executable keeps none)"
            return None, "unknown", why
        found, note = find_sharding(v, self.index)
        if found is None:
            return None, "unknown", note
        key = (found.text, shape, dtype)  # a loop's passes share a few shardings: each read once
        if key not in self._from_xla:
            self._from_xla[key] = self._from_hlo(found, shape, dtype)
        return self._from_xla[key]

    def _from_type(self, v: JaxprValue, shape: tuple[int, ...], dtype: str) -> Found:
        sharding = getattr(v.aval, "sharding", None)
        mesh = self.mesh
        if not isinstance(sharding, NamedSharding) or mesh is None:
            return None, "unknown", "its type in the jaxpr names no layout"
        theirs = (tuple(sharding.mesh.axis_names), tuple(sharding.mesh.axis_sizes))
        if theirs != (tuple(mesh.axis_names), tuple(mesh.axis_sizes)):
            return None, "unknown", f"its type is on another mesh {dict(zip(*theirs))}"
        spec = spec_tuple(sharding.spec, len(shape))
        return self._named(shape, dtype, spec, sharding.memory_kind), "jaxpr", ""

    def _from_hlo(self, found: hlo.HloSharding, shape: tuple[int, ...], dtype: str) -> Found:
        mesh = self.mesh
        if mesh is None:
            return None, "unknown", f"XLA chose {found.text}, but the program has no mesh to read it on"
        if found.kind == "replicated":
            return self._named(shape, dtype, ((),) * len(shape), None), "xla", ""
        if found.kind == "maximal" and found.device is not None and self.assignment is not None:
            if found.device < len(self.assignment):  # a partition position
                return self._single(shape, dtype, self.assignment[found.device]), "xla", ""
        if found.kind == "manual":
            return None, "manual", "XLA holds it per device (manual sharding)"
        tiles = found.tile_assignment
        if found.kind == "tiled" and tiles is not None and set(found.subgroups) <= {"replicated"}:
            if len(found.data_tile_dims) == len(shape):
                names = [str(n) for n in mesh.axis_names]
                spec = _axes.tiles_to_spec(tiles, len(shape), names, list(mesh.axis_sizes), self.to_mesh)
                if spec is not None and _divides(shape, spec, dict(zip(names, mesh.axis_sizes))):
                    return self._named(shape, dtype, spec, None), "xla", ""
                if spec is not None:
                    why = f"{UNEVEN_SPLIT}, padding its blocks ({found.text}), which no PartitionSpec can say"
                    return None, "unknown", why
        return None, "unknown", f"XLA split it in a way no PartitionSpec over this mesh can say ({found.text})"

    def _named(self, shape: tuple[int, ...], dtype: str, spec: tuple[tuple[str, ...], ...], kind: str | None) -> Layout:
        """One describe() per distinct (shape, dtype, spec, memory kind): many values share one."""
        key = ("named", shape, dtype, spec, kind)
        if key not in self._cache:
            assert self.mesh is not None
            sharding = NamedSharding(self.mesh, spec_from_entries(spec), memory_kind=kind)
            self._cache[key] = describe(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
        return self._cache[key]

    def _single(self, shape: tuple[int, ...], dtype: str, device: Any) -> Layout:
        key = ("single", shape, dtype, device.id)
        if key not in self._cache:
            sharding = SingleDeviceSharding(device)
            self._cache[key] = describe(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
        return self._cache[key]


def _divides(shape: tuple[int, ...], spec: tuple[tuple[str, ...], ...], sizes: dict[str, int]) -> bool:
    """Whether every dimension splits evenly over its axes (XLA pads uneven blocks; JAX never does)."""
    for size, axes in zip(shape, spec):
        cuts = 1
        for axis in axes:
            cuts *= int(sizes[axis])
        if size % cuts:
            return False
    return True


def spec_tuple(spec: Any, rank: int) -> tuple[tuple[str, ...], ...]:
    """A PartitionSpec as one tuple of axis names per dimension (``()`` unpartitioned)."""
    out: list[tuple[str, ...]] = []
    for entry in tuple(spec) + (None,) * (rank - len(spec)):
        if entry is None or entry is PartitionSpec.UNCONSTRAINED:
            out.append(())
        elif isinstance(entry, tuple):
            out.append(tuple(str(a) for a in entry))
        else:
            out.append((str(entry),))
    return tuple(out)
