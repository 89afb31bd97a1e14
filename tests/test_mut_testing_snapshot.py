"""Snapshot records of hand-made programs: what a record holds, and what a check against it says.

The program (tests/testing_standins.py, as in test_mut_testing_collectives.py)
on a mesh data=4 model=2 sends, per call: on line 2 an all-gather over model
of 512 B once; on line 3 an all-reduce over data of 1024 B three times
(3072 B); a combined all-reduce over data run twice whose operands are 100 B
from line 4 and 300 B from line 5 (200 B and 600 B); and, on line 5, a
collective-permute whose groups hold one device (moves nothing, so no record).
"""

from __future__ import annotations

import json

import pytest

from shardviz.errors import ShardingError
from shardviz.program.model import BytesIn
from shardviz.testing.errors import SnapshotChanged
from shardviz.testing.snapshot import (
    assert_collectives_snapshot,
    collectives_record,
    record_owner,
    stale_records,
)
from shardviz.testing.snapshot_file import FORMAT
from testing_standins import CODE, MESH, collective, part, program, source, write_model

AGAIN = "if the change is intended, record it again: pytest --shardviz-update (or update=True)"


def model(folder, reduce_bytes=1024, gather=True):
    file = write_model(folder, CODE)
    collectives = [
        collective("all-reduce", ("data",), reduce_bytes, count=3, at=source(file, 3), name="reduce"),
        collective("collective-permute", (), 0, group_size=1, at=source(file, 5), name="alone"),
        collective(
            "all-reduce",
            ("data",),
            400,
            count=2,
            name="combined",
            parts=(part(100, source(file, 4)), part(300, source(file, 5))),
        ),
    ]
    if gather:
        collectives.insert(1, collective("all-gather", ("model",), 512, group_size=2, at=source(file, 2)))
    total = 3 * reduce_bytes + 800 + (512 if gather else 0)
    return program(collectives, total=total, mesh=MESH)


def item(kind, axes, nbytes, runs):
    return {"kind": kind, "axes": axes, "bytes": nbytes, "runs": runs}


def test_a_record_holds_each_lines_collectives_in_line_order(tmp_path):
    record = collectives_record(model(tmp_path), tmp_path)
    assert record == {
        "program": "step",
        "mesh": "data=4 model=2",
        "inputs": [],
        "outputs": [],
        "bytes_from": "device",
        "lines": [
            {
                "where": "model.py:2",
                "function": "loss",
                "code": "h = gather(w)  # wide",
                "collectives": [item("all-gather", "model", 512, 1)],
            },
            {
                "where": "model.py:3",
                "function": "loss",
                "code": "g = reduce(x)",
                "collectives": [item("all-reduce", "data", 3072, 3)],
            },
            {
                "where": "model.py:4",
                "function": "loss",
                "code": "a = combined(x)",
                "collectives": [item("all-reduce", "data", 200, 2)],
            },
            {
                "where": "model.py:5",
                "function": "loss",
                "code": "c = more(x)",
                "collectives": [item("all-reduce", "data", 600, 2)],
            },
        ],
    }
    assert collectives_record(program([], total=0), tmp_path)["mesh"] == ""


def test_runs_add_across_collectives_but_not_across_one_collectives_operands(tmp_path):
    file = write_model(tmp_path, CODE)
    at = source(file, 3, "step.<locals>.<lambda>")
    fused = collective("all-reduce", ("data",), 40, count=5, name="fused", parts=(part(10, at), part(30, at)))
    other = collective("all-reduce", ("data",), 8, count=2, at=at, name="other")
    gather = collective("all-gather", ("data", "model"), 16, group_size=8, count=1, at=at, name="g")
    record = collectives_record(program([fused, other, gather], total=200 + 16 + 16, mesh=MESH), tmp_path)
    ((line,),) = [record["lines"]]
    assert line["function"] == "step"  # a lambda is named by the function it is written in
    assert line["collectives"] == [
        item("all-gather", "data,model", 16, 1),
        item("all-reduce", "data", 10 * 5 + 30 * 5 + 8 * 2, 5 + 2),
    ]


def test_layers_are_lines_of_their_own_and_a_line_of_no_source_is_a_question_mark(tmp_path):
    file = write_model(tmp_path, CODE)
    first = collective("all-reduce", ("data",), 10, at=source(file, 3), scope="layers_1", name="r1")
    second = collective("all-reduce", ("data",), 20, at=source(file, 3), scope="layers_0", name="r0")
    nowhere = collective("all-gather", ("model",), 30, group_size=2, name="g")
    record = collectives_record(program([first, second, nowhere], total=60, mesh=MESH), tmp_path / "sub")
    assert [(r["where"], r.get("layer"), r["function"], r["code"]) for r in record["lines"]] == [
        ("../model.py:3", "layers_0", "loss", "g = reduce(x)"),
        ("../model.py:3", "layers_1", "loss", "g = reduce(x)"),
        ("?", None, "", ""),
    ]


def test_only_a_traced_program_is_recorded(tmp_path):
    with pytest.raises(ShardingError) as info:
        collectives_record({"lines": []})
    assert str(info.value) == (
        "a collectives snapshot records a program traced with shardviz.trace(f, *args), not dict"
    )


def test_record_compare_grow_and_shrink(tmp_path):
    beside = tmp_path / "__shardviz__" / "test_m.json"
    assert_collectives_snapshot(model(tmp_path), beside, "test_a", update=True)  # files relative to its folder
    data = json.loads(beside.read_text())
    assert data["format"] == FORMAT and data["snapshots"]["test_a"]["lines"][0]["where"] == "../model.py:2"
    path = tmp_path / "test_m.json"
    recorded = assert_collectives_snapshot(model(tmp_path), path, "test_a", update=True)
    assert recorded.recorded and recorded.notes == () and recorded.name == "test_a" and recorded.path == str(path)
    assert json.loads(path.read_text())["snapshots"]["test_a"]["lines"][0]["where"] == "model.py:2"
    moved = assert_collectives_snapshot(model(tmp_path), beside, "test_a", base=tmp_path, update=True)
    assert [n.splitlines()[0] for n in moved.notes] == [
        "+ line 2 of model.py (loss) now all-gathers 512 B over model per call (x1); the snapshot has none: +512 B",
        "+ line 3 of model.py (loss) now all-reduces 3.0 KiB over data per call (x3); the snapshot has none: +3.0 KiB",
        "+ line 4 of model.py (loss) now all-reduces 200 B over data per call (x2); the snapshot has none: +200 B",
        "+ line 5 of model.py (loss) now all-reduces 600 B over data per call (x2); the snapshot has none: +600 B",
        "- line 2 of ../model.py (loss) no longer all-gathers over model; the snapshot has 512 B over model per call "
        "(x1): -512 B",
        "- line 3 of ../model.py (loss) no longer all-reduces over data; the snapshot has 3.0 KiB over data per call "
        "(x3): -3.0 KiB",
        "- line 4 of ../model.py (loss) no longer all-reduces over data; the snapshot has 200 B over data per call "
        "(x2): -200 B",
        "- line 5 of ../model.py (loss) no longer all-reduces over data; the snapshot has 600 B over data per call "
        "(x2): -600 B",
    ]
    same = assert_collectives_snapshot(model(tmp_path), path, "test_a")
    assert not same.recorded and same.notes == ()

    with pytest.raises(SnapshotChanged) as info:
        assert_collectives_snapshot(model(tmp_path, reduce_bytes=2048, gather=False), path, "test_a")
    assert str(info.value).splitlines() == [
        f"the collectives of step grew since the snapshot 'test_a' in {path}:",
        "  line 3 of model.py (loss) now all-reduces 6.0 KiB over data per call (x3); "
        "the snapshot has 3.0 KiB (x3): +3.0 KiB (+100%)",
        "      g = reduce(x)",
        "also (these pass):",
        "  line 2 of model.py (loss) no longer all-gathers over model; the snapshot has 512 B over model per call "
        "(x1): -512 B",
        "      h = gather(w)  # wide",
        "  the mesh axes model are used no more: no collective runs over them and no input or output is split by them",
        "",
        AGAIN,
    ]
    page = info.value.page
    assert page.budget == f"the snapshot 'test_a' in {path} (no growth)"
    assert page.figure == "1 changes that fail, 3 in all"
    assert page.columns == ("line", "code", "collective", "axes", "snapshot", "now", "change")
    assert page.rows[0] == (
        "line 3 of model.py (loss)",
        "g = reduce(x)",
        "all-reduce",
        "data",
        "3.0 KiB (x3)",
        "6.0 KiB (x3)",
        "+3.0 KiB (+100%)",
    )
    assert page.rows[2] == ("axes", "", "", "model", "used", "unused", "")
    assert page.marked == (True, False, False)
    assert info.value.subject.name == "step"

    less = assert_collectives_snapshot(model(tmp_path, reduce_bytes=512), path, "test_a")
    assert less.notes == (
        "line 3 of model.py (loss) now all-reduces 1.5 KiB over data per call (x3); the snapshot has 3.0 KiB (x3): "
        "-1.5 KiB (-50%)\n      g = reduce(x)",
    )


def test_a_strict_check_fails_on_less_and_says_its_tolerance(tmp_path):
    path = tmp_path / "s.json"
    assert_collectives_snapshot(model(tmp_path), path, "t", update=True)
    smaller = model(tmp_path, reduce_bytes=1000)
    assert_collectives_snapshot(smaller, path, "t", strict=True, tolerance=0.03)  # 2.3% less: within 3%
    with pytest.raises(SnapshotChanged) as info:
        assert_collectives_snapshot(smaller, path, "t", strict=True, tolerance=0.02)
    lines = str(info.value).splitlines()
    assert lines[0] == f"the collectives of step changed since the snapshot 't' in {path} (strict, tolerance 2%):"
    assert lines[1].endswith("the snapshot has 3.0 KiB (x3): -72 B (-2%)")
    assert "also (these pass):" not in lines
    assert info.value.page.budget == f"the snapshot 't' in {path} (strict, tolerance 2%)"
    assert info.value.page.figure == "1 changes that fail, 1 in all"
    with pytest.raises(SnapshotChanged) as info:
        assert_collectives_snapshot(smaller, path, "t", strict=True, update_command="pytest x --shardviz-update")
    assert str(info.value).splitlines()[0].endswith(f"in {path} (strict):")
    assert str(info.value).splitlines()[-1] == "if the change is intended, record it again: pytest x --shardviz-update"
    assert info.value.page.budget == f"the snapshot 't' in {path} (strict)"


def test_recording_again_lists_every_change_against_the_record_it_replaces(tmp_path):
    path = tmp_path / "s.json"
    assert_collectives_snapshot(model(tmp_path), path, "t", update=True)
    again = assert_collectives_snapshot(model(tmp_path, reduce_bytes=2048, gather=False), path, "t", update=True)
    assert again.recorded
    assert [note.splitlines()[0][:2] for note in again.notes] == ["+ ", "- ", "- "]
    assert again.notes[0].startswith("+ line 3 of model.py (loss) now all-reduces 6.0 KiB")
    assert json.loads(path.read_text())["snapshots"]["t"]["lines"][0]["where"] == "model.py:3"


def test_a_missing_snapshot_says_how_to_record_it(tmp_path):
    path = tmp_path / "s.json"
    prog = model(tmp_path)
    with pytest.raises(SnapshotChanged) as info:
        assert_collectives_snapshot(prog, path)
    assert str(info.value) == (
        f"no snapshot named 'step' in {path}: record the collectives of step with "
        "pytest --shardviz-update (or update=True)"
    )
    assert info.value.subject is prog and info.value.page is None
    assert_collectives_snapshot(prog, path, update=True)  # named after the program
    assert list(json.loads(path.read_text())["snapshots"]) == ["step"]
    assert assert_collectives_snapshot(prog, str(path)).name == "step"


@pytest.mark.parametrize("tolerance", [1, 1.5, -0.01, True, "2%", None])
def test_a_tolerance_outside_zero_to_one_is_refused(tmp_path, tolerance):
    with pytest.raises(ShardingError) as info:
        assert_collectives_snapshot(model(tmp_path), tmp_path / "s.json", "t", tolerance=tolerance)
    assert str(info.value) == (
        f"tolerance is a relative change in bytes from 0 up to (not including) 1, e.g. 0.02 for 2%, not {tolerance!r}"
    )


@pytest.mark.parametrize("name", ["", 3])
def test_a_snapshot_name_must_be_a_string(tmp_path, name):
    with pytest.raises(ShardingError, match=r"^a snapshot's name is a non-empty string, not "):
        assert_collectives_snapshot(model(tmp_path), tmp_path / "s.json", name)


def widened_program(folder, bytes_from):
    """One all-reduce of a bf16 gradient: 32 B on the device, 64 B as XLA:CPU's module widens it to f32."""
    file = write_model(folder, CODE)
    wide = collective(
        "all-reduce",
        ("data",),
        32 if bytes_from == "device" else 64,
        at=source(file, 3),
        on_device=BytesIn("bfloat16", 32, 32),
        on_cpu=BytesIn("float32", 64, 64),
    )
    return program([wide], total=wide.wire_bytes, mesh=MESH, bytes_from=bytes_from)


def test_a_snapshot_counted_as_xla_cpu_compares_the_program_counted_so(tmp_path):
    path = tmp_path / "s.json"
    assert_collectives_snapshot(widened_program(tmp_path, "cpu"), path, "t", update=True)
    assert json.loads(path.read_text())["snapshots"]["t"]["bytes_from"] == "cpu"
    result = assert_collectives_snapshot(widened_program(tmp_path, "device"), path, "t", strict=True)
    assert result.notes == (
        "the snapshot counts bytes as XLA:CPU's module moves them (bf16/f16 as f32), so the program was compared "
        "counted that way; record it again (pytest --shardviz-update, or update=True) to count them in the "
        "program's dtypes",
    )
    # the other way round, and a record from before bytes_from was kept (XLA:CPU's count)
    assert_collectives_snapshot(widened_program(tmp_path, "device"), path, "d", update=True)
    result = assert_collectives_snapshot(widened_program(tmp_path, "cpu"), path, "d", strict=True)
    assert result.notes[0].startswith("the snapshot counts bytes in the program's dtypes, so the program was ")
    assert result.notes[0].endswith("to count them as XLA:CPU's module moves them (bf16/f16 as f32)")
    records = json.loads(path.read_text())
    del records["snapshots"]["t"]["bytes_from"]
    path.write_text(json.dumps(records))
    assert (
        assert_collectives_snapshot(widened_program(tmp_path, "device"), path, "t", strict=True)
        .notes[0]
        .startswith("the snapshot counts bytes as XLA:CPU's module")
    )
    # a program whose bytes no count widens is compared as it is, with no note
    assert_collectives_snapshot(model(tmp_path), path, "m", update=True)
    records = json.loads(path.read_text())
    records["snapshots"]["m"]["bytes_from"] = "cpu"
    path.write_text(json.dumps(records))
    assert assert_collectives_snapshot(model(tmp_path), path, "m", strict=True).notes == ()
    records["snapshots"]["m"]["bytes_from"] = "abacus"
    path.write_text(json.dumps(records))
    assert assert_collectives_snapshot(widened_program(tmp_path, "device"), path, "t", strict=True).notes


def test_a_recounted_comparison_that_fails_still_says_why_it_was_recounted(tmp_path):
    path = tmp_path / "s.json"
    assert_collectives_snapshot(widened_program(tmp_path, "cpu"), path, "t", update=True)
    records = json.loads(path.read_text())
    records["snapshots"]["t"]["lines"][0]["collectives"][0]["bytes"] = 32
    path.write_text(json.dumps(records))
    with pytest.raises(SnapshotChanged) as info:
        assert_collectives_snapshot(widened_program(tmp_path, "device"), path, "t")
    lines = str(info.value).splitlines()
    assert lines[1].startswith("  line 3 of model.py (loss) now all-reduces 64 B over data per call (x1)")
    assert lines[3] == "also (these pass):"
    assert lines[4].startswith("  the snapshot counts bytes as XLA:CPU's module moves them")


def write_records(path, *names):
    path.write_text(json.dumps({"format": FORMAT, "snapshots": {n: {"lines": []} for n in names}}))


def test_stale_records_belong_to_no_test_or_to_a_finished_test_that_did_not_use_them(tmp_path):
    path = tmp_path / "s.json"
    write_records(path, "test_a", "test_a#2", "test_a::named", "test_b[1]", "test_gone", "test_skipped")
    tests = {"test_a", "test_b[1]", "test_skipped"}
    found = stale_records(path, tests, {"test_a", "test_b[1]"}, {"test_a", "test_b[1]"}, prune=False)
    assert found == ["test_a#2", "test_a::named", "test_gone"]
    assert len(json.loads(path.read_text())["snapshots"]) == 6
    pruned = stale_records(path, tests, {"test_a", "test_b[1]"}, {"test_a", "test_b[1]"}, prune=True)
    assert pruned == found
    assert sorted(json.loads(path.read_text())["snapshots"]) == ["test_a", "test_b[1]", "test_skipped"]
    assert stale_records(path, tests, set(), set(), prune=True) == []


def test_a_record_belongs_to_the_test_it_is_named_after():
    tests = {"test_a", "test_ab", "test_a[1]"}
    assert record_owner("test_a", tests) == "test_a"
    assert record_owner("test_a#3", tests) == "test_a"
    assert record_owner("test_a::x", tests) == "test_a"
    assert record_owner("test_ab#2", tests) == "test_ab"
    assert record_owner("test_a[1]::y", tests) == "test_a[1]"
    assert record_owner("test_abc", tests) is None
    assert record_owner("test_a[2]", tests) is None
