"""A released shardviz as a user gets it: the wheel installed into a new venv whose PATH has no node or npm.

The wheel is ``$SHARDVIZ_WHEEL`` (what ``make dist`` built: ``make test`` passes it), else one built here
from this checkout with ``python -m build --wheel`` (which needs node: the bundle is built fresh). The venv
gets only the wheel's own dependencies and JupyterLab (for the browser test), from pip's cache where it has
them. PATH is the venv's bin folder and a folder of links to the few system tools a server needs, so a
node or npm anywhere on this machine stays out of reach.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parents[1]
# what a Jupyter server and pip call by name; node and npm are deliberately not here
SYSTEM_TOOLS = ("sh", "uname")
JUPYTERLAB = "jupyterlab>=4.2,<5"


@dataclass(frozen=True)
class WheelInstall:
    wheel: pathlib.Path
    venv: pathlib.Path
    python: str
    path: str  # the PATH every process of the venv runs with

    def env(self) -> dict[str, str]:
        """The environment of a user's process: this machine's, less anything that reaches this checkout."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "XLA_FLAGS")}
        env["PATH"] = self.path
        env["JAX_PLATFORMS"] = "cpu"
        return env

    def run(self, *args: str, cwd: pathlib.Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, *args], cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout
        )


def the_wheel(out: pathlib.Path) -> pathlib.Path:
    given = os.environ.get("SHARDVIZ_WHEEL")
    if given:
        wheel = pathlib.Path(given).resolve()
        if not wheel.is_file():
            raise RuntimeError(f"SHARDVIZ_WHEEL={given} is no file: run `make dist` first")
        return wheel
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if built.returncode != 0:
        raise RuntimeError(f"python -m build --wheel failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")
    (wheel,) = out.glob("shardviz-*.whl")
    return wheel


def no_node_path(venv: pathlib.Path, links: pathlib.Path) -> str:
    links.mkdir()
    for tool in SYSTEM_TOOLS:
        found = shutil.which(tool)
        if found:
            (links / tool).symlink_to(found)
    return os.pathsep.join([str(venv / "bin"), str(links)])


def install_wheel(base: pathlib.Path) -> WheelInstall:
    """The wheel in a fresh venv under ``base``, with JupyterLab beside it. Raises RuntimeError on failure."""
    wheel = the_wheel(base / "dist")
    venv = base / "venv"
    # the interpreter this venv is made from is the one running the tests (a venv's own or the system's)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = WheelInstall(wheel, venv, str(venv / "bin" / "python"), no_node_path(venv, base / "system-tools"))
    done = install.run(
        "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel), JUPYTERLAB, cwd=base, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip install of {wheel.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return install
