"""A user's project on shardviz.testing (tests/user_project), run as its CI runs it, with regressions planted.

The project is an MLP trained with FSDP and tensor parallelism on 8
simulated devices; its tests check the parameters' layout, the step's
collectives, a strict snapshot, memory and time. Each test here copies it,
records its snapshots, plants one regression (an edit of its code, as a
commit would make it), runs pytest in a process of its own and reads what
the user would read: what changed, where (line, function and layer where the
program has one), by how much, and how to accept it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent / "user_project"
SNAPSHOT = "test_mlp.py::test_the_step_matches_its_snapshot"
ACCEPT = f"if the change is intended, record it again: pytest '{SNAPSHOT}' --shardviz-update"


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # CI and BUILD_NUMBER make pytest print each failure's whole message a second time in its summary
    dropped = ("XLA_FLAGS", "PYTEST_ADDOPTS", "CI", "BUILD_NUMBER")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def outcome(done: subprocess.CompletedProcess[str]) -> dict[str, int]:
    last = done.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|error)", last)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The project copied and its snapshots recorded, as a user does once: every test passes."""
    root = tmp_path_factory.mktemp("recorded")
    shutil.copytree(PROJECT, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "__shardviz__"))
    first = run(root, "--shardviz-update")
    assert outcome(first) == {"passed": 8}, first.stdout
    again = run(root)
    assert outcome(again) == {"passed": 8}, again.stdout
    assert "shardviz snapshots" not in again.stdout  # nothing changed, nothing to say
    return root


def plant(recorded: Path, tmp_path: Path, file: str, old: str, new: str) -> Path:
    """A copy of the recorded project with one edit made; ``old`` must occur once."""
    root = tmp_path / "project"
    shutil.copytree(recorded, root, ignore=shutil.ignore_patterns("__pycache__"))
    text = (root / file).read_text()
    assert text.count(old) == 1, old
    (root / file).write_text(text.replace(old, new))
    return root


def line_of(root: Path, snippet: str) -> int:
    return next(k for k, t in enumerate((root / "mlp.py").read_text().splitlines(), 1) if snippet in t)


def failures(done: subprocess.CompletedProcess[str]) -> set[str]:
    return set(re.findall(r"^FAILED test_mlp\.py::(\S+)", done.stdout, re.M))


WHERE = r"line (\d+) of mlp\.py \((\w+)(?:; in ([^)]+))?\)"
HOW_MUCH = r": [+-][0-9.]+ (?:B|KiB|MiB|GiB)"


def test_parameters_never_placed_fail_the_layout_the_share_and_the_snapshot(recorded, tmp_path):
    # made under the test's jax.set_mesh and never put on their shardings: replicated on every device
    root = plant(recorded, tmp_path, "mlp.py", "    return jax.device_put(params, shardings)", "    return params")
    done = run(root)
    assert failures(done) >= {
        "test_parameters_are_laid_out_by_the_rules",
        "test_parameters_are_sharded",
        "test_the_step_matches_its_snapshot",
    }, done.stdout
    out = done.stdout
    assert "0.0% of the tree's 4.0 MiB is sharded (split by some mesh axis); at least 90.0% must be" in out
    assert "layers.0.w_in  float32[256,1024]  1.0 MiB, 1.0 MiB per device, replicated over fsdp, tp" in out
    # the advice names the axis that saves most
    assert (
        "layers.0.w_in is replicated over fsdp; dim 1 (1024) is divisible by fsdp=4: sharding it saves 768 KiB" in out
    )
    assert "6 of the 6 array leaves checked are not laid out as the rules say (first match wins):" in out
    assert re.search(r"layers\.0\.w_in +float32\[256@fsdp,1024@tp\] +float32\[256,1024\] +1\.0 MiB +line 2: ", out)
    assert (
        "input params['layers'][0]['w_in'] is laid out as float32[256,1024] now; "
        "the snapshot has float32[256@fsdp,1024@tp] (no longer split by fsdp, tp)" in out
    )
    assert ACCEPT in out


def test_a_numpy_leaf_fails_the_share_and_the_layout(recorded, tmp_path):
    root = plant(
        recorded,
        tmp_path,
        "mlp.py",
        "    return jax.device_put(params, shardings)",
        "    placed = jax.device_put(params, shardings)\n"
        "    placed['layers'][0]['w_in'] = np.asarray(placed['layers'][0]['w_in'])  # as a checkpoint gave it\n"
        "    return placed",
    )
    (root / "mlp.py").write_text("import numpy as np\n" + (root / "mlp.py").read_text())
    done = run(root, "-k", "parameters")
    assert failures(done) == {"test_parameters_are_laid_out_by_the_rules", "test_parameters_are_sharded"}
    out = done.stdout
    assert "layers.0.w_in  ndarray float32[256,1024]  1.0 MiB, a NumPy array in host memory, on no device" in out
    assert "a NumPy array in host memory: on no device, so laid out on no mesh" in out


def test_a_dropped_batch_axis_fails_the_strict_snapshot_naming_each_change(recorded, tmp_path):
    root = plant(
        recorded, tmp_path, "mlp.py", 'P("fsdp", None))  # the batch split', "P(None, None))  # the batch split"
    )
    done = run(root)
    # the step sends less in all (no gradient all-reduce over fsdp), so its budget still passes
    assert failures(done) == {
        "test_the_step_matches_its_snapshot",
        "test_deeper_models_match_their_snapshots[1]",
        "test_deeper_models_match_their_snapshots[3]",
    }, done.stdout
    message = done.stdout.split("_ test_the_step_matches_its_snapshot _")[1].split("\n____")[0]
    assert "the collectives of train_step changed since the snapshot 'test_the_step_matches_its_snapshot'" in message
    assert (
        "input x is laid out as float32[64,256] now; the snapshot has float32[64@fsdp,256] (no longer split by fsdp)"
        in message
    )
    changes = re.findall(WHERE + r" (?:now|no longer) [\w-]+ .*?" + HOW_MUCH, message)
    assert {function for _, function, _ in changes} == {"mlp_block", "loss_fn"}, message
    # the block's lines are told apart by layer (jax.named_scope in forward)
    assert {layer for _, function, layer in changes if function == "mlp_block"} == {"layer_0", "layer_1"}
    block = line_of(root, "h = jax.nn.relu(")
    for layer in ("layer_0", "layer_1"):
        assert (
            f"line {block} of mlp.py (mlp_block; in {layer}) no longer all-reduces over fsdp; the snapshot has 771 KiB"
            in message
        )
    # each device now reduces the whole batch over tp: four times the bytes
    assert re.search(
        rf"line {block} of mlp\.py \(mlp_block; in layer_1\) now all-reduces 64 KiB over tp .*: \+48 KiB \(\+300%\)",
        message,
    )
    assert ACCEPT in message
    # without strictness only the growth fails; what shrank and the layout are said as passing
    lenient = run(root, "-o", "shardviz_strict=false", "-k", "test_the_step_matches_its_snapshot")
    assert "the collectives of train_step grew since the snapshot" in lenient.stdout
    passing = lenient.stdout.split("also (these pass):")[1]
    assert "input x is laid out as float32[64,256] now" in passing and "no longer all-reduces over fsdp" in passing


def test_an_extra_gather_fails_the_snapshot_on_its_line(recorded, tmp_path):
    root = plant(
        recorded,
        tmp_path,
        "mlp.py",
        "            x = x + mlp_block(layer, x)\n    return x",
        "            x = x + mlp_block(layer, x)\n    return reshard(x, P())  # the outputs whole, for the metrics",
    )
    done = run(root, "-k", "test_the_step_matches_its_snapshot")
    assert failures(done) == {"test_the_step_matches_its_snapshot"}, done.stdout
    gather = line_of(root, "return reshard(x, P())")
    found = re.findall(
        WHERE + r" now all-gathers ([0-9.]+ \w+) over fsdp per call \(x1\); the snapshot has none: \+", done.stdout
    )
    assert (gather, "forward") in [(int(line), function) for line, function, _, _ in found], done.stdout
    assert "      return reshard(x, P())  # the outputs whole, for the metrics" in done.stdout
    assert ACCEPT in done.stdout


def test_tensor_parallelism_dropped_from_a_weight_fails_with_a_table_per_leaf(recorded, tmp_path):
    root = plant(recorded, tmp_path, "mlp.py", 'SPECS = {"w_in": P("fsdp", "tp")', 'SPECS = {"w_in": P("fsdp", None)')
    done = run(root)
    assert {"test_parameters_are_laid_out_by_the_rules", "test_the_step_matches_its_snapshot"} <= failures(done)
    out = done.stdout
    assert "2 of the 6 array leaves checked are not laid out as the rules say (first match wins):" in out
    assert re.search(r"path +expected +actual +per device +expected by", out)
    for k in (0, 1):
        assert re.search(
            rf"layers\.{k}\.w_in +float32\[256@fsdp,1024@tp\] +float32\[256@fsdp,1024\] +256 KiB +line 2: layers\.\*\.w_in = fsdp, tp",
            out,
        ), out
    assert "dim 1: expected split by tp, actually not split" in out


def test_a_comment_a_reformatted_line_and_moved_code_change_nothing(recorded, tmp_path):
    root = plant(
        recorded,
        tmp_path,
        "mlp.py",
        '    h = jax.nn.relu(x @ w_in + layer["b_in"])',
        '    h = jax.nn.relu(x@w_in  +  layer["b_in"])   # the hidden layer',
    )
    text = (root / "mlp.py").read_text()
    (root / "mlp.py").write_text(text.replace("LAYERS = 2", "# how deep\n\nLAYERS = 2"))  # every line moves down
    done = run(root)
    assert outcome(done) == {"passed": 8}, done.stdout
    assert "shardviz snapshots" not in done.stdout


def test_a_cut_parametrize_reports_its_stale_record_and_update_prunes_it(recorded, tmp_path):
    root = plant(recorded, tmp_path, "test_mlp.py", "[1, 3])", "[1])")
    done = run(root)
    assert outcome(done) == {"passed": 7}, done.stdout
    name = "test_deeper_models_match_their_snapshots[3]"
    assert f"stale record {name!r} in {root / '__shardviz__' / 'test_mlp.json'}: its test is gone; " in done.stdout
    pruned = run(root, "--shardviz-update")
    assert f"removed the stale record {name!r}" in pruned.stdout
    records = json.loads((root / "__shardviz__" / "test_mlp.json").read_text())["snapshots"]
    assert name not in records and "test_deeper_models_match_their_snapshots[1]" in records
    assert "stale" not in run(root).stdout


def test_a_renamed_function_leaves_no_budget_that_names_it(recorded, tmp_path):
    root = plant(recorded, tmp_path, "mlp.py", "def mlp_block(layer, x):", "def block(layer, x):")
    text = (root / "mlp.py").read_text()
    (root / "mlp.py").write_text(text.replace("x + mlp_block(layer, x)", "x + block(layer, x)"))
    done = run(root, "-k", "gathers")
    assert "per_line['mlp_block'] names a function in which no collective runs" in done.stdout
    assert re.search(r"functions with collectives, their callees' included: .*\bblock\b", done.stdout)


def test_a_wider_hidden_layer_grows_the_snapshot_by_how_much_per_line(recorded, tmp_path):
    root = plant(recorded, tmp_path, "mlp.py", "D_HIDDEN = 1024", "D_HIDDEN = 2048")
    done = run(root, "-k", "test_the_step_matches_its_snapshot")
    message = done.stdout
    grown = re.findall(
        WHERE
        + r" now all-gathers ([0-9.]+ \w+) over fsdp per call \(x1\); the snapshot has ([0-9.]+ \w+) \(x1\): \+([0-9.]+ \w+) \(\+100%\)",
        message,
    )
    # both weights' gathers in both layers, each twice the bytes
    assert sorted(layer for _, _, layer, *_ in grown) == ["layer_0", "layer_0", "layer_1", "layer_1"], message
    assert ACCEPT in message
    accepted = run(root, "-k", "test_the_step_matches_its_snapshot", "--shardviz-update")
    assert re.search(
        r"\+ line \d+ of mlp\.py \(mlp_block.*\) now all-gathers .*: \+[0-9.]+ KiB \(\+100%\)", accepted.stdout
    )
    assert outcome(run(root, "-k", "test_the_step_matches_its_snapshot")) == {"passed": 1}
