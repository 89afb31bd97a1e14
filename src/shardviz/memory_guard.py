"""Room for what an edit allocates: measure a placement before ``jax.device_put`` makes it.

An edit that moves a user's array (the array view's mesh, spec and memory
edits, a tree's rules) makes a new copy of every shard it lays out. On
simulated CPU devices all of them share the host's memory, so a replicated
array on thousands of devices can ask for more than the machine has; on real
devices each shard needs room in its own device's memory. :func:`check_room`
counts the bytes a placement would take from ``devices_indices_map`` (no
buffer is made) and raises :class:`ShardingError` saying why and what would
fit when they do not fit, so the caller refuses the edit and keeps its state.

Host memory is the least of ``MemAvailable`` in ``/proc/meminfo``, the room
left under the process's cgroup ``memory.max``, and ``SHARDVIZ_MEMORY_LIMIT``
(bytes) where the environment sets it. Device memory is the device's
``memory_stats()``: ``bytes_limit`` less ``bytes_in_use``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ShardingError
from .text.ranges import compress_ids, format_bytes

HOST_KINDS = ("pinned_host", "unpinned_host")
LIMIT_VARIABLE = "SHARDVIZ_MEMORY_LIMIT"
UNBOUNDED = 1 << 62
# Where the kernel says what memory is left (module names, so tests can point them at files of their own).
MEMINFO = "/proc/meminfo"
SELF_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"


@dataclass(frozen=True)
class Placement:
    """One array to be laid out: its sharding, shape and dtype, and a name for messages."""

    sharding: Any
    shape: tuple[int, ...]
    dtype: Any
    name: str = "the array"

    @property
    def itemsize(self) -> int:
        """Bytes per element: numpy's, or the dtype's own for JAX's extended dtypes (PRNG keys)."""
        try:
            return np.dtype(self.dtype).itemsize
        except TypeError:
            return int(getattr(self.dtype, "itemsize", 0))

    @property
    def array_bytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    def device_bytes(self) -> dict[Any, int]:
        """Bytes each addressable device would hold: its shard's elements times the item size."""
        itemsize = self.itemsize
        held: dict[Any, int] = {}
        addressable = set(self.sharding.addressable_devices)
        for device, index in self.sharding.devices_indices_map(self.shape).items():
            if device not in addressable:
                continue
            elements = 1
            for n, part in zip(self.shape, index):
                start, stop, _ = part.indices(n)
                elements *= max(0, stop - start)
            held[device] = held.get(device, 0) + elements * itemsize
        return held

    @property
    def on_host(self) -> bool:
        """Whether the shards land in the host's memory: a host memory kind, or CPU devices."""
        kind = getattr(self.sharding, "memory_kind", None)
        if kind in HOST_KINDS:
            return True
        devices = list(self.sharding.addressable_devices)
        return bool(devices) and all(d.platform == "cpu" for d in devices)


def host_available_bytes() -> int:
    """Bytes this process can still take from the host: the least of what the kernel says is
    available, the room under the cgroup's limit and ``SHARDVIZ_MEMORY_LIMIT``."""
    candidates = [_meminfo_available(), _cgroup_room()]
    limit = os.environ.get(LIMIT_VARIABLE, "").strip()
    if limit:
        try:
            candidates.append(int(limit))
        except ValueError:
            raise ShardingError(f"{LIMIT_VARIABLE} must be a number of bytes, not {limit!r}") from None
    return max(0, min(candidates))


def _meminfo_available() -> int:
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return UNBOUNDED


def _cgroup_room() -> int:
    """``memory.max`` less ``memory.current`` of this process's cgroup (v2), where it has a limit."""
    try:
        with open(SELF_CGROUP) as f:
            rel = next((line.split(":", 2)[2].strip() for line in f if line.startswith("0::")), None)
        if rel is None:
            return UNBOUNDED
        base = os.path.join(CGROUP_ROOT, rel.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as f:
            limit = f.read().strip()
        if limit == "max":
            return UNBOUNDED
        with open(os.path.join(base, "memory.current")) as f:
            current = int(f.read().strip())
        return int(limit) - current
    except (OSError, ValueError, IndexError):
        return UNBOUNDED


def device_available_bytes(device: Any) -> int | None:
    """Room left in a real device's memory (``bytes_limit`` less ``bytes_in_use``); None where the
    device does not say."""
    try:
        stats = device.memory_stats()
    except Exception:  # some backends raise rather than return None
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def check_room(placements: Sequence[Placement], *, action: str, hint: str = "") -> None:
    """Raise ShardingError when ``placements`` need more memory than there is; allocate nothing.

    ``action`` names what would allocate ("this mesh edit", "these rules"); ``hint`` says what
    would fit, in the caller's terms, and is added after the measured figures.
    """
    host_need = 0
    host_arrays: list[tuple[Placement, int, int]] = []  # (placement, its bytes, its devices)
    device_need: dict[Any, int] = {}
    for placement in placements:
        try:
            held = placement.device_bytes()
        except Exception:  # JAX cannot lay it out at all: device_put then refuses it in its own words
            continue
        if placement.on_host:
            total = sum(held.values())
            host_need += total
            host_arrays.append((placement, total, len(held)))
        else:
            for device, count in held.items():
                device_need[device] = device_need.get(device, 0) + count
    if host_need:
        available = host_available_bytes()
        if host_need > available:
            raise ShardingError(_host_refusal(action, host_arrays, host_need, available, hint))
    short = [(d, need, room) for d, need in device_need.items()
             if (room := device_available_bytes(d)) is not None and need > room]  # fmt: skip
    if short:
        device, need, room = max(short, key=lambda t: t[1] - t[2])
        ids = compress_ids(sorted(int(d.id) for d, _, _ in short))
        raise ShardingError(
            f"{action} needs {format_bytes(need)} on device {device.id}, which has {format_bytes(room)} free "
            f"(and too little on devices {ids}); nothing was moved." + (f" {hint}" if hint else "")
        )


def _host_refusal(
    action: str, arrays: Iterable[tuple[Placement, int, int]], need: int, available: int, hint: str
) -> str:
    listed = sorted(arrays, key=lambda t: -t[1])
    largest, largest_bytes, devices = listed[0]
    copies = round(largest_bytes / largest.array_bytes) if largest.array_bytes else 0
    spread = f"{copies} copies over {devices} devices" if copies > 1 else f"split over {devices} devices"
    what = f"{largest.name} ({format_bytes(largest.array_bytes)}) {spread}"
    if len(listed) > 1:
        what = f"for {len(listed)} arrays, the largest {what}"
    shared = "simulated CPU devices share this machine's memory" if _all_cpu(listed) else "in host memory"
    return (
        f"{action} would need {format_bytes(need)} of host memory, {what} ({shared}), and this process has "
        f"{format_bytes(available)} available: nothing was moved." + (f" {hint}" if hint else "")
    )


def _all_cpu(arrays: Sequence[tuple[Placement, int, int]]) -> bool:
    return all(
        getattr(p.sharding, "memory_kind", None) not in HOST_KINDS
        and all(d.platform == "cpu" for d in p.sharding.addressable_devices)
        for p, _, _ in arrays
    )


def ways_to_fit(placement: Placement) -> int:
    """How many ways at least the array must be split so that one placement of it fits the host's
    available memory: the devices' copies shrink with each split."""
    held = sum(placement.device_bytes().values())
    available = host_available_bytes()
    if held <= available or available <= 0:
        return 1 if held <= available else 0
    return math.ceil(held / available)
