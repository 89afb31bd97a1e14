"""Time per step of a traced Program on named hardware: a roofline estimate.

Compute time is the module's flops over the chip's flops; memory time the
bytes its operations read and write in the program's dtypes
(:mod:`shardviz.program.hlo.memory`) over HBM bandwidth; each collective's
time comes from :mod:`.links` and :mod:`.comms`: where its groups lie on
the hardware (rings of a slice's torus, slices over DCN, NVLink inside a
node, InfiniBand between nodes) and the model of "How to Scale Your Model"
for those links, with the bytes the device would move
(``Collective.device_result_bytes``). A step is bound by the largest of the three,
assuming they overlap perfectly; ``serial_s`` adds them. The module was
compiled for CPU, whose choice of collectives can differ from a TPU's or
GPU's (a reduce-scatter may appear as an all-reduce, async pairs are not
formed), so the estimate says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from ..errors import ShardingError
from ..text.files import file_label
from ..text.ranges import format_bytes
from .comms import NOTHING, CommTime, array_bytes
from .hardware import HARDWARE, Hardware, hardware_named
from .links import Layout, layout_for, permute_run, run_time
from .priced import PricedCollective, PricedProgram
from .topology import Slices, per_slice_shape, slice_shape, slices_for

CPU_CAVEAT = (
    "compiled for CPU: XLA on TPU/GPU may pick other collectives (reduce-scatter for all-reduce + slice, "
    "async start/done pairs overlapping compute), so collective counts and bytes may differ"
)

LINES_SHOWN = 5
MEMORY_NOTE = (
    "memory: the bytes each operation of the module reads and writes per device, in the program's dtypes, "
    "loops counted; XLA on the device fuses differently, so this is a guide"
)


@dataclass(frozen=True)
class TimePart:
    """One part of a collective that runs on several links (a multislice all-reduce's reduce-scatter
    inside the slice, all-reduce between slices, all-gather back)."""

    what: str
    link: str
    bandwidth: float  # bytes/s per direction of that link
    seconds: float  # all runs
    bound: str
    formula: str


@dataclass(frozen=True)
class CollectiveTime:
    kind: str
    name: str
    axes: tuple[str, ...] | None
    group_size: int
    bytes: int  # the array the formula moves per device per run, as the device holds it
    runs: int
    link: str  # the link's name: "ICI", "NVLink", "DCN", "InfiniBand"
    bandwidth: float  # bytes/s per direction of that link
    seconds: float  # all runs
    bound: str  # "bandwidth" or "latency"
    formula: str
    line: str | None  # "model.py:42" or "In [3]:4": the file as the user knows it
    note: str = ""  # why the device moves fewer bytes than the CPU module, if it does
    parts: tuple[TimePart, ...] = ()  # where it runs on several links, each part on its own
    combined_by: str = ""  # "sum" (phases one after another) or "max" (pipelined levels) of the parts


@dataclass(frozen=True)
class LineTime:
    """One source line's share of the step: its collectives' time and bytes, its matrix multiplies' time."""

    line: str  # "model.py:42", "In [3]:4", or "?" for what has no line of the user's
    seconds: float  # network: the collectives charged to the line
    bytes: int
    compute_s: float = 0.0  # the line's matrix-multiply flops over the chip's flops
    bound: str = "network"  # "compute" or "network": the larger of the two


@dataclass(frozen=True)
class Estimate:
    """An immutable time estimate of one step; ``to_json()`` is docs/planning.md's payload."""

    program: str
    hardware: Hardware
    compute_s: float | None
    memory_s: float | None
    network_s: float
    step_s: float
    serial_s: float
    bound: str  # "compute", "memory" or "network"
    collectives: tuple[CollectiveTime, ...]
    lines: tuple[LineTime, ...]
    notes: tuple[str, ...]
    device_bytes: int | None = None  # per device: the program's peak (Program.memory.held_bytes)
    fits: bool | None = None  # device_bytes within the hardware's HBM (None: either unknown)
    slices: int = 1  # TPU slices (over DCN) or GPU nodes the program spans
    topology: tuple[int, ...] | None = None  # the torus of one TPU slice; None for GPUs
    # the bytes live at the peak per planner's group (gradients, optimizer state...), most first
    held_by_group: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "hardware": self.hardware.to_json(),
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "network_s": self.network_s,
            "step_s": self.step_s,
            "serial_s": self.serial_s,
            "bound": self.bound,
            "device_bytes": self.device_bytes,
            "fits": self.fits,
            "slices": self.slices,
            "topology": None if self.topology is None else list(self.topology),
            "collectives": [
                {
                    "kind": c.kind,
                    "name": c.name,
                    "axes": None if c.axes is None else list(c.axes),
                    "group_size": c.group_size,
                    "bytes": c.bytes,
                    "runs": c.runs,
                    "link": c.link,
                    "bandwidth": c.bandwidth,
                    "seconds": c.seconds,
                    "bound": c.bound,
                    "formula": c.formula,
                    "line": c.line,
                    "note": c.note,
                    "parts": [_part_json(p) for p in c.parts],
                    "combined_by": c.combined_by,
                }
                for c in self.collectives
            ],
            "lines": [
                {"line": t.line, "seconds": t.seconds, "bytes": t.bytes, "compute_s": t.compute_s, "bound": t.bound}
                for t in self.lines
            ],
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        out = [
            f"{self.program} on {self.hardware.name}: {_time(self.step_s)} per step, {self.bound}-bound",
            f"  compute {_time(self.compute_s)}  memory {_time(self.memory_s)}  network {_time(self.network_s)}",
        ]
        for c in self.collectives:
            axes = ",".join(c.axes or ("?",))
            where = f" at {c.line}" if c.line else ""
            out.append(f"  {c.kind} {c.name} over {axes}{where}: {_time(c.seconds)} ({c.bound}) = {c.formula}")
            for p in c.parts:
                out.append(f"    {p.what} on {p.link}: {_time(p.seconds)} = {p.formula}")
            if c.note:
                out.append(f"    {c.note}")
        if self.lines:
            out.append("  lines that take longest (network: their collectives; compute: their matrix multiplies):")
            for t in self.lines[:LINES_SHOWN]:
                out.append(f"    {t.line}: network {_time(t.seconds)}, compute {_time(t.compute_s)}: {t.bound}-bound")
        out.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(out)


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def _part_json(p: TimePart) -> dict[str, Any]:
    return {"what": p.what, "link": p.link, "bandwidth": p.bandwidth, "seconds": p.seconds, "bound": p.bound,
            "formula": p.formula}  # fmt: skip


def program_slices(program: PricedProgram, hw: Hardware) -> Slices | None:
    """The TPU slices the program takes on ``hw`` (None for GPUs); a ShardingError where a named
    slice cannot hold the program's devices."""
    if hw.switch:
        return None
    sizes = _mesh_sizes(program)
    devices = math.prod(sizes)
    if not hw.torus:
        count = devices // hw.node_size if hw.node_size and devices % hw.node_size == 0 else 1
        return Slices(count, hw.topology or per_slice_shape(sizes, count))
    if hw.node_size is None and hw.topology is None:
        return Slices(1, slice_shape(devices, hw.torus) or per_slice_shape(sizes, 1))
    try:
        return slices_for(devices, hw.torus, hw.node_size, hw.topology)
    except ValueError as err:
        raise ShardingError(
            f"{hw.name} is {err}; the program has {devices} devices, not a multiple of it: "
            f"name a slice that fits, or {hw.name.rsplit('-', 1)[0]}"
        ) from None


def _mesh_sizes(program: PricedProgram) -> tuple[int, ...]:
    if program.mesh is not None and math.prod(program.mesh.axis_sizes) == program.num_partitions:
        return tuple(program.mesh.axis_sizes)
    return (program.num_partitions,)


def _positions(program: PricedProgram, devices: Sequence[int]) -> list[int]:
    """Partition positions as mesh positions (mesh order)."""
    if program.assignment is None:
        return list(devices)
    return [int(program.assignment[p]) for p in devices]


def _one_run(program: PricedProgram, collective: PricedCollective, layout: Layout, array: float) -> CommTime:
    if collective.kind == "collective-permute":
        moved = [(a, b) for a, b in zip(_positions(program, tuple(s for s, _ in collective.pairs)),
                                        _positions(program, tuple(t for _, t in collective.pairs)))]  # fmt: skip
        return permute_run(layout, moved, collective.device_result_bytes)
    if not collective.groups:  # a producer that names no group moves nothing (JAX's modules always name them)
        return NOTHING
    shape = layout.group_shape(_positions(program, collective.groups[0]))
    return run_time(layout, collective.kind, array, collective.device_result_bytes, shape)


def collective_time(
    program: PricedProgram, collective: PricedCollective, hw: Hardware, layout: Layout
) -> CollectiveTime:
    array = array_bytes(collective.kind, collective.device_result_bytes, collective.group_size)
    one = _one_run(program, collective, layout, array)
    runs = collective.count
    formula = one.formula if runs == 1 else f"{runs} runs x {one.formula}"
    line = None if collective.source is None else f"{file_label(collective.source.file)}:{collective.source.line}"
    parts = tuple(TimePart(p.what, p.link, p.bandwidth, p.seconds * runs, p.bound, p.formula) for p in one.parts)
    return CollectiveTime(
        collective.kind, collective.name, collective.axes, collective.group_size, int(array), runs,
        one.link or hw.link_name, one.bandwidth or hw.link_bytes_per_s, one.seconds * runs, one.bound, formula,
        line, widening_note(collective), parts, one.combined_by,
    )  # fmt: skip


def widening_note(c: PricedCollective) -> str:
    """Why the device moves fewer bytes than the CPU module, if it does ("" otherwise)."""
    if not c.widened or c.on_device is None or c.on_cpu is None:  # (widened says both are there)
        return ""
    if not c.parts:
        return f"{c.on_device.dtype} on the device: XLA:CPU moved it as a {_bits(c.on_cpu.dtype)}-bit float"
    narrowed = [p for p in c.parts if p.on_device and p.on_cpu and p.on_device.dtype != p.on_cpu.dtype]
    kinds = _joined([p.on_device.dtype for p in narrowed if p.on_device])
    widths = _joined([str(_bits(p.on_cpu.dtype)) for p in narrowed if p.on_cpu])
    return (
        f"{len(narrowed)} of its {len(c.parts)} operands are {kinds} on the device: "
        f"XLA:CPU moved them as {widths}-bit floats"
    )


def _bits(dtype: str) -> int:
    return jnp.dtype(dtype).itemsize * 8


def _joined(dtypes: list[str]) -> str:
    return ", ".join(dict.fromkeys(d for d in dtypes if d))


def _by_line(program: PricedProgram, times: tuple[CollectiveTime, ...], hw: Hardware) -> tuple[LineTime, ...]:
    """Each line's network time (its collectives) and compute time (its dots), longest first."""
    network: dict[str, tuple[float, int]] = {}
    for t in times:
        key = t.line or "?"
        s, b = network.get(key, (0.0, 0))
        network[key] = (s + t.seconds, b + t.bytes * t.runs)
    compute: dict[str, float] = {}
    for f in program.line_flops:
        key = "?" if f.source is None else f"{file_label(f.source.file)}:{f.source.line}"
        compute[key] = compute.get(key, 0.0) + f.flops / hw.flops_per_s
    rows = []
    for key in {**network, **compute}:
        seconds, sent = network.get(key, (0.0, 0))
        busy = compute.get(key, 0.0)
        rows.append(LineTime(key, seconds, sent, busy, "compute" if busy > seconds else "network"))
    return tuple(sorted(rows, key=lambda t: -max(t.seconds, t.compute_s)))


def _flops(program: PricedProgram) -> tuple[float | None, str | None]:
    """The flops one step does per device: the module's dots with loops counted, where that is more
    than XLA's cost analysis (which counts a loop's body once)."""
    counted = program.matmul_flops
    if counted is None or (program.flops is not None and counted <= program.flops):
        return program.flops, None
    analysed = "none" if program.flops is None else f"{program.flops:.3g}"
    return counted, (
        f"compute from the module's matrix multiplies with loops counted ({counted:.3g} flops per device); "
        f"XLA's cost analysis counts a loop's body once ({analysed})"
    )


def _fit(program: PricedProgram, hw: Hardware) -> tuple[int | None, bool | None, str | None]:
    held = None if program.memory is None else program.memory.held_bytes
    if held is None or hw.hbm_bytes is None:
        return held, None, None
    fits = held <= hw.hbm_bytes
    verdict = "fits in" if fits else "does NOT fit in"
    note = (
        f"{format_bytes(held)} per device (the peak: bytes live at the worst step, arguments and outputs "
        f"counted as held) {verdict} {format_bytes(int(hw.hbm_bytes))} of HBM"
    )
    if not fits:
        note += f", over by {format_bytes(held - int(hw.hbm_bytes))}"
        groups = held_by_group(program)
        if groups:
            note += "; at the peak: " + groups_text(groups)
    return held, fits, note


def held_by_group(program: PricedProgram) -> tuple[tuple[str, int], ...]:
    """The bytes live at the program's peak per planner's group, most first (none without a timeline)."""
    timeline = getattr(program, "memory_timeline", None)
    if timeline is None:
        return ()
    return tuple((name, n) for name, n in timeline.bytes_by_category() if n)


def groups_text(groups: tuple[tuple[str, int], ...]) -> str:
    """``gradients 1.0 GiB, parameters and inputs 512 MiB``."""
    return ", ".join(f"{name} {format_bytes(n)}" for name, n in groups)


def estimate(program: PricedProgram, hardware: Any) -> Estimate:
    """Time one step of ``program`` on ``hardware`` (a name in HARDWARE or a Hardware)."""
    hw = hardware_named(hardware)
    slices = program_slices(program, hw)
    layout = layout_for(hw, _mesh_sizes(program), slices)
    times = tuple(collective_time(program, c, hw, layout) for c in program.collectives)
    network = sum(t.seconds for t in times)
    flops, flops_note = _flops(program)
    compute = None if flops is None else flops / hw.flops_per_s
    hbm = program.hbm_bytes
    memory = None if hbm is None else hbm / hw.hbm_bytes_per_s
    parts = {"compute": compute or 0.0, "memory": memory or 0.0, "network": network}
    bound = max(parts, key=lambda k: parts[k])
    held, fits, fit_note = _fit(program, hw)
    notes = [CPU_CAVEAT, MEMORY_NOTE, _where_note(program, hw, slices)]
    if flops_note:
        notes.append(flops_note)
    if fit_note:
        notes.append(fit_note)
    if program.whatif is not None:
        notes.append(f"what-if program: {program.whatif.devices} virtual devices")
    return Estimate(
        program.name, hw, compute, memory, network, max(parts.values()), sum(parts.values()), bound, times,
        _by_line(program, times, hw), tuple(notes), held, fits, _span(program, hw, slices),
        None if slices is None else slices.topology, held_by_group(program),
    )  # fmt: skip


def _span(program: PricedProgram, hw: Hardware, slices: Slices | None) -> int:
    if slices is not None:
        return slices.count
    return -(-program.num_partitions // (hw.node_size or program.num_partitions))


def _where_note(program: PricedProgram, hw: Hardware, slices: Slices | None) -> str:
    """Where the program runs: its slices and their torus, or its nodes."""
    devices = program.num_partitions
    if slices is None:
        nodes = _span(program, hw, slices)
        size = hw.node_size or devices
        return f"{devices} GPUs: {nodes} node{'s' if nodes > 1 else ''} of {size} ({hw.link_name} inside a node, "\
               f"{hw.node_link_name} between nodes)"  # fmt: skip
    torus = "x".join(map(str, slices.topology))
    if slices.count == 1:
        return f"{devices} chips: one slice of {torus} ({hw.link_name} torus)"
    largest = f"; the largest single {hw.name} slice is {hw.node_size:,} chips" if hw.node_size else ""
    return (
        f"{devices} chips: {slices.count} slices of {torus} joined by {hw.node_link_name}, the leading mesh axes "
        f"split across slices{largest}"
    )


def estimates_payload(program: PricedProgram) -> dict[str, Any]:
    """Every named hardware's estimate in brief, for the program view's hardware selector
    (docs/program-payload.md, ``estimates``); collectives in the payload's order."""
    by_hardware = {}
    for name in HARDWARE:
        est = estimate(program, name)
        by_hardware[name] = {
            "step_s": est.step_s,
            "bound": est.bound,
            "compute_s": est.compute_s,
            "memory_s": est.memory_s,
            "network_s": est.network_s,
            "fits": est.fits,
            "hbm_bytes": est.hardware.hbm_bytes,
            "slices": est.slices,
            "topology": None if est.topology is None else list(est.topology),
            "collectives": [
                [c.seconds, c.link, c.bound, c.formula, c.note, [[p.what, p.link, p.seconds] for p in c.parts]]
                for c in est.collectives
            ],
        }
    return {"hardware": list(HARDWARE), "by_hardware": by_hardware, "caveat": CPU_CAVEAT}
