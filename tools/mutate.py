"""`make mutate`: mutation testing of shardviz's Python with mutmut, one part at a time.

    .venv/bin/python tools/mutate.py PART [PART ...] [--again] [--fresh] [--only GLOB] [--check N] [--list]

A part is a handful of modules and the tests that check them (``PARTS`` below);
a group name (``testing``, ``program``) runs its slices one after another. Each
slice gets a working folder of its own, ``build/mutate/SLICE``, holding links to
``src`` and ``tests``, a copy of ``pyproject.toml`` and a ``setup.cfg`` with the
slice's mutmut settings; mutmut writes its ``mutants/`` there and keeps its
results between runs, so a second run only tries what is new.

How mutants run, and why. mutmut's default forks every mutant from a process
that has already run the tests; once JAX has started its backend there (its
thread pools), a forked child can deadlock, and mutmut counts the hung child's
timeout as a kill. Here mutmut's fork server runs instead: the server imports
numpy, JAX, pytest, Hypothesis and shardviz (importing JAX starts no backend)
and forks one child per mutant, which starts its own backend, runs the tests
that reach the mutated function, and exits. The server checks after its
imports that no JAX backend is live, and stops the run if one is.

Tests that start a Python process of their own see the mutant too:
``PYTHONPATH`` points at the mutated sources and the child inherits
``MUTANT_UNDER_TEST``.

``--check N`` reruns, each in a fresh ``python -m pytest``, every timed-out or
odd mutant and N killed ones drawn at random, and the same tests with no mutant,
to show the verdicts do not come from the fork server: a kill must fail there
and the clean tests must pass. ``--again`` reruns the survivors (after new
tests), with ``--only`` those matching its globs; ``--fresh`` forgets earlier results; ``--trust-clean`` lets a run
that resumes a slice (stopped by ``timeout``, say) skip mutmut's clean run of
all its tests, which the slice's first run passed. The summary lists each module's
killed, survived, no tests and timeouts, and writes
``build/mutate/SLICE/summary.json``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "build" / "mutate"


@dataclass(frozen=True)
class Slice:
    modules: tuple[str, ...]  # globs under src/shardviz
    tests: tuple[str, ...]  # pytest arguments: files, -k, --deselect
    options: tuple[str, ...] = ()  # more pytest options for each mutant's run
    # mutmut's timeout_multiplier and timeout_constant: a mutant's CPU limit is (its tests' clean time + constant)
    # * multiplier * 2, and its wall-clock limit half that
    timeouts: tuple[float, float] = (5.0, 30.0)


def _tests(*names: str) -> tuple[str, ...]:
    return tuple(f"tests/{name}" for name in names)


TESTING_TESTS = (
    *_tests(
        "test_mut_testing_collectives.py",
        "test_mut_testing_layout.py",
        "test_mut_testing_memory.py",
        "test_mut_testing_names.py",
        "test_mut_testing_pages.py",
        "test_mut_testing_plugin.py",
        "test_mut_testing_snapshot.py",
        "test_mut_testing_steptime.py",
        "test_mut_testing_tree_layout.py",
        "test_testing_collectives.py",
        "test_testing_layout.py",
        "test_testing_memory.py",
        "test_testing_plugin.py",
        "test_testing_plugin_runs.py",
        "test_testing_records.py",
        "test_testing_snapshot.py",
        "test_testing_snapshot_strict.py",
        "test_testing_steptime.py",
        "test_testing_wrong_passes.py",
        "test_users_budgets.py",
    ),
    # these two reach shardviz only in the pytest processes they start, so mutmut would never pick them
    # for a mutant (it picks a mutant's tests by what they reach in its own process): 90 s of stats run saved
    "--deselect",
    "tests/test_testing_plugin_runs.py::test_xdist_workers_lose_no_record_and_the_summary_comes_from_every_worker",
    "--deselect",
    "tests/test_testing_snapshot_strict.py::test_two_processes_writing_one_file_at_once_lose_no_record",
    # reads the plugin's imports, which mutmut's copy extends by mutmut itself
    "--deselect",
    "tests/test_testing_plugin.py::test_the_plugin_module_imports_only_pytest_and_the_standard_library",
)

PLAN_TESTS = _tests(
    "test_plan_estimate.py",
    "test_plan_links.py",
    "test_plan_roofline.py",
    "test_plan_scaling_book.py",
    "test_plan_topology.py",
    "test_mut_comms.py",
    "test_mut_hardware.py",
    "test_mut_topology.py",
    "test_mut_estimate.py",
)

# Fast tests of the program view's lines and names: hand-made orders, stacks and HLO modules, and
# small programs made with jax.make_jaxpr (nothing compiled); the real-program tests
# (test_program_*.py) still run in `make test`.
PROGRAM_TESTS = _tests(
    "test_mut_program_passes.py",
    "test_mut_program_values.py",
    "test_mut_program_places.py",
    "test_mut_program_auto.py",
    "test_mut_program_io.py",
)

# pytest's own start trimmed for parts whose tests start no pytest of their own: no anyio (its event
# loops), no unraisable-exception hooks (two gc.collect()s over a heap holding JAX at each exit)
PURE_TEST_OPTIONS = ("-p", "no:anyio", "-p", "no:unraisableexception", "-p", "no:threadexception")
# their tests take a second or two a mutant, so a mutant looping for ever is stopped after about 25 s of wall
# time, not 150 s (the default below allows for the slower parts' traced programs)
PURE_TEST_TIMEOUTS = (2.0, 12.0)

# stand-in rows, estimates and programs, no trace: each mutant's tests take a fraction of a second
COMPARE_TESTS = _tests(
    "test_mut_compare_rows.py",
    "test_mut_compare_ranking.py",
    "test_mut_compare_report.py",
    "test_mut_compare_edits.py",
    "test_mut_compare_candidates.py",
    "test_mut_compare_run.py",
)

PARTS: dict[str, Slice] = {
    "plan": Slice(
        ("plan/comms.py", "plan/links.py", "plan/topology.py", "plan/hardware.py", "plan/estimate.py"),
        PLAN_TESTS,
        # traced programs kept between mutants (tools/mutate_trace_cache.py: plan/ never changes a trace),
        # and pytest's own start trimmed: plain asserts, no plugins these tests do not use (the
        # unraisable-exception hook's gc.collect() over a heap holding JAX was most of a mutant's time)
        (
            "-p",
            "mutate_trace_cache",
            "--assert=plain",
            "-p",
            "no:anyio",
            "-p",
            "no:xdist",
            "-p",
            "no:xdist.looponfail",
            "-p",
            "no:shardviz",
            "-p",
            "no:timeout",
            "-p",
            "no:unraisableexception",
            "-p",
            "no:threadexception",
        ),
    ),
    # the link models alone against their hand counts: minutes rather than hours
    "plan-comms": Slice(("plan/comms.py",), _tests("test_mut_comms.py", "test_plan_links.py")),
    "program": Slice(
        (
            "program/lines/sources.py",
            "program/lines/naming.py",
            "program/lines/jaxpr_walk.py",
            "program/values/layouts.py",
            "program/lines/frames.py",
            "program/lines/scopes.py",
            "program/lines/passes.py",
            "program/collectives/places.py",
            "program/lines/pass_levels.py",
            "program/values/inputs_outputs.py",
        ),
        PROGRAM_TESTS,
        PURE_TEST_OPTIONS,
        PURE_TEST_TIMEOUTS,
    ),
    # memory over the program: XLA's buffer assignment and live ranges as its dumps print them, read
    # with hand-made modules and dumps (tests/test_mut_program_memory.py); nothing is compiled
    "program-memory": Slice(
        ("program/memory/timeline.py", "program/memory/liveness.py"),
        _tests("test_mut_program_memory.py"),
        PURE_TEST_OPTIONS,
        PURE_TEST_TIMEOUTS,
    ),
    # memory as the device holds it (issue 38): XLA:CPU's buffers read back to the program's dtypes, checked on
    # real compiles of bf16 and f32 steps against hand counts
    "program-memory-held": Slice(
        ("program/memory/dtypes.py",),
        _tests("test_program_memory_as_held.py", "test_program_memory_guides.py"),
        PURE_TEST_OPTIONS,
    ),
    # how trace reads a program while XLA compiles it, and the HLO reader's attributes: the tests that
    # read fixtures and the few traces that take each path (early, after the compile, no dumps)
    "program-reading": Slice(
        ("program/compiling/trace_here.py", "program/compiling/module_reading.py", "program/hlo/module.py"),
        (
            "tests/test_program_hlo.py",
            "tests/test_program_compiled_failures.py::test_no_module_text_is_refused_not_shown_as_no_collectives",
            *(
                f"tests/test_program_trace.py::{name}"
                for name in (
                    "test_one_compile_and_no_dump_left_behind",
                    "test_the_module_read_while_xla_generates_code_is_the_program_read_after_the_compile",
                    "test_python_garbage_collector_is_left_as_the_user_had_it",
                    "test_the_collector_is_held_once_for_nested_and_threaded_reads",
                    "test_a_dump_read_early_counts_only_if_no_file_grew_after_it",
                    "test_the_early_reading_waits_for_every_dump_and_gives_way_to_the_compile",
                    "test_a_forked_child_starts_its_own_reading_worker_and_collector_hold",
                )
            ),
            *(
                f"tests/test_program_wrong_lines_and_names.py::{name}"
                for name in (
                    "test_shardvizs_own_failure_reading_a_program_is_not_said_to_be_a_failed_compile",
                    "test_shardvizs_own_failure_reading_the_jaxpr_while_xla_compiles_is_a_bug_in_shardviz",
                    "test_a_failed_compile_is_said_to_be_one_even_when_the_jaxpr_reading_beside_it_fails",
                    "test_without_dev_shm_the_dump_goes_to_the_temporary_folder",
                    "test_with_no_folder_to_dump_into_the_program_is_read_without_memory_over_it",
                )
            ),
        ),
    ),
    # one slice for the whole package: one run of its tests for mutmut's stats, not one per module.
    # The plugin is off in the outer run: its hooks ran for every test there, so mutmut charged each of
    # their mutants every test; now they count only for the pytester runs that load the plugin.
    # anyio's plugin (loading its event loops) and the unraisable-exception plugins (two gc.collect()s of
    # a heap holding JAX) cost 2 s of every mutant's pytest run here and check nothing these tests need.
    "testing": Slice(
        ("testing/*.py",),
        TESTING_TESTS,
        ("-p", "no:shardviz", "-p", "no:anyio", "-p", "no:unraisableexception", "-p", "no:threadexception"),
    ),
    "compare": Slice(
        tuple(f"compare/{name}.py" for name in ("candidates", "comparison", "edits", "report", "rows", "run", "state")),
        COMPARE_TESTS,
        # the tests are pure: without anyio's plugin (it starts asyncio's backend) and the unraisable-exception
        # hook's garbage collections at exit, a mutant's run takes a fifth of the time
        ("-p", "no:anyio", "-p", "no:unraisableexception"),
    ),
    # the fixes' steps, code, text, ranking and memo against stand-in programs (its traced fixes are
    # test_program_fixes.py's, minutes each)
    "compare-fixes": Slice(
        ("compare/fixes.py",), _tests("test_mut_compare_fixes.py"), PURE_TEST_OPTIONS, PURE_TEST_TIMEOUTS
    ),
    # the search's space and analytic cost against hand counts of the book (no trace)
    "search": Slice(
        ("search/space.py", "search/cost.py", "search/regime.py"),
        _tests("test_search_space.py", "test_search_cost.py", "test_search_regime.py"),
        ("-p", "no:anyio", "-p", "no:unraisableexception"),
    ),
    # Flax's logical axis names read off a tree and shown beside its mesh axes: the Flax guides' models,
    # initialised here (the search's logical-rules test traces, so it is left out)
    "tree-logical": Slice(
        ("tree/logical.py",),
        ("tests/test_tree_logical.py", "-k", "not search_gives"),
        ("-p", "no:anyio", "-p", "no:unraisableexception"),
    ),
    # why each collective is there and XLA's rematerializations (issue 40): constructed programs traced
    # and checked against hand analyses and JAX's compiled HLO
    "program-why": Slice(
        ("program/why/causes.py", "program/why/remat.py", "program/why/reasons.py"),
        _tests("test_mut_program_causes.py", "test_program_causes.py", "test_program_remat.py"),
        PURE_TEST_OPTIONS,
    ),
    # the fixes of a collective whose operand is made inside the program (its inputs kept off the collective's
    # axes, a constraint where its line makes it, the input a wanted layout arrives from, a jit's own
    # in_shardings): traced programs checked against JAX's compiled HLO, about 20 s of tests; the widget
    # test needs the built front end, which a worktree without `make install` has not
    "compare-fixes-traced": Slice(
        ("compare/fixes.py",),
        (
            *_tests(
                "test_program_fixes_made_inside.py",
                "test_program_fixes.py",
                "test_mut_compare_fixes.py",
                "test_mut_fixes_made_inside.py",
            ),
            "--deselect",
            "tests/test_program_fixes.py::test_the_widgets_reason_panel_finds_tries_and_goes_back",
        ),
        PURE_TEST_OPTIONS,
    ),
    # the same module's small helpers (a collective alike, its place, a type's shape, a change's words), against
    # stand-ins and the few small programs of test_mut_fixes_made_inside.py: a second a mutant
    "compare-fixes-pure": Slice(
        ("compare/fixes.py",),
        _tests("test_mut_compare_fixes.py", "test_mut_fixes_made_inside.py"),
        PURE_TEST_OPTIONS,
        PURE_TEST_TIMEOUTS,
    ),
    # the reasons of values made inside the program (where they are made, the inputs they come from, the
    # input a wanted layout arrives from, into the functions that return them), shifts, transposes and
    # gathered operands: traced programs checked against JAX's compiled HLO
    "program-why-inside": Slice(
        ("program/why/causes.py",),
        _tests(
            "test_program_fixes_made_inside.py",
            "test_mut_program_causes.py",
            "test_program_causes.py",
            "test_mut_fixes_made_inside.py",
            "test_program_calls_reasons.py",
            "test_program_causes_loops_and_batches.py",
            "test_program_causes_carried_and_convs.py",
            "test_mut_causes_carried_and_convs.py",
            "test_program_causes_stretched_and_bodies.py",
        ),
        PURE_TEST_OPTIONS,
    ),
    # the memory guard (issue 39): what an edit, rules, compare's workers and a what-if child would allocate,
    # refused past the host's or the device's memory; the tests measure requests and never allocate them
    "memory-guard": Slice(
        ("memory_guard.py",), _tests("test_mut_memory_guard.py", "test_memory_guard.py"), PURE_TEST_OPTIONS
    ),
    # the reasons' data, text and payload and the rematerialization reader, against stand-ins (milliseconds a test)
    "program-why-fast": Slice(
        (
            "program/why/remat.py",
            "program/why/reasons.py",
            "program/why/reasons_payload.py",
            "program/why/explain.py",
        ),
        _tests("test_mut_program_why.py"),
        PURE_TEST_OPTIONS,
        PURE_TEST_TIMEOUTS,
    ),
    # the values' keys as the program payload sends them (a stem table and an index per value), read back by
    # tests/decoding.py's reader on a real trace and on any list of strings
    "program-payload-keys": Slice(
        ("program/result/value_keys.py",), _tests("test_program_payload.py"), PURE_TEST_OPTIONS, PURE_TEST_TIMEOUTS
    ),
    # the widgets' shared base and edit controller: a stand-in view (no JAX) and the edit protocol's tests
    "widgets": Slice(
        ("widgets/base.py", "widgets/controller.py"),
        _tests("test_mut_widgets.py", "test_widget_protocol.py", "test_tree_widget_messages.py"),
    ),
}

GROUPS: dict[str, tuple[str, ...]] = {"all": ("plan", "testing", "program")}


def slices_of(names: list[str]) -> list[str]:
    chosen: list[str] = []
    for name in names:
        expanded = GROUPS.get(name, (name,))
        for part in expanded:
            if part not in PARTS:
                known = ", ".join([*PARTS, *GROUPS])
                raise SystemExit(f"mutate: no part {part!r}; the parts are {known}")
            if part not in chosen:
                chosen.append(part)
    return chosen


# What the fork server imports before it forks: what a test needs that starts
# no JAX backend, then every shardviz module (from the mutated copy, as
# tests/conftest.py would import them in each child).
PRELOAD = ("numpy", "jax", "jax.numpy", "jax.sharding", "pytest", "_pytest.pytester", "hypothesis")
# pytest's plugins from their entry points: imported here, each child skips rewriting their asserts,
# which took most of a child's time (seconds a mutant on the shared machine).
PLUGINS = (
    "xdist.plugin",
    "xdist.looponfail",
    "anyio.pytest_plugin",
    "platformdirs.pytest_plugin",
    "pytest_timeout",
    "_hypothesis_pytestplugin",
)


def preload_list() -> list[str]:
    package = REPO / "src"
    modules = []
    for path in sorted((package / "shardviz").rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [*PRELOAD, *PLUGINS, *modules]


def setup_cfg(part: Slice) -> str:
    def listed(values: tuple[str, ...] | list[str]) -> str:
        return "".join(f"\n    {value}" for value in values)

    only = [f"src/shardviz/{glob}" for glob in part.modules]
    return (
        "[mutmut]\n"
        "source_paths = src/\n"
        f"only_mutate ={listed(only)}\n"
        f"pytest_add_cli_args ={listed(['-p', 'no:cacheprovider', '-q', *part.options])}\n"
        f"pytest_add_cli_args_test_selection ={listed(part.tests)}\n"
        "process_isolation = forkserver\n"
        "forkserver_warmup = import\n"
        "preload_modules_file = preload.txt\n"
        # by default a mutant gets its tests' own time (as measured clean) plus 30 s for the start of
        # pytest and of JAX's backend, times 5 (the machine is shared), times 2 (mutmut's CPU limit)
        f"timeout_multiplier = {part.timeouts[0]}\n"
        f"timeout_constant = {part.timeouts[1]}\n"
    )


def prepare(name: str, fresh: bool) -> Path:
    work = WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for linked in ("src", "tests"):
        link = work / linked
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(REPO / linked, work))
    shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")
    (work / "setup.cfg").write_text(setup_cfg(PARTS[name]))
    # PYTHONPATH names the mutated sources; a folder missing when Python starts stays unseen by its
    # import cache after mutmut creates it, and the stats run then finds no shardviz at all.
    (work / "mutants" / "src").mkdir(parents=True, exist_ok=True)
    (work / "preload.txt").write_text("\n".join(preload_list()) + "\n")
    return work


def mutant_env(work: Path, mutant: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(work / "mutants" / "src"), str(REPO / "tools")])
    # where the plan part's plugin (tools/mutate_trace_cache.py) keeps traced programs; unread elsewhere
    env["SHARDVIZ_TRACE_CACHE"] = str(work / "trace-cache")
    # bytecode kept: else each mutant's pytest compiles and rewrites every test module again (seconds)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MUTANT_UNDER_TEST", None)
    if mutant is not None:
        env["MUTANT_UNDER_TEST"] = mutant
    return env


def run_mutmut(work: Path, names: list[str], trust_clean: bool) -> int:
    """``mutmut run`` in a child process of its own, in the slice's folder."""
    trust = trust_clean and (work / "mutants" / "mutmut-stats.json").exists()
    code = (
        "import sys; sys.argv = ['mutmut', 'run', '--max-children', sys.argv[1], *sys.argv[2:]]\n"
        f"sys.path.insert(0, {str(REPO / 'tools')!r})\n"
        f"import mutate_guard; mutate_guard.install(trust_clean={trust})\n"
        "from mutmut.__main__ import cli; cli()\n"
    )
    children = os.environ.get("MUTATE_CHILDREN", "2")
    return subprocess.run(
        [sys.executable, "-c", code, children, *names], cwd=work, env=mutant_env(work, None)
    ).returncode


def unfinished(work: Path, globs: list[str]) -> list[str]:
    """The mutants matching ``globs`` that have no verdict yet: mutmut reruns every mutant it is
    named, verdict or not, so a resumed ``--only`` run names only these. Before the first run
    (no verdicts at all) the globs themselves."""
    found = verdicts(work)
    if not found:
        return list(globs)
    return [m for m, code in found.items() if code is None and any(fnmatch.fnmatch(m, g) for g in globs)]


def verdicts(work: Path) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for meta in sorted((work / "mutants" / "src").rglob("*.py.meta")):
        found.update(json.loads(meta.read_text())["exit_code_by_key"])
    return found


def status(code: int | None) -> str:
    if code is None:
        return "not run"
    return {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests", 34: "skipped"}.get(
        code, "timeout" if code in (24, -24, 36, 152, 255, -9) else f"odd exit {code}"
    )


def module_of(mutant: str) -> str:
    head = mutant.split("__mutmut_")[0]
    head = head.split("ǁ")[0] if "ǁ" in head else head.rsplit(".", 1)[0]
    return head.removesuffix(".x").rstrip(".")


def summarise(name: str, work: Path) -> dict[str, object]:
    found = verdicts(work)
    modules: dict[str, dict[str, int]] = {}
    for mutant, code in found.items():
        counts = modules.setdefault(module_of(mutant), {})
        counts[status(code)] = counts.get(status(code), 0) + 1
    killed = sum(1 for code in found.values() if status(code) == "killed")
    survivors = sorted(m for m, code in found.items() if status(code) != "killed")
    summary = {
        "slice": name,
        "mutants": len(found),
        "killed": killed,
        "score": round(killed / len(found), 4) if found else None,
        "modules": modules,
        "not_killed": {m: status(found[m]) for m in survivors},
    }
    (work / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    print(f"\n{name}: {killed} of {len(found)} mutants killed ({100 * killed / max(len(found), 1):.1f}%)")
    for module, counts in sorted(modules.items()):
        total = sum(counts.values())
        rest = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "killed")
        print(f"  {module}: {counts.get('killed', 0)}/{total} killed{'; ' + rest if rest else ''}")
    return summary


def tests_of(work: Path, mutant: str) -> list[str]:
    stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text())
    function = mutant.split("__mutmut_")[0]
    return sorted(stats["tests_by_mangled_function_name"].get(function, []))


def fresh_run(work: Path, mutant: str | None, tests: list[str], timeout: float) -> str:
    extra = PARTS[work.name].options
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *extra, "--rootdir=.", *tests]
    try:
        done = subprocess.run(
            command, cwd=work / "mutants", env=mutant_env(work, mutant), capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return {0: "survived", 1: "killed"}.get(done.returncode, f"odd exit {done.returncode}")


def check(work: Path, sample: int) -> list[str]:
    """Rerun verdicts in fresh processes; the lines that disagree with mutmut's."""
    found = verdicts(work)
    odd = [m for m, code in found.items() if status(code) not in ("killed", "survived", "no tests", "not run")]
    killed = sorted(m for m, code in found.items() if status(code) == "killed")
    drawn = random.Random(0).sample(killed, min(sample, len(killed)))
    disagreements: list[str] = []
    clean_checked: set[tuple[str, ...]] = set()
    for mutant in odd + drawn:
        tests = tests_of(work, mutant)
        if tuple(tests) not in clean_checked:
            clean = fresh_run(work, None, tests, timeout=900)
            clean_checked.add(tuple(tests))
            if clean != "survived":
                disagreements.append(f"{mutant}: its tests do not pass without the mutant ({clean})")
        again = fresh_run(work, mutant, tests, timeout=600)
        print(f"  {mutant}: mutmut {status(found[mutant])}, fresh process {again}")
        if status(found[mutant]) == "killed" and again != "killed":
            disagreements.append(f"{mutant}: killed under mutmut, {again} in a fresh process")
    return disagreements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="*", default=[])
    parser.add_argument("--again", action="store_true", help="rerun every mutant not killed")
    parser.add_argument("--fresh", action="store_true", help="forget earlier results")
    parser.add_argument("--check", type=int, default=0, metavar="N", help="recheck odd and N killed mutants")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB", help="mutant names, e.g. '*sizes*'")
    parser.add_argument("--list", action="store_true", help="list the parts and stop")
    parser.add_argument(
        "--trust-clean", action="store_true", help="a resumed run skips the clean run its first run passed"
    )
    args = parser.parse_args()
    if args.list or not args.parts:
        for name, part in PARTS.items():
            print(f"{name}: {', '.join(part.modules)}")
        for name, members in GROUPS.items():
            print(f"{name} = {' + '.join(members)}")
        return 0
    failed = False
    for name in slices_of(args.parts):
        work = prepare(name, args.fresh)
        resume = bool(args.only) and not args.again
        names: list[str] = unfinished(work, args.only) if resume else []
        if resume and not names:
            print(f"{name}: every mutant matching {', '.join(args.only)} has a verdict")
            summarise(name, work)
            continue
        if args.again and (work / "summary.json").exists():
            names = list(json.loads((work / "summary.json").read_text())["not_killed"])
            # with --only, the survivors (and mutants not run yet) of those globs alone
            names = [m for m in names if not args.only or any(fnmatch.fnmatch(m, g) for g in args.only)]
        if args.again and not names and (work / "summary.json").exists():
            print(f"{name}: nothing to rerun")
        elif run_mutmut(work, names, args.trust_clean) != 0:
            print(f"mutate: mutmut stopped on {name}", file=sys.stderr)
            failed = True
            continue
        summarise(name, work)
        if args.check:
            wrong = check(work, args.check)
            print("\n".join(wrong) if wrong else f"{name}: every rechecked verdict held in a fresh process")
            failed = failed or bool(wrong)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
