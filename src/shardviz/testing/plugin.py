"""The pytest plugin of ``shardviz.testing`` (the ``pytest11`` entry point ``shardviz``).

- ``--shardviz-html DIR``: for each test that fails a shardviz assertion,
  write a page of the failure (the budget and the figure, what differs,
  and the pictures) to ``DIR/<test id>-<hash>.html``.
- ``--shardviz-update``: the ``shardviz_snapshot`` fixture records programs'
  collectives per line instead of comparing them, and stale records (whose
  test is gone) are removed.
- ``--shardviz-strict`` (or the ini option ``shardviz_strict = true``, or
  ``@pytest.mark.shardviz_snapshot(strict=True)``): any change to a snapshot
  fails, within ``shardviz_tolerance`` (relative).
- ``--shardviz-strict-stale`` (or the ini option ``shardviz_strict_stale = true``):
  a run that leaves stale records (no test used them) fails, naming each
  and the command that prunes them (``--shardviz-update``).
- ``shardviz_snapshot(program, name=None)``: compare a traced program with
  the snapshot kept in ``__shardviz__/<test module>.json`` beside the test.
- ``shardviz_mesh``: a mesh from ``@pytest.mark.shardviz_mesh(shape, names)``
  (or indirect parametrization), skipping the test where the process has
  too few devices.

Under pytest-xdist each worker sends its notes and the records it used to
the controller, which prints one summary and judges stale records.

It imports only pytest and the standard library here: shardviz's own modules
(and JAX) are loaded when a fixture or a failing shardviz assertion needs
them, so a test run that does not use them pays nothing for them.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

SNAPSHOT_DIR = "__shardviz__"
_STATE = pytest.StashKey["RunState"]()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\[\]-]+")


class RunState:
    """What this process saw of the snapshots: notes for the summary, and per snapshot file the tests the
    module collected, those that finished and the records they used (for stale records)."""

    def __init__(self, html: Path | None, tolerance: float) -> None:
        self.html = html
        self.tolerance = tolerance  # the ini file's
        self.notes: list[str] = []
        self.tests: dict[str, set[str]] = {}  # snapshot file -> the names of every test its module collected
        self.finished: dict[str, set[str]] = {}  # snapshot file -> tests that passed
        self.used: dict[str, set[str]] = {}  # snapshot file -> records checked or written

    def to_json(self) -> dict[str, Any]:
        return {
            "notes": self.notes,
            **{k: {f: sorted(v) for f, v in getattr(self, k).items()} for k in ("tests", "finished", "used")},
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.notes += data.get("notes", [])
        for k in ("tests", "finished", "used"):
            mine = getattr(self, k)
            for file, names in data.get(k, {}).items():
                mine.setdefault(file, set()).update(names)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("shardviz", "shardviz layouts and budgets")
    group.addoption(
        "--shardviz-html",
        metavar="DIR",
        default=None,
        help="write a page of each failed shardviz assertion (the difference and the pictures), named after the test",
    )
    group.addoption(
        "--shardviz-update",
        action="store_true",
        default=False,
        help="record programs' collectives in the shardviz_snapshot files instead of comparing them; prune stale ones",
    )
    group.addoption(
        "--shardviz-strict",
        action="store_true",
        default=None,
        help="fail a snapshot on any change (less traffic, a collective gone, a layout changed), not only on growth",
    )
    group.addoption(
        "--shardviz-strict-stale",
        action="store_true",
        default=None,
        help="fail the run when a shardviz_snapshot file keeps records no test used (prune with --shardviz-update)",
    )
    parser.addini("shardviz_strict", "fail shardviz snapshots on any change, not only on growth", type="bool")
    parser.addini("shardviz_strict_stale", "fail the run on shardviz snapshot records that no test used", type="bool")
    parser.addini("shardviz_tolerance", "relative change in bytes a shardviz snapshot takes as none (0.02 is 2%)")


def pytest_configure(config: pytest.Config) -> None:
    html = config.getoption("shardviz_html")
    # resolved now: a test that changes the working directory must not move the pages
    folder = (config.invocation_params.dir / html).resolve() if html else None
    config.stash[_STATE] = RunState(folder, _ini_tolerance(config))
    config.addinivalue_line(
        "markers", "shardviz_snapshot(strict=None, tolerance=None): how this test's shardviz_snapshot compares"
    )
    config.addinivalue_line(
        "markers",
        "shardviz_mesh(shape, names, axis_types='explicit'): the mesh the shardviz_mesh fixture builds; "
        "the test is skipped where the process has too few devices",
    )


def page_name(nodeid: str) -> str:
    """A test's page file: its id made safe (anything but letters, digits, ``_.-[]`` as ``_``), then a short
    hash of the whole id, so ids that read alike once made safe (``[a/b]``, ``[a_b]``) never share a page."""
    digest = hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', nodeid).strip('_')[:160]}-{digest}.html"


def _shardviz_failure(error: BaseException) -> Any:
    """The failed shardviz assertion, or None for any other failure."""
    errors = sys.modules.get("shardviz.testing.errors")  # no shardviz failure can exist before it is loaded
    if errors is None or not isinstance(error, errors.ShardvizAssertionError) or error.subject is None:
        return None
    return error


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    state = item.config.stash[_STATE]
    if call.when == "call" and report.passed and _SNAPSHOT_FILE in item.stash:
        state.finished.setdefault(item.stash[_SNAPSHOT_FILE], set()).add(item.name)
    if state.html is not None and call.excinfo is not None and report.failed:
        failure = _shardviz_failure(call.excinfo.value)
        if failure is not None:
            target = state.html / page_name(item.nodeid)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                pages = importlib.import_module("shardviz.testing.pages")
                target.write_text(pages.failure_page(failure, item.nodeid), encoding="utf-8")
                report.sections.append(("shardviz page", f"the failed assertion's page: {target}"))
            except Exception as err:  # a page that cannot be written must not hide the test's own failure
                report.sections.append(("shardviz page", f"could not write {target}: {type(err).__name__}: {err}"))
    return report


_SNAPSHOT_FILE = pytest.StashKey[str]()


def _snapshot_file(item: pytest.Item) -> Path:
    test_file = Path(item.path)
    return test_file.parent / SNAPSHOT_DIR / f"{test_file.stem}.json"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test a module collected (before -k or -m deselect any), for stale records."""
    state = item.config.stash[_STATE]
    file = str(_snapshot_file(item))
    item.stash[_SNAPSHOT_FILE] = file
    state.tests.setdefault(file, set()).add(item.name)


def _mode(request: pytest.FixtureRequest) -> tuple[bool, float]:
    """Strictness and tolerance: the marker's, else the command line's, else the ini file's."""
    marker = request.node.get_closest_marker("shardviz_snapshot")
    settings = dict(marker.kwargs) if marker else {}
    strict = settings.get("strict")
    if strict is None:
        strict = request.config.getoption("shardviz_strict")
    if strict is None:
        strict = bool(request.config.getini("shardviz_strict"))
    tolerance = settings.get("tolerance")
    return bool(strict), request.config.stash[_STATE].tolerance if tolerance is None else tolerance


def _ini_tolerance(config: pytest.Config) -> float:
    written = str(config.getini("shardviz_tolerance") or "0").strip()
    try:
        return float(written.removesuffix("%")) / (100 if written.endswith("%") else 1)
    except ValueError:
        raise pytest.UsageError(f"shardviz_tolerance must be a number such as 0.02 or 2%, not {written!r}") from None


@pytest.fixture
def shardviz_snapshot(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``check(program, name=None, *, strict=None, tolerance=None)``: compare (or, with ``--shardviz-update``,
    record) a program's collectives per line and its layouts against ``__shardviz__/<test module>.json``
    beside the test. The record is named after the test (and ``name``; a second unnamed call is ``#2``)."""
    snapshot = importlib.import_module("shardviz.testing.snapshot")
    state = request.config.stash[_STATE]
    update = bool(request.config.getoption("shardviz_update"))
    test_file = Path(request.node.path)
    path = test_file.parent / SNAPSHOT_DIR / f"{test_file.stem}.json"
    calls = 0
    node = request.node
    command = f"pytest '{node.nodeid}' --shardviz-update"

    def check(
        program: Any, name: str | None = None, *, strict: bool | None = None, tolerance: float | None = None
    ) -> Any:
        __tracebackhide__ = True
        nonlocal calls
        calls += 1
        key = node.name if name is None else f"{node.name}::{name}"
        if name is None and calls > 1:
            key += f"#{calls}"
        mode_strict, mode_tolerance = _mode(request)
        state.used.setdefault(str(path), set()).add(key)
        result = snapshot.assert_collectives_snapshot(
            program,
            path,
            key,
            update=update,
            base=test_file.parent,
            strict=mode_strict if strict is None else strict,
            tolerance=mode_tolerance if tolerance is None else tolerance,
            update_command=command,
        )
        if result.recorded:
            changes = "".join(f"\n  {n}" for n in result.notes)
            changes = f"; against the record it replaces:{changes}" if changes else ""
            state.notes.append(f"{node.nodeid}: recorded {key!r} in {path}{changes}")
        else:
            state.notes += [f"{node.nodeid}: {note}" for note in result.notes]
        return result

    return check


@pytest.fixture
def shardviz_mesh(request: pytest.FixtureRequest) -> Generator[Any, None, None]:
    """The mesh of ``@pytest.mark.shardviz_mesh(shape, names)`` or of indirect parametrization
    (``(shape, names)``), entered with ``jax.set_mesh`` for the test; the test is skipped, saying how to get
    more devices, where the process has fewer than the mesh needs."""
    meshes = importlib.import_module("shardviz.testing.meshes")
    if hasattr(request, "param"):
        args, kwargs = (request.param, {}) if not isinstance(request.param, dict) else ((), request.param)
    else:
        marker = request.node.get_closest_marker("shardviz_mesh")
        if marker is None:
            raise pytest.UsageError(
                "the shardviz_mesh fixture needs @pytest.mark.shardviz_mesh(shape, names) on the test, "
                "or parametrize it indirectly with (shape, names)"
            )
        args, kwargs = marker.args, marker.kwargs
    mesh = meshes.mesh_or_skip(*args, **kwargs)
    with meshes.entered(mesh):
        yield mesh


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash[_STATE]
    worker = getattr(config, "workeroutput", None)
    if worker is not None:  # a pytest-xdist worker: the controller reports for everyone
        worker["shardviz"] = state.to_json()
        return
    if not any(state.used.values()) and not _snapshot_files(state):
        return
    if config.getoption("lf", False) or config.getoption("stepwise", False):
        return  # a run of some tests only: records of those it left out are not stale
    snapshot = importlib.import_module("shardviz.testing.snapshot")
    update = bool(config.getoption("shardviz_update"))
    narrowed = {str(_snapshot_of_arg(config.invocation_params.dir, a)) for a in config.args if "::" in a}
    strict_stale = _strict_stale(config) and not update
    found_stale = False
    for file in _snapshot_files(state):
        if file in narrowed:
            continue
        stale = snapshot.stale_records(
            Path(file),
            state.tests.get(file, set()),
            state.finished.get(file, set()),
            state.used.get(file, set()),
            prune=update,
        )
        found_stale = found_stale or bool(stale)
        for name in stale:
            state.notes.append(
                f"removed the stale record {name!r} from {file} (its test is gone)"
                if update
                else f"stale record {name!r} in {file}: its test is gone; pytest --shardviz-update removes it"
            )
    if found_stale and strict_stale:
        state.notes.append(
            "the run fails on the stale records above (--shardviz-strict-stale or shardviz_strict_stale): "
            "run the whole suite once with pytest --shardviz-update to prune them"
        )
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _strict_stale(config: pytest.Config) -> bool:
    """Whether stale records fail the run: the command line's choice, else the ini file's."""
    chosen = config.getoption("shardviz_strict_stale")
    return bool(config.getini("shardviz_strict_stale")) if chosen is None else bool(chosen)


def _snapshot_files(state: RunState) -> list[str]:
    return sorted(f for f in state.tests if Path(f).exists())


def _snapshot_of_arg(folder: Path, arg: str) -> Path:
    test_file = (folder / arg.split("::", 1)[0]).resolve()
    return test_file.parent / SNAPSHOT_DIR / f"{test_file.stem}.json"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: a worker finished; take in what it saw."""
    data = getattr(node, "workeroutput", {}).get("shardviz")
    if data:
        node.config.stash[_STATE].merge(data)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    notes = config.stash[_STATE].notes if _STATE in config.stash else []
    if notes:
        terminalreporter.section("shardviz snapshots")
        for note in notes:
            terminalreporter.write_line(note)
