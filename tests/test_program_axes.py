"""Index arithmetic of the program view: tile assignments to PartitionSpecs
(proved with devices_indices_map on real compiles), groups to mesh axes,
and the ring formulas."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.program import hlo
from shardviz.program.memory.wire import wire_bytes
from shardviz.program.values.axes import group_axes, mesh_coordinates, pair_axes, positions_to_mesh, tiles_to_spec

MESHES = [((2, 2, 3), ("a", "b", "c")), ((3, 4), ("a", "b")), ((12,), ("a",)), ((4, 1, 3), ("a", "b", "c"))]


def specs_for(names: tuple[str, ...], rank: int):
    """Every way to give mesh axes (ordered) to ``rank`` dimensions, up to two axes a dimension."""
    choices = [()] + [(a,) for a in names] + list(itertools.permutations(names, 2))
    for combo in itertools.product(choices, repeat=rank):
        used = [a for entry in combo for a in entry]
        if len(used) == len(set(used)):
            yield combo


def entry_sharding(mesh: Mesh, spec: tuple[tuple[str, ...], ...], shape: tuple[int, ...]) -> str:
    """The sharding XLA prints on the compiled program's parameter for this NamedSharding."""
    sharding = NamedSharding(mesh, P(*(e if e else None for e in spec)))
    compiled = jax.jit(lambda v: v * 2).lower(jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)).compile()
    entry = hlo.parse_module(compiled.as_text()).entry
    (param,) = [i for i in entry.instructions if i.opcode == "parameter"]
    return param.attr("sharding")


@pytest.mark.parametrize(("sizes", "names"), MESHES)
def test_tile_assignments_read_back_as_the_spec_that_made_them(sizes, names):
    mesh = Mesh(np.asarray(jax.devices()).reshape(sizes), names, axis_types=(AxisType.Auto,) * len(names))
    shape = (12, 12)
    checked = 0
    for spec in specs_for(names, 2):
        cuts = [int(np.prod([mesh.shape[a] for a in entry])) for entry in spec]
        if any(12 % c for c in cuts):
            continue
        text = entry_sharding(mesh, spec, shape)
        parsed = hlo.parse_sharding(text)
        if parsed.kind == "replicated":
            assert all(mesh.shape[a] == 1 for entry in spec for a in entry), (spec, text)
            continue
        got = tiles_to_spec(parsed.tile_assignment, 2, names, sizes)
        assert got is not None, (spec, text)
        # Size-1 axes split nothing: the answer may leave them out, and must still lay out the same.
        assert got == tuple(tuple(a for a in e if mesh.shape[a] > 1) for e in spec), (spec, text)
        ours = NamedSharding(mesh, P(*(e if e else None for e in got))).devices_indices_map(shape)
        theirs = NamedSharding(mesh, P(*(e if e else None for e in spec))).devices_indices_map(shape)
        assert ours == theirs
        checked += 1
    assert checked >= 2


def test_partition_positions_are_mapped_to_mesh_order():
    sizes, names = (2, 3, 2), ("a", "b", "c")
    rng = np.random.default_rng(0)
    coords = mesh_coordinates(sizes)
    for spec in [(("b",), ("c", "a")), (("a", "c"), ()), ((), ("b",))]:
        tile_dims = [int(np.prod([sizes[names.index(a)] for a in e])) for e in spec]
        # mesh index -> tile index per dimension, as a NamedSharding lays it out
        tiles = np.zeros((len(coords), 2), np.int64)
        for d, entry in enumerate(spec):
            for a in entry:
                tiles[:, d] = tiles[:, d] * sizes[names.index(a)] + coords[:, names.index(a)]
        replicas = len(coords) // int(np.prod(tile_dims))
        by_mesh = np.zeros((*tile_dims, replicas), np.int64)
        filled = np.zeros(tile_dims, np.int64)
        for k in range(len(coords)):
            t = tuple(tiles[k])
            by_mesh[(*t, filled[t])] = k
            filled[t] += 1
        order = rng.permutation(len(coords))  # the program's device assignment, as mesh indices
        to_mesh = positions_to_mesh(order.tolist(), list(range(len(coords))))
        by_position = np.argsort(order)[by_mesh]  # the same tiles written in partition positions
        assert tiles_to_spec(by_position, 2, names, sizes, to_mesh) == spec
        if not np.array_equal(order, np.arange(len(order))):
            assert tiles_to_spec(by_position, 2, names, sizes) != spec  # read without the map: wrong or none


@pytest.mark.parametrize(
    "text",
    [
        "{devices=[8,1]<=[4,2]T(1,0)}",  # major tiles step along half of y
        "{devices=[2,2,2]<=[8] last_tile_dim_replicate}",  # the second dimension is cut by half of y
    ],
)
def test_tilings_that_are_no_partition_spec_give_none(text):
    parsed = hlo.parse_sharding(text)
    assert tiles_to_spec(parsed.tile_assignment, 2, ("x", "y"), (2, 4)) is None


def test_group_axes():
    sizes, names = (2, 3, 2), ("a", "b", "c")
    ids = np.arange(12).reshape(sizes)
    for r in range(4):
        for axes in itertools.combinations(range(3), r):
            rest = [i for i in range(3) if i not in axes]
            groups = np.transpose(ids, rest + list(axes)).reshape(-1, int(np.prod([sizes[a] for a in axes])))
            assert group_axes(groups.tolist(), names, sizes) == tuple(names[a] for a in axes)
            # groups listed in another order, members shuffled: the same axes
            shuffled = [list(reversed(g)) for g in reversed(groups.tolist())]
            assert group_axes(shuffled, names, sizes) == tuple(names[a] for a in axes)
    assert group_axes([[0, 1], [2, 3]], names, sizes) is None  # not every device
    assert group_axes([[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11]], names, sizes) is None  # part of b
    assert group_axes([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]], ("x", "y"), (3, 4)) is None  # no slice
    assert pair_axes([(0, 1), (1, 0)], names, sizes) == ("c",)
    assert pair_axes([(0, 0)], names, sizes) == ()


def test_positions_to_mesh():
    assert positions_to_mesh([5, 3, 1], [1, 3, 5]).tolist() == [2, 1, 0]
    assert positions_to_mesh([5, 3], [1, 3, 5]) is None
    assert positions_to_mesh([5, 3, 7], [1, 3, 5]) is None


def test_ring_formulas():
    assert wire_bytes("all-reduce", 1024, 4) == 1536
    assert wire_bytes("all-gather", 1024, 4) == 768
    assert wire_bytes("reduce-scatter", 256, 4) == 768
    assert wire_bytes("all-to-all", 1024, 4) == 768
    assert wire_bytes("collective-permute", 512, 2, [(0, 1), (1, 0)]) == 512
    assert wire_bytes("collective-permute", 512, 1, [(0, 0), (1, 1)]) == 0
    assert wire_bytes("all-reduce", 1024, 1) == 0
