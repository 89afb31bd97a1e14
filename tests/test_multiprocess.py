"""Two JAX processes on 127.0.0.1 (CPU, 4 devices each, gloo): each sees all
8 devices of the global 2x4 mesh, marks the other's as not addressable,
previews only local data, and runs the widget."""

from __future__ import annotations

import pytest

from shardviz.text.ranges import compress_ids
from two_processes import run_two_processes

pytestmark = pytest.mark.multiprocess


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return run_two_processes(tmp_path_factory.mktemp("mp"), timeout=150)


@pytest.mark.parametrize("process", [0, 1])
def test_each_process_sees_the_global_layout(reports, process):
    report = reports[process]
    truth = report["jax"]
    assert report["process_index"] == process
    assert report["payload"]["process_count"] == 2
    assert [(d["id"], d["process_index"]) for d in report["devices"]] == [
        (d["id"], d["process_index"]) for d in truth["devices"]
    ]
    local = set(truth["local_ids"])
    assert len(local) == 4
    for d in report["devices"]:
        assert d["addressable"] == (d["id"] in local)
        tile = report["tiles"][d["tile"]]
        assert [list(p) for p in zip(tile["start"], tile["stop"])] == truth["blocks"][str(d["id"])]
    assert report["payload"]["type_str"] == truth["typeof"]


@pytest.mark.parametrize("process", [0, 1])
def test_previews_only_local_data(reports, process):
    report = reports[process]
    local_values = report["jax"]["local_values"]
    for device_id, preview in report["previews"].items():
        if device_id in local_values:
            assert preview["values"] == [[str(v) for v in row] for row in local_values[device_id]]
        else:
            owner = 1 - process
            assert preview["error"] == f"device {device_id} belongs to process {owner}; only that process can read it"


@pytest.mark.parametrize("process", [0, 1])
def test_widget_edits_work_in_both(reports, process):
    after = reports[process]["after_edit"]
    assert after["error"] == ""
    assert after["type_str"] == after["typeof"] == "float32[4@y,8@x]"


@pytest.mark.parametrize("process", [0, 1])
def test_terminal_picture_names_the_other_process_devices(reports, process):
    report = reports[process]
    remote = sorted(d["id"] for d in report["jax"]["devices"] if d["process_index"] != process)
    line = next(line for line in report["text"].splitlines() if line.startswith("not addressable here"))
    assert line.endswith(compress_ids(remote))
    assert report["text"].splitlines()[0] == report["jax"]["typeof"]


@pytest.mark.parametrize("process", [0, 1])
def test_tree_device_bytes_cover_every_device(reports, process):
    """describe_tree counts all 8 devices from the shardings, the other process's included."""
    tree = reports[process]["tree"]
    all_ids = sorted(str(d["id"]) for d in reports[process]["jax"]["devices"])
    assert sorted(tree["device_bytes"]) == all_ids
    assert tree["device_bytes"] == tree["index_map_bytes"]
    local = {str(i) for i in reports[process]["jax"]["local_ids"]}
    assert set(tree["addressable_bytes"]) == local
    assert {k: v for k, v in tree["device_bytes"].items() if k in local} == tree["addressable_bytes"]
    assert tree["payload_process_count"] == 2
    remote = sorted(d["id"] for d in reports[process]["jax"]["devices"] if d["process_index"] != process)
    assert f"process {process} of 2; other processes' devices: {compress_ids(remote)}" in tree["text"]


def test_trace_reports_the_same_collectives_in_every_process(reports):
    """shardviz.trace in both processes: the same collectives over the global
    mesh, with the other process's devices in the groups, marked not addressable."""
    first, second = (r["program"] for r in reports)
    assert first["collectives"] == second["collectives"]
    (c,) = first["collectives"]
    assert (c["kind"], c["axes"], c["count"]) == ("all-reduce", ["x"], 1)
    truth = reports[0]["jax"]["devices"]  # mesh order, with each device's process
    owner = {d["id"]: d["process_index"] for d in truth}
    ids = [d["id"] for d in truth]
    # Columns of the 2x4 mesh: each group joins one device of each process.
    assert sorted(sorted(g) for g in c["device_groups"]) == sorted(sorted((ids[k], ids[k + 4])) for k in range(4))
    assert all({owner[i] for i in g} == {0, 1} for g in c["device_groups"])
    for process, report in enumerate(reports):
        program = report["program"]
        assert program["process_count"] == 2
        assert program["device_ids"] == ids
        assert program["process"] == [owner[i] for i in ids]
        assert program["addressable"] == [int(owner[i] == process) for i in ids]
