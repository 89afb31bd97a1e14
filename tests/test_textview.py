"""The terminal picture, checked against JAX's own answers.

The picture is parsed back (boxes, their column headings, row labels and
fold titles, or the list entries of the narrow fallback) and every box's
device list is compared with the devices that JAX's ``devices_indices_map``
puts inside the box's index region. Nothing here compares with a stored copy
of shardviz's own output.
"""

from __future__ import annotations

import io
import itertools
import math
import os
import re
from collections import Counter
from dataclasses import dataclass

import jax

# Harmless when conftest.py (or XLA_FLAGS) already asked for the devices.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "") and (
    jax.config.jax_num_cpu_devices < 12
):
    jax.config.update("jax_num_cpu_devices", 12)

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import AbstractMesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import shardviz
from decoding import expand_ids
from jax_truth import jax_blocks
from shardviz.text import ansi
from shardviz.text.picture import render_layout
from shardviz.text.ranges import abbreviate_ids, compress_ids

BOX_CHARS = set("┌┬┐├┼┤└┴┘─│")
INTERVAL = re.compile(r"(?<![\d:])(\d+):(\d+)(?![\d:])")
TITLE = re.compile(r"dim(\d+) (\d+):(\d+)")
ROWS = re.compile(r"rows: dim(\d+)")
COLUMNS = re.compile(r"columns: dim(\d+)")
PLACE = re.compile(r"  \d+:\d+")
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")

# --------------------------------------------------------------------------
# reading the picture back


@dataclass(frozen=True)
class Box:
    """What one box (or list entry) of the picture claims."""

    region: tuple[tuple[int, int] | None, ...]  # per dim; None = whole dim
    ids: tuple[int, ...]
    note: str


def _ids_of(label: str) -> list[int]:
    platform, _, ids = label.strip().partition(" ")
    assert platform in ("CPU", "device"), label  # real CPUs, or virtual devices of an AbstractMesh
    return expand_ids(ids)


def picture_axes(text: str) -> tuple[int | None, int | None]:
    """The dimensions the picture says it draws as rows and as columns."""
    rows, cols = ROWS.search(text), COLUMNS.search(text)
    return (int(rows.group(1)) if rows else None), (int(cols.group(1)) if cols else None)


def _rank_region(
    rank: int,
    lead: dict[int, tuple[int, int]],
    row: tuple[int, int] | None,
    col: tuple[int, int] | None,
    axes: tuple[int | None, int | None],
) -> tuple[tuple[int, int] | None, ...]:
    region: list[tuple[int, int] | None] = [lead.get(d) for d in range(rank)]
    row_dim, col_dim = axes
    if col_dim is not None:
        region[col_dim] = col
    if row_dim is not None:
        region[row_dim] = row
    return tuple(region)


def _interval(text: str) -> tuple[int, int] | None:
    m = INTERVAL.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_boxes(text: str, rank: int) -> list[Box]:
    """Every box of a box picture, located by the rules around it."""
    lines = text.split("\n")
    axes = picture_axes(text)
    boxes: list[Box] = []
    for i, line in enumerate(lines):
        if i == 0 or "│" not in line:
            continue
        above = lines[i - 1]
        bars = [k for k, ch in enumerate(line) if ch == "│"]
        for a, b in itertools.pairwise(bars):
            # A label line sits right under a rule: ┌──┬ or ├──┼.
            if a + 1 >= len(above) or above[a + 1] != "─" or above[a] not in "┌┬├┼":
                continue
            label = line[a + 1 : b]
            note = lines[i + 1][a + 1 : b].strip() if "─" not in lines[i + 1][a + 1 : b] else ""
            # The panel's top rule, the heading above it, its title lines above
            # that; panels side by side are equally wide, so the first one's
            # left edge gives every panel's start.
            top = i - 1
            while lines[top][a] not in "┌┬":
                top -= 1
            lefts = [k for k, ch in enumerate(lines[top]) if ch == "┌"]
            left = max(k for k in lefts if k <= a)
            start = left - lefts[0]
            stop = start + (lefts[1] - lefts[0] - 3) if len(lefts) > 1 else None
            col = _interval(lines[top - 1][a + 1 : b]) if top >= 1 else None
            row = _interval(line[start:left])
            lead: dict[int, tuple[int, int]] = {}
            t = top - 2
            while t >= 0 and TITLE.search(lines[t]):
                for m in TITLE.finditer(lines[t][start:stop]):
                    lead[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
                t -= 1
            boxes.append(Box(_rank_region(rank, lead, row, col, axes), tuple(_ids_of(label)), note))
    return boxes


def parse_list(text: str, rank: int) -> list[Box]:
    """Entries of the narrow fallback: ``r0:r1 × c0:c1  CPU ...`` with continuation lines."""
    lines = text.split("\n")
    axes = picture_axes(text)
    start = next(i for i, line in enumerate(lines) if line.startswith("as a list"))
    entries: list[tuple[dict[int, tuple[int, int]], str, list[str]]] = []
    lead: dict[int, tuple[int, int]] = {}
    title_open = False
    for line in lines[start + 1 :]:
        if line.startswith("dim") and TITLE.match(line):
            if not title_open:
                lead, title_open = {}, True
            lead.update({int(m.group(1)): (int(m.group(2)), int(m.group(3))) for m in TITLE.finditer(line)})
            continue
        title_open = False
        if PLACE.match(line) and entries and entries[-1][1].endswith(" ×"):
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip(), entries[-1][2])
        elif PLACE.match(line):
            place, _, rest = line[2:].partition("  ")
            entries.append((dict(lead), place, [rest]))
        elif line.startswith("    ") and entries:
            entries[-1][2].append(line.strip())
    boxes = []
    for lead_dims, place, body in entries:
        joined = "".join(part if part.endswith(",") else part + " " for part in body if part).strip()
        label, _, note = joined.partition(" (")
        found = [(int(a), int(b)) for a, b in INTERVAL.findall(place)]
        row, col = (found[0], found[1]) if len(found) == 2 else (None, found[0] if found else None)
        boxes.append(Box(_rank_region(rank, lead_dims, row, col, axes), tuple(_ids_of(label)), note.rstrip(")")))
    return boxes


def parse_picture(text: str, rank: int) -> list[Box]:
    return parse_boxes(text, rank) if "┌" in text else parse_list(text, rank)


# --------------------------------------------------------------------------
# JAX's answer


def inside(block: tuple[tuple[int, int], ...], region: tuple[tuple[int, int] | None, ...]) -> bool:
    return all(r is None or (r[0] <= lo and hi <= r[1]) for (lo, hi), r in zip(block, region, strict=True))


def assert_picture_matches_jax(text: str, sharding, shape) -> list[Box]:
    """Every box lists exactly the devices JAX puts in its region; every device appears once."""
    shape = tuple(shape)
    truth = jax_blocks(sharding, shape)
    boxes = parse_picture(ESCAPE.sub("", text), len(shape))
    assert boxes, text
    for box in boxes:
        expected = sorted(d for d, block in truth.items() if inside(block, box.region))
        assert list(box.ids) == expected, f"box {box.region} in\n{text}"
        blocks = {truth[d] for d in expected}
        copies = {sum(1 for b in truth.values() if b == block) for block in blocks}
        if len(blocks) > 1:
            assert box.note.startswith(f"{len(blocks)} tiles"), box
        if max(copies) > 1:
            assert f"{max(copies)} copies" in box.note, box
        else:
            assert "copies" not in box.note, box
    counts = Counter(i for box in boxes for i in box.ids)
    assert counts == Counter(truth.keys()), "every device exactly once"
    return boxes


def assert_width(text: str, width: int) -> None:
    for line in ESCAPE.sub("", text).split("\n"):
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"


# --------------------------------------------------------------------------
# ranges


@pytest.mark.parametrize(
    ("ids", "text"),
    [
        ([0, 1, 2, 3, 8], "0-3,8"),
        ([4, 0], "0,4"),
        ([4, 5], "4,5"),
        ([0, 1, 2, 3, 8, 9, 10, 11], "0-3,8-11"),
        ([3, 3, 1, 2], "1-3"),
        ([], ""),
        ([7], "7"),
    ],
)
def test_compress_ids(ids, text):
    assert compress_ids(ids) == text
    assert expand_ids(text) == sorted(set(ids))


@pytest.mark.parametrize(
    ("ids", "text"),
    [
        (range(0, 256, 16), "0,16,...,240"),
        ([i + k for i in range(0, 256, 16) for k in range(4)], "0-3,16-19,...,240-243"),
        ([0, 4, 8], "0,4,8"),  # eliding would not be shorter
        ([0, 1, 16, 17, 32, 33, 48, 49, 64, 65], "0-1,16-17,...,64-65"),
        ([0, 1, 2, 3, 8], "0-3,8"),
    ],
)
def test_abbreviate_ids(ids, text):
    assert abbreviate_ids(ids) == text
    assert expand_ids(text) == sorted(set(ids))


@given(st.sets(st.integers(0, 300), max_size=80))
def test_id_texts_give_every_id_back(ids):
    assert expand_ids(compress_ids(ids)) == sorted(ids)
    assert expand_ids(abbreviate_ids(ids)) == sorted(ids)
    assert len(abbreviate_ids(ids)) <= len(compress_ids(ids)) + 2 * len(ids)


@pytest.mark.parametrize("text", ["0-", "a", "3-1", "...,4", "0,4,...", "0,4,...,9", "0-3,8-9,...,16-19"])
def test_expand_ids_rejects_malformed_text(text):
    with pytest.raises(ValueError):
        expand_ids(text)


# --------------------------------------------------------------------------
# the picture against JAX


def _mesh(sizes, names):
    return jax.make_mesh(sizes, names, devices=jax.devices()[: math.prod(sizes)])


CASES = [
    # (mesh sizes, names, spec, shape)
    ((2, 4), ("x", "y"), P("x", "y"), (8, 12)),
    ((2, 4), ("x", "y"), P("y", "x"), (8, 12)),
    ((2, 4), ("x", "y"), P(None, "y"), (8, 12)),
    ((2, 4), ("x", "y"), P(("x", "y")), (16,)),
    ((2, 4), ("x", "y"), P(), ()),
    ((2, 3, 2), ("x", "y", "z"), P("x", "y", "z"), (2, 3, 2)),
    ((2, 3, 2), ("x", "y", "z"), P("z", None, "x"), (4, 3, 6)),
    ((2, 3, 2), ("x", "y", "z"), P("x", "y", None, "z"), (2, 3, 4, 2)),
    ((2, 3, 2), ("x", "y", "z"), P("x", "y", "z", None, None), (2, 3, 2, 4, 6)),
    ((2, 3, 2), ("x", "y", "z"), P(None, None, ("y", "z"), "x"), (1, 2, 6, 4)),
    ((12,), ("d",), P(None, "d"), (3, 24)),
    ((3, 4), ("a", "b"), P(("b", "a")), (12, 5)),
]


@pytest.mark.parametrize("width", [100, 60, 36, 24])
@pytest.mark.parametrize(("sizes", "names", "spec", "shape"), CASES)
def test_every_device_is_where_jax_puts_it(sizes, names, spec, shape, width):
    sharding = NamedSharding(_mesh(sizes, names), spec)
    text = shardviz.render_text(sharding, shape=shape, width=width, color=False)
    assert_picture_matches_jax(text, sharding, shape)
    assert_width(text, width)


@pytest.mark.parametrize("rank", range(6))
def test_ranks_0_to_5_of_a_real_array(rank):
    mesh = _mesh((2, 3, 2), ("x", "y", "z"))
    shape = (2, 3, 2, 6, 4)[:rank]
    spec = P(*("x", None, "z", "y", None)[:rank])
    x = jax.device_put(jnp.zeros(shape), NamedSharding(mesh, spec))
    text = shardviz.render_text(x, width=80, color=False)
    assert text.split("\n")[0] == str(jax.typeof(x))
    assert_picture_matches_jax(text, x.sharding, shape)
    assert_width(text, 80)
    if rank >= 3:
        assert "folded" in text


def test_single_device_sharding():
    x = jax.device_put(jnp.ones((4, 4)), SingleDeviceSharding(jax.devices()[3]))
    text = shardviz.render_text(x, color=False, width=80)
    assert_picture_matches_jax(text, x.sharding, x.shape)
    assert "SingleDeviceSharding" in text


def test_header_has_typeof_mesh_axes_and_memory_kind():
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.zeros((8, 12)), NamedSharding(mesh, P("data", "model"), memory_kind="pinned_host"))
    lines = shardviz.render_text(x, color=False, width=80).split("\n")
    assert lines[0] == str(jax.typeof(x))
    assert "mesh data=2 model=4 (Explicit)" in lines[1]
    assert "memory pinned_host" in "\n".join(lines[:4])
    assert "float32[4,3] = 48 B" in "\n".join(lines[:4])


def test_tutorial_replicated_sum_shows_cpu_0_4():
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
    result = jax.jit(lambda a: a.sum(axis=0))(x)
    text = shardviz.render_text(result, color=False, width=80)
    assert text.split("\n")[0] == str(jax.typeof(result))
    boxes = assert_picture_matches_jax(text, result.sharding, result.shape)
    assert re.search(r"│\s*CPU 0,4\s*│", text)
    assert all(box.note == "2 copies" for box in boxes)


def test_print_layout_is_the_picture():
    mesh = _mesh((2, 4), ("x", "y"))
    layout = shardviz.describe(NamedSharding(mesh, P("x", "y")), shape=(8, 12))
    assert str(layout) == render_layout(layout)


# --------------------------------------------------------------------------
# 512 and 4096 devices (AbstractMesh what-ifs: no devices_indices_map there)


BIG = [
    ((8, 8, 8), P("a", ("b", "c")), (64, 512)),
    ((8, 8, 8), P("a", "b", "c"), (16, 16, 16)),
    ((8, 8, 8), P(None, "c"), (8, 64)),
    ((16, 16, 16), P("a", ("b", "c")), (256, 4096)),
    ((16, 16, 16), P(("c", "a"), "b"), (256, 16)),
    ((16, 16, 16), P(None, "c"), (16, 16)),
    ((16, 16, 16), P("c", "b", None, "a"), (16, 16, 2, 16)),
    ((16, 16, 16), P(), (4, 4)),
]


@pytest.mark.parametrize("width", [160, 80, 60, 40, 24])
@pytest.mark.parametrize(("sizes", "spec", "shape"), BIG)
def test_large_meshes_fit_the_width_and_keep_every_device(sizes, spec, shape, width):
    am = AbstractMesh(sizes, ("a", "b", "c"))
    layout = shardviz.describe(NamedSharding(am, spec), shape=shape)
    text = render_layout(layout, width=width, color=False)
    assert_width(text, width)
    boxes = parse_picture(text, len(shape))
    counts = Counter(i for box in boxes for i in box.ids)
    assert counts == Counter(range(math.prod(sizes))), "every device exactly once"
    assert text.split("\n")[0] == layout.type_str
    assert len(text.split("\n")) < 400


def test_4096_devices_grouped_into_ranges():
    am = AbstractMesh((16, 16, 16), ("a", "b", "c"))
    text = shardviz.render_text(NamedSharding(am, P("a", ("b", "c"))), shape=(256, 4096), width=80, color=False)
    assert_width(text, 80)
    assert re.search(r"│\s*device 0-127\s*│", text)
    assert "128 tiles" in text


# --------------------------------------------------------------------------
# colour


def _small_layout():
    mesh = _mesh((2, 4), ("x", "y"))
    return shardviz.describe(NamedSharding(mesh, P("x", "y")), shape=(8, 12))


def test_color_false_is_plain_text():
    text = render_layout(_small_layout(), color=False)
    assert "\x1b" not in text
    assert all(ch.isascii() or ch in BOX_CHARS for ch in text)


def test_color_true_paints_each_tile_its_own_colour():
    layout = _small_layout()
    text = render_layout(layout, color=True, width=80)
    assert ESCAPE.sub("", text) == render_layout(layout, color=False, width=80)
    # Box k of the 2x4 grid holds JAX's block k (row-major), painted with tile k's colour.
    painted = re.findall(r"\x1b\[30;48;[0-9;]+m CPU (\d+)", text)
    assert [int(i) for i in painted] == list(range(8))
    codes = re.findall(r"\x1b\[30;(48;[0-9;]+)m", text)
    assert len(set(codes)) == 8


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, False, False),
        ({}, True, True),
        ({"NO_COLOR": "1"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
        ({"TERM": "dumb"}, True, False),
    ],
)
def test_auto_colour_follows_tty_no_color_and_force_color(monkeypatch, env, tty, expected):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    monkeypatch.setattr("sys.stdout", Stream())
    assert ansi.color_enabled(None) is expected
    assert ("\x1b" in render_layout(_small_layout())) is expected
    # An explicit argument wins over the environment.
    assert "\x1b" not in render_layout(_small_layout(), color=False)
    assert "\x1b" in render_layout(_small_layout(), color=True)


def test_width_none_follows_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    text = render_layout(_small_layout(), color=False)
    assert_width(text, 30)
    assert "as a list" not in text and "merges" in text  # it had to fold, not cut
