"""The fork server's warm-up for tools/mutate.py: import, then make sure JAX has no backend yet.

mutmut's fork server forks one child per mutant. A child forked from a
process whose JAX backend is live inherits its thread pools' locks and can
hang, which mutmut would count as a kill; so the server imports what the
tests need and stops the whole run, loudly, if any import started a backend.
"""

from __future__ import annotations

import importlib
import os
import sys


def warm_up(_runner: object) -> None:
    from mutmut.configuration import config

    with open(config().preload_modules_file or os.devnull) as listing:
        for line in listing:
            name = line.strip()
            if name and not name.startswith("#"):
                try:
                    importlib.import_module(name)
                except Exception as err:  # a module that cannot load fails its own tests in each child
                    print(f"mutate: the fork server could not import {name}: {err}", file=sys.stderr)
    if "jax" in sys.modules:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            print("mutate: a JAX backend is live in the fork server; forked mutants could hang", file=sys.stderr)
            os._exit(70)


def install(trust_clean: bool = False) -> None:
    """The warm-up above; with ``trust_clean``, a resumed run skips its clean run of every test
    (minutes on a busy machine), which the first run of the slice already passed."""
    from mutmut.runners.harness import PytestRunner
    from mutmut.workers.isolation import ForkServerRunner

    PytestRunner.warm_up = warm_up  # type: ignore[method-assign]
    if trust_clean:
        ForkServerRunner.run_clean_tests = lambda self, tests: 0  # type: ignore[method-assign,assignment]
