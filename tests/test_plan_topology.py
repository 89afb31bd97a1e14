"""Slices and their torus: mesh axes placed as JAX's create_device_mesh places them, slice shapes as
Google publishes them, programs larger than a slice split over several (docs/planning.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from jax._src import mesh_utils  # JAX's own placement, to compare with

from shardviz import HARDWARE, ShardingError
from shardviz.plan.hardware import hardware_named
from shardviz.plan.topology import Placement, Slices, per_slice_shape, physical_positions, slice_shape, slices_for

# (8, 4, 2): an axis of 8 can take the whole 8 or the whole 4 and 2; JAX prefers more whole dimensions
TORI = [(4, 4, 4), (4, 4, 8), (2, 4, 4), (8, 16, 16), (16, 16, 24), (16, 16), (8, 16), (4, 8), (2, 2, 1), (8, 4, 2)]


def _mesh_shapes(chips: int) -> list[tuple[int, ...]]:
    divisors = [d for d in range(1, chips + 1) if chips % d == 0]
    shapes = {(chips,)} | {(a, chips // a) for a in divisors}
    shapes |= {(a, b, chips // a // b) for a in divisors for b in divisors if (chips // a) % b == 0}
    return sorted(shapes)


@pytest.mark.parametrize("torus", TORI, ids=lambda t: "x".join(map(str, t)))
def test_mesh_axes_land_where_create_device_mesh_puts_them(torus):
    chips = math.prod(torus)
    compared = 0
    for shape in _mesh_shapes(chips):
        physical = np.arange(chips).reshape(torus)
        try:
            expected, _ = mesh_utils._create_device_mesh_for_nd_torus(physical, shape, allow_split_physical_axes=True)
        except (NotImplementedError, ValueError):
            continue
        np.testing.assert_array_equal(physical_positions(torus, shape), expected, err_msg=str(shape))
        compared += 1
    assert compared > 5


def test_an_axis_longer_than_a_torus_dimension_folds_over_two():
    # data=16, model=256 on a v5p 16x16x16 slice: model takes two whole dimensions (16 x 16)
    placement = Placement(Slices(1, (16, 16, 16)), (16, 256))
    row = [placement.coords(p) for p in range(256)]  # data 0, every model position
    varying = [d for d in range(3) if len({c[d] for c in row}) > 1]
    assert len(varying) == 2 and all(len({c[d] for c in row}) == 16 for d in varying)


def test_slice_shapes_are_googles():
    # cloud.google.com/tpu/docs/v5p: 2x2x2, 2x4x4, 4x4x4, 4x4x8, 4x8x8, 8x8x8, 8x8x16, 8x16x16, 16x16x16, 16x16x24
    v5p = (16, 20, 28)
    expected = {8: (2, 2, 2), 32: (2, 4, 4), 64: (4, 4, 4), 128: (4, 4, 8), 256: (4, 8, 8), 512: (8, 8, 8),
                1024: (8, 8, 16), 2048: (8, 16, 16), 4096: (16, 16, 16), 6144: (16, 16, 24)}  # fmt: skip
    assert {chips: slice_shape(chips, v5p) for chips in expected} == expected
    # v5e and v6e (tpu/docs/v5e): 2x4, 4x4, 4x8, 8x8, 8x16, 16x16
    assert [slice_shape(n, (16, 16)) for n in (8, 16, 32, 64, 128, 256)] == [
        (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)
    ]  # fmt: skip
    assert slice_shape(512, (16, 16)) is None


def test_programs_past_the_largest_slice_run_on_several():
    v5p = HARDWARE["tpu-v5p"]
    assert v5p.node_size == 6144  # Google: "The largest job that can be scheduled is a 96 cube (6144 chip) job"
    assert slices_for(6144, v5p.torus, v5p.node_size, None) == Slices(1, (16, 16, 24))
    assert slices_for(8192, v5p.torus, v5p.node_size, None) == Slices(2, (16, 16, 16))
    assert slices_for(8960, v5p.torus, v5p.node_size, None).count == 2
    assert slices_for(512, (16, 16), 256, None) == Slices(2, (16, 16))
    assert slices_for(4096, (16, 16), 256, (8, 16)) == Slices(32, (8, 16))
    with pytest.raises(ValueError, match="128 chips"):
        slices_for(96, (16, 16), 256, (8, 16))


def test_slices_take_the_leading_mesh_axes():
    assert per_slice_shape((2, 16, 16), 2) == (1, 16, 16)
    assert per_slice_shape((512, 16), 2) == (256, 16)
    assert per_slice_shape((4, 4, 16), 8) == (1, 2, 16)
    assert per_slice_shape((3, 4), 2) == (6,)  # no box of the mesh: one flat axis


def test_a_named_slice():
    hw = hardware_named("tpu-v5p-8x16x16")
    assert hw.topology == (8, 16, 16) and hw.name == "tpu-v5p-8x16x16"
    assert hardware_named("TPU-v5e-8x16").topology == (8, 16)
    with pytest.raises(ShardingError, match="6,144 chips"):
        hardware_named("tpu-v5p-16x20x28")  # a whole pod is no single slice
    with pytest.raises(ShardingError, match="3 dimensions"):
        hardware_named("tpu-v5p-16x16")
    with pytest.raises(ShardingError, match="unknown hardware"):
        hardware_named("h100-8x8")


def test_which_slices_have_wraparound_links():
    v5p, v5e = HARDWARE["tpu-v5p"], HARDWARE["tpu-v5e"]
    # tpus.md: v4/v5p wrap only on whole 4x4x4 cubes (a 2x4x4 has none); v5e/v6e on a dimension of 16
    assert not any(v5p.dim_wraps((2, 4, 4), d) for d in range(3))
    assert all(v5p.dim_wraps((4, 4, 8), d) for d in range(3))
    assert [v5e.dim_wraps((8, 16), d) for d in range(2)] == [False, True]
    assert not HARDWARE["h100"].dim_wraps((8,), 0)
