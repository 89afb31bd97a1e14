"""Test set-up: 12 simulated CPU devices, fixed before JAX starts its backend,
and Hypothesis settings that make every run draw the same examples."""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

import jax
import pytest
from hypothesis import settings

# A user's project of its own (its own conftest sets 8 devices), run by
# test_users_project.py in a pytest process of its own, never collected here.
collect_ignore = ["user_project"]

# The tutorials our users come from run on 12 simulated CPU devices. Set it
# here, before any test touches a device; XLA_FLAGS from the environment
# (e.g. make's) would say the same.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    jax.config.update("jax_num_cpu_devices", 12)

# "repeatable" (the default, and what `make test` runs): each property test
# draws the same examples on every run (seeded from the test itself), with no
# example database carried over from earlier runs, so the figures the
# robustness tests print repeat run to run. "explore" draws fresh random
# examples each run and remembers failures: `pytest --hypothesis-profile=explore`.
settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("repeatable")  # --hypothesis-profile=... on the command line overrides it


def _load_the_whole_package() -> list[str]:
    """Import every shardviz module now; the names of those that would not import.

    Hypothesis also draws strings and numbers it finds in the loaded modules of
    the code under test, so which modules happen to be loaded would change the
    examples. With all of them loaded up front, a test draws the same examples
    whichever tests run beside it (a module that fails here, e.g. the widgets
    before the front end is built, fails its own tests loudly)."""
    import shardviz

    failed = []
    for info in pkgutil.walk_packages(shardviz.__path__, "shardviz."):
        try:
            importlib.import_module(info.name)
        except Exception as err:
            failed.append(f"{info.name} ({type(err).__name__}: {err})")
    return failed


NOT_LOADED = _load_the_whole_package()


def hypothesis_profile() -> str:
    current = settings()
    mode = "derandomized" if current.derandomize else "random seeds"
    line = f"Hypothesis profile {settings._current_profile!r} ({mode}, database {current.database!r})"
    return line + (f"; shardviz modules that did not import: {', '.join(NOT_LOADED)}" if NOT_LOADED else "")


def pytest_report_header(config):
    return hypothesis_profile()


def pytest_terminal_summary(terminalreporter):
    """Print what the robustness tests tried (figures for docs/reliability.md)."""
    import sys

    module = sys.modules.get("test_robustness")
    if module and module.TALLY:
        terminalreporter.section("robustness figures")
        terminalreporter.write_line(hypothesis_profile())
        for key, count in sorted(module.TALLY.items()):
            terminalreporter.write_line(f"{key}: {count}")


@pytest.fixture(scope="session")
def wheel_install(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shardviz wheel installed in a fresh venv with no node or npm on its PATH (tests/wheel_install.py),
    made once per run for the smoke test and the browser test that use it."""
    from wheel_install import install_wheel

    try:
        return install_wheel(tmp_path_factory.mktemp("wheel"))
    except RuntimeError as err:
        pytest.fail(str(err))
