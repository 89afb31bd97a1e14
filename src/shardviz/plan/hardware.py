"""Named hardware and its figures, each with its source.

Bandwidths are bytes per second in one direction of one link (ICI) or per
GPU (NVLink, InfiniBand). Sources: Google Cloud TPU system architecture
pages (cloud.google.com/tpu/docs/v4, v5e, v5p, v6e) and the figures table
of "How to Scale Your Model" (jax-ml.github.io/scaling-book, chapter "How
to Think About TPUs"); NVIDIA H100/H200 datasheets (dense bf16, SXM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ShardingError


@dataclass(frozen=True)
class Hardware:
    """One accelerator kind as the estimate sees it.

    ``link_bytes_per_s``: one direction of one link between neighbours
    (ICI for TPUs, NVLink per GPU within a node). ``torus``: the slice's
    dims; ``wraparound``: whether its rings close (a ring without the
    closing link moves at half the speed). ``node_size``/``node_bytes_per_s``:
    devices per node and the per-device bandwidth between nodes (InfiniBand);
    ``None`` for a TPU slice (all ICI). ``latency_s``: per hop.
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

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ShardingError(f"Hardware name must be a str, got a {type(self.name).__name__}")
        for field in ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "latency_s"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ShardingError(f"Hardware {field} must be a non-negative number, got {value!r}")
            if field != "latency_s" and value == 0:
                raise ShardingError(f"Hardware {field} must be positive, got {value!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "flops_per_s": self.flops_per_s,
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "link_bytes_per_s": self.link_bytes_per_s,
            "torus": list(self.torus),
            "wraparound": self.wraparound,
            "node_size": self.node_size,
            "node_bytes_per_s": self.node_bytes_per_s,
            "latency_s": self.latency_s,
            "source": self.source,
        }


_TPU = "Google Cloud TPU architecture pages; How to Scale Your Model, 'How to Think About TPUs' table"
_GPU = "NVIDIA datasheet (SXM, dense bf16); NVLink 4 450 GB/s per GPU per direction; 400 Gb/s InfiniBand per GPU"

HARDWARE: dict[str, Hardware] = {
    "tpu-v4": Hardware("tpu-v4", 2.75e14, 1.2e12, 4.5e10, (16, 16, 16), True, source=_TPU),
    "tpu-v5e": Hardware("tpu-v5e", 1.97e14, 8.1e11, 4.5e10, (16, 16), False, source=_TPU),
    "tpu-v5p": Hardware("tpu-v5p", 4.59e14, 2.76e12, 9.0e10, (16, 20, 28), True, source=_TPU),
    "tpu-v6e": Hardware("tpu-v6e", 9.18e14, 1.64e12, 9.0e10, (16, 16), False, source=_TPU),
    "h100": Hardware("h100", 9.89e14, 3.35e12, 4.5e11, (), False, 8, 5.0e10, 5e-6, _GPU),
    "h200": Hardware("h200", 9.89e14, 4.8e12, 4.5e11, (), False, 8, 5.0e10, 5e-6, _GPU),
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
