"""Which links a collective's groups use, and its time on them.

A TPU program runs on one or more slices (:mod:`.topology`): a group's chips
inside one slice form rings along the torus dimensions they span (closed
where the slice has wraparound links on that dimension and the group goes
all the way round it); a group over several slices adds the data-centre
network (DCN), at each chip's share of its host's bandwidth. A GPU program
runs on nodes of ``node_size`` GPUs: NVLink inside a node, InfiniBand
between nodes at each GPU's own NIC (a group of ``k`` GPUs per node has
``k`` NICs in each node, the node's egress when it is whole). Groups that
span several slices or nodes are hierarchical (:func:`.comms.combine`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.ranges import format_bytes
from .comms import (
    KINDS_TO_ALL,
    NOTHING,
    CommTime,
    Ring,
    combine,
    gathers,
    line_time,
    send_time,
    torus_all_to_all,
    torus_time,
)
from .hardware import Hardware
from .topology import Placement, Slices


@dataclass(frozen=True)
class GroupShape:
    """A group as the hardware sees it: its rings inside one slice (TPU), how many of its devices
    share a slice or node, and how many slices or nodes it spans."""

    rings: tuple[Ring, ...]
    per_slice: int
    slices: int


@dataclass(frozen=True)
class Layout:
    """Where a program's mesh positions are on the hardware."""

    hw: Hardware
    devices: int
    placement: Placement | None  # TPU slices; None for GPUs

    @property
    def slices(self) -> Slices | None:
        return None if self.placement is None else self.placement.slices

    def group_shape(self, positions: Sequence[int]) -> GroupShape:
        if self.placement is None:
            size = self.hw.node_size or self.devices
            nodes = Counter(p // size for p in positions)
            return GroupShape((), max(nodes.values()), len(nodes))
        by_slice = Counter(self.placement.slice_of(p) for p in positions)
        first = min(by_slice)
        local = [p for p in positions if self.placement.slice_of(p) == first]
        return GroupShape(self._rings([self.placement.coords(p) for p in local]), len(local), len(by_slice))

    def _rings(self, coords: Sequence[tuple[int, ...]]) -> tuple[Ring, ...]:
        """One ring per torus dimension the chips span; one open ring of them all where they are no box."""
        assert self.placement is not None
        topology = self.placement.slices.topology
        spans = [sorted({c[d] for c in coords}) for d in range(len(topology))]
        if math.prod(len(s) for s in spans) != len(set(coords)):
            return (Ring(len(coords), False),)
        rings = []
        for dim, values in enumerate(spans):
            if len(values) > 1:
                stride = max(1, round((values[-1] - values[0]) / (len(values) - 1)))
                whole = len(values) * stride == topology[dim]
                rings.append(Ring(len(values), whole and self.hw.dim_wraps(topology, dim), stride))
        return tuple(rings)

    def coords(self, position: int) -> tuple[int, ...]:
        assert self.placement is not None
        return self.placement.coords(position)


def layout_for(hw: Hardware, mesh_sizes: Sequence[int], slices: Slices | None) -> Layout:
    """``slices`` for a TPU (None for GPUs); the mesh in mesh order on them."""
    devices = math.prod(mesh_sizes)
    placement = None if slices is None else Placement(slices, tuple(mesh_sizes))
    return Layout(hw, devices, placement)


# --------------------------------------------------------------------------
# time of one run


def run_time(layout: Layout, kind: str, array: float, block: float, shape: GroupShape) -> CommTime:
    """One run of a collective (not a permute) whose formula moves ``array`` bytes (``block``: what
    each device holds of an all-to-all) over a group of ``shape``."""
    if shape.per_slice * shape.slices <= 1 or array <= 0:
        return NOTHING
    if layout.placement is None:
        return _gpu_time(layout.hw, kind, array, block, shape)
    return _tpu_time(layout.hw, kind, array, block, shape)


def _tpu_time(hw: Hardware, kind: str, array: float, block: float, shape: GroupShape) -> CommTime:
    link, lat = hw.link_bytes_per_s, hw.latency_s
    dcn, dcn_lat, name = hw.node_bytes_per_s or link, hw.node_latency_s, hw.node_link_name
    g, c = shape.per_slice, shape.slices
    if kind in KINDS_TO_ALL:
        inside = torus_all_to_all(g * block / c, shape.rings, link, lat, "all-to-all inside the slice")
        across = send_time(block * (c - 1) / c, dcn, c - 1, dcn_lat, name, f"all-to-all between {c} slices")
        return combine([inside, across], "max")
    if c == 1:
        return torus_time(kind, array, shape.rings, link, lat)
    steps = gathers(kind) * (c - 1)
    share = f"of the 1/{g} share " if g > 1 else ""
    across = line_time(kind, array / g, c, dcn, steps, dcn_lat, name, f"{kind} {share}between {c} slices")
    if g == 1:
        return across
    if kind == "all-reduce":
        scatter = torus_time("reduce-scatter", array, shape.rings, link, lat, "reduce-scatter inside the slice")
        gather = torus_time("all-gather", array, shape.rings, link, lat, "all-gather inside the slice")
        return combine([scatter, across, gather], "sum")
    inside = torus_time(kind, array, shape.rings, link, lat, f"{kind} inside the slice")
    return combine([inside, across] if kind == "reduce-scatter" else [across, inside], "sum")


def _gpu_time(hw: Hardware, kind: str, array: float, block: float, shape: GroupShape) -> CommTime:
    """NVLink among the ``k`` GPUs of a node and InfiniBand among ``M`` nodes at ``k`` NICs each:
    pipelined levels, so the slower one bounds the collective (the book's rule)."""
    k, m = shape.per_slice, shape.slices
    nvlink, nv_lat, ib_lat = hw.link_bytes_per_s, hw.latency_s, hw.node_latency_s
    nic, ib = hw.node_bytes_per_s or nvlink, hw.node_link_name
    if kind in KINDS_TO_ALL:
        n = k * m
        inside = send_time(block * (k - 1) / n, nvlink, 1, nv_lat, hw.link_name, "all-to-all inside the node")
        across = send_time(block * (m - 1) / m, nic, 1, ib_lat, ib, f"all-to-all between {m} nodes")
        return combine([inside, across], "max")
    # latency: a chain of the k GPUs inside each node; between nodes NCCL's trees, log2 of the nodes
    # (double binary trees for all-reduce, NCCL 2.4; PAT for all-gather and reduce-scatter, NCCL 2.23)
    runs = gathers(kind)
    inside_steps, across_steps = runs * (k - 1), runs * math.ceil(math.log2(m))
    inside = line_time(kind, array, k, nvlink, inside_steps, nv_lat, hw.link_name, f"{kind} inside the node")
    share = f"of the 1/{k} share " if k > 1 else ""
    across = line_time(kind, array / k, m, nic, across_steps, ib_lat, ib, f"{kind} {share}between {m} nodes")
    return combine([inside, across], "max")


# --------------------------------------------------------------------------
# collective-permute: each pair's block on the links it really takes


def permute_run(layout: Layout, pairs: Sequence[tuple[int, int]], block: float) -> CommTime:
    """Every device sends ``block`` bytes to its pair's target at once. Inside a TPU slice each block
    takes the shortest way round the torus, split evenly over the first hops that start one (both
    directions of a ring it crosses halfway, each dimension it must cross): the busiest link
    direction sets the time, the longest route the latency. Between slices or nodes each device
    sends over its own share of the network."""
    moving = [(s, t) for s, t in pairs if s != t]
    if not moving or block <= 0:
        return CommTime(0.0, 0.0, 0.0, "0: every device keeps its own block")
    hw = layout.hw
    if layout.placement is None:
        size = hw.node_size or layout.devices
        inside = [(s, t) for s, t in moving if s // size == t // size]
        parts = [send_time(block, hw.link_bytes_per_s, 1, hw.latency_s, hw.link_name, "sends inside a node")]
        return combine((parts if inside else []) + _between(hw, len(inside) < len(moving), block, "nodes"), "max")
    placement = layout.placement
    local = [(s, t) for s, t in moving if placement.slice_of(s) == placement.slice_of(t)]
    parts = [_torus_sends(layout, local, block)] if local else []
    return combine(parts + _between(hw, len(local) < len(moving), block, "slices"), "max")


def _between(hw: Hardware, crossing: bool, block: float, units: str) -> list[CommTime]:
    """A block each device sends out of its slice or node, at its share of the network, in one step."""
    if not crossing:
        return []
    bandwidth = hw.node_bytes_per_s or hw.link_bytes_per_s
    return [send_time(block, bandwidth, 1, hw.node_latency_s, hw.node_link_name, f"sends between {units}")]


def _torus_sends(layout: Layout, pairs: Sequence[tuple[int, int]], block: float) -> CommTime:
    assert layout.placement is not None
    topology = layout.placement.slices.topology
    wraps = [layout.hw.dim_wraps(topology, d) for d in range(len(topology))]
    load: _Loads = defaultdict(float)
    longest = 0
    for s, t in pairs:
        start, end = layout.coords(s), layout.coords(t)
        moves = [_directions(start[d], end[d], topology[d], wraps[d]) for d in range(len(topology))]
        longest = max(longest, sum(dist for dirs, dist in moves if dirs))
        routes = [(first, sign) for first, (dirs, _) in enumerate(moves) for sign in dirs]
        for first, sign in routes:
            order = [first] + [d for d in range(len(topology)) if d != first]
            _walk(load, start, order, moves, {first: sign}, topology, 1.0 / len(routes))
    busiest = max(load.values())
    link, lat = layout.hw.link_bytes_per_s, layout.hw.latency_s
    formula = (
        f"max({longest} hops x {lat:.3g} s, {busiest:.3g} x {format_bytes(int(block))} on the busiest link"
        f" / {link:.3g} B/s ICI)"
    )
    return CommTime(max(busiest * block / link, longest * lat), busiest * block / link, longest * lat, formula,
                    "ICI", link, "sends inside the slice")  # fmt: skip


def _directions(a: int, b: int, size: int, wraps: bool) -> tuple[tuple[int, ...], int]:
    """The directions (+1, -1) of the shortest ways from ``a`` to ``b`` along a dimension, and the distance."""
    if a == b:
        return (), 0
    forward = (b - a) % size if wraps else b - a
    if not wraps:
        return ((1,) if forward > 0 else (-1,)), abs(forward)
    backward = size - forward
    if forward == backward:
        return (1, -1), forward
    return ((1,), forward) if forward < backward else ((-1,), backward)


_Loads = defaultdict[tuple[int, int, tuple[int, ...]], float]  # (dimension, direction, from) -> blocks


def _walk(load: _Loads, start: tuple[int, ...], order: Sequence[int], moves: Sequence[tuple[tuple[int, ...], int]],
          chosen: dict[int, int], topology: Sequence[int], weight: float) -> None:  # fmt: skip
    """Add ``weight`` to each link direction of the dimension-ordered route from ``start``."""
    here = list(start)
    for d in order:
        dirs, dist = moves[d]
        if not dirs:
            continue
        sign = chosen.get(d, dirs[0])
        for _ in range(dist):
            load[(d, sign, tuple(here))] += weight
            here[d] = (here[d] + sign) % topology[d]
