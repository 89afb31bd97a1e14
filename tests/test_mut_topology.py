"""plan/topology.py's slice shapes and splits, counted by hand.

Google's published slice shapes (v5p 4x4x8, 8x16x16, 16x16x24; v5e 4x8, 8x16:
docs/planning.md) and ``create_hybrid_device_mesh``'s rule (the leading mesh axes
split across slices) give the expected figures. These tests came from mutation
testing (docs/mutation.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from shardviz.plan.topology import (
    Placement,
    Slices,
    _factorizations,
    _prime_factors,
    axis_layout,
    per_slice_shape,
    slice_shape,
    slices_for,
)

V5P_POD = (16, 20, 28)
V5E_POD = (16, 16)


def test_slices_take_googles_published_shapes() -> None:
    assert slice_shape(128, V5P_POD) == (4, 4, 8)
    assert slice_shape(2048, V5P_POD) == (8, 16, 16)
    assert slice_shape(6144, V5P_POD) == (16, 16, 24)
    assert slice_shape(32, V5E_POD) == (4, 8)
    assert slice_shape(128, V5E_POD) == (8, 16)
    assert slice_shape(256, V5E_POD) == (16, 16)
    assert slice_shape(7, V5E_POD) == (1, 7)
    assert slice_shape(1, V5E_POD) == (1, 1)
    assert slice_shape(64, (64,)) == (64,)
    # the smallest largest dimension first: 5x8x9 (largest 9) before 6x6x10 (largest 10)
    assert slice_shape(360, V5P_POD) == (5, 8, 9)


def test_a_count_no_slice_can_hold_has_no_shape() -> None:
    assert slice_shape(34, V5E_POD) is None  # 2 x 17: 17 is past the pod's 16
    assert slice_shape(512, V5E_POD) is None


def test_a_program_takes_one_slice_or_the_fewest_equal_ones() -> None:
    assert slices_for(256, V5E_POD, 256, None) == Slices(1, (16, 16))
    assert slices_for(512, V5E_POD, 256, None) == Slices(2, (16, 16))
    assert slices_for(96, V5E_POD, 32, None) == Slices(3, (4, 8))
    assert slices_for(34, V5E_POD, None, None) == Slices(17, (1, 2))
    assert slices_for(6, V5E_POD, 4, None) == Slices(2, (1, 3))
    assert slices_for(8, V5E_POD, None, None) == Slices(1, (2, 4))
    assert Slices(2, (4, 8)).chips == 32
    # a prime count past the largest slice: nothing but one chip divides it, so a chip per slice
    assert slices_for(257, V5E_POD, 256, None) == Slices(257, (1, 1))
    assert slices_for(17, (16,), 16, None) == Slices(17, (1,))
    assert slices_for(34, (16,), 16, None) == Slices(17, (2,))
    counts = [slices_for(512, V5E_POD, 256, None).count, slices_for(48, V5E_POD, 256, (4, 4)).count]
    assert counts == [2, 3] and all(type(c) is int for c in counts)


def test_a_named_slice_repeats_or_says_its_size() -> None:
    assert slices_for(48, V5E_POD, 256, (4, 4)) == Slices(3, (4, 4))
    assert slices_for(16, V5E_POD, 256, [4, 4]) == Slices(1, (4, 4))
    with pytest.raises(ValueError, match=r"^a slice of 16 chips \(4x4\)$"):
        slices_for(20, V5E_POD, 256, (4, 4))


def test_prime_factors() -> None:
    assert _prime_factors(12) == [2, 2, 3]
    assert _prime_factors(1) == []
    assert _prime_factors(97) == [97]
    assert _prime_factors(49) == [7, 7]
    assert _prime_factors(4) == [2, 2]
    assert all(type(p) is int for p in _prime_factors(2 * 3 * 7 * 7) + _prime_factors(2 * 97))


def test_every_way_to_write_a_count_as_ascending_factors() -> None:
    assert _factorizations(12, 2) == [(1, 12), (2, 6), (3, 4)]
    assert _factorizations(12, 3) == [(1, 1, 12), (1, 2, 6), (1, 3, 4), (2, 2, 3)]
    assert _factorizations(1, 3) == [(1, 1, 1)]
    assert _factorizations(2, 3) == [(1, 1, 2)]
    assert _factorizations(7, 1) == [(7,)]


def test_a_split_layout_counts_whole_chips() -> None:
    # 2 x 8 on a 4x4 torus: no whole dimension holds 8, so it spreads over parts of both
    layout = axis_layout((4, 4), (2, 8))
    assert np.issubdtype(layout.dtype, np.integer)
    assert layout.prod(axis=1).tolist() == [4, 4] and layout.prod(axis=0).tolist() == [2, 8]


def test_a_mesh_must_fill_its_torus() -> None:
    with pytest.raises(ValueError, match=r"^a mesh of 8 devices on a torus of 16$"):
        axis_layout((4, 4), (2, 4))


def test_the_leading_axes_split_across_slices() -> None:
    assert per_slice_shape((4, 8), 1) == (4, 8)
    assert per_slice_shape((4, 8), 2) == (2, 8)
    assert per_slice_shape((4, 8), 4) == (1, 8)
    assert per_slice_shape((4, 8), 8) == (1, 4)
    assert per_slice_shape((4, 8), 32) == (1, 1)
    assert per_slice_shape((6, 4), 4) == (6,)  # 4 slices cut the 6 into no whole blocks: one flat axis


def test_a_position_sits_in_its_block_of_slices() -> None:
    placement = Placement(Slices(2, (2, 2)), (2, 4))
    assert [placement.slice_of(p) for p in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    # Inside a slice, positions 4..7 sit where 0..3 do.
    assert [placement.coords(p) for p in range(4)] == [placement.coords(p + 4) for p in range(4)]
    assert sorted(placement.coords(p) for p in range(4)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
