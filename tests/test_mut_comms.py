"""plan/comms.py's models worked by hand, down to the formula each time shows.

The figures follow the formulas of "How to Scale Your Model" as docs/planning.md
writes them out: a closed ring of ``n`` carries ``(n // 2) / n`` of ``V`` on its
busiest direction in ``n // 2`` hops, an open one ``(N - 1) / N`` in ``n - 1``
hops; an all-reduce is two gathers; an all-to-all is bounded by its bisection.
These tests came from mutation testing (docs/mutation.md): each pins a figure or
a word a user reads that the older tests let change.
"""

from __future__ import annotations

import pytest

from shardviz.plan.comms import (
    NOTHING,
    CommTime,
    Ring,
    array_bytes,
    combine,
    gathers,
    line_time,
    send_time,
    torus_all_to_all,
    torus_time,
)

MIB = 1024 * 1024
ICI = 4.5e10
DCN = 3.125e9


def test_a_ring_counts_its_hops_to_the_farthest_chip() -> None:
    assert Ring(8, closes=True).hops == 4
    assert Ring(8, closes=False).hops == 7
    assert Ring(8, closes=True, stride=2).hops == 8
    assert Ring(5, closes=True).hops == 2
    assert Ring(1, closes=False).hops == 0


def test_a_ring_names_its_size_whether_it_closes_and_its_stride() -> None:
    assert Ring(8, closes=True).label == "8"
    assert Ring(8, closes=False).label == "8 open"
    assert Ring(8, closes=True, stride=2).label == "8 every 2"
    assert Ring(4, closes=False, stride=3).label == "4 open every 3"
    assert Ring(4, closes=True, stride=1).label == "4"


def test_a_time_is_latency_bound_only_when_latency_is_longer() -> None:
    assert CommTime(2.0, 1.0, 2.0, "").bound == "latency"
    assert CommTime(2.0, 2.0, 1.0, "").bound == "bandwidth"
    assert CommTime(1.0, 1.0, 1.0, "").bound == "bandwidth"
    assert NOTHING.seconds == 0.0 and NOTHING.bandwidth_s == 0.0 and NOTHING.latency_s == 0.0
    assert NOTHING.link == "" and NOTHING.parts == () and NOTHING.combined_by == ""


def test_an_all_reduce_is_two_gathers_and_every_other_kind_one() -> None:
    assert gathers("all-reduce") == 2
    for kind in ("all-gather", "reduce-scatter", "all-to-all", "collective-broadcast", "collective-permute"):
        assert gathers(kind) == 1


def test_v_is_the_group_times_the_result_for_a_reduce_scatter_and_an_all_to_all() -> None:
    assert array_bytes("reduce-scatter", 100.0, 8) == 800.0
    assert array_bytes("all-to-all", 100.0, 8) == 800.0
    assert array_bytes("ragged-all-to-all", 100.0, 4) == 400.0
    assert array_bytes("all-gather", 100.0, 8) == 100.0
    assert array_bytes("all-reduce", 100.0, 8) == 100.0


def test_an_all_reduce_round_a_closed_ring_of_four() -> None:
    # (4 // 2) / 4 = a half of V on the busiest direction, twice; 2 hops, twice.
    timed = torus_time("all-reduce", MIB, [Ring(4, closes=True)], ICI, 1e-6, what="inside")
    assert timed.bandwidth_s == pytest.approx(2 * MIB * 0.5 / ICI)
    assert timed.latency_s == pytest.approx(4 * 1e-6)
    assert timed.seconds == pytest.approx(2 * MIB * 0.5 / ICI)
    assert (timed.link, timed.bandwidth, timed.what) == ("ICI", ICI, "inside")
    assert timed.formula == "max(4 hops x 1e-06 s, 2 x 1.0 MiB x 0.5 / (1 ring x 4.5e+10 B/s)) on ICI rings 4"


def test_an_all_gather_over_two_open_rings_shares_the_group_between_them() -> None:
    # N = 4 x 2 = 8 open: each ring's busiest link carries 7/8 of V, over two rings' links;
    # hops 3 + 1. A ring of one chip is no ring at all.
    rings = [Ring(4, closes=False), Ring(1, closes=False), Ring(2, closes=False)]
    timed = torus_time("all-gather", 8 * MIB, rings, ICI, 1e-6)
    assert timed.bandwidth_s == pytest.approx(8 * MIB * 7 / 8 / (2 * ICI))
    assert timed.latency_s == pytest.approx(4e-6)
    assert (
        timed.formula
        == "max(4 hops x 1e-06 s, 1 x 8.0 MiB x 0.875 / (2 ring x 4.5e+10 B/s)) on ICI rings 4 open x 2 open"
    )


def test_a_strided_ring_carries_its_share_stride_times_over() -> None:
    timed = torus_time("all-gather", MIB, [Ring(4, closes=True, stride=2)], ICI, 1e-6)
    assert timed.bandwidth_s == pytest.approx(MIB * 0.5 * 2 / ICI)
    assert timed.latency_s == pytest.approx(4e-6)


def test_a_tiny_gather_is_latency_bound() -> None:
    timed = torus_time("all-gather", 64, [Ring(8, closes=True)], ICI, 1e-6)
    assert timed.seconds == pytest.approx(4e-6) and timed.bound == "latency"


def test_nothing_to_move_or_no_ring_costs_nothing() -> None:
    assert torus_time("all-gather", 0, [Ring(4, closes=True)], ICI, 1e-6) is NOTHING
    assert torus_time("all-gather", MIB, [Ring(1, closes=True)], ICI, 1e-6) is NOTHING
    assert torus_time("all-gather", MIB, [], ICI, 1e-6) is NOTHING
    assert torus_all_to_all(0, [Ring(4, closes=True)], ICI, 1e-6) is NOTHING
    assert torus_all_to_all(MIB, [Ring(1, closes=False)], ICI, 1e-6) is NOTHING
    assert line_time("all-gather", MIB, 1, DCN, 1, 1e-5, "DCN") is NOTHING
    assert line_time("all-gather", 0, 4, DCN, 3, 1e-5, "DCN") is NOTHING
    assert send_time(0, DCN, 1, 1e-5, "DCN") is NOTHING
    assert send_time(-1, DCN, 1, 1e-5, "DCN") is NOTHING


def test_an_all_to_all_round_a_closed_ring_crosses_its_bisection_both_ways() -> None:
    # Cutting a ring of 8 in halves: 4 x 4 / 64 = a quarter of V crosses, over 2 links.
    timed = torus_all_to_all(8 * MIB, [Ring(8, closes=True)], ICI, 1e-6, what="swap")
    assert timed.bandwidth_s == pytest.approx(8 * MIB * 0.25 / (2 * ICI))
    assert timed.latency_s == pytest.approx(4e-6)
    assert (timed.link, timed.what) == ("ICI", "swap")
    assert timed.formula == (
        "max(4 hops x 1e-06 s, 8.0 MiB x 0.25 crosses the bisection / (2 links x 4.5e+10 B/s)) on ICI rings 8"
    )


def test_an_all_to_all_over_two_rings_counts_the_narrowest_cut() -> None:
    # Open 4 (of a group of 8): a quarter over 8 / 4 = 2 links; closed 2: a quarter over 2 x 4 = 8.
    timed = torus_all_to_all(MIB, [Ring(4, closes=False), Ring(2, closes=True)], ICI, 1e-6)
    assert timed.bandwidth_s == pytest.approx(MIB * 0.25 / (2 * ICI))
    assert timed.latency_s == pytest.approx((3 + 1) * 1e-6)
    # An odd ring: 1 x 2 / 9 of V crosses its one cut.
    odd = torus_all_to_all(MIB, [Ring(3, closes=False)], ICI, 1e-6)
    assert odd.bandwidth_s == pytest.approx(MIB * 2 / 9 / ICI)
    # A strided ring's cut crosses fewer links.
    strided = torus_all_to_all(MIB, [Ring(4, closes=True, stride=2)], ICI, 1e-6)
    assert strided.bandwidth_s == pytest.approx(MIB * 0.25 / (2 / 2 * ICI))


def test_a_line_of_four_peers_moves_three_quarters_per_gather() -> None:
    timed = line_time("all-reduce", 4 * MIB, 4, DCN, 3, 1e-5, "DCN", what="across")
    assert timed.bandwidth_s == pytest.approx(2 * 4 * MIB * 3 / 4 / DCN)
    assert timed.latency_s == pytest.approx(3e-5)
    assert (timed.link, timed.bandwidth, timed.what) == ("DCN", DCN, "across")
    assert timed.formula == "max(3 steps x 1e-05 s, 2 x 4.0 MiB x 3/4 / 3.12e+09 B/s DCN)"


def test_a_send_is_its_bytes_over_its_link() -> None:
    timed = send_time(2 * MIB, DCN, 1, 1e-5, "DCN", what="out")
    assert timed.bandwidth_s == pytest.approx(2 * MIB / DCN) and timed.latency_s == pytest.approx(1e-5)
    assert (timed.link, timed.bandwidth, timed.what) == ("DCN", DCN, "out")
    assert timed.formula == "max(1 steps x 1e-05 s, 2.0 MiB / 3.12e+09 B/s DCN)"


def _part(seconds: float, bandwidth_s: float, latency_s: float, link: str, what: str = "") -> CommTime:
    return CommTime(seconds, bandwidth_s, latency_s, "f", link, bandwidth=len(link), what=what)


def test_phases_one_after_another_add_up() -> None:
    inside = _part(2e-6, 2e-6, 1e-6, "ICI", "inside")
    across = _part(5e-6, 5e-6, 4e-6, "DCN", "across")
    back = _part(1e-6, 1e-6, 1e-7, "ICI")
    timed = combine([inside, across, back], "sum")
    assert timed.seconds == pytest.approx(8e-6)
    assert timed.bandwidth_s == pytest.approx(8e-6) and timed.latency_s == pytest.approx(5.1e-6)
    assert timed.link == "ICI+DCN" and timed.bandwidth == 3 and timed.combined_by == "sum"
    assert timed.parts == (inside, across, back) and timed.what == ""
    assert timed.formula == "inside: 2 us + across: 5 us + ICI: 1 us"


def test_levels_at_once_take_the_slowest() -> None:
    nvlink = _part(2e-6, 2e-6, 1e-6, "NVLink", "inside")
    infiniband = _part(5e-6, 3e-6, 5e-6, "InfiniBand", "across")
    timed = combine([nvlink, infiniband, NOTHING], "max")
    assert timed.seconds == pytest.approx(5e-6)
    assert timed.bandwidth_s == pytest.approx(3e-6) and timed.latency_s == pytest.approx(5e-6)
    assert timed.link == "NVLink+InfiniBand" and timed.bandwidth == len("InfiniBand") and timed.combined_by == "max"
    assert timed.parts == (nvlink, infiniband)
    assert timed.formula == "max(inside: 2 us, across: 5 us)"


def test_a_single_part_is_itself_and_no_parts_are_nothing() -> None:
    only = _part(2e-6, 2e-6, 1e-6, "ICI")
    assert combine([only, NOTHING], "sum") is only
    assert combine([NOTHING], "max") is NOTHING
    assert combine([], "sum") is NOTHING


def test_an_odd_closed_ring_carries_its_whole_half_of_chips_share() -> None:
    # A closed ring of 5: (5 // 2) / 5 = 2/5 of V on the busiest direction, in 2 hops.
    timed = torus_time("all-gather", MIB, [Ring(5, closes=True)], ICI, 1e-6)
    assert timed.bandwidth_s == pytest.approx(MIB * 2 / 5 / ICI) and timed.latency_s == pytest.approx(2e-6)


def test_the_narrowest_cut_counts_wherever_its_ring_comes() -> None:
    # Closed 2 first: a quarter over 2 x 8 / 2 = 8 links; open 4: a quarter over 8 / 4 = 2 links, the narrowest.
    timed = torus_all_to_all(MIB, [Ring(2, closes=True), Ring(4, closes=False)], ICI, 1e-6)
    assert timed.bandwidth_s == pytest.approx(MIB * 0.25 / (2 * ICI))
    assert timed.bandwidth == ICI
    assert timed.formula == (
        "max(4 hops x 1e-06 s, 1.0 MiB x 0.25 crosses the bisection / (2 links x 4.5e+10 B/s)) on ICI rings 2 x 4 open"
    )


def test_a_single_byte_still_takes_time_and_a_time_says_no_part_unless_told() -> None:
    ring = [Ring(4, closes=True)]
    for timed in (
        torus_time("all-gather", 1, ring, ICI, 1e-6),
        torus_all_to_all(1, ring, ICI, 1e-6),
        line_time("all-gather", 1, 4, DCN, 3, 1e-5, "DCN"),
        send_time(1, DCN, 1, 1e-5, "DCN"),
    ):
        assert timed is not NOTHING and timed.seconds > 0 and timed.bound == "latency"
        assert timed.what == ""
