"""plan/estimate.py's report and arithmetic on hand-made estimates and stand-in programs.

These tests came from mutation testing (docs/mutation.md): each checks a figure or a
sentence that an older test let change. Expected text and figures are written out by hand
from the docs' units (us below a millisecond, ms above) and the inputs below.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from shardviz import ShardingError
from shardviz.plan.estimate import (
    CollectiveTime,
    Estimate,
    LineTime,
    TimePart,
    _positions,
    estimate,
    program_slices,
    widening_note,
)
from shardviz.plan.hardware import HARDWARE, Hardware
from shardviz.plan.topology import Slices

MIB = 2**20


def _report() -> Estimate:
    dcn = TimePart("all-reduce between slices", "DCN", 6.25e9, 2.5e-3, "bandwidth", "2 x 1 MiB / 6.25e9")
    ring = CollectiveTime(
        "all-reduce", "ar.1", ("pod", "data"), 32, 1 << 20, 1, "ICI", 9e10, 3e-3, "bandwidth", "sum of parts",
        "model.py:42", "bfloat16 on the device", (dcn,), "sum",
    )  # fmt: skip
    unnamed = CollectiveTime(
        "all-gather", "ag.2", None, 4, 4096, 2, "ICI", 9e10, 4e-6, "latency", "2 runs x 2 us", None
    )
    return Estimate(
        "step", HARDWARE["tpu-v5p"], 2e-3, 5e-4, 3.004e-3, 3.004e-3, 5.504e-3, "network", (ring, unnamed),
        (LineTime("model.py:42", 3e-3, 1 << 20, 1e-3, "network"),), ("one note",),
    )  # fmt: skip


def test_the_report_names_every_part_with_its_own_time() -> None:
    assert str(_report()).splitlines() == [
        "step on tpu-v5p: 3.004 ms per step, network-bound",
        "  compute 2.000 ms  memory 500.0 us  network 3.004 ms",
        "  all-reduce ar.1 over pod,data at model.py:42: 3.000 ms (bandwidth) = sum of parts",
        "    all-reduce between slices on DCN: 2.500 ms = 2 x 1 MiB / 6.25e9",
        "    bfloat16 on the device",
        "  all-gather ag.2 over ?: 4.0 us (latency) = 2 runs x 2 us",
        "  lines that take longest (network: their collectives; compute: their matrix multiplies):",
        "    model.py:42: network 3.000 ms, compute 1.000 ms: network-bound",
        "  note: one note",
    ]


def _bytes(dtype: str) -> SimpleNamespace:
    return SimpleNamespace(dtype=dtype)


def _operand(device: str, cpu: str) -> SimpleNamespace:
    return SimpleNamespace(on_device=_bytes(device), on_cpu=_bytes(cpu))


def test_a_combined_collective_names_each_narrow_dtype_once_and_the_widths_xla_cpu_used() -> None:
    # three operands: bfloat16 and float16 that XLA:CPU moved as 32-bit floats, and a float32 it kept
    operands = (_operand("bfloat16", "float32"), _operand("float16", "float32"), _operand("float32", "float32"))
    collective = SimpleNamespace(widened=True, on_device=_bytes("bfloat16"), on_cpu=_bytes("float32"), parts=operands)
    assert widening_note(collective) == (
        "2 of its 3 operands are bfloat16, float16 on the device: XLA:CPU moved them as 32-bit floats"
    )


def test_one_widened_operand_names_its_dtype_and_the_cpu_width() -> None:
    collective = SimpleNamespace(widened=True, on_device=_bytes("float16"), on_cpu=_bytes("float32"), parts=())
    assert widening_note(collective) == "float16 on the device: XLA:CPU moved it as a 32-bit float"
    assert widening_note(SimpleNamespace(widened=False, on_device=None, on_cpu=None, parts=())) == ""


def _collective(**fields) -> SimpleNamespace:
    base = dict(
        kind="all-reduce", name="ar.1", axes=("data",), group_size=512, groups=[tuple(range(512))], pairs=(),
        count=1, source=None, device_result_bytes=MIB, widened=False, on_device=None, on_cpu=None, parts=(),
    )  # fmt: skip
    return SimpleNamespace(**{**base, **fields})


def _program(*collectives: SimpleNamespace, partitions: int = 512, assignment=None) -> SimpleNamespace:
    return SimpleNamespace(
        name="step", mesh=SimpleNamespace(axis_names=("data",), axis_sizes=(partitions,)), num_partitions=partitions,
        assignment=assignment, collectives=collectives, flops=None, matmul_flops=None, line_flops=(), memory=None,
        hbm_bytes=None, whatif=None,
    )  # fmt: skip


def test_three_runs_of_an_all_reduce_over_two_v5e_slices_are_three_runs_of_each_phase() -> None:
    # 512 chips on v5e (largest slice 256): two 16x16 slices. One run of a 1 MiB all-reduce: a
    # reduce-scatter and an all-gather round two closed rings of 16 (8 + 8 hops of 1 us each, more than
    # 1 MiB x 1/2 / (2 x 4.5e10) = 5.8 us of bandwidth), and between them an all-reduce of each chip's
    # 1/256 share (4 KiB) between the 2 slices over DCN: 2 steps of 10 us, more than
    # 2 x 4 KiB x 1/2 / 3.125e9 = 1.3 us.
    est = estimate(_program(_collective(count=3)), "tpu-v5e")
    (timed,) = est.collectives
    assert (est.slices, est.topology) == (2, (16, 16))
    assert [(p.what, p.link, p.bound) for p in timed.parts] == [
        ("reduce-scatter inside the slice", "ICI", "latency"),
        ("all-reduce of the 1/256 share between 2 slices", "DCN", "latency"),
        ("all-gather inside the slice", "ICI", "latency"),
    ]
    assert [p.seconds for p in timed.parts] == [
        pytest.approx(3 * 16e-6),
        pytest.approx(3 * 20e-6),
        pytest.approx(3 * 16e-6),
    ]
    assert timed.seconds == pytest.approx(3 * (16e-6 + 20e-6 + 16e-6)) and timed.runs == 3
    assert timed.formula.startswith("3 runs x reduce-scatter inside the slice: 16 us + ")
    assert timed.line is None and timed.combined_by == "sum" and timed.link == "ICI+DCN"
    assert est.network_s == timed.seconds and est.bound == "network"


def test_a_collective_that_names_no_group_moves_nothing() -> None:
    (timed,) = estimate(_program(_collective(groups=[])), "tpu-v5e").collectives
    assert timed.seconds == 0.0 and timed.formula.startswith("0:")


def test_partitions_are_read_as_mesh_positions_through_the_assignment() -> None:
    assert _positions(_program(assignment=np.array([3, 2, 1, 0]), partitions=4), [0, 1]) == [3, 2]
    assert _positions(_program(partitions=4), (0, 1)) == [0, 1]


def test_hardware_with_neither_torus_nor_switch_takes_whole_nodes() -> None:
    line = Hardware("line", 1e14, 1e12, 1e10, (), False, node_size=4, node_bytes_per_s=1e9)
    assert program_slices(_program(partitions=8), line) == Slices(2, (4,))
    assert type(program_slices(_program(partitions=8), line).count) is int
    assert program_slices(_program(partitions=6), line) == Slices(1, (6,))  # 6 is no whole count of nodes
    assert program_slices(_program(partitions=8), HARDWARE["h100"]) is None


def _line(path: str | None, line: int, flops: float) -> SimpleNamespace:
    return SimpleNamespace(source=None if path is None else SimpleNamespace(file=path, line=line), flops=flops)


def test_each_line_is_charged_its_collectives_runs_and_its_matmuls_and_the_longest_comes_first() -> None:
    v5e = 1.97e14  # v5e's flops per second
    one_run = 16e-6 + 20e-6 + 16e-6  # a 1 MiB all-reduce over two v5e slices, as worked out above
    program = _program(
        _collective(source=SimpleNamespace(file="/home/u/model.py", line=7)),
        _collective(name="ar.2", count=2),  # no line of the user's
        _collective(name="ar.3", source=SimpleNamespace(file="/home/u/model.py", line=13)),
        _collective(name="ar.4", source=SimpleNamespace(file="/home/u/model.py", line=13)),
    )
    program.line_flops = (
        _line("/home/u/model.py", 7, v5e * 1e-4),  # 100 us of matmuls beside its 52 us all-reduce
        _line(None, 0, v5e * 1e-5),
        _line("/home/u/model.py", 9, v5e * 1e-4),  # matmuls alone, in two parts
        _line("/home/u/model.py", 9, v5e * 1e-4),
        _line("/home/u/model.py", 11, 0.0),  # nothing at all: network-bound by default
    )
    assert estimate(program, "tpu-v5e").lines == (
        LineTime("model.py:9", 0.0, 0, pytest.approx(2e-4), "compute"),
        LineTime("?", pytest.approx(2 * one_run), 2 * MIB, pytest.approx(1e-5), "network"),
        LineTime("model.py:13", pytest.approx(2 * one_run), 2 * MIB, 0.0, "network"),  # two all-reduces alone
        LineTime("model.py:7", pytest.approx(one_run), MIB, pytest.approx(1e-4), "compute"),
        LineTime("model.py:11", 0.0, 0, 0.0, "network"),
    )


@pytest.mark.parametrize(
    ("held", "fits", "note"),
    [
        (16 * 2**30, True, "16 GiB per device (the peak: bytes live at the worst step, arguments and outputs counted as held) fits in 16 GiB of HBM"),
        (17 * 2**30, False, "17 GiB per device (the peak: bytes live at the worst step, arguments and outputs counted as held) does NOT fit in 16 GiB of HBM, over by 1.0 GiB"),
    ],
)  # fmt: skip
def test_a_program_fits_when_it_holds_at_most_the_chips_hbm(held: int, fits: bool, note: str) -> None:
    program = _program(partitions=256)
    program.memory = SimpleNamespace(held_bytes=held)
    est = estimate(program, "tpu-v5e")  # 16 GiB of HBM a chip
    assert (est.device_bytes, est.fits) == (held, fits) and note in est.notes
    program.memory = None
    assert (estimate(program, "tpu-v5e").device_bytes, estimate(program, "tpu-v5e").fits) == (None, None)


def test_compute_counts_loops_where_xlas_analysis_counts_a_body_once() -> None:
    program = _program(partitions=256)
    program.flops, program.matmul_flops = 1.97e12, 3.94e12  # the loop's two trips against its body once
    est = estimate(program, "tpu-v5e")
    assert est.compute_s == pytest.approx(0.02)
    assert (
        "compute from the module's matrix multiplies with loops counted (3.94e+12 flops per device); "
        "XLA's cost analysis counts a loop's body once (1.97e+12)"
    ) in est.notes
    program.matmul_flops = 1.97e12  # the same count: no loop, no note
    est = estimate(program, "tpu-v5e")
    assert est.compute_s == pytest.approx(0.01) and not any(n.startswith("compute from") for n in est.notes)
    program.flops = None  # no cost analysis at all
    est = estimate(program, "tpu-v5e")
    assert est.compute_s == pytest.approx(0.01) and any(
        n.endswith("counts a loop's body once (none)") for n in est.notes
    )


@pytest.mark.parametrize(
    ("flops", "hbm", "bound"),
    [(1.97e12, 8.1e8, "compute"), (1.97e11, 8.1e9, "memory"), (1.97e9, 8.1e6, "network")],
)
def test_a_step_is_bound_by_the_largest_of_compute_memory_and_network(flops, hbm, bound) -> None:
    program = _program(_collective())  # 52 us of network on two v5e slices (worked out above)
    program.flops, program.hbm_bytes = flops, hbm  # v5e: 1.97e14 flops/s, 8.1e11 B/s of HBM
    est = estimate(program, "tpu-v5e")
    parts = {"compute": flops / 1.97e14, "memory": hbm / 8.1e11, "network": 52e-6}
    assert (est.compute_s, est.memory_s, est.network_s) == tuple(pytest.approx(v) for v in parts.values())
    assert est.step_s == pytest.approx(max(parts.values())) and est.serial_s == pytest.approx(sum(parts.values()))
    assert est.bound == bound and est.program == "step" and est.hardware.name == "tpu-v5e"
    assert est.notes[2] == (
        "512 chips: 2 slices of 16x16 joined by DCN, the leading mesh axes split across slices; "
        "the largest single tpu-v5e slice is 256 chips"
    )


def test_unknown_flops_and_bytes_leave_compute_and_memory_unknown_and_the_network_bounds() -> None:
    est = estimate(_program(_collective()), "tpu-v5e")
    assert (est.compute_s, est.memory_s, est.bound) == (None, None, "network")
    assert est.step_s == est.serial_s == pytest.approx(52e-6)
    program = _program(partitions=256)
    program.whatif = SimpleNamespace(devices=256)
    assert estimate(program, "tpu-v5e").notes[-1] == "what-if program: 256 virtual devices"


def test_a_torus_with_no_largest_slice_holds_the_whole_program_in_one() -> None:
    ring = Hardware("ring16", 1e14, 1e12, 1e10, torus=(16,), latency_s=1e-6)
    assert program_slices(_program(partitions=16), ring) == Slices(1, (16,))
    assert program_slices(_program(partitions=32), ring) == Slices(1, (32,))  # past the torus: the mesh's shape


def test_a_named_slice_the_program_is_no_multiple_of_is_refused_naming_the_chip() -> None:
    with pytest.raises(ShardingError) as refused:
        estimate(_program(partitions=20), "tpu-v5e-4x4")
    assert str(refused.value) == (
        "tpu-v5e-4x4 is a slice of 16 chips (4x4); the program has 20 devices, not a multiple of it: "
        "name a slice that fits, or tpu-v5e"
    )


def test_a_gpu_program_says_how_many_nodes_it_takes() -> None:
    notes = [estimate(_program(partitions=n), "h100").notes[2] for n in (8, 16, 12)]
    assert notes == [
        "8 GPUs: 1 node of 8 (NVLink inside a node, InfiniBand between nodes)",
        "16 GPUs: 2 nodes of 8 (NVLink inside a node, InfiniBand between nodes)",
        "12 GPUs: 2 nodes of 8 (NVLink inside a node, InfiniBand between nodes)",  # a node and a half: two
    ]
    assert [estimate(_program(partitions=n), "h100").slices for n in (8, 16, 12)] == [1, 2, 2]


def test_a_v5p_program_past_its_largest_slice_of_6144_chips_takes_two_even_if_the_pod_could_hold_it() -> None:
    assert program_slices(_program(partitions=6400), HARDWARE["tpu-v5p"]).count == 2  # 6,400 of 8,960 chips
