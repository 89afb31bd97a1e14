"""plan/hardware.py's table and checks against the figures their sources publish.

Figures: Google Cloud's TPU pages and "How to Scale Your Model" (jax-ml/scaling-book,
tpus.md and gpus.md; ICI per link and direction as the book takes it), NVIDIA's H100
and H200 SXM datasheets (dense bf16), as docs/planning.md cites them. These tests came
from mutation testing (docs/mutation.md): a figure off by one unit, or a check's word
changed, passed every older test.
"""

from __future__ import annotations

import dataclasses

import pytest

from shardviz import ShardingError
from shardviz.plan.hardware import HARDWARE, Hardware, hardware_named

GIB = 2**30

# name: flops/s, HBM B/s (the book rounds v5e's 819 GB/s to 8.1e11), ICI per link B/s, pod torus, largest slice, DCN per chip B/s, HBM bytes
TPU_FIGURES = {
    "tpu-v4": (275e12, 1.2e12, 45e9, (16, 16, 16), 4096, 6.25e9, 32 * GIB),
    "tpu-v5e": (197e12, 8.1e11, 45e9, (16, 16), 256, 3.125e9, 16 * GIB),
    "tpu-v5p": (459e12, 2765e9, 90e9, (16, 20, 28), 6144, 6.25e9, 95 * GIB),
    "tpu-v6e": (918e12, 1638e9, 90e9, (16, 16), 256, 12.5e9, 32 * GIB),
}
GPU_FIGURES = {"h100": (3.35e12, 80 * GIB), "h200": (4.8e12, 141e9)}


@pytest.mark.parametrize("name", sorted(TPU_FIGURES))
def test_each_tpu_has_its_published_figures(name: str) -> None:
    flops, hbm, ici, pod, largest, dcn, hbm_bytes = TPU_FIGURES[name]
    hw = HARDWARE[name]
    assert (hw.name, hw.flops_per_s, hw.hbm_bytes_per_s, hw.link_bytes_per_s) == (name, flops, hbm, ici)
    assert (hw.torus, hw.node_size, hw.node_bytes_per_s, hw.hbm_bytes) == (pod, largest, dcn, hbm_bytes)
    assert (hw.latency_s, hw.node_latency_s, hw.link_name, hw.node_link_name) == (1e-6, 1e-5, "ICI", "DCN")
    assert hw.wraparound and not hw.switch and hw.topology is None
    cubes = name in ("tpu-v4", "tpu-v5p")
    assert (hw.wrap_multiple, hw.wrap_whole_slice) == ((4, True) if cubes else (16, False))
    assert hw.source.startswith("Google Cloud tpu/docs/") and "scaling-book" in hw.source


@pytest.mark.parametrize("name", sorted(GPU_FIGURES))
def test_each_gpu_has_its_published_figures(name: str) -> None:
    hbm, hbm_bytes = GPU_FIGURES[name]
    hw = HARDWARE[name]
    # 989 TFLOP/s dense bf16; NVLink 4: 450 GB/s each way; one 400 Gb/s NIC per GPU; nodes of 8.
    assert (hw.flops_per_s, hw.hbm_bytes_per_s, hw.hbm_bytes) == (989e12, hbm, hbm_bytes)
    assert (hw.link_bytes_per_s, hw.node_bytes_per_s, hw.node_size, hw.torus) == (450e9, 50e9, 8, ())
    assert (hw.latency_s, hw.node_latency_s) == (2e-6, 5e-6)
    assert (hw.link_name, hw.node_link_name, hw.switch, hw.wraparound) == ("NVLink", "InfiniBand", True, False)
    assert "datasheets" in hw.source


def test_a_dimension_wraps_by_the_kind_of_chip() -> None:
    v5e, v4, h100 = HARDWARE["tpu-v5e"], HARDWARE["tpu-v4"], HARDWARE["h100"]
    # v5e: only a whole dimension of 16 closes, whatever the others are.
    assert v5e.dim_wraps((16, 4), 0) and not v5e.dim_wraps((16, 4), 1) and not v5e.dim_wraps((8, 16), 0)
    # v4: wraparound only on slices of whole 4x4x4 cubes, then on every dimension.
    assert v4.dim_wraps((4, 4, 8), 2) and v4.dim_wraps((4, 4, 8), 0)
    assert not v4.dim_wraps((4, 4, 2), 0) and not v4.dim_wraps((4, 6, 8), 2)
    assert not h100.dim_wraps((8,), 0)
    # With no rule, any ring of three or more closes; two chips are one link, not a ring.
    plain = Hardware("plain", 1e14, 1e12, 1e10, (8,))
    assert plain.dim_wraps((3,), 0) and not plain.dim_wraps((2,), 0) and not plain.dim_wraps((1,), 0)
    assert plain.ring_closes(3) and not plain.ring_closes(2)
    assert not dataclasses.replace(plain, wraparound=False).ring_closes(8)


def test_to_json_names_every_figure() -> None:
    hw = HARDWARE["tpu-v5p-4x4x8"] if "tpu-v5p-4x4x8" in HARDWARE else hardware_named("tpu-v5p-4x4x8")
    assert hw.to_json() == {
        "name": "tpu-v5p-4x4x8",
        "flops_per_s": 459e12,
        "hbm_bytes_per_s": 2765e9,
        "link_bytes_per_s": 90e9,
        "torus": [16, 20, 28],
        "wraparound": True,
        "wrap_multiple": 4,
        "switch": False,
        "node_size": 6144,
        "node_bytes_per_s": 6.25e9,
        "latency_s": 1e-6,
        "node_latency_s": 1e-5,
        "hbm_bytes": 95 * GIB,
        "link_name": "ICI",
        "node_link_name": "DCN",
        "source": HARDWARE["tpu-v5p"].source,
        "topology": [4, 4, 8],
        "wrap_whole_slice": True,
    }
    assert HARDWARE["h200"].to_json()["topology"] is None


def test_names_are_read_loosely_and_slices_by_their_shape() -> None:
    assert hardware_named("  TPU-v5e ") is HARDWARE["tpu-v5e"]
    own = Hardware("mine", 1e14, 1e12, 1e10)
    assert hardware_named(own) is own
    sliced = hardware_named("tpu-v5e-4x8")
    assert sliced.topology == (4, 8) and sliced.name == "tpu-v5e-4x8" and sliced.flops_per_s == 197e12
    assert hardware_named("tpu-v4-16x16x16").topology == (16, 16, 16)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("tpu-v9", "unknown hardware 'tpu-v9'; known: tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, h100, h200, a TPU slice"
                   " such as 'tpu-v5p-8x16x16', or shardviz.Hardware(...)"),
        ("h100-2x4", "unknown hardware 'h100-2x4'"),
        ("tpu-v9-4x4", "unknown hardware 'tpu-v9-4x4'"),  # a slice's shape on a chip that is no TPU we know
        ("tpu-v5e-4x4x4", "tpu-v5e-4x4x4: a tpu-v5e slice has 2 dimensions, like tpu-v5e-16x16"),
        ("tpu-v5e-0x4", "a tpu-v5e slice has 2 dimensions"),
        ("tpu-v5e-32x8", "tpu-v5e-32x8: tpu-v5e's largest single slice is 256 chips within a pod of 16x16; "
                         "a larger program runs on several slices over DCN (use tpu-v5e and the estimate says how many)"),
        ("tpu-v5p-16x16x28", "largest single slice is 6,144 chips"),
    ],
)  # fmt: skip
def test_a_wrong_name_says_what_is_known(name: str, words: str) -> None:
    with pytest.raises(ShardingError) as raised:
        hardware_named(name)
    assert words in str(raised.value)


def test_a_slice_as_large_as_the_largest_is_allowed() -> None:
    assert hardware_named("tpu-v5p-16x16x24").topology == (16, 16, 24)  # 6144 chips
    assert hardware_named("tpu-v5e-16x16").topology == (16, 16)


def test_hardware_that_is_no_name_says_what_it_got() -> None:
    with pytest.raises(ShardingError) as raised:
        hardware_named(3)
    assert str(raised.value) == (
        "hardware must be a name (tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, h100, h200) or a shardviz.Hardware, got a int"
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": 5}, "Hardware name must be a str, got a int"),
        ({"flops_per_s": True}, "Hardware flops_per_s must be a non-negative number, got True"),
        ({"hbm_bytes_per_s": "fast"}, "Hardware hbm_bytes_per_s must be a non-negative number, got 'fast'"),
        ({"link_bytes_per_s": float("inf")}, "Hardware link_bytes_per_s must be a non-negative number, got inf"),
        ({"latency_s": -1e-6}, "Hardware latency_s must be a non-negative number, got -1e-06"),
        ({"link_bytes_per_s": 0}, "Hardware link_bytes_per_s must be positive, got 0"),
        ({"node_bytes_per_s": 0.0}, "Hardware node_bytes_per_s must be positive, got 0.0"),
        ({"node_size": True, "node_bytes_per_s": 1e9}, "Hardware node_size must be a positive int or None, got True"),
        ({"node_size": 2.0, "node_bytes_per_s": 1e9}, "Hardware node_size must be a positive int or None, got 2.0"),
        ({"wrap_multiple": 0}, "Hardware wrap_multiple must be a positive int or None, got 0"),
        ({"node_size": 8}, "Hardware node_size needs node_bytes_per_s (the bandwidth between nodes)"),
        ({"topology": ()}, "Hardware topology must be a tuple of positive ints, got ()"),
        ({"topology": (4, True)}, "Hardware topology must be a tuple of positive ints, got (4, True)"),
        ({"topology": (4, 2.0)}, "Hardware topology must be a tuple of positive ints, got (4, 2.0)"),
    ],
)
def test_each_wrong_figure_is_named(fields: dict[str, object], message: str) -> None:
    given: dict[str, object] = {"name": "x", "flops_per_s": 1e14, "hbm_bytes_per_s": 1e12, "link_bytes_per_s": 1e10}
    with pytest.raises(ShardingError) as raised:
        Hardware(**{**given, **fields})  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_zero_latency_and_one_device_nodes_are_allowed() -> None:
    hw = Hardware("x", 1e14, 1e12, 1e10, latency_s=0, node_latency_s=0, node_size=1, node_bytes_per_s=1e9)
    assert hw.latency_s == 0 and hw.node_size == 1
    assert Hardware("y", 1e14, 1e12, 1e10, topology=(1, 4), wrap_multiple=1).topology == (1, 4)
