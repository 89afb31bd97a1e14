"""The memory guard: an edit that would copy more than the process can hold is measured and
refused before any buffer is made, and the array, the tree and the last good picture stay.

The limit is ``SHARDVIZ_MEMORY_LIMIT`` here (the host's real ``MemAvailable`` would need arrays of
gigabytes to cross on 12 devices); ``test_a_mesh_edit_past_the_hosts_real_memory_is_refused`` uses
the real figure in a process of 512 simulated devices. Each request is counted by hand in the test.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz
from shardviz import ShardingWidget, TreeWidget
from shardviz.compare.run import worker_count
from shardviz.memory_guard import Placement, host_available_bytes

MiB = 2**20


def resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``'s second field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def edit(widget: Any, seq: int, control: str, text: Any) -> None:
    content = {"type": "edit", "seq": seq, "control": control, "text": text}
    widget._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


@pytest.fixture
def mesh8() -> jax.sharding.Mesh:
    return jax.make_mesh((8,), ("data",), devices=jax.devices()[:8])


@pytest.fixture
def big(mesh8) -> jax.Array:
    # float32[4096, 1024]: 4096 * 1024 * 4 = 16 MiB, 2 MiB on each of 8 devices.
    return jax.device_put(jnp.zeros((4096, 1024), jnp.float32), NamedSharding(mesh8, P("data")))


def test_placement_bytes_are_each_devices_shard_as_jax_lays_it(big, mesh8):
    replicated = Placement(NamedSharding(mesh8, P()), (4096, 1024), jnp.float32)
    held = replicated.device_bytes()
    assert sorted(d.id for d in held) == sorted(d.id for d in mesh8.devices.flat)
    assert set(held.values()) == {16 * MiB}  # the whole array on each device
    split = Placement(big.sharding, big.shape, big.dtype).device_bytes()
    assert split == {s.device: s.data.nbytes for s in big.addressable_shards}  # JAX's own shards


def test_a_spec_edit_that_needs_more_than_the_limit_is_refused_and_nothing_grows(big, monkeypatch):
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", str(64 * MiB))
    w = ShardingWidget(big, name="x")
    before_payload = w.answer["payload"]
    before = resident_bytes()
    edit(w, 1, "spec_text", "None")  # P(): 16 MiB on each of 8 devices = 128 MiB > 64 MiB
    grew = resident_bytes() - before
    answer = w.answer
    assert answer["error_source"] == "spec"
    assert "128 MiB of host memory" in answer["error"] and "64 MiB available" in answer["error"]
    assert "8 copies over 8 devices" in answer["error"]
    # 128 MiB / 64 MiB: two ways at least, and the mesh's one axis does it.
    assert "at least 2 ways would fit, such as P('data')" in answer["error"]
    assert answer["payload"] == before_payload
    assert w.array is big and str(jax.typeof(w.array)) == "float32[4096@data,1024]"
    assert grew < 16 * MiB, f"resident memory grew by {grew / MiB:.1f} MiB on a refused edit"
    edit(w, 2, "spec_text", "None, data")  # a split that fits is placed as before
    assert w.answer["error"] == "" and str(jax.typeof(w.array)) == "float32[4096,1024@data]"


def test_a_mesh_edit_whose_carried_spec_replicates_is_refused(big, monkeypatch):
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", str(100 * MiB))
    w = ShardingWidget(big, name="x")
    # data=8 -> a=2, b=4: the spec's axis is gone, so the spec becomes P() and each device would
    # take the whole 16 MiB: 128 MiB > 100 MiB.
    edit(w, 1, "mesh_text", "a=2, b=4")
    assert w.answer["error_source"] == "mesh"
    assert "128 MiB of host memory" in w.answer["error"]
    assert w.array is big and w.answer["texts"]["mesh_text"] == "data=8"


def test_a_move_to_host_memory_counts_against_the_host(big, monkeypatch):
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", str(8 * MiB))
    w = ShardingWidget(big, name="x")
    edit(w, 1, "memory_kind", "pinned_host")  # the same 2 MiB shards, 16 MiB in all > 8 MiB
    assert "16 MiB of host memory" in w.answer["error"] and "split over 8 devices" in w.answer["error"]
    assert w.array is big and big.sharding.memory_kind == "device"


def test_rules_that_need_more_than_the_limit_are_refused_with_the_tree_untouched(big, mesh8, monkeypatch):
    small = jax.device_put(jnp.zeros((1024, 1024), jnp.float32), NamedSharding(mesh8, P("data")))  # 4 MiB
    params = {"w": big, "b": small}
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", str(64 * MiB))
    with pytest.raises(shardviz.ShardingError) as refused:
        shardviz.apply_rules(params, "w = None\nb = None")
    # Replicated over 8 devices: 8 * 16 MiB + 8 * 4 MiB = 160 MiB.
    assert "160 MiB of host memory, for 2 arrays, the largest 'w' (16 MiB) 8 copies" in str(refused.value)
    w = TreeWidget(params, rules="")
    before_payload = w.answer["payload"]
    before = resident_bytes()
    edit(w, 1, "rules_text", "w = None\nb = None")
    assert resident_bytes() - before < 16 * MiB
    assert w.answer["error_source"] == "rules" and "160 MiB" in w.answer["error"]
    assert w.answer["payload"] == before_payload
    assert params["w"] is big and str(jax.typeof(params["w"])) == "float32[4096@data,1024]"
    edit(w, 2, "rules_text", "b = None")  # 32 MiB fits
    assert w.answer["error"] == ""


def test_explicit_workers_past_memory_are_refused_naming_what_fits(monkeypatch):
    import shardviz.compare.run as run_module

    monkeypatch.setattr(run_module, "available_bytes", lambda: 10_000)
    monkeypatch.setattr(run_module, "estimated_child_bytes", lambda devices: 100 * devices)
    assert worker_count([16] * 6, workers=6) == 6  # 6 * 1,600 = 9,600 fits 10,000
    with pytest.raises(shardviz.ShardingError) as refused:
        worker_count([50] * 8, workers=3)  # 3 * 5,000 > 10,000: two fit
    assert "workers=3 would run 3 what-if children of up to 50 devices" in str(refused.value)
    assert str(refused.value).endswith("workers=2 fits")
    assert worker_count([50], workers=3) == 3  # one candidate runs one child, whatever workers says


def test_the_limit_variable_lowers_the_hosts_figure_and_must_be_a_number(monkeypatch):
    monkeypatch.delenv("SHARDVIZ_MEMORY_LIMIT", raising=False)
    real = host_available_bytes()
    with open("/proc/meminfo") as f:
        meminfo = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    assert 0 < real <= meminfo * 1.5  # the kernel's figure moves between the two reads
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", "12345")
    assert host_available_bytes() == 12345
    monkeypatch.setenv("SHARDVIZ_MEMORY_LIMIT", "lots")
    with pytest.raises(shardviz.ShardingError, match="SHARDVIZ_MEMORY_LIMIT must be a number of bytes"):
        host_available_bytes()


SCRIPT = r"""
import json, os, resource, sys
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from shardviz import ShardingWidget
from shardviz.memory_guard import host_available_bytes

devices = 512
mesh = jax.make_mesh((devices,), ("data",))
available = host_available_bytes()
# Replicated on 512 devices the array would need twice what the host has; split it takes 1/256 of it.
rows = devices * max(1, (2 * available // devices) // (devices * 1024 * 4))
x = jax.device_put(jnp.zeros((rows, 1024), jnp.float32), NamedSharding(mesh, P("data")))
# A safety net should the guard fail: the address space may grow by a quarter of what is available.
with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (size + available // 4, resource.RLIM_INFINITY))
w = ShardingWidget(x, name="x")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
content = {"type": "edit", "seq": 1, "control": "mesh_text", "text": "a=2, b=256"}
w._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("GUARD " + json.dumps({"error": w.answer["error"], "request": rows * 1024 * 4 * devices,
      "array_bytes": rows * 1024 * 4, "peak_before": peak, "peak_after": after, "same": w.array is x}))
"""


@pytest.mark.large_mesh
def test_a_mesh_edit_past_the_hosts_real_memory_is_refused():
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env.pop("SHARDVIZ_MEMORY_LIMIT", None)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=512"
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(shardviz.__file__).parents[1]), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("GUARD ")]
    seen = json.loads(line[len("GUARD ") :])
    assert seen["same"], "the widget's array changed on a refused edit"
    assert "of host memory" in seen["error"] and "512 copies over 512 devices" in seen["error"]
    assert "simulated CPU devices share this machine's memory" in seen["error"]
    # The peak did not grow by even one copy of the array, let alone the 512 it asked for.
    assert seen["peak_after"] - seen["peak_before"] < seen["array_bytes"], seen


def test_a_key_array_is_counted_by_its_own_item_size(mesh8):
    keys = jax.device_put(jax.random.split(jax.random.key(0), 8), NamedSharding(mesh8, P("data")))
    held = Placement(keys.sharding, keys.shape, keys.dtype).device_bytes()
    assert held == {s.device: s.data.nbytes for s in keys.addressable_shards}
