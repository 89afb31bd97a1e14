"""Snapshot records compared as data: hand-written records in, each change's sentence and direction out.

No program is traced here: the records are the JSON a snapshot file keeps,
written by hand, so every rule of the comparison (identity, pairing of an
edited line, tolerance, layouts, axes no longer used) is checked against a
case worked out on paper. Byte budgets, times and the file's locking are
checked the same way.
"""

from __future__ import annotations

import json
import math

import pytest

from shardviz.errors import ShardingError
from shardviz.testing.messages import format_change, format_seconds, function_names, label_of, layer_of, where
from shardviz.testing.sizes import parse_bytes
from shardviz.testing.snapshot import record_owner
from shardviz.testing.snapshot_diff import compare_records
from shardviz.testing.snapshot_file import FORMAT, change_records, load_records


def item(kind="all-reduce", axes="data", nbytes=1024, runs=1):
    return {"kind": kind, "axes": axes, "bytes": nbytes, "runs": runs}


def line(where="model.py:10", function="loss", code="h = x @ w", *items, layer=""):
    out = {"where": where, "function": function, "code": code, "collectives": list(items)}
    if layer:
        out["layer"] = layer
    return out


def record(*lines, mesh="data=4 model=2", inputs=None, outputs=None):
    out = {"program": "step", "mesh": mesh, "lines": list(lines)}
    out["inputs"] = inputs if inputs is not None else [{"path": "x", "type": "float32[64@data,8]"}]
    out["outputs"] = outputs if outputs is not None else []
    return out


def texts(old, new, **kwargs):
    diff = compare_records(old, new, **kwargs)
    return [(c.sign, c.grows, c.text) for c in diff.changes]


def test_the_same_record_has_no_change():
    r = record(line("model.py:10", "loss", "h = x @ w", item()))
    assert compare_records(r, r).changes == () and compare_records(r, r).notes == ()


def test_a_new_collective_grows_by_its_bytes():
    old = record(line("model.py:10", "loss", "h = x @ w", item()))
    new = record(line("model.py:10", "loss", "h = x @ w", item(), item("all-gather", "model", 3072, 2)))
    assert texts(old, new) == [
        (
            "+",
            True,
            "line 10 of model.py (loss) now all-gathers 3.0 KiB over model per call (x2); the snapshot has none: +3.0 KiB",
        )
    ]


def test_more_bytes_or_more_runs_grow_and_fewer_shrink():
    old = record(line("m.py:3", "f", "y = g(x)", item(nbytes=1000, runs=2)))
    more_bytes = record(line("m.py:3", "f", "y = g(x)", item(nbytes=1500, runs=2)))
    more_runs = record(line("m.py:3", "f", "y = g(x)", item(nbytes=1000, runs=3)))
    fewer = record(line("m.py:3", "f", "y = g(x)", item(nbytes=250, runs=2)))
    assert texts(old, more_bytes) == [
        (
            "+",
            True,
            "line 3 of m.py (f) now all-reduces 1.5 KiB over data per call (x2); the snapshot has 1000 B (x2): +500 B (+50%)",
        )
    ]
    assert texts(old, more_runs)[0][:2] == ("+", True)
    assert texts(old, more_runs)[0][2].endswith("(x3); the snapshot has 1000 B (x2): ±0 B (±0.00%)")
    assert texts(old, fewer) == [
        (
            "-",
            False,
            "line 3 of m.py (f) now all-reduces 250 B over data per call (x2); the snapshot has 1000 B (x2): -750 B (-75%)",
        )
    ]


def test_fewer_runs_with_more_bytes_still_grow():
    old = record(line("m.py:3", "f", "y", item(nbytes=1000, runs=3)))
    new = record(line("m.py:3", "f", "y", item(nbytes=1100, runs=2)))
    (change,) = compare_records(old, new).changes
    assert change.grows and change.sign == "+"


def test_a_tolerance_is_relative_and_inclusive():
    old = record(line("m.py:3", "f", "y", item(nbytes=1000)))
    edge_up = record(line("m.py:3", "f", "y", item(nbytes=1100)))
    edge_down = record(line("m.py:3", "f", "y", item(nbytes=900)))
    past = record(line("m.py:3", "f", "y", item(nbytes=1101)))
    below = record(line("m.py:3", "f", "y", item(nbytes=899)))
    assert compare_records(old, edge_up, tolerance=0.1).changes == ()
    assert compare_records(old, edge_down, tolerance=0.1).changes == ()
    assert [c.sign for c in compare_records(old, past, tolerance=0.1).changes] == ["+"]
    assert [c.sign for c in compare_records(old, below, tolerance=0.1).changes] == ["-"]
    runs = record(line("m.py:3", "f", "y", item(nbytes=1000, runs=2)))
    assert [c.sign for c in compare_records(old, runs, tolerance=0.5).changes] == ["+"]  # runs are exact


def test_a_collective_gone_shrinks_by_all_its_bytes_and_shows_the_old_code():
    old = record(line("m.py:7", "f", "a = b  # old", item(nbytes=2048)))
    new = record()
    ((sign, grows, text),) = texts(old, new)[:1]
    assert (sign, grows) == ("-", False)
    assert (
        text
        == "line 7 of m.py (f) no longer all-reduces over data; the snapshot has 2.0 KiB over data per call (x1): -2.0 KiB"
    )
    assert compare_records(old, new).changes[0].line() == text + "\n      a = b  # old"
    assert compare_records(old, new).changes[0].line(signs=True).startswith("- line 7")


def test_lines_match_without_comments_or_spaces_and_after_moving():
    old = record(line("m.py:7", "f", "h = x @ w", item()))
    new = record(line("m.py:19", "f", "h=x@w   # moved and commented", item()))
    assert compare_records(old, new).changes == ()


def test_the_same_code_in_another_function_or_layer_is_another_line():
    old = record(line("m.py:7", "f", "h = x @ w", item()))
    for new in (
        record(line("m.py:7", "g", "h = x @ w", item())),
        record(line("m.py:7", "f", "h = x @ w", item(), layer="layers_1")),
    ):
        signs = sorted(c.sign for c in compare_records(old, new).changes)
        assert signs == ["+", "-"]


def test_repeated_code_is_told_apart_by_its_occurrence():
    old = record(line("m.py:7", "f", "y = g(y)", item(nbytes=100)), line("m.py:8", "f", "y = g(y)", item(nbytes=900)))
    new = record(line("m.py:7", "f", "y = g(y)", item(nbytes=100)), line("m.py:8", "f", "y = g(y)", item(nbytes=900)))
    assert compare_records(old, new).changes == ()
    swapped = record(
        line("m.py:7", "f", "y = g(y)", item(nbytes=900)), line("m.py:8", "f", "y = g(y)", item(nbytes=100))
    )
    assert sorted(c.sign for c in compare_records(old, swapped).changes) == ["+", "-"]


def test_an_edited_line_with_the_same_collectives_is_matched_to_its_old_self():
    old = record(line("m.py:7", "f", "h = x @ w", item(nbytes=1000)), line("m.py:9", "f", "z = h", item("all-gather")))
    new = record(
        line("m.py:7", "f", "h = jnp.dot(x, w)", item(nbytes=2000)), line("m.py:9", "f", "z = h", item("all-gather"))
    )
    ((sign, grows, text),) = texts(old, new)
    assert (sign, grows) == ("+", True)
    assert text.startswith(
        "line 7 of m.py (f) now all-reduces 2.0 KiB over data per call (x1); the snapshot has 1000 B"
    )
    other_axes = record(
        line("m.py:7", "f", "h = jnp.dot(x, w)", item(axes="model")), line("m.py:9", "f", "z = h", item("all-gather"))
    )
    assert sorted(c.sign for c in compare_records(old, other_axes).changes) == ["+", "-"]


def test_a_line_of_no_file_is_matched_by_its_place():
    old = record(line("?", "", "", item()))
    assert compare_records(old, old).changes == ()
    gone = compare_records(old, record()).changes
    assert gone[0].text.startswith("a line of no file of yours no longer all-reduces")


def test_layers_are_named_in_the_place():
    old = record(line("m.py:7", "f", "h", item(), layer="layers_2/attn"))
    (change,) = compare_records(old, record()).changes[:1]
    assert change.text.startswith("line 7 of m.py (f; in layers_2/attn) no longer")


def test_layout_changes_and_axes_used_no_more():
    old = record(
        line("m.py:7", "f", "h", item(axes="data")),
        inputs=[{"path": "x", "type": "float32[64@data,8]"}, {"path": "w", "type": "float32[8@(data,model)]"}],
        outputs=[{"path": "out", "type": "float32[64@data,8]"}],
    )
    new = record(
        inputs=[{"path": "x", "type": "float32[64,8]"}, {"path": "v", "type": "float32[8]"}],
        outputs=[{"path": "out", "type": "float32[64@data,8]"}],
    )
    found = texts(old, new)
    assert (
        "~",
        False,
        "input x is laid out as float32[64,8] now; the snapshot has float32[64@data,8] (no longer split by data)",
    ) in found
    assert ("~", False, "input v is new: float32[8]") in found
    assert ("~", False, "input w is gone; the snapshot has float32[8@(data,model)]") in found
    assert found[-1] == (
        "-",
        False,
        "the mesh axes model are used no more: no collective runs over them and no input or output is split by them",
    )
    diff = compare_records(old, new)
    assert diff.failing(strict=False) == [] and len(diff.failing(strict=True)) == len(diff.changes)


def test_a_changed_mesh_is_a_change():
    (change,) = compare_records(record(), record(mesh="data=8")).changes
    assert change.text == "the mesh is data=8 now; the snapshot has data=4 model=2" and not change.grows
    assert change.row()[4:6] == ("data=4 model=2", "data=8")


def test_an_old_record_without_layouts_is_compared_by_its_lines_with_a_note():
    old = {"program": "step", "mesh": "", "lines": [line("m.py:1", "f", "a", item())]}
    new = record(line("m.py:1", "f", "a", item()), mesh="")
    diff = compare_records(old, new)
    assert diff.changes == ()
    assert diff.notes == (
        "the snapshot keeps no input or output layouts (recorded before they were kept): record it again",
    )
    assert (
        diff.lines() == list(diff.notes)
        and diff.lines(failing=True) == []
        and diff.lines(failing=False) == list(diff.notes)
    )


def test_lines_split_into_failing_and_passing():
    old = record(line("m.py:1", "f", "a", item(nbytes=100)), line("m.py:2", "f", "b", item(nbytes=100)))
    new = record(line("m.py:1", "f", "a", item(nbytes=200)), line("m.py:2", "f", "b", item(nbytes=50)))
    diff = compare_records(old, new)
    assert [c.sign for c in diff.changes] == ["+", "-"]
    assert len(diff.lines(failing=True)) == 1 and diff.lines(failing=True)[0].startswith("line 1")
    assert diff.lines(failing=False)[0].startswith("line 2")
    assert diff.lines(failing=True, strict=True) == diff.lines()
    assert diff.changes[0].row() == (
        "line 1 of m.py (f)",
        "a",
        "all-reduce",
        "data",
        "100 B (x1)",
        "200 B (x1)",
        "+100 B (+100%)",
    )


# ---------------------------------------------------------------------------- record owners, files


def test_a_record_belongs_to_the_longest_test_name_it_starts_with():
    tests = {"test_a", "test_a[1]", "test_b[x::y]"}
    assert record_owner("test_a", tests) == "test_a"
    assert record_owner("test_a[1]#2", tests) == "test_a[1]"
    assert record_owner("test_a::named", tests) == "test_a"
    assert record_owner("test_b[x::y]::named", tests) == "test_b[x::y]"
    assert record_owner("test_ab", tests) is None and record_owner("test_a[2]", tests) is None


def test_records_change_under_the_lock_and_a_bad_file_is_named(tmp_path):
    path = tmp_path / "deep" / "s.json"
    assert load_records(path) == {}
    assert change_records(path, lambda r: r.setdefault("a", {"lines": []}) and "done") == "done"
    assert json.loads(path.read_text()) == {"format": FORMAT, "snapshots": {"a": {"lines": []}}}
    stamp = path.stat().st_mtime_ns
    change_records(path, lambda r: None)  # nothing changed: the file is not written again
    assert path.stat().st_mtime_ns == stamp
    path.write_text("{broken")
    with pytest.raises(ShardingError, match=r"cannot read the snapshot file .*s\.json"):
        load_records(path)
    path.write_text(json.dumps({"format": "other", "snapshots": {}}))
    with pytest.raises(ShardingError, match="is no shardviz collectives snapshot"):
        load_records(path)
    path.write_text(json.dumps({"format": FORMAT, "snapshots": []}))
    with pytest.raises(ShardingError, match="is no shardviz collectives snapshot"):
        load_records(path)


# ---------------------------------------------------------------------------- numbers as people read them


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.505, "505 ms"),
        (1.5, "1.5 s"),
        (52e-6, "52 µs"),
        (2.19e-8, "21.9 ns"),
        (2.07e-12, "2.07 ps"),
        (1234.5, "1234 s"),
        (1.0, "1 s"),
        (1e-3, "1 ms"),
        (0.0, "0 s"),
        (3e-16, "0.0003 ps"),
        (math.inf, "inf"),
    ],
)
def test_times_read_in_the_unit_that_fits(value, text):
    assert format_seconds(value) == text


@pytest.mark.parametrize(
    ("before", "after", "text"),
    [
        (100, 200, "+100 B (+100%)"),
        (2048, 1024, "-1.0 KiB (-50%)"),
        (0, 5000, "+4.9 KiB"),
        (1000, 1001, "+1 B (+0.10%)"),
        (10, 10, "±0 B (±0.00%)"),
    ],
)
def test_changes_read_as_amount_and_share(before, after, text):
    assert format_change(before, after) == text


def test_places_name_the_layer_where_there_is_one():
    class Scoped:
        scope = "layers_1/mlp"
        where_label = "layers_1/mlp, pass 2 of 4"

    assert layer_of(Scoped()) == "layers_1/mlp" and layer_of(object()) == ""
    assert label_of(Scoped()) == "layers_1/mlp, pass 2 of 4" and label_of(object()) == ""
    assert where(None) == "(no line of yours: the collective comes from library code)"
    assert where(None, layer="l0").endswith("(in l0)")
    assert function_names("step.<locals>.<lambda>") == ["step.<locals>.<lambda>", "<lambda>", "step", "step"]


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("512", 512),
        ("1.5 KiB", 1536),
        ("2 GB", 2_000_000_000),
        ("1.1 GB", 1_100_000_000),
        (" 3 mib ", 3 * 2**20),
        (16e9, 16_000_000_000),
        (7, 7),
        (".5 KiB", 512),
    ],
)
def test_byte_budgets(value, count):
    assert parse_bytes(value, "b") == count


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("0.5", "'0.5' is 0.5 bytes, not a whole number"),
        ("7 parsecs", "is not a size"),
        ("KiB", "is not a size"),
        (True, "must be a byte count"),
        ([1], "must be a byte count"),
        (1.5, "must be a whole number of bytes"),
        (math.nan, "must be a whole number of bytes"),
        (-1, "must be 0 or more bytes"),
    ],
)
def test_bad_byte_budgets(value, fragment):
    with pytest.raises(ShardingError, match=fragment):
        parse_bytes(value, "b")


def test_places_sizes_and_pictures_as_messages_write_them(tmp_path):
    from shardviz.program.model import SourceLocation
    from shardviz.testing.messages import exact_bytes, line_code, relative_file, side_by_side

    source = tmp_path / "model.py"
    source.write_text("import jax\n\ndef loss(w):\n    h = w @ w  # square\n")
    here = SourceLocation(str(source), 4, 0, "train.<locals>.loss")
    assert line_code(here) == "h = w @ w  # square" and line_code(None) == ""
    assert where(here) == "model.py:4 (loss)  h = w @ w  # square"
    assert where(here, code=False, layer="layers_0") == "model.py:4 (loss; in layers_0)"
    assert where(SourceLocation(str(source), 99, 0, "")) == "model.py:99"
    assert exact_bytes(512) == "512 B" and exact_bytes(4608) == "4.5 KiB (4608 B)"
    assert relative_file(str(source), tmp_path) == "model.py"
    assert relative_file(str(source), tmp_path / "sub") == "../model.py"
    assert side_by_side("a:", "1\n22", "b:", "333") == ["a:   b:", "1    333", "22"]
    assert side_by_side("a:", "x" * 70, "b:", "y" * 70) == ["a:", "x" * 70, "", "b:", "y" * 70]
    assert side_by_side("a:", "x" * 60, "b:", "y" * 57) == [f"{'a:':<60}   b:", f"{'x' * 60}   {'y' * 57}"]


def test_edges_of_the_message_helpers(tmp_path):
    from shardviz.program.model import SourceLocation
    from shardviz.testing.messages import side_by_side

    assert format_seconds(1000.0) == "1000 s"
    assert function_names("a.b.<locals>.<lambda>") == ["a.b.<locals>.<lambda>", "<lambda>", "a.b", "b"]
    source = tmp_path / "m.py"
    source.write_text("f = lambda w: w @ w\n")
    assert where(SourceLocation(str(source), 1, 0, "step.<locals>.<lambda>"), code=False) == "m.py:1 (step)"
    assert side_by_side("a:", "x" * 60, "b:", "y" * 58) == ["a:", "x" * 60, "", "b:", "y" * 58]  # 121 columns
    assert side_by_side("a:", "1", "b:", "1\n2\n3") == ["a:   b:", "1    1", "     2", "     3"]


def test_edges_of_a_comparison():
    old = record(line("m.py:7", "f", "h = x @ w", item()), inputs=[{"path": "w", "type": "float32[16,32]"}])
    moved_file = record(
        line("other.py:7", "f", "h = jnp.dot(x, w)", item()), inputs=[{"path": "w", "type": "float32[16,8]"}]
    )
    diff = compare_records(old, moved_file)
    assert sorted(c.sign for c in diff.changes) == ["+", "-", "~"]  # another file's line is not its old self
    (layout,) = [c for c in diff.changes if c.sign == "~"]
    assert layout.line() == "input w is laid out as float32[16,8] now; the snapshot has float32[16,32]"
    assert layout.line(signs=True) == "~ " + layout.line()
    assert diff.lines(signs=True)[0][:2] in ("+ ", "- ", "~ ")
    no_function = {"where": "m.py:7", "code": "h = x @ w", "collectives": [item()]}
    edited = record(line("m.py:7", "", "h = jnp.dot(x, w)", item()), inputs=[{"path": "w", "type": "float32[16,32]"}])
    assert compare_records(record(no_function, inputs=[{"path": "w", "type": "float32[16,32]"}]), edited).changes == ()


def test_edges_of_byte_budgets_and_files(tmp_path):
    assert parse_bytes(0, "b") == 0 and parse_bytes("0 B", "b") == 0
    with pytest.raises(ShardingError, match=r"^b must be a byte count, an int such as 2\*\*30 .* not list \[1\]$"):
        parse_bytes([1], "b")
    with pytest.raises(
        ShardingError, match=r"write a whole number of bytes, or a unit that makes it one \('0.5 KiB' is 512 B\)$"
    ):
        parse_bytes("0.5", "b")
    path = tmp_path / "two" / "levels" / "s.json"
    change_records(path, lambda r: r.update(a={}))
    assert load_records(path) == {"a": {}}


def test_a_file_is_written_whole_through_a_temporary_of_its_own(tmp_path, monkeypatch):
    import os

    path = tmp_path / "s.json"
    change_records(path, lambda r: r.update({"µ-test": {"lines": []}}))
    change_records(path, lambda r: r.update({"b": {}}))  # an existing file keeps what it had
    assert path.read_text(encoding="utf-8") == (
        '{\n "format": "' + FORMAT + '",\n "snapshots": {\n  "b": {},\n  "µ-test": {\n   "lines": []\n  }\n }\n}\n'
    )
    moved = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: moved.append((a, b)) or real_replace(a, b))
    change_records(path, lambda r: r.update(c={}))
    ((temporary, target),) = moved
    assert target == path and os.path.dirname(temporary) == str(tmp_path)
    name = os.path.basename(temporary)
    assert name.startswith(".s.json.") and name.endswith(".partial") and name != ".s.json..partial"

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        change_records(path, lambda r: r.update(d={}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # the temporary is removed
    assert sorted(load_records(path)) == ["b", "c", "µ-test"]


def test_code_keys_by_hand():
    from shardviz.testing.snapshot_diff import code_key

    assert code_key("h = x @ w  # note") == "h=x@w"
    assert code_key('s = "a # b"  # c') == 's="a # b"'
    assert code_key("t = 'it\\'s'  # x") == "t='it\\'s'"
    assert code_key("# only a comment") == ""


def test_layout_changes_as_the_page_lists_them():
    old = {
        "program": "p",
        "mesh": "m",
        "lines": [line("m.py:1", "f", "a", item(axes="data,model"))],
        "inputs": [{"path": "a", "type": "float32[8@fsdp,4@tp]"}, {"path": "b", "type": "float32[8]"}],
    }  # no outputs kept: read as none
    new = {
        "program": "p",
        "mesh": "m",
        "lines": [],
        "inputs": [{"path": "a", "type": "float32[8,4]"}, {"path": "c", "type": "float32[2]"}],
        "outputs": [{"path": "out", "type": "float32[8@fsdp]"}],
    }
    rows = [c.row() for c in compare_records(old, new).changes]
    assert ("input a", "", "layout", "", "float32[8@fsdp,4@tp]", "float32[8,4]", "changed") in rows
    assert ("input c", "", "layout", "", "none", "float32[2]", "changed") in rows
    assert ("input b", "", "layout", "", "float32[8]", "none", "changed") in rows
    assert ("output out", "", "layout", "", "none", "float32[8@fsdp]", "changed") in rows
    texts_ = [c.line() for c in compare_records(old, new).changes]
    assert (
        "input a is laid out as float32[8,4] now; the snapshot has float32[8@fsdp,4@tp] (no longer split by fsdp, tp)"
        in texts_
    )
    assert texts_[-1].startswith("the mesh axes data, model, tp are used no more")


def test_an_unchanged_input_before_a_changed_one():
    inputs = [{"path": "a", "type": "float32[8]"}, {"path": "b", "type": "float32[8@x]"}]
    changed = [{"path": "a", "type": "float32[8]"}, {"path": "b", "type": "float32[8]"}]
    diff = compare_records(record(inputs=inputs, mesh="x=2"), record(inputs=changed, mesh="x=2"))
    first = diff.changes[0].text
    assert first == "input b is laid out as float32[8] now; the snapshot has float32[8@x] (no longer split by x)"
