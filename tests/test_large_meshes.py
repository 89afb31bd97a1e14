"""Parity with JAX at 512 and 4096 real simulated CPU devices.

Each count runs tests/large_mesh_parity.py in a process of its own (this
one already has 12 devices): real arrays on meshes in mesh order and
shuffled, their what-if twins on an AbstractMesh, and a GSPMDSharding,
against devices_indices_map, addressable_shards and jax.typeof. A few seconds
each; `make test` runs them (deselect with -m 'not large_mesh').
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.large_mesh

SCRIPT = pathlib.Path(__file__).resolve().parent / "large_mesh_parity.py"


@pytest.mark.parametrize("devices", [512, 4096])
def test_layouts_equal_jax_on_a_large_mesh(devices):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # the script sets its own device count
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(devices)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, f"large_mesh_parity.py {devices} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-6000:]}"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PARITY ")]
    assert lines, proc.stdout[-2000:]
    report = json.loads(lines[-1][len("PARITY ") :])
    assert report["devices"] == devices
    # Every mesh (mesh order, shuffled) met every case, plus pinned_host and GSPMDSharding.
    assert len(report["checked"]) >= 2 * 4 + 2, report["checked"]
