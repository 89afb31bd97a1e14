"""What-if layouts, input bounds, physical device attributes and the choice
of grid dimensions, each checked against JAX's own objects and answers."""

from __future__ import annotations

import math
import tracemalloc
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import decode_runs
from jax_truth import assert_matches_jax
from shardviz import ShardingError
from shardviz.array.devices import device_columns
from shardviz.array.payload import layout_payload
from shardviz.text.ranges import picture_dims

# --------------------------------------------------------------------------
# virtual devices are not this machine's


def test_virtual_devices_are_labelled_virtual_not_as_local_cpus():
    layout = shardviz.describe(NamedSharding(AbstractMesh((16, 16, 16), ("a", "b", "c")), P("a")), shape=(64,))
    assert layout.is_virtual
    assert {(d.platform, d.device_kind) for d in layout.devices} == {("", "")}
    assert [d.id for d in layout.devices] == list(range(4096))
    payload = layout.to_json()
    assert payload["devices"]["virtual"] is True and payload["kinds"] == [{"platform": "", "device_kind": ""}]
    text = shardviz.render_text(layout, width=100, color=False)
    assert "CPU" not in text and "device 0-1023" in text


def test_a_what_if_can_name_its_platform():
    sharding = NamedSharding(AbstractMesh((4, 2), ("x", "y")), P("x", "y"))
    layout = shardviz.describe(sharding, shape=(8, 8), platform="tpu")
    assert {d.platform for d in layout.devices} == {"tpu"}
    assert "TPU 0" in shardviz.render_text(layout, color=False)
    # Real devices have a platform of their own.
    real = jax.device_put(jnp.zeros(8), NamedSharding(jax.make_mesh((8,), ("x",), devices=jax.devices()[:8]), P("x")))
    with pytest.raises(ShardingError, match="platform= names the platform of a what-if"):
        shardviz.describe(real, platform="tpu")
    with pytest.raises(ShardingError, match="platform= names the platform of a what-if"):
        shardviz.describe(real.sharding, shape=(8,), platform="tpu")


def test_memory_kinds_of_a_what_if_are_those_jax_accepts_here():
    mesh = AbstractMesh((2, 4), ("x", "y"))
    layout = shardviz.describe(NamedSharding(mesh, P("x")), shape=(4,))
    accepted = []
    for kind in ("device", "pinned_host", "unpinned_host", "hbm"):
        try:
            NamedSharding(mesh, P("x"), memory_kind=kind)
            accepted.append(kind)
        except ValueError:
            pass
    assert list(layout.memory_kinds) == accepted


def test_host_marker_is_shardviz_addition_where_jax_drops_it():
    """JAX's typeof of a ShapeDtypeStruct in pinned_host memory on an AbstractMesh
    prints no host space for some shardings, while a real array there does;
    shardviz writes ``<host>`` for both. This test shows both answers side by side."""
    concrete_mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    sharding = NamedSharding(concrete_mesh, P("x", "y"), memory_kind="pinned_host")
    real = jax.device_put(jnp.zeros((4, 8)), sharding)
    assert str(jax.typeof(real)) == "float32<host>[4@x,8@y]"
    struct = jax.ShapeDtypeStruct((4, 8), jnp.float32, sharding=sharding)
    jax_says = str(jax.typeof(struct))
    ours = shardviz.describe(struct).type_str
    assert ours == str(jax.typeof(real))
    if jax_says != ours:  # the case the marker exists for
        assert jax_says == "float32[4@x,8@y]"


# --------------------------------------------------------------------------
# a typo must not take the kernel down


@pytest.mark.parametrize("text", ["x=65536, y=65536", "x=999999999", "x=1048577", "a=1024, b=1024, c=2"])
def test_a_mesh_too_large_is_refused_before_anything_is_allocated(text):
    w = shardviz.ShardingWidget(shape=(64, 64))
    tracemalloc.start()
    try:
        w.apply_edit(mesh_text=text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert w.error_source == "mesh" and "shardviz lays out at most 1,048,576" in w.error
    assert peak < 1 << 20, f"the refusal allocated {peak} bytes"


def test_describe_refuses_an_abstract_mesh_too_large():
    huge = NamedSharding(AbstractMesh((4096, 512), ("x", "y")), P())
    tracemalloc.start()
    try:
        with pytest.raises(ShardingError, match="2,097,152 devices"):
            shardviz.describe(huge, shape=(8,))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_the_bound_admits_the_largest_machines():
    sharding = NamedSharding(AbstractMesh((64, 128, 128), ("a", "b", "c")), P(("a", "b", "c")))
    layout = shardviz.describe(sharding, shape=(2**20,))
    assert layout.device_count == 2**20 and layout.shard_shape == sharding.shard_shape((2**20,))


def test_too_many_axes_are_refused():
    with pytest.raises(ShardingError, match="at most 16"):
        shardviz.parse_mesh(", ".join(f"a{i}=1" for i in range(17)))


# --------------------------------------------------------------------------
# physical device attributes (TPUs have them; stand-ins here)


@dataclass(frozen=True)
class StandInTpu:
    """What a TPU device object carries, as JAX documents it (no TPU here)."""

    id: int
    coords: tuple[int, int, int]
    core_on_chip: int
    slice_index: int
    process_index: int = 0
    platform: str = "tpu"
    device_kind: str = "TPU v5"


def _tpu(i: int, coords: tuple[int, int, int], core: int, slice_index: int) -> StandInTpu:
    return StandInTpu(i, coords, core, slice_index)


def test_physical_attributes_are_read_where_devices_have_them():
    # Two slices of a 2x2 chip grid, two cores per chip: mesh (slice=2, x=2, y=2, core=2).
    fakes = [
        _tpu(i, (x, y, 0), core, s)
        for i, (s, x, y, core) in enumerate(
            (s, x, y, c) for s in range(2) for x in range(2) for y in range(2) for c in range(2)
        )
    ]
    cols = device_columns(tuple(fakes))
    real = shardviz.describe(
        NamedSharding(jax.make_mesh((2, 2, 2), ("s", "x", "y"), devices=jax.devices()[:8]), P()), shape=(4,)
    )
    mesh = shardviz.MeshInfo(("slice", "x", "y", "core"), (2, 2, 2, 2), ("Explicit",) * 4, False)
    layout = replace(
        real, columns=cols, mesh=mesh, blocks=replace(real.blocks, tile=np.zeros(16, np.int64), replica=np.arange(16))
    )
    devices = layout.devices
    assert [d.coords for d in devices] == [f.coords for f in fakes]
    assert [d.core_on_chip for d in devices] == [f.core_on_chip for f in fakes]
    assert [d.slice_index for d in devices] == [f.slice_index for f in fakes]
    assert layout.physical_axes == {
        "slice": ("slice_index",),
        "x": ("coords[0]",),
        "y": ("coords[1]",),
        "core": ("core_on_chip",),
    }
    payload = layout_payload(layout)["devices"]
    assert [decode_runs(c) for c in payload["coords"]] == [[f.coords[d] for f in fakes] for d in range(3)]
    assert decode_runs(payload["core_on_chip"]) == [f.core_on_chip for f in fakes]
    assert decode_runs(payload["slice_index"]) == [f.slice_index for f in fakes]
    text = shardviz.render_text(layout, width=120, color=False)
    assert "physical: slice along slice_index; x along coords[0]; y along coords[1]; core along core_on_chip" in text


def test_cpu_devices_show_no_physical_attributes():
    layout = shardviz.describe(
        NamedSharding(jax.make_mesh((8,), ("x",), devices=jax.devices()[:8]), P("x")), shape=(8,)
    )
    assert all(d.coords is None and d.core_on_chip is None and d.slice_index is None for d in layout.devices)
    assert "coords" not in layout.to_json()["devices"] and layout.physical_axes == {}
    assert all(getattr(d, "coords", None) is None for d in jax.devices())  # what the test relies on


# --------------------------------------------------------------------------
# which dimensions a picture draws


def test_the_grid_shows_the_two_most_split_dimensions():
    """The issue's example: float32[4,6,8,2,3] with P('a', None, ('b','c')) on 2x2x2."""
    mesh = jax.make_mesh((2, 2, 2), ("a", "b", "c"), devices=jax.devices()[:8])
    sharding = NamedSharding(mesh, P("a", None, ("b", "c")))
    x = jax.device_put(jnp.zeros((4, 6, 8, 2, 3)), sharding)
    layout = shardviz.describe(x)
    assert_matches_jax(layout, sharding, x.shape, array=x)
    assert picture_dims(layout.blocks.grid) == ((1, 3, 4), 0, 2)
    text = shardviz.render_text(layout, width=100, color=False)
    assert "rows: dim0 split by a, columns: dim2 split by b,c" in text
    assert text.count("┌") == 1  # the unsplit dims fold into a single grid


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ((), ((), None, None)),
        ((4,), ((), None, 0)),
        ((1, 1, 1), ((0,), 1, 2)),  # nothing split: the last two
        ((2, 1, 1), ((1,), 0, 2)),  # one split: it and the last other
        ((1, 4, 2, 8), ((0, 2), 1, 3)),
        ((3, 3, 3), ((0,), 1, 2)),  # ties go to later dims
    ],
)
def test_picture_dims_rule(blocks, expected):
    assert picture_dims(blocks) == expected
    folded, row, col = expected
    assert sorted([*folded, *(d for d in (row, col) if d is not None)]) == list(range(len(blocks)))
    if row is not None:
        assert row < col
        assert min(blocks[row], blocks[col]) >= max((blocks[d] for d in folded), default=0)


# --------------------------------------------------------------------------
# a Layout goes where an array goes


def test_a_layout_goes_where_an_array_goes(tmp_path):
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.zeros((4, 8)), NamedSharding(mesh, P("x", "y")))
    layout = shardviz.describe(x)
    assert shardviz.describe(layout) is layout
    assert shardviz.render_text(layout, color=False) == shardviz.render_text(x, color=False)
    page = shardviz.save_html(layout, tmp_path / "layout.html")
    assert "float32[4@x,8@y]" in open(page, encoding="utf-8").read()
    with pytest.raises(ShardingError, match="already laid out"):
        shardviz.describe(layout, shape=(4, 8))
    assert math.prod(layout.shard_shape) * 4 == layout.shard_bytes
