"""The pytest plugin of ``shardviz.testing`` (the ``pytest11`` entry point ``shardviz``).

- ``--shardviz-html DIR``: for each test that fails a shardviz assertion,
  write a saved page of what the assertion read (the array's layout, the
  program, the tree) to ``DIR/<test>.html``.
- ``--shardviz-update``: the ``shardviz_snapshot`` fixture records programs'
  collectives per line instead of comparing them.
- ``shardviz_snapshot(program, name=None)``: compare a traced program's
  collectives with the snapshot kept in ``__shardviz__/<test module>.json``
  beside the test; more traffic on a line fails, less passes with a note.

It imports only pytest here: shardviz's own modules are loaded when a
fixture or a failing shardviz assertion needs them, so a test run that does
not use them pays nothing for them.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

SNAPSHOT_DIR = "__shardviz__"
_NOTES = pytest.StashKey[list[str]]()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("shardviz", "shardviz layouts and budgets")
    group.addoption(
        "--shardviz-html",
        metavar="DIR",
        default=None,
        help="write a saved shardviz page for each test that fails a shardviz assertion, named after the test",
    )
    group.addoption(
        "--shardviz-update",
        action="store_true",
        default=False,
        help="record programs' collectives in the shardviz_snapshot files instead of comparing them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_NOTES] = []


def page_name(nodeid: str) -> str:
    """A file name for a test's page: its node id with anything but letters, digits, ``_.-`` as ``_``."""
    return _UNSAFE.sub("_", nodeid).strip("_")[:180] + ".html"


def _shardviz_failure(error: BaseException) -> Any:
    """What a failed shardviz assertion read, or None for any other failure."""
    errors = sys.modules.get("shardviz.testing.errors")  # no shardviz failure can exist before it is loaded
    if errors is None or not isinstance(error, errors.ShardvizAssertionError):
        return None
    return error.subject


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    directory = item.config.getoption("shardviz_html")
    if directory and call.excinfo is not None and report.failed:
        subject = _shardviz_failure(call.excinfo.value)
        if subject is not None:
            target = Path(directory) / page_name(item.nodeid)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                importlib.import_module("shardviz").save_html(subject, target)
                report.sections.append(("shardviz page", f"the failed assertion's page: {target}"))
            except Exception as err:  # a page that cannot be written must not hide the test's own failure
                report.sections.append(("shardviz page", f"could not write {target}: {type(err).__name__}: {err}"))
    return report


@pytest.fixture
def shardviz_snapshot(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``check(program, name=None)``: compare (or, with ``--shardviz-update``, record) a program's
    collectives per line against ``__shardviz__/<test module>.json`` beside the test. The snapshot is
    named after the test (and ``name``, for several programs in one test)."""
    snapshot = importlib.import_module("shardviz.testing.snapshot")
    update = bool(request.config.getoption("shardviz_update"))
    test_file = Path(request.node.path)
    path = test_file.parent / SNAPSHOT_DIR / f"{test_file.stem}.json"
    calls = 0

    def check(program: Any, name: str | None = None) -> Any:
        nonlocal calls
        calls += 1
        key = request.node.name if name is None else f"{request.node.name}::{name}"
        if name is None and calls > 1:
            key += f"#{calls}"
        result = snapshot.assert_collectives_snapshot(program, path, key, update=update, base=test_file.parent)
        notes = request.config.stash[_NOTES]
        if result.recorded:
            notes.append(f"{request.node.nodeid}: recorded {key!r} in {path}")
        notes += [f"{request.node.nodeid}: {note}" for note in result.notes]
        return result

    return check


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    notes = config.stash.get(_NOTES, [])
    if notes:
        terminalreporter.section("shardviz snapshots")
        for note in notes:
            terminalreporter.write_line(note)
