"""The course notebooks, executed end to end in fresh kernels.

Each notebook must run top to bottom without an error, show at least one
shardviz widget, be saved clean, and end with an exercise cell whose
``assert``s check the answer. The exercise checks are shown to be real: a
wrong answer, run after the notebook in the same kernel, must fail them.
"""

from __future__ import annotations

import pathlib
import re
import time

import nbclient  # test dependencies (the test extra): a missing one fails here, never skips
import nbformat
import pytest

import shardviz.testing

pytestmark = pytest.mark.notebooks

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
COURSE = [
    "01-data-sharding",
    "02-jit-propagation",
    "03-explicit-sharding",
    "04-axis-order",
    "05-memory-kinds",
    "06-shard-map",
    "07-where-the-bytes-go",
    "08-will-it-fit",
    "09-before-you-rent-the-pod",
    "10-choose-a-plan",
    "11-search-the-plan",
]
CELL_TIMEOUT = 60  # seconds per cell; a whole notebook takes a few seconds
# Notebook 10 compares candidates on 256 and 4,096 what-if devices: a cell traces several at once.
CELL_TIMEOUTS = {"10-choose-a-plan": 240, "11-search-the-plan": 300}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# For each notebook, one edit of its exercise cell that turns the answer
# wrong: running the edited cell must raise AssertionError.
WRONG_ANSWERS = {
    "01-data-sharding": ("answer = P(None, ('x', 'y'))", "answer = P(None, ('y', 'x'))"),
    "02-jit-propagation": ("predicted_holders = {4, 5, 6, 7}", "predicted_holders = {0, 4}"),
    "03-explicit-sharding": ("predicted_type = 'int32[4,8@Y]'", "predicted_type = 'int32[4@X,8@Y]'"),
    "04-axis-order": ("predicted_device_for_column_3 = 5", "predicted_device_for_column_3 = 3"),
    "05-memory-kinds": ("out_shardings=s_pinned)", "out_shardings=s_unpinned)"),
    "06-shard-map": ("/ jax.lax.psum(block.size, 'x')", "/ block.size"),
    "07-where-the-bytes-go": ("answer = (P(None, 'model'), P('model', None))", "answer = (P(), P())"),
    "08-will-it-fit": ("*embed = (data, fsdp), model", "*embed = (data, fsdp), None"),
    "09-before-you-rent-the-pod": ("MESH_SHAPE = (256, 1)", "MESH_SHAPE = (32, 8)"),
    "10-choose-a-plan": ("MESH_SHAPE = (256, 1)", "MESH_SHAPE = (64, 4)"),
    "11-search-the-plan": ("MESH = {'fsdp': 256}", "MESH = {'data': 256}"),
}


# An exercise fails with an assert, or with a shardviz.testing assertion (an AssertionError too).
ASSERTION_ERRORS = {"AssertionError"} | {
    name
    for name in shardviz.testing.__all__
    if isinstance(getattr(shardviz.testing, name), type) and issubclass(getattr(shardviz.testing, name), AssertionError)
}


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_the_course_is_complete():
    assert [path.stem for path in NOTEBOOKS] == COURSE
    readme = (NOTEBOOK_DIR / "README.md").read_text(encoding="utf-8")
    for stem in COURSE:
        assert f"({stem}.ipynb)" in readme, f"notebooks/README.md does not link {stem}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_saved_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in code_cells(nb):
        assert cell.outputs == [] and cell.execution_count is None, f"{path.name} was saved with outputs"
    assert "widgets" not in nb.metadata, f"{path.name} was saved with widget state"
    first = code_cells(nb)[0].source
    assert re.search(r"jax\.config\.update\(\s*['\"]jax_num_cpu_devices['\"]\s*,\s*(8|12)\s*\)", first), (
        "the first code cell must set the device count before JAX starts"
    )
    assert "import jax\n" in first and "jax.numpy" not in first


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_ends_with_an_exercise(path):
    nb = nbformat.read(path, as_version=4)
    last = nb.cells[-1]
    assert last.cell_type == "code", "the last cell must be the exercise's code"
    assert re.search(r"^assert ", last.source, re.M), "the exercise cell must check the answer with assert"
    assert re.search(r"shardviz\.(describe|trace)", last.source), "the exercise must check the answer with shardviz"
    assert re.search(r"devices_indices_map|addressable_shards|jax\.typeof|\.sharding\.", last.source), (
        "the exercise must check the answer against JAX too"
    )
    prompt = nb.cells[-2]
    assert prompt.cell_type == "markdown" and "## Exercise" in prompt.source


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_its_exercise_checks(path):
    nb = nbformat.read(path, as_version=4)
    old, new = WRONG_ANSWERS[path.stem]
    exercise = nb.cells[-1].source
    assert old in exercise, f"update WRONG_ANSWERS for {path.name}: {old!r} is not in its exercise"
    wrong = nbformat.v4.new_code_cell(exercise.replace(old, new))
    wrong.metadata["tags"] = ["raises-exception"]  # nbclient goes on; we look at the error below
    nb.cells.append(wrong)

    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUTS.get(path.stem, CELL_TIMEOUT),
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    elapsed = time.perf_counter() - started
    print(f"{path.name}: {elapsed:.1f} s")

    *course_cells, probe = nb.cells
    for cell in course_cells:
        if cell.cell_type == "code":
            errors = [out for out in cell.outputs if out.output_type == "error"]
            assert not errors, f"{path.name}: {errors[0].ename}: {errors[0].evalue}"

    probe_errors = [out.ename for out in probe.outputs if out.output_type == "error"]
    assert len(probe_errors) == 1 and probe_errors[0] in ASSERTION_ERRORS, (
        f"a wrong answer passed the exercise of {path.name}: {probe_errors}"
    )

    models = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    pictures = [
        out
        for cell in course_cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if WIDGET_VIEW in out.get("data", {}) and _shows_shardviz(out.data[WIDGET_VIEW]["model_id"], models)
    ]
    assert pictures, f"{path.name} shows no shardviz widget"


def _shows_shardviz(model_id: str, models: dict) -> bool:
    """A shardviz widget (any view), or a box holding one."""
    state = models.get(model_id, {}).get("state", {})
    payload = (state.get("answer") or {}).get("payload")
    if isinstance(payload, dict) and payload.get("kind") in ("array", "program", "tree", "compare"):
        return True
    return any(
        isinstance(child, str) and _shows_shardviz(child.removeprefix("IPY_MODEL_"), models)
        for child in state.get("children", [])
    )
