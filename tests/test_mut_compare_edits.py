"""The program widget's edit notice without a trace: stand-in programs whose collectives' wire
bytes per line are counted by hand (each collective's bytes sent per run times its runs, a combined
collective's operands each on their own line), and the sentence that names what changed."""

from __future__ import annotations

from types import SimpleNamespace

from compare_stand_ins import program
from shardviz.compare.edits import collective_lines, edit_notice, program_changes
from shardviz.compare.rows import LineChange, LineCollectives


def source(at):
    return None if at is None else SimpleNamespace(file=f"/home/me/{at[0]}", line=at[1])


def collective(kind, axes, wire_bytes, count=1, at=None, parts=()):
    return SimpleNamespace(kind=kind, axes=axes, wire_bytes=wire_bytes, total_wire_bytes=wire_bytes * count,
                           count=count, source=source(at), parts=parts)  # fmt: skip


def part(wire_bytes, at):
    return SimpleNamespace(wire_bytes=wire_bytes, source=source(at))


def test_a_programs_collectives_are_summed_per_line_kind_and_axes():
    made = program(collectives=(
        collective("all-gather", ("x",), 2048, 1, ("model.py", 12)),
        collective("reduce-scatter", ("x", "y"), 512, 3, ("model.py", 12)),
        collective("all-to-all", None, 100, 1),
        collective("all-gather", ("x",), 1024, 2, ("model.py", 12)),
    ))  # fmt: skip
    assert collective_lines(made) == (
        LineCollectives("model.py:12", "all-gather", "x", 2, 2048 + 1024 * 2, 0.0, ""),
        LineCollectives("model.py:12", "reduce-scatter", "x,y", 1, 512 * 3, 0.0, ""),
        LineCollectives("?", "all-to-all", "?", 1, 100, 0.0, ""),
    )


def test_a_combined_collective_charges_each_operand_to_its_own_line():
    # XLA combined two gradients' all-reduces into one of 768 + 384 bytes sent per run, run twice.
    combined = collective("all-reduce", ("data",), 768 + 384, 2, ("train.py", 2),
                          parts=(part(768, ("train.py", 2)), part(384, ("train.py", 3))))  # fmt: skip
    assert collective_lines(program(collectives=(combined,))) == (
        LineCollectives("train.py:2", "all-reduce", "data", 1, 768 * 2, 0.0, ""),
        LineCollectives("train.py:3", "all-reduce", "data", 1, 384 * 2, 0.0, ""),
    )


BEFORE = (
    collective("all-gather", ("x",), 1024, at=("a.py", 1)),
    collective("all-reduce", ("x",), 4096, at=("a.py", 2)),
    collective("all-gather", ("y",), 2048, at=("a.py", 3)),
)
AFTER = (
    collective("all-reduce", ("x",), 8192, at=("a.py", 2)),
    collective("all-gather", ("y",), 1024, at=("a.py", 3)),
    collective("all-to-all", ("x",), 3072, at=("a.py", 4)),
    collective("all-gather", ("x",), 512, at=("a.py", 5)),
)


def test_program_changes_are_largest_change_of_bytes_first():
    # bytes changed: a.py:2 4096, a.py:4 3072, a.py:1 and a.py:3 1024 each (by line), a.py:5 512
    assert program_changes(program(collectives=BEFORE), program(collectives=AFTER)) == (
        LineChange("a.py:2", "all-reduce", "x", "grown", 4096, 8192, 0.0, 0.0),
        LineChange("a.py:4", "all-to-all", "x", "appeared", 0, 3072, 0.0, 0.0),
        LineChange("a.py:1", "all-gather", "x", "vanished", 1024, 0, 0.0, 0.0),
        LineChange("a.py:3", "all-gather", "y", "shrunk", 2048, 1024, 0.0, 0.0),
        LineChange("a.py:5", "all-gather", "x", "appeared", 0, 512, 0.0, 0.0),
    )


def test_the_notice_names_three_changes_and_counts_the_rest():
    before = program(collectives=BEFORE)
    assert edit_notice(before, program(collectives=AFTER)) == (
        "Traced again: all-reduce over x at a.py:2 grew (4.0 KiB -> 8.0 KiB per call); all-to-all over x at a.py:4 "
        "appeared (3.0 KiB per call); all-gather over x at a.py:1 vanished (1.0 KiB per call); and 2 more."
    )
    assert edit_notice(before, program(collectives=AFTER[:3])).endswith("vanished (1.0 KiB per call); and 1 more.")
    assert edit_notice(before, program(collectives=AFTER[:2])) == (
        "Traced again: all-reduce over x at a.py:2 grew (4.0 KiB -> 8.0 KiB per call); all-gather over x at a.py:1 "
        "vanished (1.0 KiB per call); all-gather over y at a.py:3 shrank (2.0 KiB -> 1.0 KiB per call)."
    )


def test_the_same_collectives_are_said_to_be_the_same():
    assert edit_notice(program(collectives=BEFORE), program(collectives=BEFORE)) == (
        "Traced again: the same collectives on the same lines."
    )
    assert edit_notice(program(), program()) == "Traced again: the same collectives on the same lines."
