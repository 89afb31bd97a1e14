"""The program's couplings are explicit: what a Program says does not depend on what was imported.

``Program.to_json()`` carries every named hardware's estimate however the
program was reached: a fresh interpreter that imports only
``shardviz.program`` writes the same ``estimates`` as one that imported all of
``shardviz`` (the estimate was once registered by importing ``shardviz.plan``,
so the first payload had none). And the payload says when an edit of the
inputs cannot trace the program again, exactly when ``retrace`` refuses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec

import shardviz
from shardviz.program import retrace

_STEP = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
{imports}
mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, P("x", "y")))
w = jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=NamedSharding(mesh, P("y", None)))
program = trace(lambda x, w: x @ w, x, w)
loaded = sorted(m for m in sys.modules if m.startswith("shardviz.") and m.split(".")[1] in ("widgets", "testing"))
print(json.dumps({{"estimates": program.to_json().get("estimates"), "loaded": loaded}}))
"""


def _estimates_in_a_fresh_process(imports: str) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-c", _STEP.format(imports=imports)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_to_json_has_the_same_estimates_whatever_was_imported_first():
    alone = _estimates_in_a_fresh_process("from shardviz.program.trace import trace")
    everything = _estimates_in_a_fresh_process(
        "import shardviz, shardviz.plan, shardviz.testing, shardviz.widgets.program\nfrom shardviz import trace"
    )
    assert alone["loaded"] == [], "importing the program engine alone loaded widget or testing code"
    assert everything["loaded"], "the full import should have loaded the widgets"
    assert alone["estimates"] is not None, "a Program made with only shardviz.program imported has no estimates"
    assert alone["estimates"] == everything["estimates"]
    # every named hardware is priced, and the one all-reduce of x @ w over y is in each estimate
    assert alone["estimates"]["hardware"] == list(shardviz.HARDWARE)
    for brief in alone["estimates"]["by_hardware"].values():
        assert len(brief["collectives"]) == 1 and brief["step_s"] > 0


@pytest.fixture
def program():
    mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec("x", "y")))
    return shardviz.trace(lambda x: x * 2, x)


def test_a_traced_program_says_it_can_be_traced_again(program):
    payload = program.to_json()
    assert payload["retrace"] is True and payload["retrace_reason"] == ""
    assert retrace(program, ["y, x"]).inputs[0].spec == (("y",), ("x",))


def test_a_program_without_its_origin_says_why_it_cannot_be_traced_again(program):
    bare = replace(program, origin=None)
    payload = bare.to_json()
    assert payload["retrace"] is False
    assert "does not remember the function and arguments it was traced with" in payload["retrace_reason"]
    with pytest.raises(shardviz.ShardingError, match="nothing to trace again"):
        retrace(bare, ["y, x"])


def test_a_whatif_program_without_its_origin_points_to_a_new_whatif_trace(program):
    whatif = shardviz.WhatIf(
        devices=4, child_seconds=1.0, devices_seconds=0.1, trace_seconds=0.5, peak_rss_bytes=1, estimated_bytes=1
    )
    payload = replace(program, origin=None, whatif=whatif).to_json()
    assert payload["retrace"] is False
    assert "shardviz.trace(..., mesh=...)" in payload["retrace_reason"]
    assert payload["whatif"]["devices"] == 4
