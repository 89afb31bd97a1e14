"""Each jaxpr value's layout, from the best source there is, or why there is none.

- inputs and outputs: the arguments' own layouts and the compiled program's
  output shardings;
- a program on one device: that device;
- Explicit axes: the value's type (``aval.sharding``), as ``jax.typeof`` prints it;
- Auto (or mixed) axes: what XLA's partitioner chose, from its module just
  before SPMD partitioning (:mod:`shardviz.program.xla_shardings`), turned
  into a PartitionSpec only when it is exactly one
  (:func:`shardviz.program.axes.tiles_to_spec`);
- inside shard_map: a per-device block, no global layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from ..array.checks import spec_from_entries
from ..array.describe import describe
from ..array.layout import Layout
from . import axes as _axes
from . import hlo
from .frames import user_frame
from .jaxpr_walk import JaxprValue, _eqn_lists, reader_lines, ref_reads
from .model import SourceListing, Value
from .passes import count_scan_trips, passes_of, place, run_numbers, user_chain
from .scopes import scope_of_components
from .sources import bound_names, line_text
from .xla_shardings import find_sharding, index_module

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
                    why = f"XLA split it unevenly, padding its blocks ({found.text}), which no PartitionSpec can say"
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


@dataclass(frozen=True)
class NamedValues:
    """Every value as the jaxpr alone tells it: its type, lines, name, scope, pass and key, with no
    layout yet. It needs nothing compiled, so ``trace`` reads it while XLA compiles the program."""

    walked: tuple[JaxprValue, ...]
    values: tuple[Value, ...]  # no layout yet: sharding_from "unknown"
    passes: tuple[Any, ...]  # each value's pass of its line (passes.passes_of)
    place_passes: Any
    trip_places: Any
    twins: tuple[tuple[int, int], ...]  # a call's output and its inner twin, by position
    ref_holds: tuple[tuple[int, int], ...]  # a whole read of a Ref argument and what the ref holds then
    io_index: tuple[int | None, ...]  # an input's or output's place among the program's, else None


def name_values(
    walked: Sequence[JaxprValue],
    jaxpr: Any,
    source: SourceListing | None,
    input_paths: Sequence[str],
    output_paths: Sequence[str],
) -> NamedValues:
    """Each value's type, lines, name, scope, pass of its line and key, from the jaxpr alone."""
    walked = tuple(walked)
    bare = [_bare_value(w, source) for w in walked]
    where = {id(w.var): i for i, w in enumerate(walked)}
    twins = tuple((i, where[id(w.twin)]) for i, w in enumerate(walked) if w.twin is not None and id(w.twin) in where)
    holds = ((where.get(read), where.get(id(held))) for read, held in ref_reads(jaxpr).items())
    ref_holds = tuple((i, j) for i, j in holds if i is not None and j is not None)
    scopes = [scope_of_components(w.name_stack) for w in walked]
    places = [
        None if v.role == "input" else place(v.stack, scope, "/".join(w.name_stack))
        for w, v, scope in zip(walked, bare, scopes)
    ]
    results = _result_numbers(jaxpr)
    columns = [
        (w.primitive, v.source.column if v.source is not None else -1, results.get(id(w.var), 0))
        for w, v in zip(walked, bare)
    ]
    runs = run_numbers(places, columns)
    passes, place_passes = passes_of(places, runs, [w.primitive for w in walked])
    trip_places = count_scan_trips([w.bodies for w in walked], places, place_passes)
    # Names go by line whatever the scope (a Flax module called on a line is still that line's).
    by_line = [None if p is None else (p[0], "", p[2], None) for p in places]
    labels = _labels(walked, bare, by_line, run_numbers(by_line, columns), jaxpr, input_paths)
    positions = {id(var): k for k, var in enumerate(jaxpr.invars)}
    positions_out = {id(var): k for k, var in reversed(list(enumerate(jaxpr.outvars)))}
    io_index = tuple(
        positions.get(id(w.var)) if w.role == "input" else positions_out.get(id(w.var)) if w.role == "output" else None
        for w in walked
    )
    for i, (w, k) in enumerate(zip(walked, io_index)):
        if w.role == "output" and k is not None and k < len(output_paths):
            labels[i] = output_paths[k]
    keys = _keys(walked, bare, labels)
    values = tuple(
        replace(
            v,
            label=label,
            scope=scope,
            pass_number=None if p is None else p.number,
            passes=None if p is None else p.of,
            key=key,
        )
        for v, label, scope, p, key in zip(bare, labels, scopes, passes, keys)
    )
    return NamedValues(walked, values, tuple(passes), place_passes, trip_places, twins, ref_holds, io_index)


def _bare_value(v: JaxprValue, source: SourceListing | None) -> Value:
    """A value as its jaxpr equation says it, with no layout yet."""
    aval = v.aval
    return Value(
        name=v.name,
        role=v.role,
        primitive=v.primitive,
        type_str=str(aval),
        shape=tuple(int(d) for d in getattr(aval, "shape", ())),
        dtype=str(getattr(aval, "dtype", "")),
        layout=None,
        sharding_from="unknown",
        note="",
        source=user_frame(v.frames),
        stack=v.frames,
        listing_line=source.line_of(v.frames) if source else None,
        bodies=v.bodies,
    )


def _labels(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    places: Sequence[Any],
    runs: Sequence[int | None],
    jaxpr: Any,
    input_paths: Sequence[str],
) -> list[str]:
    """The user's names: inputs by their paths; the value a line hands
    on to other lines (the last forward one read elsewhere) by the variable the line
    binds (``h = relu(x @ w)``), on every pass of a loop and every call of a helper;
    a value a called function hands back by the variable its call's line binds
    (``pred = predict(params, x)``); the rest ``%`` and the jaxpr's name (``%_1``,
    ``%_2``, ... for results nobody reads), which no mesh axis name can be mistaken for.
    Outputs take their paths after (:func:`name_values`)."""
    labels = _fallback_labels(walked)
    inputs = [i for i, v in enumerate(walked) if v.role == "input"]
    for i, path in zip(inputs, input_paths):
        labels[i] = path
    readers = reader_lines(jaxpr)
    handed: list[int] = []
    for i, (w, v) in enumerate(zip(walked, values)):
        if v.role == "input" or v.source is None or w.dead or places[i] is None:
            continue
        if any(part.startswith("transpose") for part in w.name_stack):
            continue  # a gradient computed on this line, not what the line binds
        here = (v.source.file, v.source.line)
        if v.role == "output" or readers.get(id(w.var), set()) - {here}:
            handed.append(i)
    named = _name_by_line(walked, values, places, runs, handed, labels)
    sources = [values[i].source for i in named]
    lines_named = {(source.file, source.line) for source in sources if source is not None}
    _name_by_caller(values, handed, named, labels, lines_named)
    return labels


def _result_numbers(jaxpr: Any) -> dict[int, int]:
    """Each equation result's place among its equation's results, by the variable's ``id``: the
    halves of one ``split`` are one operation, not two passes of a one-line loop."""
    return {id(v): k for eqns in _eqn_lists(jaxpr) for eqn in eqns for k, v in enumerate(eqn.outvars)}


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


def _fallback_labels(walked: Sequence[JaxprValue]) -> list[str]:
    """``%`` and the jaxpr's name; results nobody reads (all ``_`` in the jaxpr) numbered apart."""
    labels = []
    unread = 0
    for v in walked:
        if v.name == "_":
            unread += 1
            labels.append(f"%_{unread}")
        else:
            labels.append(f"%{v.name}")
    return labels


def _name_by_line(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    places: Sequence[Any],
    runs: Sequence[int | None],
    handed: Sequence[int],
    labels: list[str],
) -> set[int]:
    """Name, per pass of each line (and per call of a helper), the value it hands on by what it binds.

    A pass of a one-line loop hands its value on to the same line's next pass: there the
    pass's last live forward value is what the line binds."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in handed:
        groups.setdefault((places[i], runs[i], values[i].bodies), []).append(i)
    several = {p for p, r in zip(places, runs) if p is not None and r is not None and r > 0}
    last: dict[tuple[Any, ...], int] = {}
    for i, (w, v) in enumerate(zip(walked, values)):
        if places[i] in several and not w.dead and v.role != "input":
            if not any(part.startswith("transpose") for part in w.name_stack):
                last[(places[i], runs[i], v.bodies)] = i
    for key, i in last.items():
        groups.setdefault(key, [i])
    named: set[int] = set()
    for found in groups.values():
        source = values[found[0]].source
        assert source is not None
        names = bound_names(line_text(source.file, source.line))
        if names is None:
            continue
        if len(names) == 1:  # one variable: the last value the line hands on
            labels[found[-1]] = names[0]
            named.add(found[-1])
        elif len(found) == len(names) and (_one_equation(walked, found) or _one_per_name(walked, found)):
            for i, name in zip(found, names):  # q, k, v = split(...) or = x @ wq, x @ wk, x @ wv
                labels[i] = name
                named.add(i)
    return named


def _one_per_name(walked: Sequence[JaxprValue], found: Sequence[int]) -> bool:
    """Whether each of ``found`` is its own equation's one result (a tuple of expressions, in order)."""
    return len({id(walked[i].var) for i in found}) == len(found) and all(walked[i].twin is None for i in found)


def _name_by_caller(
    values: Sequence[Value], handed: Sequence[int], named: set[int], labels: list[str], lines_named: set[Any]
) -> None:
    """A value that a called function hands back unnamed takes the name its call's line binds.

    ``pred = predict(params, x)``: predict's last line binds nothing; what it
    returns is the last value made under the call that other lines read.
    Callers one, two and three frames out are tried, innermost first.
    """
    for depth in (1, 2, 3):
        places: list[Any] = []
        for i, v in enumerate(values):
            chain = user_chain(v.stack)
            places.append(chain[depth:] if len(chain) > depth and i in handed and i not in named else None)
        runs = run_numbers([None if p is None else (p, "", False, None) for p in places])
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, p in enumerate(places):
            if p is not None:
                groups.setdefault((p, runs[i], values[i].bodies), []).append(i)
        for (chain, _, _), found in groups.items():
            if chain[0] in lines_named:  # the call's line names a value of its own
                continue
            names = bound_names(line_text(*chain[0]))
            if names is not None and len(names) == 1:
                labels[found[-1]] = names[0]
                named.add(found[-1])


def _keys(walked: Sequence[JaxprValue], values: Sequence[Value], labels: Sequence[str]) -> list[str]:
    """Keys unique in the program that a trace with other shardings gives again: an input by its
    path, any other value by its line's call chain, its primitive and how many came before it there."""
    seen: dict[str, int] = {}
    out = []
    for w, v, label in zip(walked, values, labels):
        if v.role == "input":
            base = f"in:{label}"
        else:
            chain = ">".join(f"{file.rsplit('/', 1)[-1]}:{line}" for file, line in user_chain(v.stack))
            base = f"{chain}|{v.primitive}|{'/'.join(w.name_stack)}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}#{n}")
    return out


def _one_equation(walked: Sequence[JaxprValue], found: Sequence[int]) -> bool:
    """Whether the values ``found`` are results of one equation, one after another (a split's)."""
    first = walked[found[0]]
    return list(found) == list(range(found[0], found[0] + len(found))) and all(
        walked[i].primitive == first.primitive and walked[i].frames == first.frames for i in found
    )
