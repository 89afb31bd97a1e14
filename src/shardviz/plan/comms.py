"""How long one collective takes on given links: the ring model of "How to
Scale Your Model" (jax-ml.github.io/scaling-book, "Sharded Matrices").

A group is one ring per mesh axis it spans. On a torus, a ring of ``n``
chips that closes (wraparound) sends half of the array each way in ``n // 2``
hops; one that does not closes needs ``n - 1`` hops in one direction. The
busiest link direction carries ``hops / n`` of the array, so an all-gather
of an array of ``V`` bytes per device takes

    max(hops x latency, V x hops/n / (axes x link))

(the book's ``max(T_min |X| / 2, V / W_ici)`` for a closed ring, ``V / (2 W)``
per extra axis, and ``(n - 1) V / n / W`` for an open one). A reduce-scatter
costs as the all-gather of its input, an all-reduce twice the all-gather of
its result, an all-to-all a quarter of it on closed rings and a half on open
ones. Through a switch (NVLink) or between nodes (InfiniBand, DCN) the group
is one open ring of ``n`` devices at that bandwidth per device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..text.ranges import format_bytes


@dataclass(frozen=True)
class Ring:
    """The part of a group along one mesh axis, as the hardware runs it."""

    size: int
    closes: bool

    @property
    def hops(self) -> int:
        return self.size // 2 if self.closes else self.size - 1

    @property
    def busiest_share(self) -> float:
        """The share of the array that crosses the busiest link direction."""
        return self.hops / self.size if self.size else 0.0


@dataclass(frozen=True)
class CommTime:
    """One run of a collective: its time, the two terms it is the larger of, and the formula."""

    seconds: float
    bandwidth_s: float
    latency_s: float
    formula: str


# How many all-gathers of the array each kind costs (all-to-all depends on the ring, see below).
_GATHERS = {"all-gather": 1.0, "reduce-scatter": 1.0, "all-reduce": 2.0, "collective-broadcast": 1.0}
_TO_ALL = ("all-to-all", "ragged-all-to-all")


def array_bytes(kind: str, result_bytes: int, group_size: int) -> int:
    """The array a collective's formula moves, per device: the input of a reduce-scatter, else the result."""
    return result_bytes * group_size if kind == "reduce-scatter" else result_bytes


def _gathers(kind: str, closed: bool, through_switch: bool) -> float:
    if kind in _TO_ALL:
        # each device keeps 1/n and sends the rest once: through a switch that is an all-gather's bytes;
        # on a ring, blocks go only part way round (the book: 1/4 of an all-gather closed, 1/2 open)
        return 1.0 if through_switch else (0.25 if closed else 0.5)
    return _GATHERS.get(kind, 1.0)


def _hop_runs(kind: str) -> int:
    return 2 if kind == "all-reduce" else 1  # a reduce-scatter then an all-gather


def torus_time(kind: str, array: float, rings: Sequence[Ring], link: float, latency: float) -> CommTime:
    """A collective over ``rings`` (one per mesh axis) of a torus with ``link`` B/s per direction."""
    rings = [r for r in rings if r.size > 1]
    if not rings or array <= 0:
        return CommTime(0.0, 0.0, 0.0, "0: a group of one device sends nothing")
    closed = all(r.closes for r in rings)
    gathers = _gathers(kind, closed, False)
    share = max(r.busiest_share for r in rings)
    bandwidth_s = gathers * array * share / (len(rings) * link)
    hops = _hop_runs(kind) * sum(r.hops for r in rings)
    latency_s = hops * latency
    ring_text = " x ".join(f"{r.size}{'' if r.closes else ' open'}" for r in rings)
    formula = (
        f"max({hops} hops x {latency:.3g} s, {gathers:g} x {format_bytes(int(array))} x {share:.3g}"
        f" / ({len(rings)} axis x {link:.3g} B/s)) on rings {ring_text}"
    )
    return CommTime(max(bandwidth_s, latency_s), bandwidth_s, latency_s, formula)


def ring_time(kind: str, array: float, n: int, bandwidth: float, latency: float, link_name: str) -> CommTime:
    """A collective of ``n`` devices as one open ring at ``bandwidth`` B/s each (a switch, or between nodes)."""
    if n <= 1 or array <= 0:
        return CommTime(0.0, 0.0, 0.0, "0: a group of one device sends nothing")
    gathers = _gathers(kind, False, True)
    share = (n - 1) / n
    bandwidth_s = gathers * array * share / bandwidth
    steps = _hop_runs(kind) * (n - 1)
    latency_s = steps * latency
    formula = (
        f"max({steps} steps x {latency:.3g} s, {gathers:g} x {format_bytes(int(array))} x {n - 1}/{n}"
        f" / {bandwidth:.3g} B/s {link_name})"
    )
    return CommTime(max(bandwidth_s, latency_s), bandwidth_s, latency_s, formula)


def permute_time(array: float, moves: bool, bandwidth: float, latency: float, link_name: str) -> CommTime:
    """A collective-permute: each device sends its block to one other device (one hop, one direction)."""
    if not moves or array <= 0:
        return CommTime(0.0, 0.0, 0.0, "0: every device keeps its own block")
    bandwidth_s = array / bandwidth
    formula = f"max({latency:.3g} s, {format_bytes(int(array))} / {bandwidth:.3g} B/s {link_name})"
    return CommTime(max(bandwidth_s, latency), bandwidth_s, latency, formula)
