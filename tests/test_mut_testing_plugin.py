"""The pytest plugin's hooks called directly, on stand-ins for pytest's objects: no inner pytest run.

tests/test_testing_plugin*.py run the plugin in whole inner pytest runs (a
second or more each); here each hook gets the few attributes it reads, so its
decisions (which tests finished, where pages and snapshot files go, what the
controller takes from a worker, what is stale) are checked one at a time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from shardviz.testing import plugin
from shardviz.testing.errors import LayoutMismatch, ShardvizAssertionError
from shardviz.testing.snapshot_file import FORMAT


class Stash(dict):
    """pytest's Stash as the plugin uses it: keyed by StashKey, ``in`` and ``[]``."""


def config(options=None, ini=None, folder=Path("."), args=()):
    options = {
        "shardviz_html": None,
        "shardviz_update": False,
        "shardviz_strict": None,
        "shardviz_strict_stale": None,
        **(options or {}),
    }
    ini = {"shardviz_strict": False, "shardviz_strict_stale": False, "shardviz_tolerance": "", **(ini or {})}
    lines: list[tuple[str, str]] = []
    return SimpleNamespace(
        getoption=lambda name, default=None: options.get(name, default),
        getini=lambda name: ini[name],
        invocation_params=SimpleNamespace(dir=folder),
        stash=Stash(),
        addinivalue_line=lambda name, line: lines.append((name, line)),
        lines=lines,
        args=list(args),
    )


def configured(**kwargs):
    cfg = config(**kwargs)
    plugin.pytest_configure(cfg)
    return cfg


def state_of(cfg) -> plugin.RunState:
    return cfg.stash[plugin._STATE]


# ---------------------------------------------------------------------------- options and state


class Group:
    def __init__(self):
        self.options: dict[str, dict] = {}

    def addoption(self, name, **kwargs):
        self.options[name] = kwargs


class Parser:
    def __init__(self):
        self.group = Group()
        self.groups: list[tuple[str, str]] = []
        self.ini: dict[str, tuple] = {}

    def getgroup(self, name, description):
        self.groups.append((name, description))
        return self.group

    def addini(self, name, help, **kwargs):
        self.ini[name] = (help, kwargs)


def test_the_options_and_ini_settings_and_their_defaults():
    parser = Parser()
    plugin.pytest_addoption(parser)
    assert parser.groups == [("shardviz", "shardviz layouts and budgets")]
    options = parser.group.options
    assert set(options) == {"--shardviz-html", "--shardviz-update", "--shardviz-strict", "--shardviz-strict-stale"}
    assert options["--shardviz-html"]["metavar"] == "DIR" and options["--shardviz-html"]["default"] is None
    assert options["--shardviz-update"]["action"] == "store_true" and options["--shardviz-update"]["default"] is False
    # None: not given, so the ini file's setting decides
    assert options["--shardviz-strict"]["action"] == "store_true" and options["--shardviz-strict"]["default"] is None
    assert "page" in options["--shardviz-html"]["help"]
    assert "record" in options["--shardviz-update"]["help"] and "stale" in options["--shardviz-update"]["help"]
    assert "any change" in options["--shardviz-strict"]["help"]
    stale = options["--shardviz-strict-stale"]
    assert stale["action"] == "store_true" and stale["default"] is None
    assert "fail the run" in stale["help"] and "--shardviz-update" in stale["help"]
    assert parser.ini["shardviz_strict"][1] == {"type": "bool"}
    assert parser.ini["shardviz_strict_stale"][1] == {"type": "bool"}
    assert parser.ini["shardviz_tolerance"][1] == {}
    assert "0.02 is 2%" in parser.ini["shardviz_tolerance"][0]


def test_configure_resolves_the_page_folder_at_once_and_reads_the_tolerance(tmp_path):
    cfg = configured(options={"shardviz_html": "pages"}, ini={"shardviz_tolerance": " 2% "}, folder=tmp_path)
    state = state_of(cfg)
    assert state.html == (tmp_path / "pages").resolve() and state.html.is_absolute()
    assert state.tolerance == pytest.approx(0.02)
    assert [name for name, _ in cfg.lines] == ["markers", "markers"]
    assert cfg.lines[0][1].startswith("shardviz_snapshot(strict=None, tolerance=None): ")
    assert cfg.lines[1][1].startswith("shardviz_mesh(shape, names, axis_types='explicit'): ")
    assert "too few devices" in cfg.lines[1][1]
    assert state_of(configured(folder=tmp_path)).html is None


@pytest.mark.parametrize(
    ("written", "tolerance"), [("", 0.0), ("0.05", 0.05), ("5%", 0.05), ("  10 %", 0.1), ("ten %", None)]
)
def test_the_ini_tolerance_is_a_fraction_or_a_percentage(written, tolerance):
    cfg = config(ini={"shardviz_tolerance": written})
    if tolerance is None:
        with pytest.raises(pytest.UsageError) as info:
            plugin._ini_tolerance(cfg)
        assert str(info.value) == "shardviz_tolerance must be a number such as 0.02 or 2%, not 'ten %'"
    else:
        assert plugin._ini_tolerance(cfg) == pytest.approx(tolerance)


def test_a_missing_ini_tolerance_is_none():
    assert plugin._ini_tolerance(config(ini={"shardviz_tolerance": None})) == 0.0


def test_a_run_state_goes_to_json_and_merges_from_a_worker():
    state = plugin.RunState(None, 0.0)
    state.notes.append("mine")
    state.tests["a.json"] = {"t2", "t1"}
    state.used["a.json"] = {"t1"}
    data = state.to_json()
    assert data == {"notes": ["mine"], "tests": {"a.json": ["t1", "t2"]}, "finished": {}, "used": {"a.json": ["t1"]}}
    json.dumps(data)  # what xdist sends must be JSON
    state.merge({"notes": ["theirs"], "tests": {"a.json": ["t3"], "b.json": ["u"]}, "finished": {"b.json": ["u"]}})
    assert state.notes == ["mine", "theirs"]
    assert state.tests == {"a.json": {"t1", "t2", "t3"}, "b.json": {"u"}}
    assert state.finished == {"b.json": {"u"}} and state.used == {"a.json": {"t1"}}
    state.merge({})
    assert state.notes == ["mine", "theirs"]


# ---------------------------------------------------------------------------- pages


def test_a_page_name_is_the_id_made_safe_and_a_hash_of_the_whole_id():
    nodeid = "tests/test_x.py::test_ids[a/b c]"
    digest = hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:8]
    assert plugin.page_name(nodeid) == f"tests_test_x.py_test_ids[a_b_c]-{digest}.html"
    assert plugin.page_name("/t.py::x/") == f"t.py_x-{hashlib.sha1(b'/t.py::x/').hexdigest()[:8]}.html"
    long = "a" * 300
    assert plugin.page_name(long) == "a" * 160 + f"-{hashlib.sha1(long.encode()).hexdigest()[:8]}.html"


def test_only_a_shardviz_failure_with_a_subject_gets_a_page():
    with_subject = LayoutMismatch("m", subject=object())
    assert plugin._shardviz_failure(with_subject) is with_subject
    assert plugin._shardviz_failure(ShardvizAssertionError("m")) is None
    assert plugin._shardviz_failure(AssertionError("m")) is None


def item(cfg, tmp_path, name="test_a", stash=None):
    return SimpleNamespace(
        config=cfg,
        stash=Stash(stash or {}),
        name=name,
        nodeid=f"tests/test_m.py::{name}",
        path=tmp_path / "tests" / "test_m.py",
    )


def report(passed=True):
    return SimpleNamespace(passed=passed, failed=not passed, sections=[])


def make_report(it, call, rep):
    hook = plugin.pytest_runtest_makereport(it, call)
    next(hook)
    with pytest.raises(StopIteration) as done:
        hook.send(rep)
    return done.value.value


def test_a_passed_call_of_a_collected_test_counts_as_finished(tmp_path):
    cfg = configured(folder=tmp_path)
    it = item(cfg, tmp_path, stash={plugin._SNAPSHOT_FILE: "s.json"})
    rep = report()
    assert make_report(it, SimpleNamespace(when="setup", excinfo=None), rep) is rep
    assert state_of(cfg).finished == {}
    make_report(it, SimpleNamespace(when="call", excinfo=None), report(passed=False))
    assert state_of(cfg).finished == {}
    make_report(item(cfg, tmp_path, name="test_b"), SimpleNamespace(when="call", excinfo=None), report())
    assert state_of(cfg).finished == {}  # no snapshot file stashed: not collected by this plugin
    make_report(it, SimpleNamespace(when="call", excinfo=None), rep)
    assert state_of(cfg).finished == {"s.json": {"test_a"}}
    assert rep.sections == []


def test_a_failed_shardviz_assertion_writes_its_page_and_says_where(tmp_path, monkeypatch):
    import shardviz.testing.pages as pages

    monkeypatch.setattr(pages, "failure_page", lambda error, test_id: f"<p>{error} in {test_id}</p>")
    cfg = configured(options={"shardviz_html": "out/pages"}, folder=tmp_path)
    it = item(cfg, tmp_path)
    error = LayoutMismatch("laid out otherwise", subject=object())
    rep = make_report(it, SimpleNamespace(when="call", excinfo=SimpleNamespace(value=error)), report(passed=False))
    target = tmp_path / "out" / "pages" / plugin.page_name(it.nodeid)
    assert target.read_text(encoding="utf-8") == "<p>laid out otherwise in tests/test_m.py::test_a</p>"
    assert rep.sections == [("shardviz page", f"the failed assertion's page: {target}")]
    # another failure, or a shardviz one that passed its report, writes nothing
    other = make_report(
        item(cfg, tmp_path, "test_b"),
        SimpleNamespace(when="call", excinfo=SimpleNamespace(value=ValueError())),
        report(passed=False),
    )
    passed = make_report(
        item(cfg, tmp_path, "test_c"), SimpleNamespace(when="call", excinfo=SimpleNamespace(value=error)), report()
    )
    assert other.sections == [] and passed.sections == []
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_a_page_that_cannot_be_written_is_said_and_the_failure_kept(tmp_path):
    (tmp_path / "blocked").write_text("a file where the folder would be")
    cfg = configured(options={"shardviz_html": "blocked"}, folder=tmp_path)
    it = item(cfg, tmp_path)
    error = LayoutMismatch("m", subject=object())
    rep = make_report(it, SimpleNamespace(when="call", excinfo=SimpleNamespace(value=error)), report(passed=False))
    ((title, text),) = rep.sections
    target = tmp_path / "blocked" / plugin.page_name(it.nodeid)
    assert title == "shardviz page" and text.startswith(f"could not write {target}: ")
    assert "Error: " in text  # the error's type and text


def test_each_collected_test_is_noted_under_its_snapshot_file(tmp_path):
    cfg = configured(folder=tmp_path)
    for name in ("test_a", "test_b[1]"):
        it = item(cfg, tmp_path, name=name)
        plugin.pytest_itemcollected(it)
    file = str(tmp_path / "tests" / "__shardviz__" / "test_m.json")
    assert it.stash[plugin._SNAPSHOT_FILE] == file
    assert state_of(cfg).tests == {file: {"test_a", "test_b[1]"}}


# ---------------------------------------------------------------------------- strictness


def request(cfg, marker=None):
    return SimpleNamespace(
        node=SimpleNamespace(get_closest_marker=lambda name: marker if name == "shardviz_snapshot" else None),
        config=cfg,
    )


def test_strictness_comes_from_the_marker_then_the_command_line_then_the_ini_file():
    lenient = configured()
    assert plugin._mode(request(lenient)) == (False, 0.0)
    assert plugin._mode(request(configured(ini={"shardviz_strict": True, "shardviz_tolerance": "1%"}))) == (True, 0.01)
    by_option = configured(options={"shardviz_strict": True}, ini={"shardviz_strict": False})
    assert plugin._mode(request(by_option)) == (True, 0.0)
    off_by_option = configured(options={"shardviz_strict": False}, ini={"shardviz_strict": True})
    assert plugin._mode(request(off_by_option)) == (False, 0.0)
    marker = SimpleNamespace(kwargs={"strict": False, "tolerance": 0.5})
    assert plugin._mode(request(by_option, marker)) == (False, 0.5)
    assert plugin._mode(request(by_option, SimpleNamespace(kwargs={"tolerance": 0.25}))) == (True, 0.25)
    assert plugin._mode(request(lenient, SimpleNamespace(kwargs={"strict": True}))) == (True, 0.0)


# ---------------------------------------------------------------------------- the end of a run


def snapshot_file(folder: Path, *names: str) -> Path:
    path = folder / "__shardviz__" / "test_m.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": FORMAT, "snapshots": {n: {"lines": []} for n in names}}))
    return path


def session(cfg, exitstatus=pytest.ExitCode.OK):
    return SimpleNamespace(config=cfg, exitstatus=exitstatus)


def test_a_worker_hands_what_it_saw_to_the_controller_and_judges_nothing(tmp_path):
    cfg = configured(folder=tmp_path)
    path = snapshot_file(tmp_path, "gone")
    state_of(cfg).tests[str(path)] = {"test_a"}
    state_of(cfg).notes.append("n")
    cfg.workeroutput = {}
    plugin.pytest_sessionfinish(session(cfg))
    assert cfg.workeroutput == {
        "shardviz": {"notes": ["n"], "tests": {str(path): ["test_a"]}, "finished": {}, "used": {}}
    }
    assert state_of(cfg).notes == ["n"]
    controller = configured(folder=tmp_path)
    plugin.pytest_testnodedown(SimpleNamespace(workeroutput=cfg.workeroutput, config=controller), None)
    assert state_of(controller).tests == {str(path): {"test_a"}} and state_of(controller).notes == ["n"]
    plugin.pytest_testnodedown(SimpleNamespace(config=controller), None)  # a worker that sent nothing
    assert state_of(controller).notes == ["n"]


def test_stale_records_are_noted_and_with_update_removed(tmp_path):
    path = snapshot_file(tmp_path, "test_a", "test_a#2", "test_gone", "test_skipped")
    cfg = configured(folder=tmp_path)
    state = state_of(cfg)
    state.tests[str(path)] = {"test_a", "test_skipped"}
    state.finished[str(path)] = {"test_a"}
    state.used[str(path)] = {"test_a"}
    plugin.pytest_sessionfinish(session(cfg))
    assert state.notes == [
        f"stale record 'test_a#2' in {path}: its test is gone; pytest --shardviz-update removes it",
        f"stale record 'test_gone' in {path}: its test is gone; pytest --shardviz-update removes it",
    ]
    assert sorted(json.loads(path.read_text())["snapshots"]) == ["test_a", "test_a#2", "test_gone", "test_skipped"]
    update = configured(options={"shardviz_update": True}, folder=tmp_path)
    state = state_of(update)
    state.tests[str(path)] = {"test_a", "test_skipped"}
    state.finished[str(path)] = {"test_a"}
    state.used[str(path)] = {"test_a"}
    plugin.pytest_sessionfinish(session(update))
    assert state.notes == [
        f"removed the stale record 'test_a#2' from {path} (its test is gone)",
        f"removed the stale record 'test_gone' from {path} (its test is gone)",
    ]
    assert sorted(json.loads(path.read_text())["snapshots"]) == ["test_a", "test_skipped"]


STALE_FAILS = (
    "the run fails on the stale records above (--shardviz-strict-stale or shardviz_strict_stale): "
    "run the whole suite once with pytest --shardviz-update to prune them"
)


@pytest.mark.parametrize(
    ("options", "ini", "fails"),
    [
        ({}, {}, False),
        ({"shardviz_strict_stale": True}, {}, True),
        ({}, {"shardviz_strict_stale": True}, True),
        ({"shardviz_strict_stale": False}, {"shardviz_strict_stale": True}, False),  # the command line wins
        ({"shardviz_strict_stale": True, "shardviz_update": True}, {}, False),  # an update prunes them instead
    ],
)
def test_strict_stale_fails_a_run_that_leaves_stale_records(tmp_path, options, ini, fails):
    path = snapshot_file(tmp_path, "test_a", "test_gone")
    cfg = configured(options=options, ini=ini, folder=tmp_path)
    state_of(cfg).tests[str(path)] = {"test_a"}
    state_of(cfg).used[str(path)] = {"test_a"}
    run = session(cfg)
    plugin.pytest_sessionfinish(run)
    assert run.exitstatus == (pytest.ExitCode.TESTS_FAILED if fails else pytest.ExitCode.OK)
    assert (STALE_FAILS in state_of(cfg).notes) == fails
    assert len(state_of(cfg).notes) == (2 if fails else 1)


def test_strict_stale_keeps_a_worse_exit_status_and_passes_a_run_with_no_stale_record(tmp_path):
    path = snapshot_file(tmp_path, "test_a", "test_gone")
    cfg = configured(options={"shardviz_strict_stale": True}, folder=tmp_path)
    state_of(cfg).tests[str(path)] = {"test_a"}
    interrupted = session(cfg, pytest.ExitCode.INTERRUPTED)
    plugin.pytest_sessionfinish(interrupted)
    assert interrupted.exitstatus == pytest.ExitCode.INTERRUPTED
    # a run that collected nothing but leaves stale records still fails
    nothing = configured(options={"shardviz_strict_stale": True}, folder=tmp_path)
    state_of(nothing).tests[str(path)] = {"test_a"}
    empty = session(nothing, pytest.ExitCode.NO_TESTS_COLLECTED)
    plugin.pytest_sessionfinish(empty)
    assert empty.exitstatus == pytest.ExitCode.TESTS_FAILED
    clean = configured(options={"shardviz_strict_stale": True}, folder=tmp_path)
    state_of(clean).tests[str(path)] = {"test_a", "test_gone"}
    state_of(clean).used[str(path)] = {"test_a", "test_gone"}
    passed = session(clean)
    plugin.pytest_sessionfinish(passed)
    assert passed.exitstatus == pytest.ExitCode.OK and state_of(clean).notes == []


def test_runs_of_some_tests_only_judge_no_record_stale(tmp_path):
    path = snapshot_file(tmp_path, "test_gone")
    for options, args in (({"lf": True}, ()), ({"stepwise": True}, ()), ({}, ("test_m.py::test_a",))):
        cfg = configured(options=options, folder=tmp_path, args=args)
        state_of(cfg).tests[str(path)] = {"test_a"}
        plugin.pytest_sessionfinish(session(cfg))
        assert state_of(cfg).notes == [], options
    # a file named without "::" is run whole: its stale records count
    cfg = configured(folder=tmp_path, args=("test_m.py",))
    state_of(cfg).tests[str(path)] = {"test_a"}
    plugin.pytest_sessionfinish(session(cfg))
    assert len(state_of(cfg).notes) == 1


def test_a_run_without_snapshot_files_checks_nothing(tmp_path):
    cfg = configured(folder=tmp_path)
    missing = tmp_path / "__shardviz__" / "test_m.json"
    state_of(cfg).tests[str(missing)] = {"test_a"}
    plugin.pytest_sessionfinish(session(cfg))
    assert state_of(cfg).notes == [] and not missing.exists()
    assert plugin._snapshot_files(state_of(cfg)) == []


def test_the_snapshot_file_of_a_command_line_argument(tmp_path):
    assert plugin._snapshot_of_arg(tmp_path, "tests/test_m.py::test_a[1]") == (
        tmp_path / "tests" / "__shardviz__" / "test_m.json"
    )


class Reporter:
    def __init__(self):
        self.out: list[str] = []

    def section(self, title):
        self.out.append(f"== {title}")

    def write_line(self, line):
        self.out.append(line)


def test_the_summary_lists_the_notes_under_its_own_title():
    cfg = configured()
    reporter = Reporter()
    plugin.pytest_terminal_summary(reporter, cfg)
    assert reporter.out == []
    state_of(cfg).notes += ["one", "two"]
    plugin.pytest_terminal_summary(reporter, cfg)
    assert reporter.out == ["== shardviz snapshots", "one", "two"]
    plugin.pytest_terminal_summary(reporter, config())  # a config the plugin never configured
    assert reporter.out == ["== shardviz snapshots", "one", "two"]


def test_the_snapshot_file_of_an_argument_is_its_module_s_even_when_the_id_has_dots(tmp_path):
    assert plugin._snapshot_of_arg(tmp_path, "tests/test_m.py::TestA::test_b[1.5]") == (
        tmp_path / "tests" / "__shardviz__" / "test_m.json"
    )
    assert plugin._snapshot_of_arg(tmp_path, "tests/test_m.py::test_b[a/b::c]") == (
        tmp_path / "tests" / "__shardviz__" / "test_m.json"
    )
