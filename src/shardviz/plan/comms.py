"""How long one collective takes on given links: the models of "How to Scale Your Model"
(jax-ml/scaling-book: "Sharded Matrices", "How to Think About GPUs", "Training"), written out in
docs/planning.md with each formula's source.

``V`` is the array a formula moves: the gathered result of an all-gather,
the input of a reduce-scatter, the array an all-reduce sums, and for an
all-to-all the whole array over the group (each device's block times the
group's size). Bandwidths are bytes per second in one direction.

- **A torus** (TPU ICI): a group is one ring per torus dimension it spans
  (:class:`Ring`). A ring of ``n`` that closes moves half of ``V`` each way
  in ``n // 2`` hops; an open one ``(N - 1) / N`` of it one way in ``n - 1``
  hops, ``N`` the group's open rings together. All-gather: ``max(hops x latency, V x share /
  (rings x link))`` with the busiest ring's share; reduce-scatter the same;
  all-reduce twice. All-to-all: the bytes that cross the group's bisection
  (a quarter of ``V`` each way) over the links the cut crosses.
- **A line of peers** (DCN between slices, InfiniBand between nodes, NVLink
  inside a node): a ring of ``n`` at the link's bandwidth per device, moving
  ``(n - 1) / n`` of its array.
- **Parts**: a collective over several slices or nodes is hierarchical, each
  part on its own link; :func:`combine` adds them (XLA runs the phases of a
  multislice collective one after another) or takes the largest (NCCL
  pipelines its levels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.ranges import format_bytes

KINDS_GATHER = ("all-gather", "reduce-scatter", "collective-broadcast")
KINDS_TO_ALL = ("all-to-all", "ragged-all-to-all")


@dataclass(frozen=True)
class Ring:
    """The part of a group along one torus dimension: ``size`` chips ``stride`` chips apart."""

    size: int
    closes: bool
    stride: int = 1

    @property
    def hops(self) -> int:
        """Hops from one end of the ring to the farthest chip, in links."""
        return (self.size // 2 if self.closes else self.size - 1) * self.stride

    @property
    def label(self) -> str:
        stride = f" every {self.stride}" if self.stride > 1 else ""
        return f"{self.size}{'' if self.closes else ' open'}{stride}"


@dataclass(frozen=True)
class CommTime:
    """A run of a collective or of one of its parts: its time, the two terms it is the larger of,
    the link and the formula; ``parts`` where it runs on several links."""

    seconds: float
    bandwidth_s: float
    latency_s: float
    formula: str
    link: str = ""
    bandwidth: float = 0.0
    what: str = ""  # for a part: what it does ("reduce-scatter inside the slice")
    parts: tuple[CommTime, ...] = ()
    combined_by: str = ""  # "sum" or "max" of the parts

    @property
    def bound(self) -> str:
        return "latency" if self.latency_s > self.bandwidth_s else "bandwidth"


NOTHING = CommTime(0.0, 0.0, 0.0, "0: a group of one device sends nothing")


def gathers(kind: str) -> int:
    """How many all-gathers of ``V`` a kind costs: an all-reduce is a reduce-scatter and an all-gather."""
    return 2 if kind == "all-reduce" else 1


def array_bytes(kind: str, result_bytes: float, group_size: int) -> float:
    """``V`` from the collective's per-device result: the input of a reduce-scatter and the whole
    array of an all-to-all are the group's size times it; otherwise the result itself."""
    if kind == "reduce-scatter" or kind in KINDS_TO_ALL:
        return result_bytes * group_size
    return result_bytes


def _time(bandwidth_s: float, latency_s: float, formula: str, link: str, bandwidth: float, what: str) -> CommTime:
    return CommTime(max(bandwidth_s, latency_s), bandwidth_s, latency_s, formula, link, bandwidth, what)


def torus_time(kind: str, array: float, rings: Sequence[Ring], link: float, latency: float, what: str = "") -> CommTime:
    """All-gather, reduce-scatter, all-reduce or broadcast of ``array`` bytes over ``rings`` of a torus."""
    rings = [r for r in rings if r.size > 1]
    if not rings or array <= 0:
        return NOTHING
    group = math.prod(r.size for r in rings if not r.closes)
    times = gathers(kind)
    busiest = max(_share(r, group) * r.stride for r in rings)
    bandwidth_s = times * array * busiest / (len(rings) * link)
    hops = times * sum(r.hops for r in rings)
    ring_text = " x ".join(r.label for r in rings)
    formula = (
        f"max({hops} hops x {latency:.3g} s, {times} x {format_bytes(int(array))} x {busiest:.3g}"
        f" / ({len(rings)} ring x {link:.3g} B/s)) on ICI rings {ring_text}"
    )
    return _time(bandwidth_s, hops * latency, formula, "ICI", link, what)


def _share(ring: Ring, group: int) -> float:
    """The share of ``V`` the ring's busiest link direction carries: ``(n // 2) / n`` round a closed
    ring (half each way), ``(N - 1) / N`` along an open one, ``N`` the group's open rings together
    (``1 - 1/N`` of the group where every ring is open; a closed ring carries its own half)."""
    return (ring.size // 2) / ring.size if ring.closes else (group - 1) / group


def torus_all_to_all(array: float, rings: Sequence[Ring], link: float, latency: float, what: str = "") -> CommTime:
    """An all-to-all of ``array`` bytes (the whole array over the group) bounded by the group's
    bisection: cutting ring ``n`` in two, ``a (n - a) / n^2`` of the array (a quarter) crosses each
    way over ``N / n`` rings' links, twice as many where the ring closes; the narrowest cut counts."""
    rings = [r for r in rings if r.size > 1]
    if not rings or array <= 0:
        return NOTHING
    group = math.prod(r.size for r in rings)

    def cut(r: Ring) -> tuple[float, float]:
        half = r.size // 2
        crossing = half * (r.size - half) / r.size**2
        links = (2 if r.closes else 1) * (group // r.size) / r.stride
        return crossing, links

    crossing, links = max((cut(r) for r in rings), key=lambda c: c[0] / c[1])
    bandwidth_s = array * crossing / (links * link)
    hops = sum(r.hops for r in rings)
    ring_text = " x ".join(r.label for r in rings)
    formula = (
        f"max({hops} hops x {latency:.3g} s, {format_bytes(int(array))} x {crossing:.3g} crosses the bisection"
        f" / ({links:g} links x {link:.3g} B/s)) on ICI rings {ring_text}"
    )
    return _time(bandwidth_s, hops * latency, formula, "ICI", link, what)


def line_time(kind: str, array: float, n: int, bandwidth: float, steps: float, latency: float, link: str,
              what: str = "") -> CommTime:  # fmt: skip
    """A ring of ``n`` peers, each sending at ``bandwidth``: ``(n - 1) / n`` of ``array`` per gather
    (twice for an all-reduce), ``steps`` of ``latency``."""
    if n <= 1 or array <= 0:
        return NOTHING
    times = gathers(kind)
    bandwidth_s = times * array * (n - 1) / n / bandwidth
    formula = (
        f"max({steps:g} steps x {latency:.3g} s, {times} x {format_bytes(int(array))} x {n - 1}/{n}"
        f" / {bandwidth:.3g} B/s {link})"
    )
    return _time(bandwidth_s, steps * latency, formula, link, bandwidth, what)


def send_time(array: float, bandwidth: float, steps: float, latency: float, link: str, what: str = "") -> CommTime:
    """Bytes each device sends over its own link at ``bandwidth`` (an all-to-all's share, a permute)."""
    if array <= 0:
        return NOTHING
    formula = f"max({steps:g} steps x {latency:.3g} s, {format_bytes(int(array))} / {bandwidth:.3g} B/s {link})"
    return _time(array / bandwidth, steps * latency, formula, link, bandwidth, what)


def combine(parts: Sequence[CommTime], how: str) -> CommTime:
    """One collective made of ``parts`` on different links: their sum (``how="sum"``: phases that run
    one after another) or the largest (``"max"``: levels that run at once, pipelined)."""
    parts = [p for p in parts if p.seconds > 0]
    if not parts:
        return NOTHING
    if len(parts) == 1:
        return parts[0]
    total = sum(p.seconds for p in parts) if how == "sum" else max(p.seconds for p in parts)
    slowest = max(parts, key=lambda p: p.seconds)
    links = "+".join(dict.fromkeys(p.link for p in parts))
    joined = " + ".join if how == "sum" else (lambda xs: "max(" + ", ".join(xs) + ")")
    formula = joined([f"{p.what or p.link}: {p.seconds * 1e6:.3g} us" for p in parts])
    bandwidth_s = sum(p.bandwidth_s for p in parts) if how == "sum" else slowest.bandwidth_s
    latency_s = sum(p.latency_s for p in parts) if how == "sum" else slowest.latency_s
    return CommTime(total, bandwidth_s, latency_s, formula, links, slowest.bandwidth, "", tuple(parts), how)
