"""Named hardware and its figures, each with its source.

Bandwidths are bytes per second in one direction: of one link between torus
neighbours (TPU ICI), of one GPU into its switch (NVLink), of one device out
of its node (TPU DCN per chip, GPU InfiniBand per GPU). Sources: Google
Cloud TPU system architecture pages (cloud.google.com/tpu/docs/v4, v5e,
v5p, v6e) and the tables of "How to Scale Your Model"
(jax-ml.github.io/scaling-book, "How to Think About TPUs": flops, HBM, ICI
per link, DCN about 2.5e10 B/s per host, hosts of 4 (v4, v5p) or 8 (v5e,
v6e) chips, wraparound rules); NVIDIA H100/H200 SXM datasheets (dense bf16).
"""

from __future__ import annotations

import math
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

    def ring_closes(self, size: int) -> bool:
        """Whether a ring of ``size`` devices along one torus axis has its wraparound link."""
        if self.switch or not self.wraparound or size < 3:
            return False
        return self.wrap_multiple is None or size % self.wrap_multiple == 0

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
        }


_TPU = (
    "Google Cloud TPU architecture pages; How to Scale Your Model, 'How to Think About TPUs' "
    "(ICI per link, DCN 2.5e10 B/s per host shared by its chips, wraparound rules)"
)
_GIB = 2**30
_GPU = "NVIDIA SXM datasheet (dense bf16); NVLink 4: 450 GB/s per GPU per direction; 400 Gb/s InfiniBand per GPU"


def _tpu(name: str, flops: float, hbm: float, ici: float, torus: tuple[int, ...], wrap_multiple: int,
         slice_chips: int, chips_per_host: int, hbm_bytes: float) -> Hardware:  # fmt: skip
    return Hardware(
        name, flops, hbm, ici, torus, True, slice_chips, 2.5e10 / chips_per_host, 1e-6, _TPU,
        wrap_multiple=wrap_multiple, hbm_bytes=hbm_bytes,
    )  # fmt: skip


def _gpu(name: str, hbm: float, hbm_bytes: float) -> Hardware:
    return Hardware(
        name, 9.89e14, hbm, 4.5e11, (), False, 8, 5.0e10, 2e-6, _GPU,
        switch=True, hbm_bytes=hbm_bytes, node_latency_s=5e-6, link_name="NVLink", node_link_name="InfiniBand",
    )  # fmt: skip


HARDWARE: dict[str, Hardware] = {
    "tpu-v4": _tpu("tpu-v4", 2.75e14, 1.2e12, 4.5e10, (16, 16, 16), 4, 4096, 4, 32 * _GIB),
    "tpu-v5e": _tpu("tpu-v5e", 1.97e14, 8.1e11, 4.5e10, (16, 16), 16, 256, 8, 16 * _GIB),
    "tpu-v5p": _tpu("tpu-v5p", 4.59e14, 2.76e12, 9.0e10, (16, 20, 28), 4, 8960, 4, 95 * _GIB),
    "tpu-v6e": _tpu("tpu-v6e", 9.18e14, 1.64e12, 9.0e10, (16, 16), 16, 256, 8, 32 * _GIB),
    "h100": _gpu("h100", 3.35e12, 80 * _GIB),
    "h200": _gpu("h200", 4.8e12, 141e9),
}


def hardware_named(hardware: Any) -> Hardware:
    """A ``Hardware`` or the name of a known one."""
    if isinstance(hardware, Hardware):
        return hardware
    if isinstance(hardware, str):
        found = HARDWARE.get(hardware.strip().lower())
        if found is None:
            raise ShardingError(
                f"unknown hardware {hardware!r}; known: {', '.join(HARDWARE)} or shardviz.Hardware(...)"
            )
        return found
    raise ShardingError(
        f"hardware must be a name ({', '.join(HARDWARE)}) or a shardviz.Hardware, got a {type(hardware).__name__}"
    )
