"""The wheel as a user installs it (tests/wheel_install.py: a new venv, no node or npm on PATH): what it
ships, and describe, trace, describe_tree, compare on two candidates and save_html run from it.

Each figure is checked against JAX's own answer, computed in the same user process: the shards
``addressable_shards`` lists, the collectives in the compiled module's text, the bytes of each shard.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

pytestmark = pytest.mark.wheel

# Module-level, so compare's what-if children can import it by name.
USER_STEPS = """
def step(w, x):
    return x @ w
"""

USER_SCRIPT = r"""
import json, pathlib, re, shutil, sys

import jax

jax.config.update("jax_num_cpu_devices", 8)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import shardviz
from user_steps import step

facts = {"node": shutil.which("node"), "npm": shutil.which("npm"), "file": shardviz.__file__,
         "version": shardviz.__version__, "sys_path": sys.path}

# describe: each tile against the shards JAX lists for the array
mesh = jax.make_mesh((2, 4), ("x", "y"))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
layout = shardviz.describe(x)
facts["tiles"] = sorted([list(t.start), list(t.stop), sorted(t.device_ids)] for t in layout.tiles)
facts["jax_tiles"] = sorted(
    [[s.start for s in shard.index], [s.stop for s in shard.index], [shard.device.id]] for shard in x.addressable_shards
)

# trace: the collectives shardviz reads against those in the compiled module
total = lambda a: a.sum(axis=0)
program = shardviz.trace(total, x)
facts["collectives"] = sorted(c.kind for c in program.collectives)
hlo = jax.jit(total).lower(x).compile().as_text()
facts["hlo_collectives"] = sorted(
    re.findall(r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(", hlo)
)

# describe_tree: bytes per device of each leaf against one shard's bytes
params = {"b": jax.device_put(jnp.ones(16), NamedSharding(mesh, P())),
          "w": jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", None)))}
tree = shardviz.describe_tree(params)
facts["tree"] = dict(zip(tree.paths, (int(b) for b in tree.leaf_bytes)))
facts["jax_tree"] = {k: int(v.addressable_shards[0].data.nbytes) for k, v in params.items()}

# compare: two candidates of one step, in what-if children
args = (jax.ShapeDtypeStruct((16, 32), jnp.float32), jax.ShapeDtypeStruct((8, 16), jnp.float32))
line = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))  # the partitioner picks the output's layout
result = shardviz.compare(step, [("batch", line, (P(), P("data"))), ("contracted", line, (P("data"), P(None, "data")))],
                          args=args, hardware="h100", workers=2)
facts["failures"] = [f.error for f in result.failures]
facts["rows"] = {r.candidate: sorted({c.kind for c in r.lines}) for r in result.rows}
for name, specs in (("batch", (P(), P("data"))), ("contracted", (P("data"), P(None, "data")))):
    placed = [jax.device_put(jnp.ones(a.shape, a.dtype), NamedSharding(line, s)) for a, s in zip(args, specs)]
    text = jax.jit(step).lower(*placed).compile().as_text()
    facts.setdefault("jax_rows", {})[name] = sorted(set(
        re.findall(r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(", text)
    ))

# save_html: the page carries the wheel's own bundle inline
page = pathlib.Path(shardviz.save_html(x, "x.html"))
facts["page"] = str(page.resolve())
print("FACTS " + json.dumps(facts))
"""


def test_the_wheel_ships_the_bundle_the_types_marker_and_the_license(wheel_install):
    names = set(zipfile.ZipFile(wheel_install.wheel).namelist())
    for shipped in ("widget.js", "widget.css", "standalone.js"):
        assert f"shardviz/static/{shipped}" in names
    assert "shardviz/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel_install.wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text and "Classifier: Typing :: Typed" in text
    assert "Requires-Dist: jax" in text and "Project-URL: Source, " in text


def test_the_venv_path_reaches_no_node_or_npm(wheel_install):
    assert shutil.which("node", path=wheel_install.path) is None
    assert shutil.which("npm", path=wheel_install.path) is None


def test_describe_trace_tree_compare_and_save_html_from_the_installed_wheel(wheel_install, tmp_path):
    (tmp_path / "user_steps.py").write_text(textwrap.dedent(USER_STEPS))
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    done = wheel_install.run("user.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    facts = json.loads(done.stdout.split("FACTS ", 1)[1])
    assert facts["node"] is None and facts["npm"] is None
    site = pathlib.Path(facts["file"]).resolve()
    assert wheel_install.venv.resolve() in site.parents, "shardviz came from outside the venv"
    assert facts["version"] in wheel_install.wheel.name
    assert facts["tiles"] == facts["jax_tiles"] and len(facts["tiles"]) == 8  # 2 x 4 blocks of 2 x 2
    # the sum over the x-split axis is one all-reduce over x, as the compiled module says
    assert facts["collectives"] == facts["hlo_collectives"] == ["all-reduce"]
    # b: 16 f32 replicated = 64 bytes; w: 8 x 16 f32 split 2 ways on x = 4 x 16 x 4 = 256 bytes
    assert facts["tree"] == facts["jax_tree"] == {"b": 64, "w": 256}
    assert facts["failures"] == []
    # a batch split needs no collective; a contracted dimension split ends in a reduction
    assert facts["rows"] == facts["jax_rows"]
    assert facts["rows"]["batch"] == [] and facts["rows"]["contracted"]
    page = pathlib.Path(facts["page"]).read_text(encoding="utf-8")
    bundle = (site.parent / "static" / "standalone.js").read_text(encoding="utf-8")
    assert bundle[:400] in page and "<script src=" not in page


USER_TYPES = """import shardviz

layout = shardviz.describe
count: int = shardviz.describe
"""


def test_a_users_mypy_reads_the_installed_wheels_types(wheel_install, tmp_path):
    # a venv of the wheel alone: mypy needs only shardviz's own files, not JAX's, to judge this line
    bare = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True, timeout=300)
    python = str(bare / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", str(wheel_install.wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    (tmp_path / "user.py").write_text(USER_TYPES)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", python, "--no-incremental", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # typed (py.typed shipped): mypy knows describe returns a Layout; untyped it would say import-untyped
    assert "import-untyped" not in checked.stdout, checked.stdout
    assert 'Incompatible types in assignment (expression has type "def describe(' in checked.stdout, checked.stdout
    assert "-> Layout" in checked.stdout and checked.stdout.count("error:") == 1, checked.stdout
