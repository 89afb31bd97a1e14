"""The terminal report: every leaf's JAX type, width limits, NO_COLOR, and the audit's words."""

from __future__ import annotations

import unicodedata

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import strip_ansi
from shardviz.text import ansi
from shardviz.text.ranges import format_bytes

ESC = "\x1b"


def columns(line: str) -> int:
    """Terminal columns of a line: wide East Asian characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.fixture
def abstract_mesh():
    return AbstractMesh((4, 8, 2), ("data", "model", "sequence_parallel"), axis_types=(AxisType.Explicit,) * 3)


@pytest.fixture
def model(abstract_mesh):
    def sds(shape, *spec, dtype=jnp.bfloat16):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(abstract_mesh, P(*spec)))

    return {
        "params": {
            "embedding_table_for_tokens": sds((32768, 1024), "model"),
            "decoder": {
                f"layers_{i}": {
                    "self_attention": {
                        "query_projection": {"kernel": sds((1024, 1024), ("data", "sequence_parallel"), "model")}
                    },
                    "mlp": {"wi": sds((1024, 4096), "data", "model"), "norm": sds((1024,), dtype=jnp.float32)},
                }
                for i in range(12)
            },
        },
        "step": sds((), dtype=jnp.int32),
    }


def test_plain_text_lists_every_leaf_with_its_jax_type(model):
    tl = shardviz.describe_tree(model)
    text = tl.to_text(width=200, color=False, max_rows=None)
    assert ESC not in text
    flat, _ = jax.tree_util.tree_flatten_with_path(model)
    for leaf, (_, x) in zip(tl.leaves, flat, strict=True):
        row = next(line for line in text.splitlines() if line.startswith(leaf.path + " "))
        assert str(jax.typeof(x)) in row.split()
        assert format_bytes(leaf.bytes_per_device) in row
    lines = text.splitlines()
    assert lines[0] == f"{tl.leaf_count} leaves, {format_bytes(tl.total_bytes)} in all"
    assert lines[1] == "mesh data=4 model=8 sequence_parallel=2 (Explicit, abstract)"
    assert lines[2] == f"64 devices, each holds {format_bytes(tl.device_bytes[0])}"


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_every_line_fits_the_width(model, width):
    text = shardviz.describe_tree(model).to_text(width=width, color=False, max_rows=None)
    assert max(columns(line) for line in text.splitlines()) <= width
    # Long rows fall back to two lines (path and numbers, then the type) or three.
    assert "params.embedding_table_for_tokens" in text


def test_wide_characters_in_paths_keep_the_width(abstract_mesh):
    x = jax.ShapeDtypeStruct((64, 64), jnp.float32, sharding=NamedSharding(abstract_mesh, P("data")))
    tree = {"嵌入層の重み行列" * 4: x, "ok": x}
    text = shardviz.describe_tree(tree).to_text(width=80, color=False)
    assert max(columns(line) for line in text.splitlines()) <= 80


def test_no_color_and_force_color(model, monkeypatch):
    tl = shardviz.describe_tree(model)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = str(tl)
    assert ESC not in plain
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = tl.to_text()
    assert ESC in coloured and strip_ansi(coloured) == plain
    # Each @axis is inked in its own mesh axis colour.
    r, g, b = ansi.axis_rgb(1)
    monkeypatch.setenv("COLORTERM", "truecolor")
    assert f"\x1b[1;38;2;{r};{g};{b}mmodel{ansi.RESET}" in tl.to_text(color=True)


def test_rows_sort_and_limit(model):
    tl = shardviz.describe_tree(model)
    text = tl.to_text(width=200, color=False, max_rows=3, sort="bytes")
    rows = text.split("\n\n")[1].splitlines()[1:]
    assert rows[0].startswith("params.embedding_table_for_tokens ")
    assert rows[3].startswith(f"... {tl.leaf_count - 3} more leaves (shown: 3 the largest first)")
    with pytest.raises(ValueError, match="sort must be 'flatten' or 'bytes'"):
        tl.to_text(sort="size")


def test_audit_reads_like_the_issue():
    mesh = AbstractMesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    tree = {"embed": jax.ShapeDtypeStruct((8192, 4096), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))}
    text = shardviz.describe_tree(tree).to_text(width=120, color=False)
    assert (
        "embed is replicated over model; dim 1 (4096) is divisible by model=4: sharding it saves 48 MiB per device"
    ) in text
    assert "every device holds the same bytes" in text


def test_imbalance_and_single_device_leaves_are_named():
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    tree = {
        "w": jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("data", "model"))),
        "count": jax.device_put(jnp.zeros((), jnp.int32), SingleDeviceSharding(jax.devices()[2])),
        "host": jax.device_put(jnp.ones((8,)), NamedSharding(mesh, P("model"), memory_kind="pinned_host")),
    }
    tl = shardviz.describe_tree(tree)
    text = tl.to_text(width=100, color=False)
    # w: 32 B per device; count: 4 B on device 2; host: 8 B per device in pinned_host.
    assert "8 devices hold 40 B to 44 B each (device 36 B, pinned_host 8 B)" in text
    words = " ".join(text.split())  # the message may wrap
    assert (
        "uneven: device 2 holds 44 B, 4 B more than devices 0,1,3-7 (40 B); on only some devices: count on 1 of 8"
    ) in words
    row = next(line for line in text.splitlines() if line.startswith("count "))
    assert row.split() == ["count", "int32[]", "4", "B", "1", "(dev", "2)", "device"]
    assert next(line for line in text.splitlines() if line.startswith("host ")).split()[-1] == "pinned_host"


def test_an_empty_tree_says_so():
    text = shardviz.describe_tree({}).to_text(color=False)
    assert text.splitlines() == ["0 leaves, 0 B in all", "", "(an empty tree: no leaves)"]
