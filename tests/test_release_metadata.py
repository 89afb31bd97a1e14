"""The release's facts, each written once and followed everywhere else: the version (src/shardviz/_version.py)
in the package, package.json and the CHANGELOG; the oldest JAX in pyproject.toml and the Makefile venv that
tests it; the LICENSE the metadata names."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import shardviz
from shardviz import _version

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_read_from_one_file():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/shardviz/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", _version.__version__)
    assert shardviz.__version__ == _version.__version__


def test_package_json_follows_the_package_version():
    assert json.loads((REPO / "package.json").read_text(encoding="utf-8"))["version"] == _version.__version__
    lock = json.loads((REPO / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["version"] == lock["packages"][""]["version"] == _version.__version__


def test_the_changelog_opens_with_this_release_in_keep_a_changelog_form():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert releases[0] == ("Unreleased", "")
    assert releases[1][0] == _version.__version__ and releases[1][1]
    assert f"[{_version.__version__}]: " in text and "keepachangelog.com" in text


def test_the_oldest_jax_declared_is_the_one_make_test_runs():
    (jax_requirement,) = [d for d in PYPROJECT["project"]["dependencies"] if re.match(r"jax\b", d)]
    lowest = re.search(r">=\s*([\d.]+)", jax_requirement)
    assert lowest is not None, jax_requirement
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    oldest = re.search(r"^JAX_OLDEST := (\S+)$", makefile, re.M)
    assert oldest is not None and oldest.group(1) == lowest.group(1)
    assert "test-jax-oldest" in re.search(r"^test: (.*)$", makefile, re.M).group(1)  # type: ignore[union-attr]


def test_the_license_file_is_the_license_the_metadata_names():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert (REPO / "src" / "shardviz" / "py.typed").exists()


def test_a_wheel_build_always_builds_the_bundle_afresh():
    hook = PYPROJECT["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    assert "skip-if-exists" not in hook  # a bundle left from an older checkout would ship silently
    assert set(hook["ensured-targets"]) == {
        f"src/shardviz/static/{name}" for name in ("widget.js", "widget.css", "standalone.js")
    }
