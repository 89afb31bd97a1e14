"""The comparison's rows without a trace: an estimate's collectives summed per line, kind and axes,
network time per axis and per link, headroom, the payload of a row, and what differs line by line.
Stand-in estimates with toy figures; every expected figure is counted by hand from them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from compare_stand_ins import line, program, row
from shardviz.compare.rows import Failure, LineChange, LineCollectives, Row, line_changes, line_collectives, make_row


def collective(where, kind, axes, sent, runs, seconds, link="NVLink", parts=()):
    return SimpleNamespace(line=where, kind=kind, axes=axes, bytes=sent, runs=runs, seconds=seconds, link=link,
                           parts=parts)  # fmt: skip


def part(link, seconds):
    return SimpleNamespace(link=link, seconds=seconds)


COLLECTIVES = (
    collective("m.py:3", "all-gather", ("data",), 100, 2, 4.0),
    collective("m.py:3", "all-gather", ("data",), 50, 1, 1.0),
    # a multi-link collective: its parts count on their links, not its own
    collective(
        None, "all-reduce", ("data", "model"), 10, 3, 6.0, "InfiniBand", (part("NVLink", 2.0), part("InfiniBand", 4.0))
    ),
    collective("m.py:9", "all-to-all", None, 8, 1, 2.0),
    collective("a.py:1", "all-gather", ("model",), 4, 1, 2.0),
)


def traced(collectives=COLLECTIVES):
    """The program the stand-in estimate priced: each collective's line and its wire bytes per run."""

    def one(c):
        file, _, number = (c.line or "").partition(":")
        where = SimpleNamespace(file=file, line=int(number)) if c.line else None
        return SimpleNamespace(parts=(), count=c.runs, total_wire_bytes=c.bytes * c.runs, source=where)

    return program(collectives=tuple(one(c) for c in collectives))


def estimate(**changed):
    fields = dict(
        hardware=SimpleNamespace(name="h100", hbm_bytes=80e9), step_s=15.0, bound="network", compute_s=3.0,
        memory_s=2.0, network_s=15.0, device_bytes=1000, fits=True, slices=2, collectives=COLLECTIVES,
        held_by_group=(),
    )  # fmt: skip
    fields.update(changed)
    return SimpleNamespace(**fields)


def test_an_estimates_collectives_are_summed_per_line_kind_and_axes_longest_first():
    summed = line_collectives(estimate(), traced())
    assert summed == (
        LineCollectives("?", "all-reduce", "data,model", 1, 30, 6.0, "InfiniBand"),
        LineCollectives("m.py:3", "all-gather", "data", 2, 100 * 2 + 50, 5.0, "NVLink"),
        # equal times: by line, kind and axes
        LineCollectives("a.py:1", "all-gather", "model", 1, 4, 2.0, "NVLink"),
        LineCollectives("m.py:9", "all-to-all", "?", 1, 8, 2.0, "NVLink"),
    )
    assert summed[1].key == ("m.py:3", "all-gather", "data")


def combined_on_lines_2_and_3(first: int, second: int) -> SimpleNamespace:
    """A collective XLA combined from two operands, made on m.py's lines 2 and 3, sending these bytes per run."""
    where = [SimpleNamespace(file="m.py", line=n) for n in (2, 3)]
    parts = (SimpleNamespace(wire_bytes=first, source=where[0]), SimpleNamespace(wire_bytes=second, source=where[1]))
    return SimpleNamespace(count=1, total_wire_bytes=first + second, source=where[0], parts=parts)


def test_a_combined_collective_puts_each_operands_bytes_and_its_share_of_time_on_its_line():
    # One all-reduce priced at 6 s, combined by XLA from two operands sending 768 and 384 bytes per run.
    priced = (collective("m.py:2", "all-reduce", ("data",), 1152, 1, 6.0),)
    assert line_collectives(
        estimate(collectives=priced), program(collectives=(combined_on_lines_2_and_3(768, 384),))
    ) == (
        LineCollectives("m.py:2", "all-reduce", "data", 1, 768, 4.0, "NVLink"),  # 768 / 1152 of 6 s
        LineCollectives("m.py:3", "all-reduce", "data", 1, 384, 2.0, "NVLink"),
    )


def test_a_row_reads_its_estimate_and_sums_network_time_per_axis_and_per_link():
    made = make_row("fsdp", traced(), estimate(), 2.5)
    assert made == Row(
        "fsdp", "h100", (("data", 4), ("model", 2)), 15.0, "network", 3.0, 2.0, 15.0,
        # per axis: data 4 + 1, data,model 6, ? 2, model 2 (ties by name)
        (("data,model", 6.0), ("data", 5.0), ("?", 2.0), ("model", 2.0)),
        # per link: NVLink 4 + 1 + 2 (a part) + 2 + 2, InfiniBand 4 (a part)
        (("NVLink", 11.0), ("InfiniBand", 4.0)),
        1000, 80e9, True, 2, line_collectives(estimate(), traced()), 2.5,
    )  # fmt: skip
    assert (made.rank, made.changes, made.against) == (0, (), "")
    assert make_row("x", program(mesh=None), estimate(collectives=()), 0.0).mesh == ()
    assert make_row("x", program(mesh=None), estimate(collectives=()), 0.0).network_by_link == ()


def test_headroom_is_hbm_less_what_the_device_holds_and_unknown_when_either_is():
    assert row("a", 1.0, device_bytes=30, hbm_bytes=100.0).headroom_bytes == 70.0
    assert row("a", 1.0, device_bytes=130, hbm_bytes=100.0).headroom_bytes == -30.0
    assert row("a", 1.0, device_bytes=None, hbm_bytes=100.0).headroom_bytes is None
    assert row("a", 1.0, device_bytes=30, hbm_bytes=None).headroom_bytes is None


def test_mesh_label_names_each_axis_and_size_in_order():
    assert row("a", 1.0).mesh_label == "data=4 x model=2"
    assert row("a", 1.0, mesh=()).mesh_label == ""


def test_a_rows_payload_has_every_field():
    change = LineChange("m.py:3", "all-gather", "data", "grown", 100, 250, 1.0, 5.0)
    made = Row(
        "fsdp", "h100", (("data", 4), ("model", 2)), 15.0, "network", 3.0, 2.0, 15.0, (("data", 5.0),),
        (("NVLink", 11.0),), 1000, 80e9, True, 2, (line("m.py:3", "all-gather", "data", 250, 5.0),), 2.5, 3,
        (change,), "tp",
    )  # fmt: skip
    assert made.to_json() == {
        "candidate": "fsdp",
        "hardware": "h100",
        "rank": 3,
        "mesh": [["data", 4], ["model", 2]],
        "step_s": 15.0,
        "bound": "network",
        "compute_s": 3.0,
        "memory_s": 2.0,
        "network_s": 15.0,
        "network_by_axis": [["data", 5.0]],
        "network_by_link": [["NVLink", 11.0]],
        "device_bytes": 1000,
        "hbm_bytes": 80e9,
        "fits": True,
        "slices": 2,
        "trace_seconds": 2.5,
        "lines": [["m.py:3", "all-gather", "data", 1, 250, 5.0, "NVLink"]],
        "against": "tp",
        "changes": [
            {
                "line": "m.py:3",
                "kind": "all-gather",
                "axes": "data",
                "change": "grown",
                "bytes_before": 100,
                "bytes_after": 250,
                "seconds_before": 1.0,
                "seconds_after": 5.0,
            }
        ],
    }


def test_a_failures_payload_names_candidate_hardware_mesh_and_error():
    failed = Failure("tp", "", (("data", 3),), "argument w1 over 3 devices")
    assert failed.to_json() == {"candidate": "tp", "hardware": "", "mesh": [["data", 3]],
                                "error": "argument w1 over 3 devices"}  # fmt: skip


def test_line_changes_compare_two_rows_lines():
    before = row("a", 1.0, lines=(line("m.py:1", "all-gather", "x", 100, 1.0),))
    after = row(
        "b", 2.0, lines=(line("m.py:1", "all-gather", "x", 300, 3.0), line("m.py:2", "all-reduce", "x", 8, 0.5))
    )
    assert line_changes(before, after) == (
        LineChange("m.py:1", "all-gather", "x", "grown", 100, 300, 1.0, 3.0),
        LineChange("m.py:2", "all-reduce", "x", "appeared", 0, 8, 0.0, 0.5),
    )
    assert line_changes(after, before) == (
        LineChange("m.py:1", "all-gather", "x", "shrunk", 300, 100, 3.0, 1.0),
        LineChange("m.py:2", "all-reduce", "x", "vanished", 8, 0, 0.5, 0.0),
    )


def test_equal_bytes_change_past_one_percent_of_the_time_only():
    from shardviz.compare.rows import lines_changed

    times = {"m.py:1": (100.0, 101.0), "m.py:2": (100.0, 98.5), "m.py:3": (0.0, 0.5), "m.py:4": (100.0, 103.0),
             "m.py:5": (0.0, 5e-15), "m.py:6": (1e-3, 1.5e-3)}  # fmt: skip
    before = [line(where, "all-gather", "x", 100, old) for where, (old, _) in times.items()]
    after = [line(where, "all-gather", "x", 100, new) for where, (_, new) in times.items()]
    # 101 against 100 is 1%, not past it; 98.5 is 1.5% less; 0.5 against nothing is slower, but 5e-15 is
    # within 1% of 1e-12 s, the least time a line is measured against; 1.5 ms against 1 ms is half as slow again
    assert [(c.line, c.change) for c in lines_changed(before, after)] == [
        ("m.py:4", "slower"), ("m.py:2", "faster"), ("m.py:3", "slower"), ("m.py:6", "slower"),
    ]  # fmt: skip


def test_changes_of_equal_time_order_by_bytes_then_line():
    from shardviz.compare.rows import lines_changed

    before = [line("m.py:5", "all-gather", "x", 100, 1.0), line("m.py:4", "all-gather", "x", 100, 1.0),
              line("m.py:1", "all-gather", "x", 100, 1.0)]  # fmt: skip
    # each 1 s slower; m.py:5 and m.py:4 move 100 more bytes, m.py:1 400 more
    after = [line("m.py:5", "all-gather", "x", 200, 2.0), line("m.py:4", "all-gather", "x", 200, 2.0),
             line("m.py:1", "all-gather", "x", 500, 2.0)]  # fmt: skip
    assert [c.line for c in lines_changed(before, after)] == ["m.py:1", "m.py:4", "m.py:5"]
    # a smaller change of time comes later whatever its bytes
    after[2] = line("m.py:1", "all-gather", "x", 900, 1.5)
    assert [c.line for c in lines_changed(before, after)] == ["m.py:4", "m.py:5", "m.py:1"]


def test_the_largest_change_of_time_comes_first_not_the_longest_line():
    from shardviz.compare.rows import lines_changed

    before = [line("m.py:1", "all-gather", "x", 100, 10.0), line("m.py:2", "all-gather", "x", 100, 0.0)]
    after = [line("m.py:1", "all-gather", "x", 100, 11.0), line("m.py:2", "all-gather", "x", 100, 5.0)]
    assert [c.line for c in lines_changed(before, after)] == ["m.py:2", "m.py:1"]


def test_network_time_sums_per_key_longest_first_then_by_name():
    from shardviz.compare.rows import _sum_by

    assert _sum_by([("b", 1.0), ("c", 0.5), ("a", 1.0), ("c", 1.5)]) == (("c", 2.0), ("a", 1.0), ("b", 1.0))
    assert _sum_by([]) == ()


def test_a_line_in_a_file_whose_path_holds_a_colon_is_split_at_its_last_colon():
    from shardviz.compare.rows import collective_charges

    where = SimpleNamespace(file="/srv/run:2/m.py", line=7)
    gather = SimpleNamespace(parts=(), count=1, total_wire_bytes=64, source=where)
    assert collective_charges(gather) == (("m.py:7", 64),)


def test_a_combined_collective_of_no_bytes_shares_its_time_evenly_among_its_lines():
    priced = (collective("m.py:2", "all-reduce", ("data",), 0, 1, 6.0),)
    assert line_collectives(estimate(collectives=priced), program(collectives=(combined_on_lines_2_and_3(0, 0),))) == (
        LineCollectives("m.py:2", "all-reduce", "data", 1, 0, 3.0, "NVLink"),  # half of 6 s each
        LineCollectives("m.py:3", "all-reduce", "data", 1, 0, 3.0, "NVLink"),
    )


def test_an_estimate_that_priced_other_collectives_than_the_programs_is_an_error():
    with pytest.raises(ValueError):
        line_collectives(estimate(), traced(COLLECTIVES[:-1]))


def test_a_row_keeps_what_its_estimate_says_the_peak_holds():
    held = (("arguments", 600), ("activations", 400))
    assert make_row("x", traced(), estimate(held_by_group=held), 0.0).held_by_group == held
