"""compare and search with executor=: the traces run on a real Dask cluster (two worker processes on
127.0.0.1); a worker killed mid-search loses nothing: its candidates are retried elsewhere or
reported as failures, and every other row is the row a local trace gives."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import Executor

import pytest
from jax.sharding import AbstractMesh

import shardviz
from search_steps import mlp_block_arguments, mlp_block_step
from shardviz import ShardingError

distributed = pytest.importorskip("distributed")

ARGS = mlp_block_arguments(8 * 64, 64, 512)


@pytest.fixture(scope="module")
def client():
    # the workers import the test's step module by reference, as a what-if child does
    env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "JAX_PLATFORMS": "cpu"}
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, env=env)  # fmt: skip
    with cluster, distributed.Client(cluster) as c:
        yield c


def _rows(comparison):
    return {r.candidate: (r.mesh, r.network_s, r.compute_s, r.bound) for r in comparison.rows}


@pytest.mark.timeout(600)
def test_search_on_a_dask_cluster_ranks_as_the_local_children(client):
    local = shardviz.search(mlp_block_step, ARGS, devices=8, top_k=3, timeout=300)
    remote = shardviz.search(mlp_block_step, ARGS, devices=8, top_k=3, timeout=300, executor=client.get_executor())
    assert remote.failures == ()
    assert _rows(remote) == _rows(local)
    assert remote.search.best == local.search.best
    # the traces ran in the workers' processes, not here
    ran_in = {p.whatif.devices for p in remote.programs.values()}
    assert ran_in == {8}


@pytest.mark.timeout(600)
def test_a_worker_killed_mid_search_loses_nothing_else(client):
    local = shardviz.search(mlp_block_step, ARGS, devices=8, top_k=4, timeout=300)
    killed: list[str] = []

    def kill_a_busy_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                pids = client.run(os.getpid, workers=[busy[0]])
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    remote = shardviz.search(mlp_block_step, ARGS, devices=8, top_k=4, timeout=300, executor=client.get_executor())
    killer.join()
    assert killed, "no worker was busy to kill"
    names = {c.name for c in remote.search.candidates if c.status == "traced"}
    assert len(names) == 4
    # every candidate is a row (retried on the other worker) or a failure that says why
    assert {r.candidate for r in remote.rows} | {f.candidate for f in remote.failures} == names
    for f in remote.failures:
        assert "worker" in f.error.lower()
    # and every row is the row a local trace gives
    expected = _rows(local)
    for name, row in _rows(remote).items():
        assert row == expected[name]


def test_an_executor_that_is_none_of_concurrent_futures_is_refused():
    with pytest.raises(ShardingError, match=r"concurrent\.futures\.Executor"):
        shardviz.compare(mlp_block_step, [("a", AbstractMesh((8,), ("data",)), None)], args=ARGS, executor=object())
    with pytest.raises(ShardingError, match=r"concurrent\.futures\.Executor"):
        shardviz.search(mlp_block_step, ARGS, devices=8, executor="dask")


class _Counting(Executor):
    """The cluster's executor, counting what is submitted to it (each a what-if trace)."""

    def __init__(self, inner):
        self.inner = inner
        self.submitted: list[str] = []

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(fn.__name__)
        return self.inner.submit(fn, *args, **kwargs)


@pytest.mark.timeout(600)
def test_batch_max_confirms_each_plan_on_the_executor(client):
    import dataclasses

    from shardviz.plan.hardware import hardware_named

    # a chip of 16 MiB: the batch that fills it stays small enough to trace quickly
    hw = dataclasses.replace(hardware_named("tpu-v5p"), name="v5p-16MiB", hbm_bytes=16 * 2**20)
    local = shardviz.search(mlp_block_step, ARGS, devices=8, hardware=hw, top_k=2, batch="max", timeout=300)
    counting = _Counting(client.get_executor())
    remote = shardviz.search(mlp_block_step, ARGS, devices=8, hardware=hw, top_k=2, batch="max", timeout=300,
                             executor=counting)  # fmt: skip
    assert remote.failures == () and len(remote.search.max_batch) == 2
    # every trace went to the cluster: the two candidates, then each plan's batch traces
    traces = sum(m.traces for m in remote.search.max_batch)
    assert traces >= 2
    assert counting.submitted == ["traced_elsewhere"] * (2 + traces)
    # and the cluster finds the largest batch the local children do, fitting by the same memory
    assert [m.to_json() for m in remote.search.max_batch] == [m.to_json() for m in local.search.max_batch]
    assert all(m.fits for m in remote.search.max_batch)
