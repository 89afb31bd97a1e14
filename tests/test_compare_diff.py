"""shardviz.diff: two traces of one function, what changed line by line, checked against JAX's
compiled HLO of each (its collectives, their result shapes and the source lines in their metadata)."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from compare_steps import dense

HLO_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
DTYPE_BYTES = {"f32": 4, "bf16": 2, "s32": 4}


@pytest.fixture(scope="module")
def mesh():
    return jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("x", "y"))


def traced(mesh, w_spec, x_spec):
    w = jax.ShapeDtypeStruct((64, 32), np.float32, sharding=NamedSharding(mesh, w_spec))
    x = jax.ShapeDtypeStruct((16, 64), np.float32, sharding=NamedSharding(mesh, x_spec))
    program = shardviz.trace(dense, w, x)
    hlo = jax.jit(dense).trace(w, x).lower().compile().as_text()
    return program, hlo


def _stack_lines(hlo: str) -> dict[int, list[tuple[str, int]]]:
    """Stack frame id -> its (file, line)s innermost first, from the module's FileNames,
    FileLocations and StackFrames tables."""
    tables: dict[str, list[str]] = {}
    current = None
    for line in hlo.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = line
            tables[current] = []
        elif current and re.match(r"^\d+ ", line):
            tables[current].append(line)
        elif line.strip():
            current = None
    files = {int(row.split()[0]): row.split(None, 1)[1].strip('"') for row in tables.get("FileNames", [])}
    places = {}
    for row in tables.get("FileLocations", []):
        number = int(row.split()[0])
        places[number] = (files[int(re.search(r"file_name_id=(\d+)", row).group(1))],
                          int(re.search(r" line=(\d+)", row).group(1)))  # fmt: skip
    frames = {}
    for row in tables.get("StackFrames", []):
        number = int(row.split()[0])
        frames[number] = (int(re.search(r"file_location_id=(\d+)", row).group(1)),
                          int(re.search(r"parent_frame_id=(\d+)", row).group(1)))  # fmt: skip
    return {n: _chain(n, frames, places) for n in frames}


def _chain(number, frames, places):
    chain, seen = [], set()
    while number in frames and number not in seen:
        seen.add(number)
        location, parent = frames[number]
        chain.append(places[location])
        number = parent
    return chain


def hlo_collectives(hlo: str) -> dict[tuple[int, str], int]:
    """(line of compare_steps.py, kind) -> result bytes summed, from the compiled module's own
    instructions and the stack frame its metadata names."""
    stacks = _stack_lines(hlo)
    found: dict[tuple[int, str], int] = {}
    for line in hlo.splitlines():
        m = re.search(r"= (\w+)\[([\d,]*)\][^ ]* (" + "|".join(HLO_COLLECTIVES) + r")(-start)?\(", line)
        if not m:
            continue
        frame = re.search(r"stack_frame_id=(\d+)", line)
        chain = stacks.get(int(frame.group(1)), []) if frame else []
        source = next((n for f, n in chain if f.endswith("compare_steps.py")), -1)
        dims = [int(d) for d in m.group(2).split(",") if d]
        key = (source, m.group(3))
        found[key] = found.get(key, 0) + DTYPE_BYTES[m.group(1)] * int(np.prod(dims))
    return found


def by_line(changes, which):
    return {(int(c.line.rsplit(":", 1)[1]), c.kind) for c in changes if c.change in which}


def test_diff_names_what_appeared_and_vanished_as_the_hlo_does(mesh):
    # before: the contracting dimension is whole on every device, nothing to reduce;
    # after: w split by rows over x, so each device's product is partial and is summed over x
    before, hlo_before = traced(mesh, P(None, None), P("x", None))
    after, hlo_after = traced(mesh, P("x", None), P(None, None))
    result = shardviz.diff(before, after, hardware="tpu-v5p")
    old, new = hlo_collectives(hlo_before), hlo_collectives(hlo_after)
    assert new, "the edit must make a collective for this test to mean anything"
    after_row = result.row("after")
    assert after_row.against == "before"
    assert by_line(after_row.changes, {"appeared"}) == set(new) - set(old)
    assert by_line(after_row.changes, {"vanished"}) == set(old) - set(new)
    assert [r.candidate for r in result.rows if r.candidate == "before"] == ["before"]
    assert result.row("before").changes == ()


def test_diff_says_what_grew_with_the_bytes_of_the_hlo(mesh):
    # both sum partial products over x; before, each device holds half the batch (split over y), after all
    before, hlo_before = traced(mesh, P("x", None), P("y", "x"))
    after, hlo_after = traced(mesh, P("x", None), P(None, "x"))
    old, new = hlo_collectives(hlo_before), hlo_collectives(hlo_after)
    reduce_key = next(k for k in new if k[1] == "all-reduce")
    assert new[reduce_key] == 2 * old[reduce_key] == 16 * 32 * 4  # by hand: the [16, 32] f32 output
    result = shardviz.diff(before, after)
    grown = [c for c in result.row("after").changes if c.change == "grown"]
    assert len(grown) == 1
    change = grown[0]
    assert (int(change.line.rsplit(":", 1)[1]), change.kind) == reduce_key
    # sent per device per call: an all-reduce over x's 4 devices sends 2 * 3/4 of its result
    assert (change.bytes_before, change.bytes_after) == (old[reduce_key] * 3 // 2, new[reduce_key] * 3 // 2)
    assert change.seconds_after >= change.seconds_before  # latency-bound at this size: both 4 us on v5p
    assert "~ all-reduce over x at" in str(result) and "(grown)" in str(result)


def test_diff_of_one_program_with_itself_changes_nothing(mesh):
    program, _ = traced(mesh, P("x", None), P(None, None))
    result = shardviz.diff(program, program, names=("a", "b"))
    assert [r.changes for r in result.rows] == [(), ()]
    assert result.row("a").step_s == result.row("b").step_s


def test_diff_refuses_what_is_not_a_program(mesh):
    program, _ = traced(mesh, P("x", None), P(None, None))
    with pytest.raises(shardviz.ShardingError, match="after is a str"):
        shardviz.diff(program, "program")
    with pytest.raises(shardviz.ShardingError, match="two different strings"):
        shardviz.diff(program, program, names=("a", "a"))


def test_lines_changed_names_each_kind_of_change_largest_first():
    from shardviz.compare.rows import LineCollectives, lines_changed

    def at(line, kind, axes, sent, seconds):
        return LineCollectives(line, kind, axes, 1, sent, seconds, "ICI")

    before = [
        at("a.py:1", "all-gather", "x", 100, 1e-6),  # grows
        at("a.py:2", "all-reduce", "y", 400, 4e-6),  # vanishes
        at("a.py:3", "all-gather", "y", 50, 10e-6),  # same bytes, slower past 1%
        at("a.py:4", "all-gather", "y", 50, 10e-6),  # same bytes, faster past 1%
        at("a.py:5", "all-gather", "y", 50, 10e-6),  # same bytes, within 1%: unchanged
        at("a.py:6", "all-to-all", "x", 80, 2e-6),  # shrinks
    ]
    after = [
        at("a.py:1", "all-gather", "x", 300, 3e-6),
        at("a.py:3", "all-gather", "y", 50, 10.3e-6),
        at("a.py:4", "all-gather", "y", 50, 9.8e-6),
        at("a.py:5", "all-gather", "y", 50, 10.05e-6),
        at("a.py:6", "all-to-all", "x", 40, 1e-6),
        at("a.py:7", "all-reduce", "x", 200, 5e-6),  # appears
    ]
    changes = lines_changed(before, after)
    # largest change of time first: +5 us, -4 us, +2 us, -1 us, +0.3 us, -0.2 us
    assert [(c.line, c.change) for c in changes] == [
        ("a.py:7", "appeared"),
        ("a.py:2", "vanished"),
        ("a.py:1", "grown"),
        ("a.py:6", "shrunk"),
        ("a.py:3", "slower"),
        ("a.py:4", "faster"),
    ]
    appeared, vanished = changes[0], changes[1]
    assert (appeared.bytes_before, appeared.bytes_after, appeared.seconds_before, appeared.seconds_after) == (
        0, 200, 0.0, 5e-6,
    )  # fmt: skip
    assert (vanished.bytes_before, vanished.bytes_after, vanished.seconds_before, vanished.seconds_after) == (
        400, 0, 4e-6, 0.0,
    )  # fmt: skip
    assert (changes[2].bytes_before, changes[2].bytes_after) == (100, 300)
    assert lines_changed(before, before) == ()
