"""The memory guard's arithmetic and messages with stand-in devices, shardings and /proc files.

No JAX array is made and nothing is allocated: each sharding here is a small object that answers
``devices_indices_map`` and ``addressable_devices`` as JAX's do, each device one that answers
``memory_stats()`` as a GPU's does, and the kernel's memory files are written to a temporary folder.
Every figure is counted by hand in the test (tests/test_memory_guard.py checks the guard on real
JAX shardings and widgets).
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from shardviz import memory_guard
from shardviz.errors import ShardingError
from shardviz.memory_guard import (
    UNBOUNDED,
    Placement,
    check_room,
    device_available_bytes,
    host_available_bytes,
    ways_to_fit,
)

KiB = 1024


@dataclass(frozen=True, eq=False)  # a device is itself (hashed by identity), as JAX's are
class Device:
    id: int
    platform: str = "gpu"
    stats: Any = None
    fails: bool = False

    def memory_stats(self) -> Any:
        if self.fails:
            raise RuntimeError("this backend keeps no memory stats")
        return self.stats


@dataclass(frozen=True)
class Sharding:
    """Rows split evenly over ``devices`` (each device's block ``rows[k]``); ``copies`` of each block."""

    devices: tuple[Device, ...]
    blocks: tuple[tuple[slice, ...], ...]
    memory_kind: str | None = None
    hidden: tuple[Device, ...] = field(default=())  # devices of the sharding this process cannot address

    @property
    def addressable_devices(self) -> set[Device]:
        return set(self.devices)

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Device, tuple[slice, ...]]:
        # Another process's devices first: counting must go on past them.
        out = {d: tuple(slice(None) for _ in shape) for d in self.hidden}
        out.update(zip(self.devices, self.blocks))
        return out


def whole(devices: tuple[Device, ...], memory_kind: str | None = None) -> Sharding:
    """Every device holds the whole (2-d) array: a replicated placement."""
    return Sharding(devices, tuple((slice(None), slice(None)) for _ in devices), memory_kind)


def rows(devices: tuple[Device, ...], n: int, memory_kind: str | None = None) -> Sharding:
    """Rows 0:n cut into len(devices) equal blocks, one per device."""
    step = n // len(devices)
    return Sharding(
        devices, tuple((slice(k * step, (k + 1) * step), slice(None)) for k in range(len(devices))), memory_kind
    )


@pytest.fixture
def no_limits(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The kernel's files point at an empty folder (no figure: unbounded) and no limit is set."""
    monkeypatch.setattr(memory_guard, "MEMINFO", str(tmp_path / "meminfo"))
    monkeypatch.setattr(memory_guard, "SELF_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(memory_guard, "CGROUP_ROOT", str(tmp_path / "sys"))
    monkeypatch.delenv(memory_guard.LIMIT_VARIABLE, raising=False)
    return tmp_path


def limit(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setenv(memory_guard.LIMIT_VARIABLE, str(count))


# ---------------------------------------------------------------------------------------------
# what the host has left


def test_meminfo_gives_mem_available_in_bytes(no_limits: pathlib.Path) -> None:
    (no_limits / "meminfo").write_text("MemTotal:       4096 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n")
    assert memory_guard._meminfo_available() == 2048 * 1024
    assert host_available_bytes() == 2048 * 1024


@pytest.mark.parametrize("text", ["MemTotal: 4096 kB\n", "MemAvailable: lots kB\n", "MemAvailable:\n"])
def test_meminfo_without_a_readable_figure_bounds_nothing(no_limits: pathlib.Path, text: str) -> None:
    (no_limits / "meminfo").write_text(text)
    assert memory_guard._meminfo_available() == UNBOUNDED
    assert memory_guard._meminfo_available() == 1 << 62


def test_no_files_at_all_bound_nothing(no_limits: pathlib.Path) -> None:
    assert memory_guard._meminfo_available() == UNBOUNDED
    assert memory_guard._cgroup_room() == UNBOUNDED
    assert host_available_bytes() == UNBOUNDED


def cgroup(root: pathlib.Path, line: str, rel: str, max_text: str | None, current: str | None) -> None:
    (root / "cgroup").write_text(f"1:name=systemd:/elsewhere\n{line}\n")
    folder = root / "sys" / rel
    folder.mkdir(parents=True)
    if max_text is not None:
        (folder / "memory.max").write_text(max_text)
    if current is not None:
        (folder / "memory.current").write_text(current)


def test_the_cgroups_room_is_its_limit_less_what_it_uses(no_limits: pathlib.Path) -> None:
    # The v2 line's path may hold a colon: only the first two split it.
    # The folder's name starts with an X, so only its leading "/" may be cut off.
    cgroup(no_limits, "0::/Xuser.slice/a:b", "Xuser.slice/a:b", "1000\n", "400\n")
    assert memory_guard._cgroup_room() == 600
    assert host_available_bytes() == 600


@pytest.mark.parametrize(
    ("line", "max_text", "current"),
    [
        ("0::/job", "max\n", "400\n"),  # no limit
        ("2:cpu:/job", "1000\n", "400\n"),  # only a v1 line: no v2 cgroup
        ("0::/job", "1000\n", None),  # usage unreadable
        ("0::/job", "a lot\n", "400\n"),
        ("0::/job", None, "400\n"),
    ],
)
def test_a_cgroup_without_a_limit_bounds_nothing(
    no_limits: pathlib.Path, line: str, max_text: str | None, current: str | None
) -> None:
    cgroup(no_limits, line, "job", max_text, current)
    assert memory_guard._cgroup_room() == UNBOUNDED


def test_the_host_figure_is_the_least_of_the_three_and_never_below_zero(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (no_limits / "meminfo").write_text("MemAvailable: 4 kB\n")  # 4096 B
    cgroup(no_limits, "0::/job", "job", "5000\n", "1000\n")  # 4000 B
    assert host_available_bytes() == 4000
    monkeypatch.setenv(memory_guard.LIMIT_VARIABLE, " 3999 ")
    assert host_available_bytes() == 3999
    monkeypatch.setenv(memory_guard.LIMIT_VARIABLE, "4097")
    assert host_available_bytes() == 4000
    monkeypatch.setenv(memory_guard.LIMIT_VARIABLE, "  ")  # set but blank: no limit
    assert host_available_bytes() == 4000
    # A cgroup already past its limit (it can be, briefly): nothing is left, not less than nothing.
    (no_limits / "sys" / "job" / "memory.current").write_text("6000\n")
    assert host_available_bytes() == 0


def test_a_limit_that_is_no_number_is_refused_naming_the_variable(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(memory_guard.LIMIT_VARIABLE, "2GB")
    with pytest.raises(ShardingError) as err:
        host_available_bytes()
    assert str(err.value) == "SHARDVIZ_MEMORY_LIMIT must be a number of bytes, not '2GB'"


# ---------------------------------------------------------------------------------------------
# what a device has left


def test_a_devices_room_is_its_limit_less_what_it_uses() -> None:
    assert device_available_bytes(Device(0, stats={"bytes_limit": 100, "bytes_in_use": 30})) == 70
    assert device_available_bytes(Device(0, stats={"bytes_limit": 100})) == 100
    assert device_available_bytes(Device(0, stats={"bytes_limit": "100", "bytes_in_use": "30"})) == 70


@pytest.mark.parametrize(
    "device", [Device(0), Device(0, stats={}), Device(0, stats={"bytes_in_use": 5}), Device(0, fails=True)]
)
def test_a_device_that_does_not_say_has_no_figure(device: Device) -> None:
    assert device_available_bytes(device) is None


# ---------------------------------------------------------------------------------------------
# what a placement holds


def test_each_addressable_device_holds_its_blocks_elements_times_the_item_size() -> None:
    devices = tuple(Device(k) for k in range(4))
    # float32[8, 3] by rows over 4 devices: 2 rows x 3 = 6 elements, 24 bytes each; a device of another
    # process (hidden) is not counted; an empty block (rows 8:8) holds nothing.
    sharding = Sharding(
        devices,
        (
            (slice(0, 2), slice(None)),
            (slice(2, 4), slice(None)),
            (slice(4, 8, None), slice(0, 1)),
            (slice(8, 8), slice(None)),
        ),
        hidden=(Device(9),),
    )
    held = Placement(sharding, (8, 3), np.float32).device_bytes()
    assert held == {devices[0]: 24, devices[1]: 24, devices[2]: 4 * 1 * 4, devices[3]: 0}
    assert Placement(sharding, (8, 3), np.float32).array_bytes == 96
    assert Placement(sharding, (8, 3), np.float16).itemsize == 2


def test_an_extended_dtype_counts_by_its_own_item_size() -> None:
    class KeyType:
        itemsize = 8

    class Nameless:
        pass

    assert Placement(whole((Device(0),)), (2, 2), KeyType()).itemsize == 8
    assert Placement(whole((Device(0),)), (2, 2), Nameless()).itemsize == 0


def test_what_lands_in_host_memory() -> None:
    cpus = (Device(0, "cpu"), Device(1, "cpu"))
    gpus = (Device(0), Device(1))
    assert Placement(whole(cpus), (2, 2), np.float32).on_host
    assert not Placement(whole(gpus), (2, 2), np.float32).on_host
    assert not Placement(whole((Device(0, "cpu"), Device(1))), (2, 2), np.float32).on_host
    assert Placement(whole(gpus, "pinned_host"), (2, 2), np.float32).on_host
    assert Placement(whole(gpus, "unpinned_host"), (2, 2), np.float32).on_host
    assert not Placement(whole(gpus, "device"), (2, 2), np.float32).on_host
    assert not Placement(whole(()), (2, 2), np.float32).on_host  # no device: nothing lands anywhere


# ---------------------------------------------------------------------------------------------
# refusals


def test_a_replicated_array_past_the_host_is_refused_with_its_copies_and_the_room(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = tuple(Device(k, "cpu") for k in range(4))
    # float32[64, 16] = 4 KiB, whole on 4 devices: 16 KiB of the host's memory.
    placement = Placement(whole(cpus), (64, 16), np.float32, name="x")
    limit(monkeypatch, 16 * KiB)
    check_room([placement], action="this mesh edit")  # exactly what there is: it fits
    limit(monkeypatch, 16 * KiB - 1)
    with pytest.raises(ShardingError) as err:
        check_room([placement], action="this mesh edit", hint="Split it over 2 devices.")
    assert str(err.value) == (
        "this mesh edit would need 16 KiB of host memory, x (4.0 KiB) 4 copies over 4 devices "
        "(simulated CPU devices share this machine's memory), and this process has 16 KiB available: "
        "nothing was moved. Split it over 2 devices."
    )


def test_several_arrays_are_summed_and_the_largest_named(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpus = tuple(Device(k) for k in range(2))
    # Both in pinned host memory: a (float32[64, 16] = 4 KiB) split by rows over 2 devices, 4 KiB in all;
    # b (float32[64, 32] = 8 KiB) split likewise, 8 KiB. 12 KiB together.
    a = Placement(rows(gpus, 64, "pinned_host"), (64, 16), np.float32, name="a")
    b = Placement(rows(gpus, 64, "pinned_host"), (64, 32), np.float32, name="b")
    limit(monkeypatch, 12 * KiB - 1)
    with pytest.raises(ShardingError) as err:
        check_room([a, b], action="these rules")
    assert str(err.value) == (
        "these rules would need 12 KiB of host memory, for 2 arrays, the largest b (8.0 KiB) split over 2 devices "
        "(in host memory), and this process has 12 KiB available: nothing was moved."
    )
    limit(monkeypatch, 12 * KiB)
    check_room([a, b], action="these rules")


def test_nothing_on_the_host_asks_nothing_of_it(no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limit(monkeypatch, 0)
    empty = Placement(whole((Device(0, "cpu"),)), (0, 4), np.float32)
    check_room([empty], action="this edit")
    check_room([], action="this edit")
    on_gpu = Placement(whole((Device(0, stats={"bytes_limit": 64}),)), (4, 4), np.float32)
    check_room([on_gpu], action="this edit")  # 64 B on a device with 64 B free; none on the host


def test_a_placement_jax_cannot_lay_out_is_left_to_jax(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken(Sharding):
        def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Device, tuple[slice, ...]]:
            raise ValueError("the spec does not divide the shape")

    cpus = (Device(0, "cpu"),)
    limit(monkeypatch, 100)
    check_room([Placement(Broken(cpus, ()), (4, 4), np.float32)], action="this edit")
    # ...and the ones it can are still counted: 64 B of float32[4, 4] against 63.
    limit(monkeypatch, 63)
    with pytest.raises(ShardingError):
        check_room(
            [Placement(Broken(cpus, ()), (4, 4), np.float32), Placement(whole(cpus), (4, 4), np.float32)],
            action="this edit",
        )


def test_a_device_short_of_room_is_named_with_the_others(no_limits: pathlib.Path) -> None:
    # float32[8, 32] by rows over 4 GPUs: 2 rows x 32 x 4 = 256 B each, twice over (two arrays): 512 B a device.
    devices = (
        Device(0, stats={"bytes_limit": 512}),  # exactly enough
        Device(1, stats={"bytes_limit": 1000, "bytes_in_use": 600}),  # 400 free: 112 short
        Device(2),  # says nothing: not counted
        Device(3, stats={"bytes_limit": 300}),  # 300 free: 212 short, the worst
    )
    arrays = [Placement(rows(devices, 8), (8, 32), np.float32, name=n) for n in ("w", "b")]
    with pytest.raises(ShardingError) as err:
        check_room(arrays, action="this spec edit", hint="Shard it over more devices.")
    assert str(err.value) == (
        "this spec edit needs 512 B on device 3, which has 300 B free (and too little on devices 1,3); "
        "nothing was moved. Shard it over more devices."
    )
    with pytest.raises(ShardingError) as err:
        check_room(arrays[:1] * 2, action="this spec edit")
    assert str(err.value).endswith("(and too little on devices 1,3); nothing was moved.")
    check_room(arrays[:1], action="this spec edit")  # 256 B a device: every one has room


def test_the_worst_device_is_the_one_furthest_short() -> None:
    # Device 5 lacks 1 B of 1000, device 7 lacks 10 B of 20: device 7 is named, though it needs less.
    devices = (Device(5, stats={"bytes_limit": 999}), Device(7, stats={"bytes_limit": 10}))

    class Uneven(Sharding):
        def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Device, tuple[slice, ...]]:
            return {devices[0]: (slice(0, 250),), devices[1]: (slice(250, 255),)}

    with pytest.raises(ShardingError) as err:
        check_room([Placement(Uneven(devices, ()), (255,), np.float32)], action="this edit")
    assert str(err.value) == (
        "this edit needs 20 B on device 7, which has 10 B free (and too little on devices 5,7); nothing was moved."
    )


# ---------------------------------------------------------------------------------------------
# what would fit


def test_ways_to_fit_is_how_many_splits_bring_the_copies_under_the_room(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = tuple(Device(k, "cpu") for k in range(4))
    placement = Placement(whole(cpus), (64, 16), np.float32)  # 4 KiB x 4 copies = 16 KiB
    limit(monkeypatch, 16 * KiB)
    assert ways_to_fit(placement) == 1
    limit(monkeypatch, 5 * KiB)
    assert ways_to_fit(placement) == math.ceil(16 / 5) == 4
    limit(monkeypatch, 8 * KiB)
    assert ways_to_fit(placement) == 2
    limit(monkeypatch, 0)
    assert ways_to_fit(placement) == 0  # no room at all: no split fits
    assert ways_to_fit(Placement(whole(cpus), (0, 16), np.float32)) == 1  # nothing to hold fits in nothing


def test_two_copies_are_copies_and_host_memory_on_cpus_is_host_memory(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = tuple(Device(k, "cpu") for k in range(2))
    # float32[64, 16] = 4 KiB whole on 2 CPU devices, in pinned host memory: 8 KiB, two copies.
    placement = Placement(whole(cpus, "pinned_host"), (64, 16), np.float32, name="x")
    limit(monkeypatch, 8 * KiB - 1)
    with pytest.raises(ShardingError) as err:
        check_room([placement], action="this memory edit")
    assert str(err.value) == (
        "this memory edit would need 8.0 KiB of host memory, x (4.0 KiB) 2 copies over 2 devices "
        "(in host memory), and this process has 8.0 KiB available: nothing was moved."
    )


def test_one_byte_of_room_takes_as_many_splits_as_bytes(
    no_limits: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    placement = Placement(whole((Device(0, "cpu"),)), (4, 4), np.float32)  # 64 B
    limit(monkeypatch, 1)
    assert ways_to_fit(placement) == 64
