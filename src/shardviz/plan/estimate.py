"""Time per step of a traced Program on named hardware: a roofline estimate.

Compute time is the module's flops over the chip's flops; memory time its
bytes accessed over HBM bandwidth; each collective's time comes from the
ring model of :mod:`.comms` on the links its groups use (torus rings, a
switch, or the network between nodes), with the bytes the device would move
(``Collective.device_result_bytes``). A step is bound by the largest of the three,
assuming they overlap perfectly; ``serial_s`` adds them. The module was
compiled for CPU, whose choice of collectives can differ from a TPU's or
GPU's (a reduce-scatter may appear as an all-reduce, async pairs are not
formed), so the estimate says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program.device_bytes import widening_note
from ..program.model import Collective
from ..program.program import Program, register_estimator
from ..program.sources import file_label
from ..text.ranges import format_bytes
from .comms import CommTime, Ring, array_bytes, permute_time, ring_time, torus_time
from .hardware import HARDWARE, Hardware, hardware_named

CPU_CAVEAT = (
    "compiled for CPU: XLA on TPU/GPU may pick other collectives (reduce-scatter for all-reduce + slice, "
    "async start/done pairs overlapping compute), so collective counts and bytes may differ"
)

LINES_SHOWN = 5
BYTES_NOTE = "bytes accessed is XLA's cost analysis of the CPU module per device, which counts a loop's body once"


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
    device_bytes: int | None = None  # per device: arguments + outputs + scratch - aliased (memory analysis)
    fits: bool | None = None  # device_bytes within the hardware's HBM (None: either unknown)

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


def _crosses_nodes(program: Program, collective: Collective, hw: Hardware) -> bool:
    if hw.node_size is None:
        return False
    return any(len({d // hw.node_size for d in group}) > 1 for group in program.device_groups(collective))


def _rings(program: Program, collective: Collective, hw: Hardware) -> list[Ring]:
    """One ring per mesh axis the groups span (each axis assumed laid along its own torus axis)."""
    sizes = program.mesh.shape if program.mesh is not None else {}
    if collective.axes and all(a in sizes for a in collective.axes):
        return [Ring(sizes[a], hw.ring_closes(sizes[a])) for a in collective.axes]
    if collective.pieces:
        return [Ring(p.size, p.whole and hw.ring_closes(p.size)) for p in collective.pieces]
    return [Ring(collective.group_size, False)]


def _one_run(program: Program, collective: Collective, hw: Hardware, array: float) -> tuple[CommTime, str, float]:
    """One run's time, the link's name and its bandwidth per direction."""
    if _crosses_nodes(program, collective, hw):
        assert hw.node_bytes_per_s is not None  # Hardware requires it with node_size
        link, bandwidth, latency = hw.node_link_name, hw.node_bytes_per_s, hw.node_latency_s
    else:
        link, bandwidth, latency = hw.link_name, hw.link_bytes_per_s, hw.latency_s
    if collective.kind == "collective-permute":
        return permute_time(array, collective.wire_bytes > 0, bandwidth, latency, link), link, bandwidth
    if link != hw.link_name or hw.switch:
        return ring_time(collective.kind, array, collective.group_size, bandwidth, latency, link), link, bandwidth
    rings = _rings(program, collective, hw)
    return torus_time(collective.kind, array, rings, bandwidth, latency), link, bandwidth


def collective_time(program: Program, collective: Collective, hw: Hardware) -> CollectiveTime:
    array = array_bytes(collective.kind, collective.device_result_bytes, collective.group_size)
    one, link, bandwidth = _one_run(program, collective, hw, array)
    runs = collective.count
    formula = one.formula if runs == 1 else f"{runs} runs x {one.formula}"
    line = None if collective.source is None else f"{file_label(collective.source.file)}:{collective.source.line}"
    bound = "latency" if one.latency_s > one.bandwidth_s else "bandwidth"
    return CollectiveTime(
        collective.kind, collective.name, collective.axes, collective.group_size, int(array), runs,
        link, bandwidth, one.seconds * runs, bound, formula, line, widening_note(collective),
    )  # fmt: skip


def _by_line(program: Program, times: tuple[CollectiveTime, ...], hw: Hardware) -> tuple[LineTime, ...]:
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


def _flops(program: Program) -> tuple[float | None, str | None]:
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


def _fit(program: Program, hw: Hardware) -> tuple[int | None, bool | None, str | None]:
    held = None if program.memory is None else program.memory.reserved_bytes
    if held is None or hw.hbm_bytes is None:
        return held, None, None
    fits = held <= hw.hbm_bytes
    verdict = "fits in" if fits else "does NOT fit in"
    return (
        held,
        fits,
        (
            f"{format_bytes(held)} per device (arguments, outputs and XLA:CPU's scratch) {verdict} "
            f"{format_bytes(int(hw.hbm_bytes))} of HBM"
        ),
    )


def estimate(program: Program, hardware: Any) -> Estimate:
    """Time one step of ``program`` on ``hardware`` (a name in HARDWARE or a Hardware)."""
    hw = hardware_named(hardware)
    times = tuple(collective_time(program, c, hw) for c in program.collectives)
    network = sum(t.seconds for t in times)
    flops, flops_note = _flops(program)
    compute = None if flops is None else flops / hw.flops_per_s
    memory = None if program.bytes_accessed is None else program.bytes_accessed / hw.hbm_bytes_per_s
    parts = {"compute": compute or 0.0, "memory": memory or 0.0, "network": network}
    bound = max(parts, key=lambda k: parts[k])
    held, fits, fit_note = _fit(program, hw)
    notes = [CPU_CAVEAT, BYTES_NOTE]
    if flops_note:
        notes.append(flops_note)
    if fit_note:
        notes.append(fit_note)
    if program.whatif is not None:
        notes.append(f"what-if program: {program.whatif.devices} virtual devices")
    return Estimate(
        program.name, hw, compute, memory, network, max(parts.values()), sum(parts.values()), bound, times,
        _by_line(program, times, hw), tuple(notes), held, fits,
    )  # fmt: skip


def estimates_payload(program: Program) -> dict[str, Any]:
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
            "collectives": [[c.seconds, c.link, c.bound, c.formula, c.note] for c in est.collectives],
        }
    return {"hardware": list(HARDWARE), "by_hardware": by_hardware, "caveat": CPU_CAVEAT}


register_estimator(estimate, estimates_payload)
