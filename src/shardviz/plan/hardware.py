"""Named hardware and its figures, each with its source (docs/planning.md cites every page).

Units, said once: every bandwidth is bytes per second in one direction, in
decimal units (1 GB/s = 1e9 B/s), as Google and NVIDIA state them; HBM
capacity is in bytes, stated in GiB (2**30) where the vendor says GiB (TPU
v4, v5p; v5e, v6e and H100, whose HBM stacks are binary-sized) and 141e9 for
the H200 as NVIDIA states it. Shown to people, byte counts are binary
(``format_bytes``: KiB, MiB, GiB).

Bandwidths: of one link between torus neighbours (TPU ICI), of one GPU into
its switch (NVLink), of one device out of its slice or node (TPU DCN per
chip, GPU InfiniBand per GPU). Where Google's pages and "How to Scale Your
Model" (jax-ml/scaling-book) differ, the ICI figures are the book's (v5p
and v6e: 9e10 per link and direction, against Google's 100 GB/s): its
collective formulas and worked answers are built on them, and its tpus.md
says ICI links reach somewhat less than the rated figure in collectives.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ShardingError

_NUMBERS = ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "latency_s", "node_latency_s")
_OPTIONAL_NUMBERS = ("node_bytes_per_s", "hbm_bytes")
_OPTIONAL_COUNTS = ("node_size", "wrap_multiple")


@dataclass(frozen=True)
class Hardware:
    """One accelerator kind as the estimate sees it.

    ``link_bytes_per_s``: one direction of one link between neighbours.
    TPUs (``switch=False``) form a torus of ``torus`` chips; a mesh axis is a
    ring along it, and the ring closes (both directions carry data) when
    ``wraparound`` holds and the axis's size is a multiple of
    ``wrap_multiple`` (4 on v4/v5p, whose full cubes have wraparound links;
    16 on v5e/v6e, whose only wraparound is a full 16-chip axis). GPUs
    (``switch=True``) reach every GPU of their node through NVSwitch at
    ``link_bytes_per_s`` each. ``node_size`` devices share the fast links
    (a GPU node, a TPU slice); groups that cross nodes move at
    ``node_bytes_per_s`` per device (InfiniBand, DCN) with
    ``node_latency_s`` per step. ``latency_s``: per hop on the fast links.
    ``hbm_bytes``: memory per device, to say whether a program fits.
    ``topology``: the slice the program runs on (``(8, 16, 16)``); None
    takes the most even slice of the program's chip count within
    ``torus`` (:func:`.topology.slice_shape`), several slices past
    ``node_size`` chips. ``wrap_whole_slice``: wraparound links exist only
    when every dimension of the slice is a multiple of ``wrap_multiple``
    (v4 and v5p: whole 4x4x4 cubes); otherwise each dimension of such a
    size has its own (v5e, v6e: a dimension of 16).
    """

    name: str
    flops_per_s: float
    hbm_bytes_per_s: float
    link_bytes_per_s: float
    torus: tuple[int, ...] = ()
    wraparound: bool = True
    node_size: int | None = None
    node_bytes_per_s: float | None = None
    latency_s: float = 1e-6
    source: str = "user-given"
    wrap_multiple: int | None = None
    switch: bool = False
    hbm_bytes: float | None = None
    node_latency_s: float = 1e-5
    link_name: str = "ICI"
    node_link_name: str = "DCN"
    topology: tuple[int, ...] | None = None
    wrap_whole_slice: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ShardingError(f"Hardware name must be a str, got a {type(self.name).__name__}")
        for field in _NUMBERS + _OPTIONAL_NUMBERS:
            value = getattr(self, field)
            if value is None and field in _OPTIONAL_NUMBERS:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ShardingError(f"Hardware {field} must be a non-negative number, got {value!r}")
            if not field.endswith("latency_s") and value == 0:
                raise ShardingError(f"Hardware {field} must be positive, got {value!r}")
        for field in _OPTIONAL_COUNTS:
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ShardingError(f"Hardware {field} must be a positive int or None, got {value!r}")
        if self.node_size is not None and self.node_bytes_per_s is None:
            raise ShardingError("Hardware node_size needs node_bytes_per_s (the bandwidth between nodes)")
        if self.topology is not None and (
            not isinstance(self.topology, tuple)
            or not self.topology
            or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in self.topology)
        ):
            raise ShardingError(f"Hardware topology must be a tuple of positive ints, got {self.topology!r}")

    def ring_closes(self, size: int) -> bool:
        """Whether a slice dimension of ``size`` chips, alone, has its wraparound link."""
        return self.dim_wraps((size,), 0)

    def dim_wraps(self, topology: tuple[int, ...], dim: int) -> bool:
        """Whether dimension ``dim`` of a slice of shape ``topology`` has its wraparound link."""
        size = topology[dim]
        if self.switch or not self.wraparound or size < 3:
            return False
        if self.wrap_multiple is None:
            return True
        if self.wrap_whole_slice:
            return all(d % self.wrap_multiple == 0 for d in topology)
        return size % self.wrap_multiple == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "flops_per_s": self.flops_per_s,
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "link_bytes_per_s": self.link_bytes_per_s,
            "torus": list(self.torus),
            "wraparound": self.wraparound,
            "wrap_multiple": self.wrap_multiple,
            "switch": self.switch,
            "node_size": self.node_size,
            "node_bytes_per_s": self.node_bytes_per_s,
            "latency_s": self.latency_s,
            "node_latency_s": self.node_latency_s,
            "hbm_bytes": self.hbm_bytes,
            "link_name": self.link_name,
            "node_link_name": self.node_link_name,
            "source": self.source,
            "topology": None if self.topology is None else list(self.topology),
            "wrap_whole_slice": self.wrap_whole_slice,
        }


_GIB = 2**30
_BOOK = "How to Scale Your Model (jax-ml/scaling-book), tpus.md: ICI per link, DCN per chip, wraparound"
_GPU = (
    "NVIDIA H100/H200 SXM datasheets (dense bf16, HBM); How to Scale Your Model, gpus.md: NVLink 4 450 GB/s "
    "per GPU each way, nodes of 8, one 400 Gb/s InfiniBand NIC per GPU (400 GB/s node egress)"
)


# The named hardware as data (docs/planning.md cites each figure). TPUs: flops, HBM bandwidth, ICI per link,
# the pod's torus, the largest slice, DCN per chip, HBM, Google's page, and whether wraparound needs whole
# 4x4x4 cubes (v4, v5p) or a dimension of 16 (v5e, v6e).
_TPUS = {
    "tpu-v4": (2.75e14, 1.2e12, 4.5e10, (16, 16, 16), 4096, 6.25e9, 32 * _GIB, "tpu/docs/v4", True),
    "tpu-v5e": (1.97e14, 8.1e11, 4.5e10, (16, 16), 256, 3.125e9, 16 * _GIB, "tpu/docs/v5e", False),
    "tpu-v5p": (4.59e14, 2.765e12, 9.0e10, (16, 20, 28), 6144, 6.25e9, 95 * _GIB, "tpu/docs/v5p", True),
    "tpu-v6e": (9.18e14, 1.638e12, 9.0e10, (16, 16), 256, 1.25e10, 32 * _GIB, "tpu/docs/v6e", False),
}
_GPUS = {"h100": (3.35e12, 80 * _GIB), "h200": (4.8e12, 141e9)}  # HBM bandwidth and capacity

HARDWARE: dict[str, Hardware] = {
    **{
        name: Hardware(
            name, flops, hbm, ici, pod, True, largest, dcn, 1e-6, f"Google Cloud {page}; {_BOOK}",
            wrap_multiple=4 if cubes else 16, hbm_bytes=hbm_bytes, wrap_whole_slice=cubes,
        )
        for name, (flops, hbm, ici, pod, largest, dcn, hbm_bytes, page, cubes) in _TPUS.items()
    },
    **{
        name: Hardware(
            name, 9.89e14, hbm, 4.5e11, (), False, 8, 5.0e10, 2e-6, _GPU, switch=True, hbm_bytes=hbm_bytes,
            node_latency_s=5e-6, link_name="NVLink", node_link_name="InfiniBand",
        )
        for name, (hbm, hbm_bytes) in _GPUS.items()
    },
}  # fmt: skip

_SLICE_NAME = re.compile(r"(.+)-(\d+(?:x\d+)+)")


def hardware_named(hardware: Any) -> Hardware:
    """A ``Hardware`` or the name of a known one."""
    if isinstance(hardware, Hardware):
        return hardware
    if isinstance(hardware, str):
        name = hardware.strip().lower()
        found = HARDWARE.get(name) or _named_slice(name)
        if found is None:
            raise ShardingError(
                f"unknown hardware {hardware!r}; known: {', '.join(HARDWARE)}, a TPU slice such as "
                "'tpu-v5p-8x16x16', or shardviz.Hardware(...)"
            )
        return found
    raise ShardingError(
        f"hardware must be a name ({', '.join(HARDWARE)}) or a shardviz.Hardware, got a {type(hardware).__name__}"
    )


def _named_slice(name: str) -> Hardware | None:
    """``tpu-v5p-8x16x16``: a named TPU with that slice; None when the name is no such thing."""
    match = _SLICE_NAME.fullmatch(name)
    base = HARDWARE.get(match.group(1)) if match else None
    if match is None or base is None or base.switch:
        return None
    topology = tuple(int(d) for d in match.group(2).split("x"))
    chips = math.prod(topology)
    if len(topology) != len(base.torus) or any(d < 1 for d in topology):
        raise ShardingError(f"{name}: a {base.name} slice has {len(base.torus)} dimensions, like {base.name}-"
                            + "x".join(map(str, base.torus)))  # fmt: skip
    if any(d > p for d, p in zip(sorted(topology), sorted(base.torus))) or chips > (base.node_size or chips):
        raise ShardingError(
            f"{name}: {base.name}'s largest single slice is {base.node_size:,} chips within a pod of "
            f"{'x'.join(map(str, base.torus))}; a larger program runs on several slices over "
            f"{base.node_link_name} (use {base.name} and the estimate says how many)"
        )
    return dataclasses.replace(base, name=name, topology=topology)
