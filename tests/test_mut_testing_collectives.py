"""assert_collectives on a hand-made program: every byte count below is worked out on paper.

The program (tests/testing_standins.py) runs on a mesh data=4 model=2:

- an all-reduce over data, 1024 B a run, 3 runs, on line 3: 3072 B per call;
- an all-gather over model, 512 B, once, on line 2: 512 B;
- a collective-permute whose groups hold one device (moves nothing), on line 5;
- a combined all-reduce over data of two operands, 100 B from line 4 and 300 B
  from line 5, run twice: 200 B charged to line 4, 600 B to line 5.

In all 3072 + 512 + 0 + 800 = 4384 B per call (4.3 KiB); per line: line 3
3072 B, line 5 600 B, line 2 512 B, line 4 200 B.
"""

from __future__ import annotations

import pytest

from shardviz.errors import ShardingError
from shardviz.testing.collectives import assert_collectives, line_charges
from shardviz.testing.errors import CollectiveBudgetExceeded
from testing_standins import CODE, MESH, collective, part, program, source, write_model

HEAD = (
    "the program step breaks its collective budget (mesh data=4 model=2; "
    "bytes are what one device sends per call, loops counted)"
)
ACCEPT = "if this traffic is intended, allow it or raise the budget it breaks, as named above"


@pytest.fixture
def model(tmp_path):
    file = write_model(tmp_path, CODE)
    reduce = collective("all-reduce", ("data",), 1024, count=3, at=source(file, 3))
    gather = collective("all-gather", ("model",), 512, group_size=2, at=source(file, 2))
    alone = collective("collective-permute", (), 0, group_size=1, at=source(file, 5))
    combined = collective(
        "all-reduce",
        ("data",),
        400,
        count=2,
        name="combined",
        parts=(part(100, source(file, 4), dtype="bfloat16"), part(300, source(file, 5))),
    )
    return program([reduce, gather, alone, combined], total=4384, mesh=MESH)


EVERY_LINE = [
    "every collective, per line (4.3 KiB per call in all):",
    "    3.0 KiB  model.py:3 (loss)  g = reduce(x)",
    "      all-reduce         data                3.0 KiB per call (x3)",
    "      600 B  model.py:5 (loss)  c = more(x)",
    "      all-reduce         data                  600 B per call (x2)",
    "      collective-permute -                       0 B per call (x1)",
    "      512 B  model.py:2 (loss)  h = gather(w)  # wide",
    "      all-gather         model                 512 B per call (x1)",
    "      200 B  model.py:4 (loss)  a = combined(x)",
    "      all-reduce         data         bf16     200 B per call (x2)",
]


def test_each_charge_is_a_line_and_a_combined_collectives_parts_are_multiplied_by_its_runs(model):
    charges = line_charges(model)
    assert [(ch.source.line, ch.wire_bytes) for ch in charges] == [(3, 3072), (2, 512), (5, 0), (4, 200), (5, 600)]
    assert [ch.dtype for ch in charges] == ["", "", "", "bfloat16", ""]
    assert charges[3].key == (charges[3].source.file, 4, "")
    assert charges[3].collective is model.collectives[3]


def test_a_kind_not_allowed_is_listed_with_its_line_and_the_whole_picture(model):
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, allow={"all-reduce": ["data"]})
    assert str(info.value).splitlines() == [
        HEAD,
        "allowed: all-reduce over data",
        "",
        "collectives not allowed:",
        "  all-gather over model: 512 B per call (512 B x1); no all-gather is allowed",
        "      at model.py:2 (loss)  h = gather(w)  # wide",
        "",
        *EVERY_LINE,
        "",
        ACCEPT,
    ]
    page = info.value.page
    assert page.budget == "allow all-reduce over data"
    assert page.figure == "4.3 KiB (4384 B) sent per device per call"
    assert page.columns == ("line", "code", "collective", "axes", "bytes per call", "runs")
    assert page.rows == (
        ("model.py:3 (loss)", "g = reduce(x)", "all-reduce", "data", "3.0 KiB", "x3"),
        ("model.py:5 (loss)", "c = more(x)", "all-reduce", "data", "600 B", "x2"),
        ("model.py:5 (loss)", "c = more(x)", "collective-permute", "-", "0 B", "x1"),
        ("model.py:2 (loss)", "h = gather(w)  # wide", "all-gather", "model", "512 B", "x1"),
        ("model.py:4 (loss)", "a = combined(x)", "all-reduce", "data", "200 B", "x2"),
    )
    assert page.marked == (False, False, False, True, False)
    assert info.value.subject is model


def test_allowed_axes_are_a_subset_and_groups_of_one_device_are_never_checked(model):
    assert assert_collectives(model, allow={"all-reduce": "data", "all-gather": ["model", "data"]}) is model
    assert_collectives(model, allow={"ALL_REDUCE ": None, " all-gather": "*"})
    assert_collectives(model, allow=["all-reduce", "all-gather"])
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, allow={"all-reduce": ["model"], "all-gather": []})
    message = str(info.value).splitlines()
    assert message[1] == "allowed: all-reduce over model; all-gather over no axis"
    assert message[3:9] == [
        "collectives not allowed:",
        "  all-reduce over data: 3.0 KiB per call (1.0 KiB x3); all-reduce is allowed only over model",
        "      at model.py:3 (loss)  g = reduce(x)",
        "  all-reduce over data: 800 B per call (400 B x2); all-reduce is allowed only over model",
        "      at model.py:4 (loss)  a = combined(x)",
        "      at model.py:5 (loss)  c = more(x)",
    ]
    assert message[9:11] == [
        "  all-gather over model: 512 B per call (512 B x1); all-gather is allowed only over no axis",
        "      at model.py:2 (loss)  h = gather(w)  # wide",
    ]
    assert info.value.page.budget == "allow all-reduce over model; all-gather over "
    assert info.value.page.marked == (True,) * 5  # line 5's rows are marked with its line


def test_allowing_nothing_names_no_collectives_and_a_single_kind_any_axes(model):
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, allow={})
    lines = str(info.value).splitlines()
    assert lines[1] == "allowed: no collectives"
    assert info.value.page.budget == "allow nothing"
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, allow="all-gather")
    assert str(info.value).splitlines()[1] == "allowed: all-gather over any axes"
    assert info.value.page.budget == "allow all-gather over any axes"


def test_runs_not_known_exactly_are_marked_with_a_plus(tmp_path):
    file = write_model(tmp_path, CODE)
    loop = collective("all-gather", ("model",), 2048, group_size=2, count=5, exact=False, at=source(file, 2))
    prog = program([loop], total=10240, mesh=MESH)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(prog, allow={"all-reduce": "data"})
    assert "  all-gather over model: 10 KiB per call (2.0 KiB x5+); no all-gather is allowed" in str(info.value)
    assert info.value.page.rows[0][-1] == "x5+"


def test_more_than_twelve_collectives_not_allowed_are_counted_not_listed(tmp_path):
    file = write_model(tmp_path, [f"    y{k} = f(x)" for k in range(1, 15)])
    gathers = [
        collective("all-gather", ("model",), 100 * (15 - k), group_size=2, at=source(file, k)) for k in range(1, 15)
    ]
    prog = program(gathers, total=sum(100 * k for k in range(1, 15)), mesh=MESH)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(prog, allow={})
    lines = str(info.value).splitlines()
    listed = [line for line in lines if line.startswith("  all-gather over model")]
    assert len(listed) == 12
    assert listed[0].startswith("  all-gather over model: 1.4 KiB per call")  # the largest first
    assert "  ... and 2 more collectives not allowed (the largest are listed)" in lines
    assert lines[lines.index("  ... and 2 more collectives not allowed (the largest are listed)") - 1] == (
        "      at model.py:12 (loss)  y12 = f(x)"
    )
    assert "  ... and 2 more lines (print the program for all of them)" in lines
    assert all(info.value.page.marked) and len(info.value.page.rows) == 14


def test_max_wire_bytes_lists_the_lines_that_send_the_most(model):
    assert assert_collectives(model, max_wire_bytes=4384) is model
    assert_collectives(model, max_wire_bytes="4384 B")
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, max_wire_bytes=4383)
    assert str(info.value).splitlines() == [
        HEAD,
        "",
        "4.3 KiB (4384 B) sent per device per call, over max_wire_bytes 4.3 KiB (4383 B); the lines that send the most:",
        "    3.0 KiB  model.py:3 (loss)  g = reduce(x)",
        "      600 B  model.py:5 (loss)  c = more(x)",
        "      512 B  model.py:2 (loss)  h = gather(w)  # wide",
        "      200 B  model.py:4 (loss)  a = combined(x)",
        "",
        *EVERY_LINE,
        "",
        ACCEPT,
    ]
    assert info.value.page.budget == "max_wire_bytes 4.3 KiB (4383 B)"
    assert info.value.page.marked == (True, True, True, True, True)


def test_max_wire_bytes_over_twelve_lines_says_how_many_more(tmp_path):
    file = write_model(tmp_path, [f"    y{k} = f(x)" for k in range(1, 15)])
    reduces = [collective("all-reduce", ("data",), 10, at=source(file, k)) for k in range(1, 15)]
    prog = program(reduces, total=140, mesh=MESH)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(prog, max_wire_bytes=139)
    lines = str(info.value).splitlines()
    assert lines[2] == "140 B sent per device per call, over max_wire_bytes 139 B; the lines that send the most:"
    assert lines[3:16] == [f"       10 B  model.py:{k} (loss)  y{k} = f(x)" for k in range(1, 13)] + [
        "  ... and 2 more lines"
    ]
    assert info.value.page.marked == (True,) * 12 + (False, False)


def test_one_budget_for_every_line_names_each_line_over_it_with_its_collectives(model):
    assert_collectives(model, per_line=3072)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, per_line="512 B")
    lines = str(info.value).splitlines()
    assert lines[:12] == [
        HEAD,
        "",
        "lines over their per_line budget:",
        "  model.py:3 (loss)  g = reduce(x)",
        "    sends 3.0 KiB (3072 B) per call, over its budget 512 B (every line) by 2.5 KiB:",
        "      all-reduce         data                3.0 KiB per call (x3)",
        "  model.py:5 (loss)  c = more(x)",
        "    sends 600 B per call, over its budget 512 B (every line) by 88 B:",
        "      all-reduce         data                  600 B per call (x2)",
        "      collective-permute -                       0 B per call (x1)",
        "",
        EVERY_LINE[0],
    ]
    assert info.value.page.budget == "per_line 512 B every line"
    assert info.value.page.marked == (True, True, True, False, False)


def test_per_line_keys_by_place_number_and_function_the_most_specific_first(model):
    file = model.collectives[0].source.file
    assert_collectives(model, per_line={"model.py:3": 3072, 5: 600, "loss": 512})
    assert_collectives(model, per_line={f"{file}:3": 3072, "./model.py:5": 600, "loss": 512})
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, per_line={" model.py :3": 3071, 5: 599, "loss": 511})
    lines = str(info.value).splitlines()
    assert [line for line in lines if line.startswith("    sends")] == [
        "    sends 3.0 KiB (3072 B) per call, over its budget 3.0 KiB (3071 B) (model.py:3) by 1 B:",
        "    sends 600 B per call, over its budget 599 B (line 5) by 1 B:",
        "    sends 512 B per call, over its budget 511 B (function loss) by 1 B:",
    ]
    assert info.value.page.budget == "per_line  model.py :3: 3071, 5: 599, loss: 511"
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(model, per_line={4: 199})
    assert [line for line in str(info.value).splitlines() if line.startswith("    sends")] == [
        "    sends 200 B per call, over its budget 199 B (line 4) by 1 B:"
    ]


def test_a_function_key_covers_its_callees_lines_through_the_stack(tmp_path):
    file = write_model(tmp_path, CODE)
    inner = source(file, 3, "helper")
    outer = source(file, 5, "train_step")
    reduce = collective("all-reduce", ("data",), 64, at=inner, stack=(inner, outer))
    prog = program([reduce], total=64, mesh=MESH)
    assert_collectives(prog, per_line={"train_step": 64})
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 63 B \(function train_step\) by 1 B"):
        assert_collectives(prog, per_line={"train_step": 63})
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 10 B \(function helper\)"):
        assert_collectives(prog, per_line={"train_step": 64, "helper": 10})


@pytest.mark.parametrize(
    ("per_line", "message"),
    [
        (
            {"model.py:1": 1},
            "per_line['model.py:1'] names a line with no collective (lines with collectives: model.py:2, model.py:3, "
            "model.py:4, model.py:5); a budget must name a line that sends something, so that it cannot outlive the "
            "code it was written for",
        ),
        ({1000: 1}, "per_line[1000] names a line with no collective (lines with collectives: model.py:2, "),
        (
            {"other.py:3": 1},
            "per_line['other.py:3']: no collective of the program is on a line of a file 'other.py' "
            "(files with collectives: model.py)",
        ),
        (
            {"train": 1},
            "per_line['train'] names a function in which no collective runs (functions with collectives, their "
            "callees' included: loss); keys are 'file.py:42', a line number or a function name",
        ),
        ({"  ": 1}, "per_line's keys are 'file.py:42', a line number or a function name, not '  '"),
        ({True: 1}, "per_line's keys are 'file.py:42', a line number or a function name, not True"),
        ({"loss": "1 parsec"}, "per_line['loss'] '1 parsec' is not a size"),
    ],
)
def test_per_line_keys_that_cover_nothing_are_refused_by_name(model, per_line, message):
    with pytest.raises(ShardingError) as info:
        assert_collectives(model, per_line=per_line)
    assert message in str(info.value)


def test_a_line_key_counts_only_collectives_that_move_bytes(model):
    # line 5's collective-permute has groups of one device: a key for its line alone names nothing
    alone = program([model.collectives[2]], total=0, mesh=MESH)
    with pytest.raises(ShardingError, match=r"lines with collectives: none\)"):
        assert_collectives(alone, per_line={5: 1})
    with pytest.raises(ShardingError, match=r"\(files with collectives: none\)"):
        assert_collectives(alone, per_line={"model.py:5": 1})
    with pytest.raises(ShardingError, match=r"their callees' included: none\)"):
        assert_collectives(alone, per_line={"loss": 1})


def test_more_than_twelve_lines_with_collectives_are_cut_short_in_the_refusal(tmp_path):
    file = write_model(tmp_path, [f"    y{k} = f(x)" for k in range(1, 15)])
    reduces = [collective("all-reduce", ("data",), 10, at=source(file, k)) for k in range(1, 15)]
    with pytest.raises(ShardingError) as info:
        assert_collectives(program(reduces, total=140, mesh=MESH), per_line={99: 1})
    listed = ", ".join(f"model.py:{k}" for k in range(1, 13))  # in line order, not as text
    assert f"(lines with collectives: {listed} ...); a budget" in str(info.value)


@pytest.mark.parametrize(
    ("allow", "message"),
    [
        (5, "allow maps collective kinds to mesh axes, e.g. {'all-reduce': ['data']} (or lists kinds), not int"),
        ({"all-sum": None}, "unknown collective kind 'all-sum' in allow: the kinds are all-reduce, "),
        ({3: None}, "allow's keys name collective kinds (all-reduce, "),
        (
            {"all-reduce": ["pipe"]},
            "allow['all-reduce'] names the axis 'pipe', which the program's mesh lacks (axes: data, model)",
        ),
        (
            {"all-reduce": [1]},
            "allow['all-reduce'] lists the mesh axes all-reduce may run over, e.g. ['data'] (or '*' for any), not [1]",
        ),
        (
            {"all-reduce": 3},
            "allow['all-reduce'] lists the mesh axes all-reduce may run over, e.g. ['data'] (or '*' for any), not 3",
        ),
    ],
)
def test_allow_written_wrong_is_refused_by_name(model, allow, message):
    with pytest.raises(ShardingError) as info:
        assert_collectives(model, allow=allow)
    assert message in str(info.value)


def test_an_axis_of_a_program_without_a_mesh_says_there_is_none(tmp_path):
    prog = program([], total=0)
    with pytest.raises(ShardingError, match=r"lacks \(axes: none: the program has no mesh\)"):
        assert_collectives(prog, allow={"all-reduce": "data"})
    assert assert_collectives(prog, allow={}, max_wire_bytes=0, per_line=0) is prog


def test_only_a_traced_program_is_checked():
    with pytest.raises(ShardingError, match=r"^assert_collectives checks a program traced with .*, not dict$"):
        assert_collectives({}, allow={})


def test_a_failure_on_no_mesh_says_so_and_bytes_counted_as_cpu_say_how(tmp_path):
    from shardviz.program.model import BytesIn

    file = write_model(tmp_path, CODE)
    widened = collective(
        "all-reduce",
        ("data",),
        64,
        at=source(file, 3),
        on_device=BytesIn("bfloat16", 32, 32),
        on_cpu=BytesIn("float32", 64, 64),
    )
    prog = program([widened], total=64, bytes_from="cpu")
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(prog, max_wire_bytes=1)
    lines = str(info.value).splitlines()
    assert lines[0].startswith("the program step breaks its collective budget (mesh no mesh; ")
    assert lines[1] == (
        "bytes as XLA:CPU's module moves them, bf16/f16 as f32 (program.with_bytes('device') counts the "
        "program's dtypes)"
    )
    assert "      all-reduce         data          f32      64 B per call (x1)" in lines
    device = program([widened], total=32, mesh=MESH)
    with pytest.raises(CollectiveBudgetExceeded) as info:
        assert_collectives(device, max_wire_bytes=1)
    assert str(info.value).splitlines()[1].startswith("bytes in the program's dtypes, as a TPU or GPU moves them")


def test_refusals_name_files_by_their_own_name_and_list_every_function(tmp_path):
    windows = "C:\\proj\\model.py"  # a Windows path: its name is what follows the last backslash
    inner = source(windows, 3, "Model.helper")
    outer = source("train.py", 7, "train_step")  # a file named without a folder
    reduce = collective("all-reduce", ("data",), 64, at=inner, stack=(inner, outer))
    gather = collective("all-gather", ("model",), 32, group_size=2, at=source("train.py", 9, "other"))
    prog = program([reduce, gather], total=96, mesh=MESH)
    with pytest.raises(ShardingError) as info:
        assert_collectives(prog, per_line={"elsewhere.py:3": 1})
    assert str(info.value).endswith("(files with collectives: model.py, train.py)")
    with pytest.raises(ShardingError) as info:
        assert_collectives(prog, per_line={"nothing": 1})
    # dotted names (a method's qualified name) are left out; its own name and each caller's are listed
    assert "(functions with collectives, their callees' included: helper, other, train_step); keys" in str(info.value)
    with pytest.raises(ShardingError) as info:
        assert_collectives(prog, per_line={"C:/proj/model.py:4": 1})  # a path with a colon in it
    assert str(info.value).startswith("per_line['C:/proj/model.py:4'] names a line with no collective ")


def test_exactly_twelve_lines_with_collectives_are_all_listed(tmp_path):
    file = write_model(tmp_path, [f"    y{k} = f(x)" for k in range(1, 13)])
    reduces = [collective("all-reduce", ("data",), 10, at=source(file, k)) for k in range(1, 13)]
    with pytest.raises(ShardingError) as info:
        assert_collectives(program(reduces, total=120, mesh=MESH), per_line={99: 1})
    assert "model.py:11, model.py:12); a budget" in str(info.value)


def test_a_file_key_matches_whole_path_parts_with_either_slash(tmp_path):
    windows = "C:\\proj\\src\\model.py"
    reduce = collective("all-reduce", ("data",), 64, at=source(windows, 3))
    prog = program([reduce], total=64, mesh=MESH)
    assert_collectives(prog, per_line={"src\\model.py:3": 64})
    assert_collectives(prog, per_line={"./src/model.py:3": 64})
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 63 B \(src\\model\.py:3\)"):
        assert_collectives(prog, per_line={"src\\model.py:3": 63})
    with pytest.raises(ShardingError, match=r"on a line of a file 'Xmodel\.py'"):
        assert_collectives(prog, per_line={"Xmodel.py:3": 1})
    with pytest.raises(ShardingError, match=r"on a line of a file 'rc/model\.py'"):
        assert_collectives(prog, per_line={"rc/model.py:3": 1})


def test_a_function_key_covers_a_collective_with_no_line_of_its_own_through_its_stack(tmp_path):
    file = write_model(tmp_path, CODE)
    caller = source(file, 3, "train_step")
    library = collective("all-reduce", ("data",), 64, at=None, stack=(caller,))
    prog = program([library], total=64, mesh=MESH)
    assert assert_collectives(prog, per_line={"train_step": 64}) is prog
    with pytest.raises(CollectiveBudgetExceeded, match=r"over its budget 63 B \(function train_step\)"):
        assert_collectives(prog, per_line={"train_step": 63})
