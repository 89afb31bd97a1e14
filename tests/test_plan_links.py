"""Which links a collective's groups use and what each part costs, on hand-placed groups (docs/planning.md).

Each expectation is worked by hand from the formulas the docs give (the
book's ring, bisection and two-level models) for a layout written out here,
without tracing: mesh positions in mesh order, placed on a slice's torus or
on GPU nodes of 8.
"""

from __future__ import annotations

import pytest

from shardviz import HARDWARE, Hardware
from shardviz.plan.comms import NOTHING, CommTime, Ring, combine, line_time, send_time, torus_time
from shardviz.plan.links import GroupShape, _directions, layout_for, permute_run, run_time
from shardviz.plan.topology import Slices

LINK = 1e10
BLOCK = 1e6
RING16 = Hardware("ring16", 1e14, 1e12, LINK, torus=(16,), latency_s=1e-6)
V5E = HARDWARE["tpu-v5e"]
H100 = HARDWARE["h100"]
MIB = 2**20
TWO_NODES = layout_for(H100, (16,), None)


def _ring16():
    return layout_for(RING16, (16,), Slices(1, (16,)))


def test_a_permute_where_every_device_keeps_its_block_costs_nothing():
    assert permute_run(_ring16(), [(i, i) for i in range(16)], BLOCK) == CommTime(
        0.0, 0.0, 0.0, "0: every device keeps its own block"
    )
    assert permute_run(_ring16(), [(0, 1)], 0.0).seconds == 0.0


@pytest.mark.parametrize("step", [1, -1, 15])
def test_a_shift_round_a_closed_ring_loads_each_link_once_one_way(step):
    timed = permute_run(_ring16(), [(i, (i + step) % 16) for i in range(16)], BLOCK)
    assert timed.seconds == pytest.approx(BLOCK / LINK) and timed.link == "ICI" and timed.bandwidth == LINK
    assert timed.latency_s == pytest.approx(1e-6) and timed.formula.startswith("max(1 hops")


def test_a_send_halfway_round_a_closed_ring_goes_both_ways():
    timed = permute_run(_ring16(), [(3, 11)], BLOCK)
    assert timed.seconds == pytest.approx(BLOCK / 2 / LINK) and timed.latency_s == pytest.approx(8e-6)


def test_the_shorter_way_round_a_closed_ring():
    # 2 -> 14 is 4 hops backwards, 12 forwards: one block on four links, one way
    timed = permute_run(_ring16(), [(2, 14)], BLOCK)
    assert timed.seconds == pytest.approx(BLOCK / LINK) and timed.latency_s == pytest.approx(4e-6)
    # with 2 -> 4 going forwards at once, the two blocks share no link direction
    both = permute_run(_ring16(), [(2, 14), (5, 7)], BLOCK)
    assert both.seconds == pytest.approx(BLOCK / LINK)
    # 4 -> 2 backwards and 2 -> 0 backwards: disjoint too; 4 -> 1 and 3 -> 0 share links 3-2 and 2-1
    assert permute_run(_ring16(), [(4, 1), (3, 0)], BLOCK).seconds == pytest.approx(2 * BLOCK / LINK)


def test_a_shift_along_an_open_line_comes_back_the_long_way():
    # a v5e 4x4 has no wraparound: 3 -> 0 goes back over three links, the others one link forward
    layout = layout_for(V5E, (4, 4), Slices(1, (4, 4)))
    pairs = [(4 * r + c, 4 * r + (c + 1) % 4) for r in range(4) for c in range(4)]
    timed = permute_run(layout, pairs, BLOCK)
    assert timed.seconds == pytest.approx(BLOCK / 4.5e10) and timed.latency_s == pytest.approx(3e-6)


def test_a_corner_to_corner_send_splits_over_both_first_hops():
    # tpus.md Q5: TPU{0,0} to TPU{3,3} on a v5e 4x4, half right and half down, 6 hops
    layout = layout_for(V5E, (4, 4), Slices(1, (4, 4)))
    timed = permute_run(layout, [(0, 15)], BLOCK)
    assert timed.seconds == pytest.approx(BLOCK / 2 / 4.5e10) and timed.latency_s == pytest.approx(6e-6)
    assert timed.what == "sends inside the slice"
    # and from 15 back to 0 the other way round
    assert permute_run(layout, [(15, 0)], BLOCK).seconds == pytest.approx(BLOCK / 2 / 4.5e10)


def test_sends_between_slices_go_over_dcn_at_each_chips_share():
    layout = layout_for(V5E, (2, 16, 16), Slices(2, (16, 16)))
    across = permute_run(layout, [(i, 256 + i) for i in range(256)], BLOCK)
    assert across.link == "DCN" and across.seconds == pytest.approx(max(BLOCK / 3.125e9, 1e-5))
    both = permute_run(layout, [(0, 256), (1, 2)], BLOCK)
    assert both.link == "ICI+DCN" and both.combined_by == "max"
    assert both.seconds == pytest.approx(BLOCK / 3.125e9)


def test_gpu_sends_inside_a_node_use_nvlink_and_between_nodes_the_nic():
    layout = layout_for(H100, (16,), None)
    inside = permute_run(layout, [(i, i ^ 1) for i in range(16)], BLOCK)
    assert inside.link == "NVLink" and inside.seconds == pytest.approx(max(BLOCK / 4.5e11, 2e-6))
    across = permute_run(layout, [(i, (i + 8) % 16) for i in range(16)], BLOCK)
    assert across.link == "InfiniBand" and across.seconds == pytest.approx(BLOCK / 5e10)
    both = permute_run(layout, [(0, 1), (2, 9)], BLOCK)
    assert both.link == "NVLink+InfiniBand" and both.seconds == pytest.approx(BLOCK / 5e10)


def test_a_gpu_groups_shape_counts_its_gpus_per_node_and_nodes():
    layout = layout_for(H100, (4, 8), None)
    assert layout.group_shape(range(8)) == GroupShape((), 8, 1)
    assert layout.group_shape(range(0, 32, 8)) == GroupShape((), 1, 4)
    assert layout.group_shape([0, 1, 8, 9]) == GroupShape((), 2, 2)


def test_a_tpu_groups_rings_follow_the_torus():
    layout = layout_for(V5E, (16, 16), Slices(1, (16, 16)))
    # model (the last axis) lies along torus dimension 0, data along dimension 1: both whole, both closed
    assert layout.group_shape(range(16)) == GroupShape((Ring(16, True),), 16, 1)
    assert layout.group_shape(range(0, 256, 16)) == GroupShape((Ring(16, True),), 16, 1)
    # four neighbours of a wrapped dimension: an open line; every 4th chip round it: a closed ring, stride 4
    assert layout.group_shape(range(4)) == GroupShape((Ring(4, False),), 4, 1)
    assert layout.group_shape(range(0, 16, 4)) == GroupShape((Ring(4, True, 4),), 4, 1)
    # no box of chips: one open ring of them all
    assert layout.group_shape([0, 1, 17]) == GroupShape((Ring(3, False),), 3, 1)


def test_a_group_over_two_slices_reduces_inside_then_across_then_gathers_back():
    shape = GroupShape((Ring(16, True), Ring(16, True)), 256, 2)
    v = 1e8
    timed = run_time(layout_for(V5E, (2, 16, 16), Slices(2, (16, 16))), "all-reduce", v, v, shape)
    inside = torus_time("reduce-scatter", v, shape.rings, 4.5e10, 1e-6)
    across = line_time("all-reduce", v / 256, 2, 3.125e9, 2, 1e-5, "DCN")
    assert [p.what for p in timed.parts] == [
        "reduce-scatter inside the slice",
        "all-reduce of the 1/256 share between 2 slices",
        "all-gather inside the slice",
    ]
    assert timed.seconds == pytest.approx(2 * inside.seconds + across.seconds) and timed.combined_by == "sum"
    gathered = run_time(layout_for(V5E, (2, 16, 16), Slices(2, (16, 16))), "all-gather", v, v, shape)
    assert [p.link for p in gathered.parts] == ["DCN", "ICI"]
    scattered = run_time(layout_for(V5E, (2, 16, 16), Slices(2, (16, 16))), "reduce-scatter", v, v, shape)
    assert [p.link for p in scattered.parts] == ["ICI", "DCN"]
    assert scattered.seconds == pytest.approx(gathered.seconds)


def test_an_all_to_all_over_slices_runs_both_parts_at_once():
    layout = layout_for(V5E, (2, 16, 16), Slices(2, (16, 16)))
    shape = GroupShape((Ring(16, True),), 16, 2)
    block = 1e6
    timed = run_time(layout, "all-to-all", 32 * block, block, shape)
    # inside: the 1/2 of each block for the slice's 16 chips crosses a closed ring's bisection (V/4 over 2 links)
    assert timed.parts[0].seconds == pytest.approx(16 * block / 2 / 4 / (2 * 4.5e10))
    assert timed.parts[1].seconds == pytest.approx(block / 2 / 3.125e9)
    assert timed.seconds == pytest.approx(timed.parts[1].seconds) and timed.combined_by == "max"


def test_gpu_levels_run_at_once_and_the_slower_bounds():
    layout = layout_for(H100, (32,), None)
    v = 1e9
    timed = run_time(layout, "all-reduce", v, v, GroupShape((), 8, 4))
    inside, across = timed.parts
    assert inside.seconds == pytest.approx(2 * v * 7 / 8 / 4.5e11)
    assert across.seconds == pytest.approx(2 * (v / 8) * 3 / 4 / 5e10) and across.what.endswith("between 4 nodes")
    assert timed.seconds == max(inside.seconds, across.seconds)
    # latency: a chain of 7 NVLink steps inside, a tree of log2(4) = 2 InfiniBand steps, twice for an all-reduce
    tiny = run_time(layout, "all-reduce", 8.0, 8.0, GroupShape((), 8, 4))
    assert tiny.seconds == pytest.approx(max(2 * 7 * 2e-6, 2 * 2 * 5e-6))
    gather = run_time(layout, "all-gather", 8.0, 8.0, GroupShape((), 1, 32))
    assert gather.seconds == pytest.approx(5 * 5e-6) and gather.link == "InfiniBand"


def test_a_gpu_all_to_all_sends_each_gpus_share_over_its_own_links():
    layout = layout_for(H100, (16,), None)
    block = 1e6
    timed = run_time(layout, "all-to-all", 16 * block, block, GroupShape((), 8, 2))
    assert timed.parts[0].seconds == pytest.approx(max(block * 7 / 16 / 4.5e11, 2e-6))
    assert timed.parts[1].seconds == pytest.approx(block / 2 / 5e10)
    one_node = run_time(layout, "all-to-all", 80 * block, 10 * block, GroupShape((), 8, 1))
    assert one_node.link == "NVLink" and one_node.seconds == pytest.approx(10 * block * 7 / 8 / 4.5e11)


def test_a_group_of_one_sends_nothing():
    layout = layout_for(V5E, (16, 16), Slices(1, (16, 16)))
    assert run_time(layout, "all-reduce", 1e6, 1e6, GroupShape((), 1, 1)) is NOTHING
    assert run_time(layout, "all-reduce", 0.0, 0.0, GroupShape((Ring(16, True),), 16, 1)) is NOTHING
    assert torus_time("all-gather", 1e6, [Ring(1, False)], LINK, 0.0) is NOTHING
    assert line_time("all-gather", 1e6, 1, LINK, 0, 0.0, "DCN") is NOTHING
    assert send_time(0.0, LINK, 1, 1e-6, "DCN") is NOTHING


def test_parts_add_up_in_turn_or_the_slowest_bounds():
    a = CommTime(3.0, 3.0, 1.0, "a", "ICI", 1.0, "first")
    b = CommTime(2.0, 0.5, 2.0, "b", "DCN", 2.0, "second")
    added = combine([a, b], "sum")
    assert (added.seconds, added.bandwidth_s, added.latency_s) == (5.0, 3.5, 3.0)
    assert added.link == "ICI+DCN" and added.bandwidth == 1.0 and added.parts == (a, b)
    assert added.formula == "first: 3e+06 us + second: 2e+06 us"
    slowest = combine([a, b], "max")
    assert (slowest.seconds, slowest.bandwidth_s, slowest.latency_s) == (3.0, 3.0, 1.0)
    assert slowest.formula == "max(first: 3e+06 us, second: 2e+06 us)" and slowest.combined_by == "max"
    assert combine([a], "sum") is a and combine([NOTHING, a], "sum") is a and combine([], "max") is NOTHING
    assert a.bound == "bandwidth" and b.bound == "latency"


def test_routes_that_share_links_add_up():
    ring = _ring16()
    # two sends halfway round share the forward links 1..7 and the backward ones 1, 0, 15..10
    assert permute_run(ring, [(0, 8), (1, 9)], BLOCK).seconds == pytest.approx(BLOCK / LINK)
    # 0 -> 3 and 1 -> 4 share the forward links out of 1 and 2
    assert permute_run(ring, [(0, 3), (1, 4)], BLOCK).seconds == pytest.approx(2 * BLOCK / LINK)
    # 4 -> 1 backwards and 2 -> 0 backwards share the link out of 2
    shared = permute_run(ring, [(4, 1), (2, 0)], BLOCK)
    assert shared.seconds == pytest.approx(2 * BLOCK / LINK) and shared.bandwidth_s == pytest.approx(2 * BLOCK / LINK)
    assert shared.bound == "bandwidth" and shared.latency_s == pytest.approx(3e-6)
    tiny = permute_run(ring, [(0, 1)], 1.0)
    assert tiny.seconds == pytest.approx(1e-6) and tiny.bound == "latency"


def test_a_route_crosses_every_dimension_it_must_in_turn():
    # a 4x4x4 without wraparound: (0,0,0) -> (1,0,2) starts along dimension 0 or 2 (half each); with
    # (1,0,0) -> (1,0,2) on the link out of (1,0,0) along dimension 2, that link carries 1.5 blocks
    hw = Hardware("cube", 1e14, 1e12, LINK, torus=(4, 4, 4), wraparound=False, latency_s=0.0)
    layout = layout_for(hw, (4, 4, 4), Slices(1, (4, 4, 4)))
    at = {layout.coords(p): p for p in range(64)}
    pairs = [(at[(0, 0, 0)], at[(1, 0, 2)]), (at[(1, 0, 0)], at[(1, 0, 2)])]
    assert permute_run(layout, pairs, BLOCK).seconds == pytest.approx(1.5 * BLOCK / LINK)


def test_sends_out_of_a_slice_or_node_say_so_and_take_one_step():
    slices = layout_for(V5E, (2, 16, 16), Slices(2, (16, 16)))
    (across,) = [permute_run(slices, [(0, 256)], 8.0)]
    assert across.what == "sends between slices" and across.seconds == pytest.approx(1e-5)
    gpus = layout_for(H100, (16,), None)
    inside = permute_run(gpus, [(1, 2)], 8.0)  # inside node 0, though 1 is no multiple of 8
    assert inside.link == "NVLink" and inside.what == "sends inside a node" and inside.seconds == pytest.approx(2e-6)
    out = permute_run(gpus, [(1, 9)], 8.0)
    assert out.what == "sends between nodes" and out.seconds == pytest.approx(5e-6)
    both = permute_run(gpus, [(1, 2), (3, 12)], BLOCK)
    assert both.combined_by == "max" and [p.what for p in both.parts] == ["sends inside a node", "sends between nodes"]
    # slices with no network figures of their own: the fast link's bandwidth
    plain = Hardware("plain", 1e14, 1e12, LINK, torus=(4,), latency_s=0.0, topology=(4,))
    assert permute_run(layout_for(plain, (8,), Slices(2, (4,))), [(0, 4)], BLOCK).seconds == pytest.approx(BLOCK / LINK)


# GPU nodes' parts named, timed and combined (from mutation testing, docs/mutation.md): H100 links as
# published (NVLink 4.5e11 B/s per GPU each way, one 5e10 B/s NIC per GPU, nodes of 8; 2 us a NVLink
# step, 5 us an InfiniBand one)
def _parts(timed):
    return [(p.what, p.link, p.seconds, p.bandwidth_s, p.latency_s) for p in timed.parts]


def test_an_all_to_all_over_two_nodes_sends_inside_on_nvlink_and_half_its_block_on_infiniband():
    # each GPU holds 1 MiB; 7/16 of it goes to the other GPUs of its node, 1/2 to the other node
    timed = run_time(TWO_NODES, "all-to-all", 16 * MIB, MIB, TWO_NODES.group_shape(range(16)))
    inside_bytes, across_bytes = MIB * 7 / 16, MIB / 2
    assert _parts(timed) == [
        ("all-to-all inside the node", "NVLink", 2e-6, pytest.approx(inside_bytes / 4.5e11), 2e-6),
        ("all-to-all between 2 nodes", "InfiniBand", pytest.approx(across_bytes / 5e10), pytest.approx(across_bytes / 5e10), 5e-6),
    ]  # fmt: skip
    assert timed.combined_by == "max" and timed.seconds == pytest.approx(across_bytes / 5e10)
    assert timed.link == "NVLink+InfiniBand"
    assert timed.formula == "max(all-to-all inside the node: 2 us, all-to-all between 2 nodes: 10.5 us)"


@pytest.mark.parametrize(("kind", "gathers"), [("all-gather", 1), ("all-reduce", 2)])
def test_a_gather_over_two_whole_nodes_moves_each_gpus_eighth_between_them(kind, gathers):
    v = 16 * MIB
    timed = run_time(TWO_NODES, kind, v, v, TWO_NODES.group_shape(range(16)))
    inside = gathers * v * 7 / 8 / 4.5e11  # a chain of 8 on NVLink, 7 steps a gather
    across = gathers * (v / 8) * 1 / 2 / 5e10  # each GPU's 1/8 share, a ring of the 2 nodes
    assert _parts(timed) == [
        (f"{kind} inside the node", "NVLink", pytest.approx(inside), pytest.approx(inside), pytest.approx(gathers * 7 * 2e-6)),
        (f"{kind} of the 1/8 share between 2 nodes", "InfiniBand", pytest.approx(across), pytest.approx(across), pytest.approx(gathers * 5e-6)),
    ]  # fmt: skip
    assert timed.combined_by == "max" and timed.seconds == pytest.approx(inside)


def test_a_group_of_one_gpu_per_node_is_one_infiniband_ring_named_without_a_share():
    timed = run_time(TWO_NODES, "all-gather", MIB, MIB, TWO_NODES.group_shape([0, 8]))
    assert (timed.what, timed.link, timed.parts) == ("all-gather between 2 nodes", "InfiniBand", ())
    assert timed.seconds == pytest.approx(MIB / 2 / 5e10)


@pytest.mark.parametrize(
    ("start", "end", "size", "wraps", "expected"),
    [
        (2, 2, 4, True, ((), 0)),  # no move
        (0, 2, 4, True, ((1, -1), 2)),  # halfway round a closed ring of 4: both ways are as short
        (0, 3, 4, True, ((-1,), 1)),  # one hop back over the wraparound link
        (0, 1, 4, True, ((1,), 1)),
        (3, 1, 4, False, ((-1,), 2)),  # an open line goes the only way there is
        (1, 3, 4, False, ((1,), 2)),
    ],
)
def test_a_send_along_one_dimension_takes_the_shortest_ways_and_counts_its_hops(start, end, size, wraps, expected):
    assert _directions(start, end, size, wraps) == expected


def test_an_all_to_all_over_two_v5e_slices_crosses_each_bisection_then_sends_half_over_dcn():
    layout = layout_for(V5E, (512,), Slices(2, (16, 16)))
    timed = run_time(layout, "all-to-all", 512 * MIB, MIB, layout.group_shape(range(512)))
    # inside: the slice's 256 MiB over 2 slices' worth, a quarter crossing the cut of a closed 16 ring
    # over 2 x 16 links; across: half of each chip's block at its 3.125e9 B/s share of DCN, one step
    inside = 256 * MIB / 2 * (8 * 8 / 16**2) / (2 * 16 * 4.5e10)
    assert [(p.what, p.link) for p in timed.parts] == [
        ("all-to-all inside the slice", "ICI"),
        ("all-to-all between 2 slices", "DCN"),
    ]
    assert [p.seconds for p in timed.parts] == [pytest.approx(inside), pytest.approx(MIB / 2 / 3.125e9)]
    assert timed.combined_by == "max" and timed.parts[1].latency_s == 1e-5


@pytest.mark.parametrize(
    ("kind", "order"), [("all-gather", ("between", "inside")), ("reduce-scatter", ("inside", "between"))]
)
def test_a_gather_over_two_chips_in_each_of_two_slices_runs_its_phases_one_after_the_other(kind, order):
    # mesh (4, 128) on two v5e slices: each slice holds (2, 128); on its 16x16 torus the 128 takes
    # 16 x 8 and the 2 the major half of the second dimension, so a slice's two chips of the axis of 4
    # sit 8 apart on a closed ring of 16: a closed ring of 2 with stride 8 (8 hops, a link carrying
    # 1/2 x 8 of V). Between the slices, each chip's 1/2 share goes one step over DCN.
    layout = layout_for(V5E, (4, 128), Slices(2, (16, 16)))
    shape = layout.group_shape([0, 128, 256, 384])
    assert shape == GroupShape((Ring(2, True, 8),), 2, 2)
    timed = run_time(layout, kind, MIB, MIB / 4, shape)
    parts = {
        "inside": (f"{kind} inside the slice", pytest.approx(MIB * 4 / 4.5e10)),
        "between": (f"{kind} of the 1/2 share between 2 slices", pytest.approx(MIB / 2 / 2 / 3.125e9)),
    }
    assert [(p.what, p.seconds) for p in timed.parts] == [parts[name] for name in order]
    assert timed.combined_by == "sum" and timed.seconds == pytest.approx(MIB * 4 / 4.5e10 + MIB / 4 / 3.125e9)


def test_two_neighbouring_chips_form_a_ring_and_a_single_byte_still_pays_the_hop():
    # v5e 4x4: no wraparound on a dimension of 4; positions 4 and 12 are chips (0, 1) and (0, 3)
    layout = layout_for(V5E, (4, 4), Slices(1, (4, 4)))
    pair = layout.group_shape([0, 1])
    assert pair == GroupShape((Ring(2, False),), 2, 1)
    assert run_time(layout, "all-gather", MIB, MIB, pair).seconds == pytest.approx(MIB / 2 / 4.5e10)
    apart = layout.group_shape([4, 12])
    assert apart == GroupShape((Ring(2, False, 2),), 2, 1)  # two chips two hops apart, not starting at 0
    assert run_time(layout, "all-gather", 1.0, 1.0, apart).seconds == pytest.approx(2e-6)
    assert run_time(layout, "all-gather", 1.0, 1.0, layout.group_shape([0, 1, 2, 3])).seconds == pytest.approx(3e-6)


def test_a_part_with_one_chip_per_slice_is_named_without_a_share_and_two_per_node_with_theirs():
    slices = layout_for(V5E, (512,), Slices(2, (16, 16)))
    across = run_time(slices, "all-gather", MIB, MIB, slices.group_shape([0, 256]))
    assert (across.what, across.link, across.parts) == ("all-gather between 2 slices", "DCN", ())
    timed = run_time(TWO_NODES, "all-gather", MIB, MIB, TWO_NODES.group_shape([0, 1, 8, 9]))
    assert [p.what for p in timed.parts] == [
        "all-gather inside the node",
        "all-gather of the 1/2 share between 2 nodes",
    ]
