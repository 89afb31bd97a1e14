"""Test set-up: 12 simulated CPU devices, fixed before JAX starts its backend."""

from __future__ import annotations

import os

import jax

# The tutorials our users come from run on 12 simulated CPU devices. Set it
# here, before any test touches a device; XLA_FLAGS from the environment
# (e.g. make's) would say the same.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    jax.config.update("jax_num_cpu_devices", 12)


def pytest_terminal_summary(terminalreporter):
    """Print what the robustness tests tried (figures for the README)."""
    import sys

    module = sys.modules.get("test_robustness")
    if module and module.TALLY:
        terminalreporter.section("robustness figures")
        for key, count in sorted(module.TALLY.items()):
            terminalreporter.write_line(f"{key}: {count}")
