"""The terminal kit (text/lines.py) and the array picture drawn with it:
widths are terminal columns, so wide (East Asian) names keep lines within
the width and boxes aligned."""

from __future__ import annotations

import unicodedata

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

import shardviz
from shardviz.text import lines as kit


def columns(text: str) -> int:
    """Terminal columns, counted here independently of the kit."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text
    )


WORDS = ["数据", "模型", "é", "データ並列", "x", "Ｆｕｌｌ", "cafe\u0301", "48 MiB", "a,b,c"]


@pytest.mark.parametrize("text", WORDS)
def test_width_counts_columns(text):
    assert kit.text_width(text) == columns(text)


@pytest.mark.parametrize("width", range(0, 12))
@pytest.mark.parametrize("text", ["ab", "abc", "", "数据", "数据x", "Ｆｕｌｌ"])
def test_pad_and_center_reach_the_width(text, width):
    assert columns(kit.pad(text, width)) == max(width, columns(text))
    assert columns(kit.pad_left(text, width)) == max(width, columns(text))
    centred = kit.center(text, width)
    assert columns(centred) == max(width, columns(text)) and centred.strip() == text
    if text.isascii():
        assert centred == text.center(width)


@pytest.mark.parametrize("width", range(2, 14))
def test_fit_and_clip_hold_the_width(width):
    path = "params/データ並列/layers_0/kernel"
    fitted = kit.fit(path, width)
    assert columns(fitted) <= width and fitted.startswith("p") and (width < 3 or fitted.endswith("l"))
    clipped = kit.clip(path, width)
    assert columns(clipped) <= width and path.startswith(clipped.removesuffix(kit.ELLIPSIS))


@pytest.mark.parametrize("width", range(4, 30))
def test_wraps_hold_the_width_and_keep_the_words(width):
    text = "each device holds 数据 and モデル, 48 MiB of f32[8,4] over ＣＰＵ 0-3, 8-11"
    for wrapped in (kit.wrap(text, width, indent="  "), kit.wrap_words(text, width, indent="  ")):
        assert all(columns(line) <= width for line in wrapped)
        assert "".join(line.replace(" ", "") for line in wrapped) == text.replace(" ", "")
    if width >= 6:  # a byte count keeps its unit where the line can hold both
        assert any("48 MiB" in line for line in kit.wrap_words(text, width))


def test_flows_hold_the_width():
    parts = ["数据=4", "モデル=2", "memory device", "each device holds f32[2,2] = 16 B"]
    for width in range(12, 40):
        assert all(columns(line) <= width for line in kit.flow(parts, width))
        assert all(columns(line) <= width for line in kit.flow_after("mesh:", parts, width))


def test_emit_colours_only_marked_segments():
    line: kit.Line = [("a ", None), ("数据", 0), ("  ", None)]
    assert kit.emit(line, False, False) == "a 数据"
    coloured = kit.emit(line, True, True)
    assert "\x1b[" in coloured and coloured.startswith("a ") and "数据" in coloured
    assert kit.emit_axes(line, True, False).count("\x1b[") >= 1


@pytest.mark.parametrize("width", [40, 60, 80])
def test_array_picture_with_wide_axis_names_holds_the_width(width):
    devices = np.array(jax.devices()[:8]).reshape(4, 2)
    mesh = jax.sharding.Mesh(devices, ("データ並列", "模型"))
    x = jax.device_put(np.zeros((8, 8), np.float32), NamedSharding(mesh, PartitionSpec("データ並列", "模型")))
    text = shardviz.render_text(x, width=width, color=False)
    assert all(columns(line) <= width for line in text.splitlines()), text
    assert "データ並列" in text and "模型" in text
    # every device of the layout is named in the picture
    ids = {s.device.id for s in x.addressable_shards}
    assert all(str(i) in text for i in ids)
