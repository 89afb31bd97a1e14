"""The HLO reader against fixtures saved from real compiles (tests/make_hlo_fixtures.py).

Every expectation below was read from the fixture files by hand: the
collective's line, its groups, result shape, loop nesting and source frame.
Where XLA itself can answer (its own parser and HloSharding), the tests ask
it too.
"""

from __future__ import annotations

import difflib
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from jax._src.lib import xla_client
from jaxlib import _hlo

from shardviz.program import hlo
from shardviz.program.values.axes import group_axes, pair_axes

FIXTURES = pathlib.Path(__file__).with_name("fixtures") / "hlo"
SCRIPT = "tests/make_hlo_fixtures.py"
MESH = (("x", "y"), (2, 4))  # every fixture ran on a 2x4 mesh of Auto axes, devices in id order


def module(name: str) -> hlo.Module:
    return hlo.parse_module((FIXTURES / f"{name}.hlo").read_text())


def by_name(name: str) -> dict[str, hlo.CollectiveOp]:
    return {op.inst.name: op for op in hlo.collective_ops(module(name))}


def axes_of(op: hlo.CollectiveOp):
    if op.kind == "collective-permute":
        return pair_axes(op.pairs, *MESH)
    return group_axes(op.groups, *MESH)


ROWS = ((0, 1, 2, 3), (4, 5, 6, 7))  # groups along y
COLUMNS = ((0, 4), (1, 5), (2, 6), (3, 7))  # groups along x
ALL = ((0, 1, 2, 3, 4, 5, 6, 7),)

# name -> instruction -> (kind, form, groups, result bytes, operands, count, exact, line, column, axes)
EXPECTED = {
    "matmul_contracting": {
        "all-reduce": ("all-reduce", "list", ROWS, 8 * 8 * 4, 1, 1, True, 32, 8, ("y",)),
        "all-reduce.1": ("all-reduce", "mesh", COLUMNS, 8 * 4, 1, 1, True, 33, 11, ("x",)),
    },
    "scan_grad": {
        # forward scan body (jvp), 6 trips: [2,4]<=[8] are the rows
        "all-reduce.4": ("all-reduce", "iota", ROWS, 8 * 32 * 4, 1, 6, True, 38, 24, ("y",)),
        # backward scan body (transpose), 6 trips
        "all-gather.4": ("all-gather", "mesh", ROWS, 8 * 32 * 4, 1, 6, True, 38, 24, ("y",)),
        # [4,2]<=[2,4]T(1,0): iota 0..7 as 2x4, transposed: the columns
        "all-reduce.7": ("all-reduce", "iota", COLUMNS, 32 * 8 * 4, 1, 6, True, 38, 24, ("x",)),
    },
    "reshard_transpose": {
        # mesh form with a device order and a sub-axis: pairs of neighbours, half of y
        "all-to-all.1": (
            "all-to-all",
            "mesh",
            ((0, 1), (2, 3), (4, 5), (6, 7)),
            2 * 4 * 8 * 4,
            2,
            1,
            True,
            47,
            44,
            None,
        ),
        # self pairs stay alone; 2<->4 and 3<->5 cross both axes
        "collective-permute": (
            "collective-permute",
            "pairs",
            ((0,), (1,), (2, 4), (3, 5), (6,), (7,)),
            4 * 16 * 4,
            1,
            1,
            True,
            47,
            44,
            ("x", "y"),
        ),
    },
    "shard_map_collectives": {
        "psum.14": ("all-reduce", "list", COLUMNS, 8 * 8 * 4, 1, 1, True, 52, 12, ("x",)),
        "reduce_scatter.7": ("reduce-scatter", "list", ROWS, 8 * 2 * 4, 1, 1, True, 53, 12, ("y",)),
        "ppermute.3": ("collective-permute", "pairs", ROWS, 8 * 8 * 4, 1, 1, True, 54, 12, ("y",)),
        # tuple-shaped all-to-all: one f32[2,8] per peer
        "all-to-all": ("all-to-all", "list", ROWS, 4 * 2 * 8 * 4, 4, 1, True, 55, 12, ("y",)),
        "all_gather.3": ("all-gather", "list", COLUMNS, 16 * 8 * 4, 1, 1, True, 56, 12, ("x",)),
        "psum.15": ("all-reduce", "list", ALL, 8 * 8 * 4, 1, 1, True, 57, 12, ("x", "y")),
    },
    "combined_grad": {
        # three gradients' all-reduces combined into one tuple all-reduce
        "all-reduce.3": ("all-reduce", "mesh", ALL, (4 + 8 * 8 + 4 * 8) * 4, 3, 1, True, 65, 17, ("x", "y")),
    },
    "nested_scan": {
        # inner scan (5 trips) inside the outer scan (3 trips)
        "all-reduce.2": ("all-reduce", "iota", ROWS, 8 * 32 * 4, 1, 15, True, 73, 28, ("y",)),
    },
    "cond_branches": {
        # branch 0 is the false branch (x.sum()), branch 1 the true one ((x @ w).sum()); either may not run
        "all-reduce": ("all-reduce", "mesh", COLUMNS, 4, 1, 1, False, 81, 61, ("x",)),
        "all-reduce.1": ("all-reduce", "list", ROWS, 8 * 8 * 4, 1, 1, False, 81, 39, ("y",)),
        "all-reduce.2": ("all-reduce", "mesh", COLUMNS, 4, 1, 1, False, 81, 38, ("x",)),
    },
    "fori_unknown": {
        # a while loop whose trip count XLA does not know: counted once, marked inexact
        "all-reduce.2": ("all-reduce", "iota", ROWS, 8 * 32 * 4, 1, 1, False, 85, 57, ("y",)),
    },
}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_collectives_match_the_hand_read_fixture(fixture):
    mod = module(fixture)
    found = by_name(fixture)
    assert set(found) == set(EXPECTED[fixture]), "every collective found, each once, nothing else"
    for name, expected in EXPECTED[fixture].items():
        op = found[name]
        kind, form, groups, nbytes, operands, count, exact, line, column, axes = expected
        assert op.kind == kind, name
        assert op.groups_form == form, name
        assert op.groups == groups, name
        assert op.result.byte_size == nbytes, name
        assert op.operand_count == operands, name
        assert (op.count, op.count_exact) == (count, exact), name
        frame = mod.frames(op.inst.metadata.stack_frame_id)[0]
        assert (frame.file, frame.line, frame.column) == (SCRIPT, line, column), name
        assert axes_of(op) == axes, name


def test_stack_frames_parent_is_printed_one_higher():
    """Printed as is, frame 3's parent would be frame 3 itself; one lower, the
    chain is the real call stack: matmul_contracting <- main <- <module>."""
    mod = module("matmul_contracting")
    text = (FIXTURES / "matmul_contracting.hlo").read_text()
    assert "3 {file_location_id=3 parent_frame_id=3}" in text  # the raw table points at itself
    source = (pathlib.Path(__file__).parent / "make_hlo_fixtures.py").read_text().splitlines()
    compile_line = 1 + next(i for i, s in enumerate(source) if "jax.jit(fun).lower(*args).compile()" in s)
    main_line = 1 + next(i for i, s in enumerate(source) if s.startswith("    main("))
    assert source[32 - 1].strip().startswith("c = a @ b")
    chain = [(f.function, f.line) for f in mod.frames(3)]
    assert chain == [("matmul_contracting", 32), ("main", compile_line), ("<module>", main_line)]
    # No frame of any fixture is its own parent once read.
    for path in FIXTURES.glob("*.hlo"):
        for frame in hlo.parse_module(path.read_text()).stack_frames.values():
            assert frame.parent != frame.id and (frame.parent is None or frame.parent < frame.id), path.name


def test_plain_parent_ids_are_read_as_printed():
    """A table that prints the root with parent 0 is read as it stands."""
    text = (
        'HloModule m\n\nFileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n2 "g"\n\nFileLocations\n'
        "1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=0 end_column=0}\n"
        "2 {file_name_id=1 function_name_id=2 line=7 end_line=7 column=0 end_column=0}\n\n"
        "StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n2 {file_location_id=2 parent_frame_id=1}\n\n"
        "ENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n"
    )
    mod = hlo.parse_module(text)
    assert [(f.function, f.line) for f in mod.frames(2)] == [("g", 7), ("f", 3)]


def test_async_pairs_count_once_with_the_done_result():
    """CPU emits no async collectives, so this fixture was written by hand in
    the shape GPU compiles print (see make_hlo_fixtures.ASYNC_MODULE) and then
    read and re-printed by XLA's own parser and printer."""
    found = by_name("async_collectives")
    assert set(found) == {"all-gather-start", "all-reduce-start", "collective-permute-start", "reduce-scatter-start"}
    ag = found["all-gather-start"]
    assert (ag.kind, ag.result.byte_size, ag.groups) == ("all-gather", 32 * 4, ((0, 1, 2, 3),))
    ar = found["all-reduce-start"]
    assert (ar.kind, ar.result.byte_size, ar.groups) == ("all-reduce", 8 * 4, ((0, 1), (2, 3)))
    cp = found["collective-permute-start"]
    assert (cp.kind, cp.result.byte_size, cp.pairs) == ("collective-permute", 8 * 4, ((0, 1), (1, 0), (2, 3), (3, 2)))
    rs = found["reduce-scatter-start"]
    assert (rs.kind, rs.result.byte_size, rs.groups_form, rs.groups) == (
        "reduce-scatter",
        2 * 4,
        "iota",
        ((0, 1, 2, 3),),
    )
    assert all(op.count == 1 and op.count_exact for op in found.values())
    assert hlo.parse_module((FIXTURES / "async_collectives.hlo").read_text()).frames(2)[0].line == 10


def test_async_wrapper_form_counts_the_wrapped_collective_once():
    """The unsugared form: async-start/async-done both name the wrapped computation."""
    text = """HloModule m, num_partitions=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%wrapped (p: f32[8]) -> f32[2] {
  %p = f32[8]{0} parameter(0)
  ROOT %rs = f32[2]{0} reduce-scatter(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add
}

ENTRY %main (a: f32[8]) -> f32[2] {
  %a = f32[8]{0} parameter(0)
  %start = ((f32[8]{0}), f32[2]{0}) async-start(%a), calls=%wrapped
  ROOT %done = f32[2]{0} async-done(%start), calls=%wrapped
}
"""
    _hlo.hlo_module_from_text(text)  # XLA itself reads it
    (op,) = hlo.collective_ops(hlo.parse_module(text))
    assert (op.kind, op.count, op.result.byte_size, op.computation) == ("reduce-scatter", 1, 8, "wrapped")


def test_trip_counts_from_backend_config():
    mod = module("nested_scan")
    trips = {i.name: hlo.known_trip_count(i) for _, i in mod.instructions() if i.opcode == "while"}
    assert trips == {"while.26": 5, "while.27": 3}
    assert {
        i.name: hlo.known_trip_count(i) for _, i in module("fori_unknown").instructions() if i.opcode == "while"
    } == {"while.10": None}


@pytest.mark.parametrize(
    "text",
    ["[2,4]<=[8]", "[4,2]<=[2,4]T(1,0)", "[2,4]<=[2,2,2]T(2,0,1)", "[1,8]<=[8]", "[8,1]<=[8]", "[3,4]<=[4,3]T(1,0)"],
)
def test_iota_groups_equal_xla_expansion(text):
    """XLA's own HloSharding expands the same iota notation: its tile devices, row by row, are the groups."""
    dims = [int(d) for d in text[1 : text.index("]")].split(",")]
    truth = xla_client.HloSharding.from_string("{devices=" + text + "}").tile_assignment_devices()
    expected = tuple(tuple(int(v) for v in row) for row in np.asarray(truth).reshape(dims))
    parsed = hlo.parse_replica_groups(text)
    assert parsed.form == "iota" and parsed.groups == expected


def test_list_groups_and_empty():
    assert hlo.parse_replica_groups("{{0,2},{1,3}}").groups == ((0, 2), (1, 3))
    assert hlo.parse_replica_groups("{}").groups == ()


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}", COLUMNS),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}", ROWS),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_0','axis_1'}", ALL),
        # listed minor axis first: each group is ordered by the listed axes, major first
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1','axis_0'}", ((0, 4, 1, 5, 2, 6, 3, 7),)),
        ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}", COLUMNS),
        # a sub-axis: the major half of axis_1 (size 2 of 4)
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1':(1)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
        # the minor half
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1':(2)2}", ((0, 1), (2, 3), (4, 5), (6, 7))),
        # a device order: iota 0..7 as [2,2,2], transposed (0,2,1), laid on the 4x2 mesh
        (
            "mesh['axis_0'=4,'axis_1'=2], device_ids=([2,2,2]T(0,2,1)) {'axis_0':(2)2}",
            ((0, 1), (2, 3), (4, 5), (6, 7)),
        ),
        ("mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'}", ((3, 2), (1, 0))),
    ],
)
def test_mesh_form_groups(text, groups):
    parsed = hlo.parse_replica_groups(text)
    assert parsed.form == "mesh" and parsed.groups == groups


@pytest.mark.parametrize(
    "text",
    [
        "{devices=[2,4]<=[8]}",
        "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
        "{devices=[1,4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "{devices=[4,2]0,2,4,6,1,3,5,7}",
        "{devices=[2,2,2]<=[8] last_tile_dims={manual}}",
    ],
)
def test_tiled_shardings_equal_xla_parse(text):
    truth = xla_client.HloSharding.from_string(text)
    parsed = hlo.parse_sharding(text)
    assert parsed.kind == "tiled"
    assert list(parsed.tile_assignment.shape) == list(truth.tile_assignment_dimensions())
    assert parsed.tile_assignment.ravel().tolist() == list(truth.tile_assignment_devices())
    assert bool(parsed.subgroups == ("replicated",)) == truth.replicate_on_last_tile_dim()


def test_other_shardings():
    assert hlo.parse_sharding("{replicated}").kind == "replicated"
    assert hlo.parse_sharding("{maximal device=3}").device == 3
    assert hlo.parse_sharding("{manual}").kind == "manual"
    tup = hlo.parse_sharding("{{replicated}, {devices=[2,4]<=[8]}, /*index=2*/{maximal device=1}}")
    assert [e.kind for e in tup.elements] == ["replicated", "tiled", "maximal"]
    meta = hlo.parse_sharding('{devices=[2,4]<=[8] metadata={op_name="a"}}')
    assert meta.tile_assignment.shape == (2, 4)


def test_before_partitioning_fixture_shardings():
    """Read by hand from before_partitioning.hlo (the scan_grad program before SPMD partitioning)."""
    mod = module("before_partitioning")
    entry = mod.entry.by_name
    x = hlo.parse_sharding(entry["x.0"].attr("sharding"))  # x: P('x', None)
    assert x.data_tile_dims == (2, 1) and x.subgroups == ("replicated",)
    assert x.tile_assignment.reshape(2, 4).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    ws = hlo.parse_sharding(entry["ws.3"].attr("sharding"))  # ws: P(None, 'y', None)
    assert ws.data_tile_dims == (1, 4, 1)
    assert ws.tile_assignment.reshape(4, 2).tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    body = next(c for c in mod.computations if "tanh.2" in c.by_name)
    tanh = body.by_name["tanh.2"]
    assert hlo.parse_sharding(tanh.attr("sharding")).tile_assignment.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert tanh.metadata.op_name == "jit(scan_grad)/jvp()/while/body/closed_call/tanh"
    assert mod.frames(tanh.metadata.stack_frame_id)[0].line == 38


def test_instruction_fields():
    inst = hlo.parse_instruction(
        "  ROOT %ar = (f32[4]{0}, /*index=1*/bf16[2,3]{1,0}) all-reduce(%a, %b), channel_id=7, "
        "replica_groups={{0,1}}, to_apply=%add, "
        'metadata={op_name="jit(f)/a \\"q\\" \\303\\251" stack_frame_id=4}, backend_config={"x":{"y":"1,2"}}'
    )
    assert inst.is_root and inst.name == "ar" and inst.opcode == "all-reduce"
    assert inst.operands == ("a", "b")
    assert inst.shape.byte_size == 4 * 4 + 6 * 2
    assert [leaf.dtype for leaf in inst.shape.leaves] == ["float32", "bfloat16"]
    assert inst.attr("channel_id") == "7" and inst.attr("backend_config") == '{"x":{"y":"1,2"}}'
    assert inst.metadata.op_name == 'jit(f)/a "q" é' and inst.metadata.stack_frame_id == 4


def test_bad_text_raises():
    with pytest.raises(hlo.HloParseError, match="HloModule"):
        hlo.parse_module("not hlo")
    with pytest.raises(hlo.HloParseError, match="replica_groups"):
        hlo.parse_replica_groups("[[0,1]]")
    with pytest.raises(hlo.HloParseError, match="not closed"):
        hlo.parse_module("HloModule m\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n")


def test_every_fixture_is_valid_hlo_for_xla():
    """XLA's own parser reads every fixture (the hand-made one too)."""
    for path in FIXTURES.glob("*.hlo"):
        _hlo.hlo_module_from_text(path.read_text())


# The script's own driver frames (main, <module>) move whenever the script below its programs is
# edited; the programs' frames, instructions, groups and shapes are what a new JAX may change.
_DRIVER_FRAME = re.compile(r"^(\d+ \{file_name_id=\d+ function_name_id=(\d+) line=)\d+ end_line=\d+", re.M)


def _without_driver_lines(text: str) -> str:
    names = dict(re.findall(r'^(\d+) "([^"]*)"$', text.split("FileLocations", 1)[0], re.M))
    drivers = {k for k, name in names.items() if name in ("main", "<module>")}

    def cut(m: re.Match[str]) -> str:
        return m.group(1) + "L end_line=L" if m.group(2) in drivers else m.group(0)

    return _DRIVER_FRAME.sub(cut, text)


def test_the_fixtures_are_what_jax_compiles_today(tmp_path):
    """The fixtures' programs compiled again (in a process of 8 simulated devices, as the
    script runs) give the saved text, so a change in how JAX or XLA compiles them fails
    here: then run the script and read the expectations above against the new files."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    root = pathlib.Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, SCRIPT, str(tmp_path)], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    saved = sorted(p.name for p in FIXTURES.glob("*.hlo"))
    assert sorted(p.name for p in tmp_path.glob("*.hlo")) == saved
    for name in saved:
        now, before = (tmp_path / name).read_text(), (FIXTURES / name).read_text()
        if _without_driver_lines(now) != _without_driver_lines(before):
            diff = difflib.unified_diff(before.splitlines(), now.splitlines(), "saved", "today", lineterm="", n=1)
            pytest.fail(f"{name} compiles differently today (python {SCRIPT} writes it anew):\n" + "\n".join(diff))


def test_the_comparison_ignores_only_the_scripts_driver_lines():
    text = (FIXTURES / "matmul_contracting.hlo").read_text()
    moved = re.sub(r"line=(\d+) end_line=\1 column=4 ", "line=999 end_line=999 column=4 ", text, count=1)
    assert moved != text and _without_driver_lines(moved) == _without_driver_lines(text)
    program_line = text.replace("line=32 end_line=32", "line=31 end_line=31")
    assert program_line != text and _without_driver_lines(program_line) != _without_driver_lines(text)
    other = text.replace("replica_groups={{0,1,2,3},{4,5,6,7}}", "replica_groups={{0,1},{2,3},{4,5},{6,7}}")
    assert other != text and _without_driver_lines(other) != _without_driver_lines(text)


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.hlo")))
def test_a_braced_attribute_cut_out_where_it_starts_equals_the_full_split(name):
    """``attr`` cuts a braced value (metadata, sharding) out at its ``, key={``; on every instruction of
    every saved compile that must be the value the full top-level split of the attributes gives."""
    checked = 0
    for _, inst in module(name).instructions():
        for key, value in inst.attributes:
            assert inst.attr(key) == next(v for k, v in inst.attributes if k == key), (inst.name, key)
            checked += value.startswith("{")
    assert checked, "no braced attribute in this fixture"


def test_a_braced_attribute_inside_a_quoted_or_bracketed_value_is_not_taken_for_one_of_the_instruction():
    """A string or a braced value that holds ``, metadata={...}`` before the real one is not cut from."""
    quoted = hlo.parse_instruction(
        '%a = f32[2]{0} custom-call(%p), custom_call_target="x, metadata={op_name=\\"fake\\"}", '
        'metadata={op_name="real" stack_frame_id=3}'
    )
    assert quoted.metadata.op_name == "real" and quoted.metadata.stack_frame_id == 3
    nested = hlo.parse_instruction(
        "%b = f32[2]{0} add(%p, %q), frontend_attributes={inner={x, sharding={replicated}}}, "
        "sharding={devices=[2]<=[2]}"
    )
    assert nested.attr("sharding") == "{devices=[2]<=[2]}"
    assert nested.attr("frontend_attributes") == "{inner={x, sharding={replicated}}}"
    # a single-quoted string, and a value left open in square brackets or parentheses, before the real one
    for before in (
        "target='t, sharding={replicated}'",
        "odd=[x, sharding={replicated}]",
        "odd=(x, sharding={replicated})",
    ):
        inst = hlo.parse_instruction(f"%c = f32[2]{{0}} add(%p, %q), {before}, sharding={{devices=[2]<=[2]}}")
        assert inst.attr("sharding") == "{devices=[2]<=[2]}", before


_INLINE_LINE_MODULE = """HloModule jit_f, entry_computation_layout={(f32[8,16]{1,0}, f32[16,4]{1,0}, f32[4,2]{1,0})->f32[8,2]{1,0}}

ENTRY %main.9 (Arg_0.1: f32[8,16], Arg_1.2: f32[16,4], Arg_2.3: f32[4,2]) -> (f32[8,2], f32[8,2], f32[8,2]) {
  %Arg_0.1 = f32[8,16]{1,0} parameter(0)
  %Arg_1.2 = f32[16,4]{1,0} parameter(1)
  %Arg_2.3 = f32[4,2]{1,0} parameter(2)
  %dot.4 = f32[8,4]{1,0} dot(%Arg_0.1, %Arg_1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general" source_file="/home/user/model.py" source_line=12}
  %dot.5 = f32[8,2]{1,0} dot(%dot.4, %Arg_2.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general" source_file="/home/user/model.py" source_line=20}
  %dot.6 = f32[8,2]{1,0} dot(%dot.4, %Arg_2.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general" source_file="/home/user/model.py" source_line=12}
  %dot.7 = f32[8,2]{1,0} dot(%dot.4, %Arg_2.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %tuple.8 = (f32[8,2]{1,0}, f32[8,2]{1,0}, f32[8,2]{1,0}) tuple(%dot.5, %dot.6, %dot.7)
}
"""


def test_dots_whose_lines_are_printed_inline_are_charged_to_those_lines():
    """Older XLA printed ``source_file`` and ``source_line`` in the metadata, with no stack frames:
    each line gets its dots' flops, counted by hand (2 x rows x columns x contracted): line 12 has
    1,024 + 128, line 20 has 128, and the dot with no line 128, largest first."""
    from shardviz.program.compiling.module_reading import read_module
    from shardviz.program.model import SourceLocation

    read = read_module(_INLINE_LINE_MODULE, {})
    model = "/home/user/model.py"
    assert [(f.source, f.flops) for f in read.line_flops] == [
        (SourceLocation(model, 12), 1152),
        (SourceLocation(model, 20), 128),
        (None, 128),
    ]


def test_memory_is_read_only_from_both_the_buffer_assignment_and_the_live_ranges():
    """One of the two dumps alone is no memory picture: neither is read."""
    from shardviz.program.compiling.module_reading import read_module

    for dumps in ({"buffer_assignment": "BufferAssignment:\n"}, {"live_range": "BufferLiveRange:\n"}):
        read = read_module(_INLINE_LINE_MODULE, dumps)
        assert read.allocations is None and read.live_ranges is None
