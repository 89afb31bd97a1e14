"""The compiled program read back into a :class:`~shardviz.program.Program`.

From the compiled module's text and JAX's stages: the mesh and the devices
in partition order, the inputs' and outputs' layouts (:mod:`.inputs_outputs`),
every value's sharding (:mod:`.values`), every collective on the user's line
(:mod:`.collectives`), memory over the program from XLA's dumps, flops and the
source listing.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding

from ...array.devices import mesh_columns
from ...array.layout import Layout
from ...array.model import DeviceColumns, MeshInfo
from ...errors import ShardingError
from ..collectives import places
from ..collectives.reading import ArrayLines, read_collective
from ..lines.jaxpr_walk import Redirects, constraint_redirects, walk
from ..lines.naming import NamedValues, name_values
from ..memory.counts import MemoryCounts
from ..memory.device_bytes import count_on_device
from ..memory.dtypes import XLA_NAMES, device_sizes
from ..memory.timeline import MemoryTimeline, device_memory, memory_timeline
from ..memory.totals import program_totals
from ..model import (
    Collective,
    Deferred,
    MemoryStats,
    PendingWhy,
    SourceListing,
    TraceOrigin,
)
from ..program import Program
from ..values import axes as _axes
from ..values.inputs_outputs import (
    dynamic_leaves,
    input_layouts,
    input_shardings,
    layout_changes,
    output_layouts,
    output_paths,
    output_shardings,
)
from ..values.layouts import ValueReader
from ..why.causes import explain_all
from ..why.remat import rematerializations
from .arguments import context_mesh, unwrapped
from .module_reading import ModuleReading, read_module


@dataclass(frozen=True)
class JaxprReading:
    """What the traced program alone says, before anything is compiled: its source, which
    leaves are arrays, the inputs' and outputs' paths, every value named (:func:`.naming.name_values`)
    and where ``with_sharding_constraint`` re-lays out values. ``trace`` reads it while XLA compiles."""

    source: SourceListing | None
    array_leaf: list[bool]  # which of the user's leaves the program takes as arrays
    input_paths: tuple[str, ...]
    output_paths: tuple[str, ...]
    named: NamedValues
    redirects: Redirects


def read_jaxpr(
    fun: Callable[..., Any], name: str, traced: Any, leaves: Sequence[Any], paths: Sequence[str]
) -> JaxprReading:
    """Read ``traced`` (``jax.jit(f).trace(...)``) on its own: nothing here needs the compiled program."""
    source = _source_listing(fun, name)
    array_leaf = dynamic_leaves(leaves, traced)
    input_paths = tuple(p for p, a in zip(paths, array_leaf) if a)
    outputs = output_paths(traced)
    jaxpr = traced.jaxpr.jaxpr
    named = name_values(walk(traced.jaxpr), jaxpr, source, input_paths, outputs)
    return JaxprReading(source, array_leaf, input_paths, outputs, named, constraint_redirects(jaxpr))


@dataclass(frozen=True)
class _Io:
    """The program's array inputs and outputs, laid out as compiled, and the mesh they name."""

    inputs: tuple[Layout, ...]
    outputs: tuple[Layout, ...]
    mesh: Mesh | None
    assignment: tuple[Any, ...] | None  # the devices in partition order


def _read_io(compiled: Any, traced: Any, leaves: Sequence[Any], array_leaf: Sequence[bool], name: str) -> _Io:
    in_shardings = input_shardings(compiled, [leaf for leaf, a in zip(leaves, array_leaf) if a], name)
    out_shardings = output_shardings(compiled, traced, name)
    return _Io(
        inputs=input_layouts(leaves, array_leaf, in_shardings),
        outputs=output_layouts(traced, out_shardings),
        mesh=_program_mesh([*in_shardings, *out_shardings], leaves),
        assignment=_device_assignment([*in_shardings, *out_shardings]),
    )


def assemble(
    fun: Callable[..., Any],
    name: str,
    tree: Any,
    leaves: Sequence[Any],
    traced: Any,
    compiled: Any,
    kept: list[int] | None,
    reading: JaxprReading,
    read: ModuleReading | None = None,
    dumps: Mapping[str, str] | None = None,
    remat_reading: Callable[[], ModuleReading | None] | None = None,
    xla_log: str = "",
) -> Program:
    """The Program ``traced`` compiled to: read from ``compiled``, ``reading`` (the jaxpr's) and ``read``
    (the module's, read while XLA generated code), or else from the compiled module's text and ``dumps``."""
    if read is None:
        read = read_module(_compiled_text(compiled, name), dumps or {})
    module = read.module
    io = _read_io(compiled, traced, leaves, reading.array_leaf, name)
    mesh_info, devices, to_mesh = _mesh_placement(io.mesh, io.assignment, module.num_partitions)
    reader = _value_reader(io, read, to_mesh, traced, reading, _sharding_mode(mesh_info))
    values = reader.laid_out(reading.named)
    collectives = _collectives(read, mesh_info, to_mesh, reading, values, kept, traced, reader)
    line_flops, memory, cost = read.line_flops, _memory(compiled), _cost_analysis(compiled)
    input_paths, output_paths = reading.input_paths, reading.output_paths
    held = read
    if remat_reading is not None and read.rematerializes:
        held = remat_reading() or read  # its memory as a TPU or GPU runs it, recomputation apart
    counts = _memory_counts(held, input_paths, output_paths, kept, values, memory, io.inputs, io.outputs)
    return Program(
        name=name,
        mesh=mesh_info,
        devices=devices,
        assignment=to_mesh,
        num_partitions=module.num_partitions,
        sharding_mode=reader.mode,
        inputs=io.inputs,
        input_paths=input_paths,
        outputs=io.outputs,
        output_paths=output_paths,
        values=values,
        collectives=collectives,
        memory=counts["device"][0],
        flops=_cost(cost, "flops"),
        bytes_accessed=_cost(cost, "bytes accessed"),
        source=reading.source,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        machine_devices=jax.device_count(),
        hlo_module=module.name,
        totals=program_totals(collectives, mesh_info.axis_names if mesh_info else ()),
        origin=_origin(fun, tree, leaves, reading.array_leaf, io.mesh),
        layout_changes=layout_changes(input_paths, io.inputs, output_paths, io.outputs),
        matmul_flops=sum(f.flops for f in line_flops),
        line_flops=line_flops,
        memory_timeline=counts["device"][1],
        memory_counts=counts,
        hbm_bytes=read.hbm_bytes,
        rematerializations=rematerializations(xla_log, module, collectives, mesh_info, to_mesh) if xla_log else (),
    )


def _value_reader(
    io: _Io,
    read: ModuleReading,
    to_mesh: np.ndarray | None,
    traced: Any,
    reading: JaxprReading,
    mode: str,
) -> ValueReader:
    """Reads every value's sharding: from the jaxpr's types, or from XLA's partitioner under Auto axes."""
    return ValueReader(
        mode=mode,
        mesh=io.mesh,
        assignment=io.assignment,
        to_mesh=to_mesh,
        single_device=read.module.num_partitions == 1,
        inputs=io.inputs,
        outputs=io.outputs,
        jaxpr=traced.jaxpr.jaxpr,
        before_partitioning=None,
        index=read.partitioner_index,
        source=reading.source,
        input_paths=reading.input_paths,
        output_paths=reading.output_paths,
    )


def _origin(
    fun: Callable[..., Any], tree: Any, leaves: Sequence[Any], array_leaf: Sequence[bool], mesh: Mesh | None
) -> TraceOrigin:
    """How to trace the program again: its function, its arguments (abstract) and the mesh they were on."""
    return TraceOrigin(fun, tree, tuple(_abstract(leaf) for leaf in leaves), tuple(array_leaf), mesh, context_mesh())


def _collectives(
    read: ModuleReading,
    mesh_info: MeshInfo | None,
    to_mesh: np.ndarray | None,
    reading: JaxprReading,
    values: tuple[Any, ...],
    kept: list[int] | None,
    traced: Any,
    reader: ValueReader,
) -> tuple[Collective, ...]:
    """Every collective of the module on the user's line, numbered by pass, counted as the device moves it."""
    module, ops = read.module, list(read.collective_ops)
    arrays = ArrayLines(module, values, reading.input_paths, reading.output_paths, kept, traced.jaxpr.jaxpr)
    source, redirects = reading.source, reading.redirects
    collectives = tuple(read_collective(op, module, mesh_info, to_mesh, source, redirects, arrays) for op in ops)
    numbered = places.number_passes(collectives, ops, module, read.stacks, reader.place_passes, reader.trip_places)
    counted = count_on_device(numbered, values)
    jaxpr, walked, outputs = traced.jaxpr.jaxpr, reading.named.walked, reader.outputs

    def causes() -> tuple[tuple[Any, tuple[Any, ...]], ...]:
        try:
            explained = explain_all(
                counted, ops, module, jaxpr, walked, values, reading.output_paths, outputs, _asked_outputs(traced)
            )
        except Exception as err:  # shardviz's own failure, never the user's program's
            raise ShardingError(
                f"shardviz failed to work out why {module.name}'s collectives are there (a bug in shardviz, "
                f"please report it): {type(err).__name__}: {err}"
            ) from err
        return tuple((c.why, tuple(p.why for p in c.parts)) for c in explained)

    return _with_causes_deferred(counted, causes)


def _with_causes_deferred(
    collectives: Sequence[Collective], causes: Callable[[], tuple[tuple[Any, tuple[Any, ...]], ...]]
) -> tuple[Collective, ...]:
    """The collectives with their causes worked out on first read of any one's ``why`` (most traces
    never read them, and reading them costs about as much as reading the collectives)."""
    deferred = Deferred(causes)
    return tuple(
        replace(
            c,
            why=PendingWhy(deferred, i),
            parts=tuple(replace(p, why=PendingWhy(deferred, i, k)) for k, p in enumerate(c.parts)),
        )
        for i, c in enumerate(collectives)
    )


def _memory_counts(
    read: ModuleReading,
    input_paths: Sequence[str],
    output_paths: Sequence[str],
    kept: list[int] | None,
    values: Sequence[Any],
    memory: MemoryStats | None,
    inputs: Sequence[Layout],
    outputs: Sequence[Layout],
) -> MemoryCounts:
    """The memory figures twice: as the device holds the program (its dtypes), and as XLA:CPU's module
    holds it (its memory analysis, the peak its own live ranges give), the second on first read."""
    if read.allocations is None or read.live_ranges is None:  # no live ranges: the reserved bytes bound it
        bound = memory if memory is None else replace(memory, peak_bytes=None)
        return MemoryCounts({"device": (bound, None), "cpu": (memory, None), "xla": (memory, None)})
    shapes = [
        (p, tuple(lay.shard_shape), XLA_NAMES.get(str(lay.dtype), str(lay.dtype)))
        for p, lay in zip(input_paths, inputs)
    ]
    held = [tuple(lay.shard_shape) for lay in outputs]

    def timeline(on_device: bool) -> MemoryTimeline:
        return _timeline(read, input_paths, output_paths, kept, values, memory, on_device, shapes, held)

    def on_cpu() -> tuple[MemoryStats | None, MemoryTimeline]:
        cpu = timeline(False)
        return (memory if memory is None else replace(memory, peak_bytes=cpu.peak_bytes)), cpu

    device = timeline(True)
    return MemoryCounts({"device": (device_memory(memory, device), device), "cpu": on_cpu, "xla": (memory, None)})


def _timeline(
    read: ModuleReading,
    input_paths: Sequence[str],
    output_paths: Sequence[str],
    kept: list[int] | None,
    values: Sequence[Any],
    memory: MemoryStats | None,
    on_device: bool,
    inputs: Sequence[tuple[str, tuple[int, ...], str]],
    output_shapes: Sequence[tuple[int, ...]],
) -> MemoryTimeline:
    """Memory over the program from XLA's buffer assignment and live ranges (``read`` has both)."""
    assert read.allocations is not None and read.live_ranges is not None
    made = {v.label: v.stack for v in values if v.role == "output"}
    device = device_sizes(read.module, read.allocations, values, read.stacks) if on_device else None
    return memory_timeline(
        read.allocations,
        read.live_ranges,
        read.module,
        read.stacks,
        input_paths,
        output_paths,
        kept,
        made,
        xla_peak_bytes=None if memory is None else memory.peak_bytes,
        device=device,
        inputs=inputs,
        named_elements=_named_elements(values),
        output_shapes=output_shapes,
    )


def _named_elements(values: Sequence[Any]) -> dict[tuple[str, int, str], int]:
    """The most elements per device a value of each name has on each line (what a buffer may be named)."""
    out: dict[tuple[str, int, str], int] = {}
    for v in values:
        if v.source is None or not v.label:
            continue
        shape = v.layout.shard_shape if v.layout is not None else v.shape
        key = (v.source.file, v.source.line, v.label)
        out[key] = max(out.get(key, 0), math.prod(shape))
    return out


def _mesh_placement(
    mesh: Any, assignment: Sequence[Any] | None, num_partitions: int
) -> tuple[MeshInfo | None, DeviceColumns | None, np.ndarray | None]:
    """The program's mesh as shardviz records it, its devices in mesh order, and each partition
    position's place in the mesh (None where neither the shardings nor the module say)."""
    if mesh is None:
        return None, None, None
    info = MeshInfo(
        tuple(str(n) for n in mesh.axis_names),
        tuple(int(s) for s in mesh.axis_sizes),
        tuple(t.name for t in mesh.axis_types),
        False,
    )
    devices = mesh_columns(mesh)
    to_mesh = None
    if assignment is not None:
        to_mesh = _axes.positions_to_mesh([d.id for d in assignment], devices.ids.tolist())
    elif num_partitions == mesh.size:
        to_mesh = np.arange(mesh.size, dtype=np.int64)
    return info, devices, to_mesh


def _compiled_text(compiled: Any, name: str) -> str:
    """The compiled module's text, where every collective is read; a ShardingError when JAX has none.

    ``Compiled.as_text()`` may raise or return None where a backend cannot
    print its executable; a program without its module would show no
    collectives, which would be a lie, so it is refused.
    """
    try:
        text = compiled.as_text()
    except Exception as err:
        raise ShardingError(
            f"{name} compiled, but JAX could not print the compiled module shardviz reads its collectives from: "
            f"{type(err).__name__}: {err}"
        ) from err
    if not text:
        raise ShardingError(
            f"{name} compiled, but JAX has no text of the compiled module on this backend "
            "(Compiled.as_text() returned nothing), and the collectives are read from it"
        )
    return str(text)


def _program_mesh(shardings: Sequence[Any], leaves: Sequence[Any]) -> Mesh | None:
    for s in [*shardings, *(getattr(leaf, "sharding", None) for leaf in leaves)]:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return s.mesh
    try:  # a shard_map over the context mesh, with no sharded argument
        mesh = jax.sharding.get_mesh()
    except Exception:
        return None
    return mesh if isinstance(mesh, Mesh) and not mesh.empty else None


def _device_assignment(shardings: Sequence[Any]) -> tuple[Any, ...] | None:
    """The program's devices in partition order (every sharding of one program shares it)."""
    for s in shardings:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return tuple(s.mesh.devices.flat)
        devices = getattr(s, "_device_assignment", None)
        if devices is not None:
            return tuple(devices)
    return None


def _sharding_mode(mesh: MeshInfo | None) -> str:
    if mesh is None:
        return "none"
    kinds = set(mesh.axis_types)
    if kinds <= {"Explicit"}:
        return "explicit"
    return "auto" if "Explicit" not in kinds else "mixed"


def _abstract(leaf: Any) -> Any:
    """A leaf as retrace keeps it: arrays as ShapeDtypeStructs (no buffer kept alive)."""
    if isinstance(leaf, jax.Array):
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding, weak_type=leaf.weak_type)
    if isinstance(leaf, np.ndarray):
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)
    return leaf


def _memory(compiled: Any) -> MemoryStats | None:
    try:
        stats = compiled.memory_analysis()
    except Exception:  # best-effort in JAX: some backends raise
        return None
    if stats is None:
        return None

    def get(name: str) -> int:
        return int(getattr(stats, name, 0) or 0)

    peak = getattr(stats, "peak_memory_in_bytes", None)
    return MemoryStats(
        argument_bytes=get("argument_size_in_bytes"),
        output_bytes=get("output_size_in_bytes"),
        temp_bytes=get("temp_size_in_bytes"),
        alias_bytes=get("alias_size_in_bytes"),
        generated_code_bytes=get("generated_code_size_in_bytes"),
        peak_bytes=int(peak) if peak is not None else None,
        host_argument_bytes=get("host_argument_size_in_bytes"),
        host_output_bytes=get("host_output_size_in_bytes"),
        host_temp_bytes=get("host_temp_size_in_bytes"),
        host_alias_bytes=get("host_alias_size_in_bytes"),
    )


def _cost_analysis(compiled: Any) -> dict[str, Any] | None:
    """XLA's cost analysis of the compiled program (worked out anew on each call, so asked once)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # best-effort in JAX
        return None
    if isinstance(cost, (list, tuple)):  # older JAX: one dict per device program
        cost = cost[0] if cost else None
    return cost if isinstance(cost, dict) else None


def _cost(cost: dict[str, Any] | None, key: str) -> float | None:
    if cost is None or key not in cost:
        return None
    try:
        value = float(cost[key])
    except (TypeError, ValueError):  # a backend's odd entry is no figure
        return None
    return value if math.isfinite(value) else None


def _source_listing(fun: Any, name: str) -> SourceListing | None:
    inner = unwrapped(fun)
    code = getattr(inner, "__code__", None)
    try:
        lines, first = inspect.getsourcelines(inner)
    except (OSError, TypeError):  # a builtin, the REPL, exec'd text
        return None
    file = code.co_filename if code is not None else inspect.getsourcefile(inner)
    if not file:
        return None
    return SourceListing(name=name, file=file, first_line=max(1, first), lines=tuple(s.rstrip("\n") for s in lines))


def _asked_outputs(traced: Any) -> tuple[bool, ...] | None:
    """Which outputs the jit's ``out_shardings`` lays out; None where JAX's traced program does not say."""
    params = getattr(traced, "_params", None)
    shardings = params.get("out_shardings") if isinstance(params, dict) else None
    if shardings is None:
        return None
    return tuple(type(s).__name__ != "UnspecifiedValue" for s in shardings)
