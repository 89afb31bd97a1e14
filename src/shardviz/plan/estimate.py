"""Time per step of a traced Program on named hardware: a roofline estimate.

Compute time is the module's flops over the chip's flops; memory time its
bytes accessed over HBM bandwidth; each collective's time its bytes sent
per device (the ring counts of shardviz.program.wire) over the bandwidth
its group's links give, plus a latency per hop. A step is bound by the
largest of the three, assuming they overlap perfectly; ``serial_s`` adds
them. The module was compiled for CPU, whose choice of collectives can
differ from a TPU's or GPU's (a reduce-scatter may appear as an all-reduce,
async pairs are not formed), so the estimate says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program.model import Collective
from ..program.program import Program, register_estimator
from ..text.ranges import format_bytes
from .hardware import Hardware, hardware_named

CPU_CAVEAT = (
    "compiled for CPU: XLA on TPU/GPU may pick other collectives (reduce-scatter for all-reduce + slice, "
    "async start/done pairs overlapping compute), so collective counts and bytes may differ"
)


@dataclass(frozen=True)
class CollectiveTime:
    kind: str
    name: str
    axes: tuple[str, ...] | None
    group_size: int
    bytes: int  # sent per device per call, all runs
    runs: int
    link: str  # "ici", "nvlink" or "network"
    bandwidth: float  # bytes/s per device for this group
    seconds: float
    formula: str
    line: str | None


@dataclass(frozen=True)
class LineTime:
    line: str
    seconds: float
    bytes: int


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
                    "formula": c.formula,
                    "line": c.line,
                }
                for c in self.collectives
            ],
            "lines": [{"line": t.line, "seconds": t.seconds, "bytes": t.bytes} for t in self.lines],
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        def ms(s: float | None) -> str:
            return "unknown" if s is None else f"{s * 1e3:.3f} ms"

        out = [
            f"{self.program} on {self.hardware.name}: {ms(self.step_s)} per step, {self.bound}-bound",
            f"  compute {ms(self.compute_s)}  memory {ms(self.memory_s)}  network {ms(self.network_s)}",
        ]
        for c in self.collectives:
            out.append(f"  {c.kind} {c.name} over {','.join(c.axes or ('?',))}: {ms(c.seconds)} = {c.formula}")
        out.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(out)


def _link(program: Program, collective: Collective, hw: Hardware) -> tuple[str, float, str]:
    """The link a collective's groups use and the bandwidth per device it gives."""
    if hw.node_size is not None and hw.node_bytes_per_s is not None:
        groups = program.device_groups(collective)
        within = all(len({d // hw.node_size for d in g}) == 1 for g in groups)
        if within:
            return "nvlink", hw.link_bytes_per_s, f"NVLink {hw.link_bytes_per_s:.3g} B/s"
        return "network", hw.node_bytes_per_s, f"InfiniBand {hw.node_bytes_per_s:.3g} B/s"
    axes = len(collective.axes) if collective.axes else 1
    directions = 2 if hw.wraparound else 1
    text = f"{axes} axis x {directions} direction x {hw.link_bytes_per_s:.3g} B/s"
    return "ici", axes * directions * hw.link_bytes_per_s, text


def collective_time(program: Program, collective: Collective, hw: Hardware) -> CollectiveTime:
    link, bandwidth, link_text = _link(program, collective, hw)
    sent = collective.total_wire_bytes
    hops = max(collective.group_size - 1, 0) * collective.count
    seconds = sent / bandwidth + hops * hw.latency_s
    formula = f"{format_bytes(sent)} / ({link_text}) + {hops} hops x {hw.latency_s:.3g} s"
    line = None if collective.source is None else f"{collective.source.file}:{collective.source.line}"
    return CollectiveTime(
        collective.kind, collective.name, collective.axes, collective.group_size, sent, collective.count,
        link, bandwidth, seconds, formula, line,
    )  # fmt: skip


def estimate(program: Program, hardware: Any) -> Estimate:
    """Time one step of ``program`` on ``hardware`` (a name in HARDWARE or a Hardware)."""
    hw = hardware_named(hardware)
    times = tuple(collective_time(program, c, hw) for c in program.collectives)
    network = sum(t.seconds for t in times)
    compute = None if program.flops is None else program.flops / hw.flops_per_s
    memory = None if program.bytes_accessed is None else program.bytes_accessed / hw.hbm_bytes_per_s
    parts = {"compute": compute or 0.0, "memory": memory or 0.0, "network": network}
    bound = max(parts, key=lambda k: parts[k])
    by_line: dict[str, tuple[float, int]] = {}
    for t in times:
        key = t.line or "?"
        s, b = by_line.get(key, (0.0, 0))
        by_line[key] = (s + t.seconds, b + t.bytes)
    lines = tuple(LineTime(k, s, b) for k, (s, b) in sorted(by_line.items(), key=lambda kv: -kv[1][0]))
    notes = [CPU_CAVEAT, "flops and bytes accessed are XLA's cost analysis of the CPU module, per device"]
    if program.whatif is not None:
        notes.append(f"what-if program: {program.whatif.devices} virtual devices")
    return Estimate(
        program.name, hw, compute, memory, network, max(parts.values()), sum(parts.values()), bound, times, lines,
        tuple(notes),
    )  # fmt: skip


register_estimator(estimate)
