"""Fast tests of the reasons' data, text and payload, and of reading XLA's rematerialization warning:
hand-made reasons, collectives and programs (stand-ins), and a warning as XLA logs it, so each test takes
milliseconds. Mutation part ``program-why-fast`` runs these; the traced programs are in
tests/test_program_causes.py and tests/test_program_remat.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from shardviz.program.model import SourceLocation
from shardviz.program.why import reasons_payload as rp
from shardviz.program.why.explain import explain_text
from shardviz.program.why.reasons import OperandLayout, Rematerialization, Why, spec_text
from shardviz.program.why.remat import captured_stderr, rematerializations

X = OperandLayout("x", "float32[8,12]", ((), ("a",)))
W = OperandLayout("w", "float32[12,6]", (("a",), ()), role="made", note="as made")
PARTIAL = Why("partial-sums", "dot_general", "return x @ w", (X, W), "x is split", operand=0, dimension=1, axes=("a",))


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (None, "?"),
        ((), "P()"),
        (((), ()), "P()"),
        ((("a",), ()), "P('a')"),
        (((), ("a",)), "P(None, 'a')"),
        ((("a", "b"), ("c",)), "P(('a', 'b'), 'c')"),
        (((), ("a",), ()), "P(None, 'a')"),
    ],
)
def test_a_spec_reads_as_the_user_writes_it(spec, text):
    assert spec_text(spec) == text


def test_a_reason_says_because_and_an_unknown_one_cannot_tell():
    assert PARTIAL.known and PARTIAL.text == "because x is split"
    unknown = Why("unknown", "sort", "", (), "no line")
    assert not unknown.known and unknown.text == "cannot tell why, because no line"
    assert X.spec_text == "P(None, 'a')"


def test_a_reason_prints_its_operation_operands_wanted_layout_and_rule():
    why = Why("layout-mismatch", "sharding_constraint", "y = f(x)", (X, W), "it moves", wanted=(("b",),),
              wanted_by="a with_sharding_constraint", operand=1)  # fmt: skip
    assert str(why).splitlines() == [
        "layout-mismatch: sharding_constraint in `y = f(x)`",
        "  operand x float32[8,12] P(None, 'a')",
        "  made w float32[12,6] P('a') <-",
        "  wanted P('b') by a with_sharding_constraint",
        "  because it moves",
    ]
    bare = Why("unknown", "sort", "", (), "why", wanted=((),))
    assert str(bare).splitlines() == ["unknown: sort", "  wanted P()", "  cannot tell why, because why"]


def remat(**kw: Any) -> Rematerialization:
    fields = dict(instruction="%param", shape=(12, 12), dtype="f32", before=(("a",), ("b",)), after=(("b",), ("a",)),
                  before_text="{devices=[4,3]<=[12]}", after_text="{devices=[3,4]<=[4,3]T(1,0)}", full_bytes=576,
                  wire_bytes=528, source_file="/home/u/model.py", source_line=7, label="y", message="m")  # fmt: skip
    fields.update(kw)
    return Rematerialization(**fields)  # type: ignore[arg-type]


def test_a_rematerialization_says_where_what_and_the_whole_arrays_bytes():
    r = remat()
    assert r.where == "model.py:7"
    assert r.text == (
        "involuntary full rematerialization at model.py:7: XLA cannot move y [12,12] from P('a', 'b') to "
        "P('b', 'a') efficiently, so every device gathers the whole array (576 B) and cuts its new block"
    )
    assert remat(source_line=None).where == "no line of yours"
    assert remat(source_file=None).where == "no line of yours"
    assert "XLA cannot move [12,12] from" in remat(label="").text


# ---------------------------------------------------------------------- XLA's warning, read

WARNING = (
    "W1202 spmd_partitioner.cc:656] [SPMD] Involuntary full rematerialization. The compiler cannot go from "
    "sharding {devices=[4,3]<=[12]} to {devices=[3,4]<=[4,3]T(1,0)} efficiently for HLO operation %param = "
    'f32[3,4]{1,0} parameter(0), sharding={devices=[4,3]<=[12]}, metadata={op_name="y"}. As the last resort, '
    "SPMD will replicate the tensor and then partition it.\n"
)


@dataclass
class Gather:
    """A stand-in collective: what remat.py reads of one."""

    kind: str
    hlo: str
    source: SourceLocation | None
    op_name: str = "jit(f)/sharding_constraint"
    wire_bytes: int = 0
    count: int = 1
    why: Any = None


@dataclass
class Frames:
    """A stand-in module: the stack of each frame id."""

    stacks: dict[int, tuple[Any, ...]] = field(default_factory=dict)

    def frames(self, frame_id: int) -> tuple[Any, ...]:
        return self.stacks.get(frame_id, ())


MESH = SimpleNamespace(axis_names=("a", "b"), axis_sizes=(4, 3))
LINE = SourceLocation("/home/u/model.py", 7)


def gathers() -> list[Gather]:
    return [
        Gather("all-gather", "%ag = f32[3,12]{1,0} all-gather(%p)", LINE, wire_bytes=96),
        Gather("all-gather", "%ag.1 = f32[12,12]{1,0} all-gather(%ag)", LINE, wire_bytes=432),
        Gather("all-reduce", "%ar = f32[12,12]{1,0} all-reduce(%x)", LINE, "jit(f)/add", wire_bytes=1000),
        Gather("all-gather", "%other = f32[12,12]{1,0} all-gather(%q)", SourceLocation("/home/u/model.py", 9)),
    ]


def test_the_warning_is_read_into_the_whole_array_both_specs_its_bytes_and_line():
    (r,) = rematerializations(WARNING, Frames(), gathers(), MESH, None)
    assert (r.instruction, r.shape, r.dtype) == ("%param", (12, 12), "f32")
    assert r.before == (("a",), ("b",)) and r.after == (("b",), ("a",))
    assert r.full_bytes == 12 * 12 * 4
    # the line's collectives of the whole gather's op_name send the rematerialization's bytes: 96 + 432 (the
    # all-reduce of another operation on that line and the gather on line 9 are not its)
    assert r.wire_bytes == 96 + 432
    assert (r.source_file, r.source_line) == ("/home/u/model.py", 7)
    assert r.label == "y" and r.before_text == "{devices=[4,3]<=[12]}"
    assert r.message.startswith("[SPMD] Involuntary full rematerialization.") and r.message.endswith(
        "As the last resort"
    )


def test_a_warning_logged_twice_is_one_and_two_different_ones_are_two():
    other = WARNING.replace("%param = f32[3,4]", "%dot = bf16[3,4]").replace('op_name="y"', 'op_name="jit(f)/dot"')
    found = rematerializations(WARNING + WARNING + other, Frames(), gathers(), MESH, None)
    assert [(r.instruction, r.dtype, r.full_bytes) for r in found] == [("%param", "f32", 576), ("%dot", "bf16", 288)]
    assert found[1].label == ""  # an operation's op_name is JAX's path, no name of the user's
    assert rematerializations("nothing to see\n", Frames(), gathers(), MESH, None) == ()


def test_the_warnings_own_metadata_line_wins_and_a_frame_id_is_followed():
    sourced = WARNING.replace('metadata={op_name="y"}', 'metadata={op_name="y" source_file="/a/b.py" source_line=31}')
    (r,) = rematerializations(sourced, Frames(), gathers(), MESH, None)
    assert (r.source_file, r.source_line) == ("/a/b.py", 31)
    framed = WARNING.replace('metadata={op_name="y"}', 'metadata={op_name="y" stack_frame_id=4}')
    frame = SimpleNamespace(file="/home/u/model.py", line=12, column=3, function="f")
    (r,) = rematerializations(framed, Frames({4: (frame,)}), gathers(), MESH, None)
    assert (r.source_file, r.source_line) == ("/home/u/model.py", 12)


def test_without_a_whole_gather_the_line_and_bytes_are_not_guessed():
    (r,) = rematerializations(WARNING, Frames(), gathers()[2:3], MESH, None)
    assert (r.source_file, r.source_line, r.wire_bytes) == (None, None, 0)
    assert r.where == "no line of yours"


def test_specs_are_none_off_the_mesh_or_for_shardings_no_spec_says():
    (r,) = rematerializations(WARNING, Frames(), gathers(), None, None)
    assert r.before is None and r.after is None
    replicated = WARNING.replace("to {devices=[3,4]<=[4,3]T(1,0)}", "to {replicated}")
    (r,) = rematerializations(replicated, Frames(), gathers(), MESH, None)
    assert r.after == ((), ())
    odd = WARNING.replace("to {devices=[3,4]<=[4,3]T(1,0)}", "to {devices=[3,2,2]<=[12] last_tile_dims={manual}}")
    (r,) = rematerializations(odd, Frames(), gathers(), MESH, None)
    assert r.after is None
    broken = WARNING.replace("{devices=[4,3]<=[12]} to", "{devices=[4,3 to")
    assert rematerializations(broken, Frames(), gathers(), MESH, None) == ()


def test_the_label_falls_back_to_the_gathers_operand():
    unnamed = WARNING.replace('op_name="y"', 'op_name="jit(f)/sin"')
    why = Why("layout-mismatch", "sin", "", (X, W), "r", operand=1)
    found = gathers()
    found[0].op_name = found[1].op_name = "jit(f)/sin"
    found[1].why = why  # the first whole gather, f32[12,12]: its reason's operand names the array
    (r,) = rematerializations(unnamed, Frames(), found, MESH, None)
    assert r.label == "w"


def test_descriptor_2_is_caught_and_handed_on(capfd):
    import os

    with captured_stderr() as caught:
        os.write(2, b"from C++\n")
    assert caught == ["from C++\n"]
    assert capfd.readouterr().err == "from C++\n"
    with captured_stderr() as outer, captured_stderr() as inner:  # one capture at a time: the inner gets none
        os.write(2, b"x")
    assert inner == [] and outer == ["x"]


# ---------------------------------------------------------------------- the payload and the text


def test_a_reasons_payload_is_sparse_and_names_each_part():
    row = rp.why_payload(PARTIAL)
    assert row == {
        "cause": "partial-sums",
        "primitive": "dot_general",
        "operands": [
            {"label": "x", "type": "float32[8,12]", "spec": [[], ["a"]]},
            {"label": "w", "type": "float32[12,6]", "spec": [["a"], []], "role": "made", "note": "as made"},
        ],
        "rule": "x is split",
        "expression": "return x @ w",
        "operand": 0,
        "dimension": 1,
        "axes": ["a"],
    }
    bare = rp.why_payload(Why("unknown", "sort", "", (OperandLayout("z", "f32[2]", None),), "r", wanted=((),),
                              wanted_by="an output"))  # fmt: skip
    assert bare == {"cause": "unknown", "primitive": "sort", "operands": [{"label": "z", "type": "f32[2]", "spec": None}],
                    "rule": "r", "wanted": [[]], "wanted_by": "an output"}  # fmt: skip
    assert rp.why_payload(None) is None


@dataclass
class Item:
    """A stand-in collective or operand of one, as the payload and the text read it."""

    kind: str = "all-reduce"
    name: str = "all-reduce.1"
    axes_label: str = "a"
    source: Any = LINE
    wire_bytes: int = 100
    count: int = 1
    why: Any = None
    parts: tuple[Any, ...] = ()
    where_label: str = ""
    finder: Any = None
    fixes: tuple[Any, ...] = ()


def program(collectives: list[Item], remats: tuple[Any, ...] = (), wire: int = 0) -> Any:
    return SimpleNamespace(name="f", collectives=collectives, rematerializations=remats,
                           totals=SimpleNamespace(wire_bytes=wire), rematerialization_fixes=lambda k: ())  # fmt: skip


def test_each_distinct_reason_is_written_once_and_none_is_minus_one():
    same = Why("partial-sums", "dot_general", "return x @ w", (X, W), "x is split", operand=0, dimension=1, axes=("a",))
    other = Why("whole-dimension", "sort", "", (X,), "sorted")
    combined = Item(parts=(Item(why=other), Item(why=PARTIAL)))
    payload = rp.reasons_payload(program([Item(why=PARTIAL), Item(why=same), Item(why=None), combined]))
    assert payload["whys"] == [0, 0, -1, -1]
    assert payload["part_whys"] == [[], [], [], [1, 0]]
    assert [w["cause"] for w in payload["why_table"]] == ["partial-sums", "whole-dimension"]
    assert payload["fixes"] == {} and payload["back"] is False and payload["rematerializations"] == []


def test_the_rematerialization_payload_carries_both_layouts_and_the_text():
    (row,) = rp.rematerializations_payload(program([], (remat(after=None),)))
    assert row["before"] == [["a"], ["b"]] and row["after"] is None
    assert (row["before_text"], row["after_text"]) == ("P('a', 'b')", "?")
    assert (row["line"], row["where"], row["label"], row["full_bytes"], row["wire_bytes"]) == (7, "model.py:7", "y",
                                                                                              576, 528)  # fmt: skip
    assert row["shape"] == [12, 12] and row["instruction"] == "%param" and row["text"] == remat(after=None).text


def test_line_changes_say_what_vanished_and_appeared_line_by_line():
    at = lambda line: SourceLocation("/home/u/model.py", line)  # noqa: E731
    before = program([Item(source=at(3), wire_bytes=100, count=2), Item(source=at(3), wire_bytes=10),
                      Item(kind="all-gather", source=at(5), wire_bytes=7)])  # fmt: skip
    after = program([Item(kind="all-gather", source=at(5), wire_bytes=7), Item(source=None, wire_bytes=4),
                     Item(kind="all-to-all", source=at(1), parts=(Item(source=at(1), wire_bytes=3),), count=3)])  # fmt: skip
    assert rp.line_changes(before, after) == [
        {"line": None, "kind": "all-reduce", "axes": "a", "before": 0, "after": 4},
        {"line": 1, "kind": "all-to-all", "axes": "a", "before": 0, "after": 9},
        {"line": 3, "kind": "all-reduce", "axes": "a", "before": 210, "after": 0},
    ]


def test_a_fix_payload_reads_the_fix_and_its_changes():
    fix = SimpleNamespace(kind="input-spec", summary="s", code="c", removed=True, slower=False, step_s=1e-6,
                          before_s=2e-6, hardware="tpu-v5p", target="x", program=program([], wire=0))  # fmt: skip
    row = rp.fix_payload(fix, program([Item()], wire=100))
    assert row["changes"] == [{"line": 7, "kind": "all-reduce", "axes": "a", "before": 100, "after": 0}]
    assert (row["wire_before"], row["wire_after"], row["removed"], row["slower"]) == (100, 0, True, False)
    assert (row["kind"], row["summary"], row["code"], row["target"], row["hardware"]) == ("input-spec", "s", "c", "x",
                                                                                          "tpu-v5p")  # fmt: skip
    assert (row["step_s"], row["before_s"]) == (1e-6, 2e-6)


def test_the_fixes_traced_so_far_are_keyed_by_collective_index_or_remat():
    fix = SimpleNamespace(kind="k", summary="s", code="c", removed=False, slower=True, step_s=None, before_s=None,
                          hardware="h", target="t", program=program([], wire=0))  # fmt: skip
    finder = SimpleNamespace(traced=lambda: {"all-reduce.2": (fix,), "remat 0": ()})
    prog = program([Item(name="all-reduce.1"), Item(name="all-reduce.2", finder=finder)])
    assert {k: len(v) for k, v in rp.fixes_payload(prog).items()} == {"1": 1, "remat 0": 0}
    assert rp.fixes_payload(program([Item()])) == {}


def test_explain_writes_one_entry_per_collective_and_part_with_because():
    part = Item(why=PARTIAL, wire_bytes=8, where_label="pass 2 of 4")
    text = explain_text(program([Item(why=None, source=None), Item(parts=(part,), count=2)], (remat(),)))
    assert text.splitlines() == [
        "why f runs each collective",
        "[0] all-reduce over a at no line of yours, 100 B per call",
        "    (no reason read)",
        "[1] all-reduce over a at model.py:7 (pass 2 of 4), 16 B per call",
        "    dot_general in `return x @ w`",
        "    operand x float32[8,12] P(None, 'a')",
        "    made w float32[12,6] P('a') (as made)",
        "    because x is split",
        remat().text + "; its collectives send 528 B per device per call",
    ]
    assert explain_text(program([])).splitlines() == ["why f runs each collective", "  no collectives"]
    wanted = Why("layout-mismatch", "reshard", "", (), "moved", wanted=(("a",),), wanted_by="a reshard")
    fix = SimpleNamespace(text="input x as P(): removes it\n    x = ...")
    asked: list[Any] = []
    finder = SimpleNamespace(fixes_of=lambda c, hardware: asked.append(hardware) or (fix,))
    text = explain_text(program([Item(why=wanted, finder=finder)]), fixes=True, hardware="h100")
    assert asked == ["h100"]  # the fixes are ranked on the hardware asked for
    assert text.splitlines()[2:] == [
        "    wanted P('a') by a reshard",
        "    because moved",
        "    fix: input x as P(): removes it",
        "        x = ...",
    ]


def test_numpy_is_only_used_for_a_device_order():
    # the warning read with a device order given: the same specs as without one on this identity order
    (r,) = rematerializations(WARNING, Frames(), gathers(), MESH, np.arange(12).reshape(4, 3))
    assert r.before == (("a",), ("b",)) and r.after == (("b",), ("a",))


def test_a_device_order_that_no_spec_says_leaves_the_specs_unknown():
    # partition p's mesh position with the rows of the 4x3 grid reversed: the block of row i is on mesh row
    # 3 - i, which no spec says (a spec's block index is the device's coordinate)
    rows_reversed = np.array([(3 - p // 3) * 3 + p % 3 for p in range(12)])
    (r,) = rematerializations(WARNING, Frames(), gathers(), MESH, rows_reversed)
    assert r.before is None and r.after is None


def test_the_whole_arrays_bytes_are_its_element_types_a_scalar_and_an_unknown_type_included():
    def one(dtype_dims: str, before: str = "{devices=[4,3]<=[12]}") -> Rematerialization:
        text = WARNING.replace("f32[3,4]", dtype_dims).replace(
            "from sharding {devices=[4,3]<=[12]}", f"from sharding {before}"
        )
        (r,) = rematerializations(text, Frames(), gathers(), MESH, None)
        return r

    assert (one("s4[3,4]").full_bytes, one("f8e4m3fn[3,4]").full_bytes, one("pred[3,4]").full_bytes) == (72, 144, 144)
    assert type(one("s4[3,4]").full_bytes) is int  # a whole number of bytes, written so in the payload
    assert one("c128[3,4]").full_bytes == 144 * 16
    assert one("q9[3,4]").full_bytes == 0  # a type shardviz does not know: no bytes guessed
    # replicated before: the block is the whole array, 3x4 floats
    r = one("f32[3,4]", "{replicated}")
    assert (r.shape, r.full_bytes, r.before) == ((3, 4), 48, ((), ()))
    assert one("f32[]", "{replicated}").full_bytes == 4


def test_the_bytes_are_the_line_gathers_of_its_operation_each_run_counted():
    found = gathers()
    found[3].op_name = "jit(f)/elsewhere"  # the second whole gather, of another operation on line 9
    found[0].count = found[1].count = 2
    (r,) = rematerializations(WARNING, Frames(), found, MESH, None)
    assert r.wire_bytes == 2 * (96 + 432)
    assert r.after_text == "{devices=[3,4]<=[4,3]T(1,0)}"


def test_an_operation_with_no_op_name_has_no_label_but_its_gathers_operand():
    bare = WARNING.replace(', metadata={op_name="y"}', "")
    (r,) = rematerializations(bare, Frames(), gathers(), MESH, None)
    assert r.label == ""
    found = gathers()
    found[1].why = Why("layout-mismatch", "sin", "", (W, X), "r", operand=None)  # no operand named: the first
    (r,) = rematerializations(bare, Frames(), found, MESH, None)
    assert r.label == "w"


def test_a_replicated_subgroup_reads_as_a_spec_and_a_manual_one_does_not():
    shared = WARNING.replace("to {devices=[3,4]<=[4,3]T(1,0)}", "to {devices=[4,1,3]<=[12] last_tile_dim_replicate}")
    (r,) = rematerializations(shared, Frames(), gathers(), MESH, None)
    assert r.after == (("a",), ())
    manual = WARNING.replace("to {devices=[3,4]<=[4,3]T(1,0)}", "to {devices=[4,3,1]<=[12] last_tile_dims={manual}}")
    (r,) = rematerializations(manual, Frames(), gathers(), MESH, None)
    assert r.after is None


def test_explain_lists_fixes_only_when_asked_and_a_parts_missing_reason_skips_only_that_part():
    fix = SimpleNamespace(text="input x as P(): removes it\n    x = ...")
    remat_fix = SimpleNamespace(text="constrain in steps\n    y = ...")
    finder = SimpleNamespace(
        fixes_of=lambda c, hardware: (fix,),
        fixes_of_rematerialization=lambda k, hardware: (remat_fix,) if (k, hardware) == (0, "tpu-v5p") else (),
    )
    prog = program([Item(parts=(Item(why=None), Item(why=PARTIAL)), finder=finder)], (remat(),))
    quiet = explain_text(prog)
    assert "fix:" not in quiet and "    because x is split" in quiet.splitlines()
    assert quiet.splitlines()[2] == "    (no reason read)"
    told = explain_text(prog, fixes=True).splitlines()
    assert told[-2:] == ["    fix: constrain in steps", "        y = ..."]
    assert "    fix: input x as P(): removes it" in told


def test_the_rematerialization_payload_writes_its_dtype_and_each_layout_known_or_not():
    (row,) = rp.rematerializations_payload(program([], (remat(before=None),)))
    assert row["dtype"] == "f32" and row["before"] is None and row["after"] == [["b"], ["a"]]
    assert (row["before_text"], row["after_text"]) == ("?", "P('b', 'a')")


def test_line_changes_sort_no_line_first_then_by_kind():
    at = lambda line: SourceLocation("/home/u/model.py", line)  # noqa: E731
    after = program([Item(source=None, wire_bytes=4), Item(kind="all-gather", source=at(1), wire_bytes=2),
                     Item(kind="all-reduce", axes_label="b", source=at(3)), Item(kind="all-gather", axes_label="c",
                                                                                 source=at(3))])  # fmt: skip
    rows = rp.line_changes(program([]), after)
    assert [(r["line"], r["kind"]) for r in rows] == [(None, "all-reduce"), (1, "all-gather"), (3, "all-gather"),
                                                      (3, "all-reduce")]  # fmt: skip


def test_explain_asks_each_collectives_finder_about_that_collective_and_copes_with_none():
    asked: list[Any] = []
    finder = SimpleNamespace(
        fixes_of=lambda c, hardware: asked.append(c.name) or (),
        fixes_of_rematerialization=lambda k, hardware: asked.append(f"remat {k}") or (),
    )
    prog = program([Item(name="all-reduce.7", why=PARTIAL, finder=finder), Item(why=PARTIAL)], (remat(),))
    text = explain_text(prog, fixes=True)
    assert asked == ["all-reduce.7", "remat 0"] and "fix:" not in text
    # no collective with a finder (a program built again from a pickle): no fixes, and no error
    assert "fix:" not in explain_text(program([Item(why=PARTIAL)], (remat(),)), fixes=True)
