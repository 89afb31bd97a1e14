"""The comparison's terminal text from stand-in rows: times in us, ms and s, memory against HBM, the
table's columns, each row's links and changed lines, the best that fits and the failures, each line
written out by hand."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

from compare_stand_ins import row
from shardviz.compare.report import _cells, _memory, _table, change_text, render_comparison, seconds_text
from shardviz.compare.rows import Failure, LineChange


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "?"),
        (5e-4, "500.0 us"),
        (1.2344999e-4, "123.4 us"),
        (1e-3, "1.00 ms"),
        (0.5, "500.00 ms"),
        (1.0, "1.00 s"),
        (2.5, "2.50 s"),
    ],
)
def test_seconds_are_said_in_us_ms_or_s(seconds, text):
    assert seconds_text(seconds) == text


def test_memory_is_what_a_device_holds_and_whether_it_fits_its_hbm():
    assert _memory(row("a", 1.0, device_bytes=30, hbm_bytes=100.7, fits=True)) == ("30 B", "fits 100 B")
    assert _memory(row("a", 1.0, device_bytes=2048, hbm_bytes=1000.0, fits=False)) == ("2.0 KiB", "OVER 1000 B")
    assert _memory(row("a", 1.0, device_bytes=None, hbm_bytes=100.0, fits=None)) == ("?", "? 100 B")
    assert _memory(row("a", 1.0, device_bytes=30, hbm_bytes=None, fits=None)) == ("30 B", "?")


def test_a_rows_cells_follow_the_columns():
    made = replace(row("tp", 2e-3), rank=3)
    # compute, memory and network of the stand-in: a quarter, half and all of the step
    assert _cells(made) == ("3", "tp", "data=4 x model=2", "h100", "2.00 ms", "network", "500.0 us", "1.00 ms",
                            "2.00 ms", "30 B", "fits 100 B")  # fmt: skip
    assert _cells(row("tp", 2e-3, mesh=()))[2] == "-"


def test_a_table_pads_each_column_to_its_widest_cell():
    assert _table([("a", "bb", "c"), ("ccc", "d", "")]) == ["a    bb  c", "ccc  d"]


def change(kind, where, how, before, after, s_before, s_after):
    return LineChange(where, kind, "x", how, before, after, s_before, s_after)


def test_each_kind_of_change_has_its_sign_bytes_and_times():
    assert change_text(change("all-gather", "m.py:1", "appeared", 0, 8, 0.0, 5e-4)) == (
        "+ all-gather over x at m.py:1: 8 B, 500.0 us (appeared)"
    )
    assert change_text(change("all-reduce", "m.py:2", "vanished", 2048, 0, 2.0, 0.0)) == (
        "- all-reduce over x at m.py:2: 2.0 KiB, 2.00 s (vanished)"
    )
    assert change_text(change("all-gather", "m.py:3", "grown", 100, 300, 1.0, 3.0)) == (
        "~ all-gather over x at m.py:3: 100 B -> 300 B, 1.00 s -> 3.00 s (grown)"
    )


HEADER = "#  candidate  mesh  hardware  step    bound    compute    memory  network  per device  HBM"


def two_rows():
    changes = tuple(change("all-gather", f"m.py:{n}", "grown", 100, 300, 1.0, 3.0) for n in range(1, 6))
    fast = replace(
        row("tp", 2.0, mesh=(("x", 2),)),
        rank=1,
        network_by_link=(("NVLink", 1.5), ("InfiniBand", 0.5)),
        network_by_axis=(("x", 1.5), ("x,y", 0.5)),
        changes=changes,
        against="fsdp",
    )
    slow = replace(row("fsdp", 4.0, mesh=(), device_bytes=None, fits=False), rank=2)
    return fast, slow


def test_the_text_is_the_table_each_rows_details_the_best_and_the_failures():
    fast, slow = two_rows()
    failures = (Failure("bad", "", (), "no model axis"), Failure("tp", "tpu-v5p", (), "no such slice"))
    text = render_comparison("mlp", ("tp", "fsdp", "bad"), ("h100", "tpu-v5p"), (fast, slow), failures, fast,
                             width=200)  # fmt: skip
    grown = "~ all-gather over x at m.py:{}: 100 B -> 300 B, 1.00 s -> 3.00 s (grown)"
    assert text.split("\n") == [
        "mlp: 3 candidates on h100, tpu-v5p, 2 row(s) ranked, 1 failed to trace",
        HEADER,
        "1  tp         x=2   h100      2.00 s  network  500.00 ms  1.00 s  2.00 s   30 B        fits 100 B",
        "     network by link: NVLink 1.50 s, InfiniBand 500.00 ms; by mesh axis: x 1.50 s, x,y 500.00 ms",
        "     against fsdp: 5 line(s) differ",
        *("       " + grown.format(n) for n in range(1, 5)),
        "       ... 1 more",
        "2  fsdp       -     h100      4.00 s  network  1.00 s     2.00 s  4.00 s   ?           OVER 100 B",
        "best that fits: tp on h100, 2.00 s per step",
        "failed: bad: no model axis",
        "failed: tp on tpu-v5p: no such slice",
    ]


def test_four_changed_lines_are_all_shown_and_one_candidate_is_singular():
    fast, _ = two_rows()
    fast = replace(fast, changes=fast.changes[:4], network_by_link=())
    text = render_comparison("mlp", ("tp",), ("h100",), (fast,), (), None, width=200)
    assert text.split("\n")[0] == "mlp: 1 candidate on h100, 1 row(s) ranked, 0 failed to trace"
    assert "more" not in text and "network by link" not in text and "best that fits" not in text
    assert text.count("(grown)") == 4


def test_no_rows_is_the_head_and_the_failures_alone():
    text = render_comparison("mlp", ("a", "b"), ("h100",), (), (Failure("a", "", (), "x"),), None, width=200)
    assert text == "mlp: 2 candidates on h100, 0 row(s) ranked, 1 failed to trace\nfailed: a: x"


def test_lines_are_cut_at_the_width_and_errors_at_three_times_it_or_240():
    fast, slow = two_rows()
    failures = (Failure("bad", "", (), "e" * 400),)
    narrow = render_comparison("mlp", ("tp", "fsdp"), ("h100",), (fast, slow), failures, fast, width=40).split("\n")
    assert narrow[1] == HEADER[:40]
    assert narrow[2] == "1  tp         x=2   h100      2.00 s  ne"
    assert narrow[3] == "     network by link: NVLink 1.50 s, Inf"
    assert narrow[5] == "       ~ all-gather over x at m.py:1: 10"
    assert len(narrow[-1]) == 80 * 3 and narrow[-1].startswith("failed: bad: eee")
    wide = render_comparison("mlp", ("tp",), ("h100",), (), failures, None, width=100).split("\n")
    assert len(wide[-1]) == 100 * 3


def test_without_a_width_the_terminal_gives_it_or_120_columns(monkeypatch):
    asked = []

    def terminal_size(fallback=(80, 24)):
        asked.append(fallback)
        return os.terminal_size((50, 24))

    monkeypatch.setattr(shutil, "get_terminal_size", terminal_size)
    fast, slow = two_rows()
    text = render_comparison("mlp", ("tp", "fsdp"), ("h100",), (fast, slow), (), fast)
    assert asked == [(120, 24)]
    assert text.split("\n")[1] == HEADER[:50]


def test_a_row_over_hbm_says_by_how_much_and_what_the_peak_holds():
    from shardviz.compare.report import _details

    over = replace(row("big", 1.0, fits=False, device_bytes=130, hbm_bytes=100.0),
                   held_by_group=(("arguments", 100), ("activations", 30)))  # fmt: skip
    # 130 B held against 100 B of HBM: 30 B over
    assert _details(over) == ["     over HBM by 30 B per device; at the peak: arguments 100 B, activations 30 B"]
    assert _details(replace(over, held_by_group=())) == ["     over HBM by 30 B per device"]
    # no HBM figure, or a row that fits: nothing to say
    assert _details(replace(over, hbm_bytes=None)) == []
    assert _details(replace(over, fits=True)) == []
