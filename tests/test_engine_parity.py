"""Property tests: for random meshes, specs, shapes, dtypes and memory kinds,
``describe`` says exactly what JAX says."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax._src.sharding_impls import GSPMDSharding
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from jax_truth import assert_matches_jax, jax_blocks

DEVICE_COUNTS = (1, 2, 3, 4, 6, 8, 12)
DTYPES = ("float32", "bfloat16", "int8", "int32", "bool", "float16", "uint16")
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
NAME_POOL = ("x", "y", "z", "data", "model", "X", "Y")


def factorizations(n: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(n,)]
    return [(f, *rest) for f in range(1, n + 1) if n % f == 0 for rest in factorizations(n // f, parts - 1)]


@st.composite
def meshes(draw) -> Mesh:
    n = draw(st.sampled_from(DEVICE_COUNTS))
    rank = draw(st.integers(1, 3))
    sizes = draw(st.sampled_from(factorizations(n, rank)))
    names = tuple(draw(st.lists(st.sampled_from(NAME_POOL), min_size=rank, max_size=rank, unique=True)))
    types = tuple(draw(st.lists(st.sampled_from((AxisType.Auto, AxisType.Explicit)), min_size=rank, max_size=rank)))
    # Any devices in any order: the engine must follow the mesh, not device ids.
    chosen = draw(st.permutations(range(len(jax.devices()))))[:n]
    devices = np.array([jax.devices()[i] for i in chosen]).reshape(sizes)
    return Mesh(devices, names, axis_types=types)


@st.composite
def specs_for(draw, mesh: Mesh, rank: int) -> P:
    free = list(mesh.axis_names)
    entries = []
    for _ in range(draw(st.integers(0, rank))):
        kind = draw(st.sampled_from(("none", "one", "tuple")))
        if kind == "one" and free:
            entries.append(free.pop(draw(st.integers(0, len(free) - 1))))
        elif kind == "tuple" and len(free) >= 2:
            picked = draw(st.lists(st.sampled_from(free), min_size=2, max_size=len(free), unique=True))
            for a in picked:
                free.remove(a)
            entries.append(tuple(picked))
        else:
            entries.append(None)
    return P(*entries)


@st.composite
def layouts(draw):
    mesh = draw(meshes())
    rank = draw(st.integers(0, 5))
    spec = draw(specs_for(mesh, rank))
    padded = list(spec) + [None] * (rank - len(spec))
    shape = []
    for entry in padded:
        axes = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
        cuts = math.prod(mesh.shape[a] for a in axes)
        shape.append(cuts * draw(st.integers(0, 2)))  # 0: empty dims replicate
    dtype = draw(st.sampled_from(DTYPES))
    memory_kind = draw(st.sampled_from(MEMORY_KINDS))
    return mesh, spec, tuple(shape), dtype, memory_kind


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_array_layout_equals_jax(case):
    mesh, spec, shape, dtype, memory_kind = case
    sharding = NamedSharding(mesh, spec, memory_kind=memory_kind)
    x = jax.device_put(jnp.zeros(shape, dtype), sharding)
    layout = shardviz.describe(x)
    assert_matches_jax(layout, x.sharding, shape, array=x)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_what_if_layout_equals_real_mesh(case):
    """An AbstractMesh layout numbers virtual devices in mesh order; the k-th
    holds what the k-th device of the real mesh holds."""
    mesh, spec, shape, dtype, memory_kind = case
    real = NamedSharding(mesh, spec, memory_kind=memory_kind)
    what_if = shardviz.describe(
        NamedSharding(mesh.abstract_mesh, spec, memory_kind=memory_kind), shape=shape, dtype=dtype
    )
    truth = jax_blocks(real, shape)
    real_ids = [d.id for d in mesh.devices.flat]
    tiles = what_if.tiles
    for k, dev in enumerate(what_if.devices):
        assert dev.id == k
        tile = tiles[dev.tile]
        assert tuple(zip(tile.start, tile.stop)) == truth[real_ids[k]]
    # Replica ids: the k-th virtual device's is the one JAX gives the k-th device
    # of the same mesh made real, read from a real array's addressable_shards.
    x = jax.device_put(jnp.zeros(shape, dtype), real)
    jax_replica = {s.device.id: s.replica_id for s in x.addressable_shards}
    assert [d.replica_id for d in what_if.devices] == [jax_replica[i] for i in real_ids]
    assert what_if.type_str == str(jax.typeof(x))


@settings(max_examples=40, deadline=None)
@given(layouts())
def test_shape_dtype_struct_equals_array(case):
    mesh, spec, shape, dtype, memory_kind = case
    sharding = NamedSharding(mesh, spec, memory_kind=memory_kind)
    sds = jax.ShapeDtypeStruct(shape, jnp.dtype(dtype), sharding=sharding)
    layout = shardviz.describe(sds)
    x = jax.device_put(jnp.zeros(shape, dtype), sharding)
    assert layout.type_str == str(jax.typeof(x))
    assert not layout.has_array
    assert_matches_jax(layout, sharding, shape)


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(range(12)),
    st.lists(st.integers(0, 3), max_size=4).map(tuple),
    st.sampled_from(MEMORY_KINDS),
)
def test_single_device_layout_equals_jax(device_index, shape, memory_kind):
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[device_index], memory_kind=memory_kind)
    x = jax.device_put(jnp.ones(shape), sharding)
    layout = shardviz.describe(x)
    assert layout.mesh is None
    assert_matches_jax(layout, x.sharding, shape, array=x)


def test_runs_round_trip_payload_columns():
    from decoding import decode_runs
    from shardviz.array.runs import encode_runs

    rng = np.random.default_rng(0)
    for values in (
        np.arange(4096),
        np.zeros(8, int),
        np.array([0, 0, 1, 1, 2, 2]),
        np.array([5]),
        np.array([], int),
        rng.integers(0, 5, size=300),
        np.repeat(np.arange(16), 256),
        np.tile(np.arange(4), 9),
    ):
        assert decode_runs(encode_runs(values)) == values.tolist()
    assert encode_runs(np.arange(4096)) == [[0, 1, 4096]]


# --------------------------------------------------------------------------
# a multi-device sharding that is not a NamedSharding


def gspmd_like(mesh: Mesh, spec: P, rank: int, memory_kind: str) -> GSPMDSharding:
    """The GSPMDSharding JAX itself would build for NamedSharding(mesh, spec): the
    named sharding's HLO sharding over the mesh's devices in mesh order (which the
    meshes above shuffle). Both names are JAX-internal in 0.10.2 (jax.sharding no
    longer exports GSPMDSharding); JAX still hands such shardings out, see below."""
    hlo = NamedSharding(mesh, spec)._to_xla_hlo_sharding(rank)
    return GSPMDSharding(tuple(mesh.devices.flat), hlo, memory_kind=memory_kind)


def test_custom_partitioning_hands_out_gspmd_shardings():
    """jax.experimental.custom_partitioning with decode_shardings=False gives its
    partition rule GSPMDShardings over 8 devices: describe lays them out as JAX does."""
    seen = []

    @custom_partitioning
    def double(a):
        return a * 2

    def partition(mesh, arg_shapes, result_shape):
        seen.append(arg_shapes[0].sharding)
        sharding = arg_shapes[0].sharding
        return mesh, (lambda a: a * 2), sharding, (sharding,)

    double.def_partition(
        infer_sharding_from_operands=lambda mesh, args, result: args[0].sharding,
        partition=partition,
        decode_shardings=False,
        sharding_rule="i j -> i j",
    )
    devices = np.array(jax.devices()[:8])[[3, 1, 7, 5, 0, 2, 6, 4]]
    mesh = Mesh(devices.reshape(2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    for spec in (P("x", "y"), P("y"), P(None, ("y", "x")), P()):
        seen.clear()
        x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, spec))
        np.testing.assert_array_equal(np.asarray(jax.jit(double)(x)), np.arange(32.0).reshape(4, 8) * 2)
        assert seen, "the partition rule was not called"
        sharding = seen[-1]
        assert type(sharding) is GSPMDSharding and len(sharding.device_set) == 8
        layout = shardviz.describe(sharding, shape=(4, 8))
        assert layout.mesh is None and layout.sharding_name == "GSPMDSharding"
        assert_matches_jax(layout, sharding, (4, 8))
        placed = jax.device_put(x, sharding)
        assert_matches_jax(shardviz.describe(placed), sharding, (4, 8), array=placed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_gspmd_layout_equals_jax(case):
    """blocks_from_index_map on many devices: blocks, holders, and replica ids
    from addressable_shards, for an array placed on a GSPMDSharding."""
    mesh, spec, shape, dtype, memory_kind = case
    sharding = gspmd_like(mesh, spec, len(shape), memory_kind)
    x = jax.device_put(jnp.zeros(shape, dtype), sharding)
    assert type(x.sharding).__name__ == "GSPMDSharding"
    layout = shardviz.describe(x)
    assert layout.mesh is None
    assert_matches_jax(layout, x.sharding, shape, array=x)
    what_if = shardviz.describe(sharding, shape=shape, dtype=dtype)
    assert_matches_jax(what_if, sharding, shape)
    assert [d.replica_id for d in what_if.devices] == [d.replica_id for d in layout.devices]
