"""The docs site (tools/docs_site.py, ``make docs``): built by mkdocs with warnings as errors, an API
reference entry for every public name, and a course page that, opened from disk with the network cut
off, redraws a picture when its spec is edited, as JAX lays the array out.

The site build loads the machine's two cores: run before tests/browser/test_lab_editing.py, it made the
kernel's answers late enough there to wipe an axis name being typed (a bug of the mesh's rows, fixed on
2026-12-02 and tested by test_typing_in_an_axis_row_outlives_a_kernel_answer_that_comes_later)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from browser_support import REPO, SRC, OfflineContext, check_front_end_built
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from playwright.sync_api import expect

import shardviz
import shardviz.compare
import shardviz.testing

pytestmark = pytest.mark.browser

NOTEBOOK = REPO / "notebooks" / "01-data-sharding.ipynb"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The site with one course notebook exported (``make docs`` exports them all)."""
    check_front_end_built()
    base = tmp_path_factory.mktemp("docs")
    (base / "notebooks").mkdir()
    shutil.copy(NOTEBOOK, base / "notebooks" / NOTEBOOK.name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update(JUPYTER_RUNTIME_DIR=str(base / "runtime"), IPYTHONDIR=str(base / "ipython"), JAX_PLATFORMS="cpu")
    exported = subprocess.run(
        [sys.executable, "-m", "shardviz.export.course", "notebooks", "course", "--timeout", "120"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert exported.returncode == 0, f"the course export failed:\n{exported.stdout}\n{exported.stderr}"
    built = subprocess.run(
        [sys.executable, str(REPO / "tools" / "docs_site.py"), "build", "site", "--course", "course"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # mkdocs runs --strict: any warning (a broken link, a reference mkdocstrings cannot resolve) fails it
    assert built.returncode == 0, f"the docs build failed:\n{built.stdout[-4000:]}\n{built.stderr[-6000:]}"
    assert "WARNING -" not in built.stderr and "Documentation built" in built.stderr, built.stderr[-4000:]
    return base / "site"


@pytest.mark.parametrize("module", [shardviz, shardviz.testing, shardviz.compare], ids=lambda m: m.__name__)
def test_every_public_name_has_an_entry_in_the_api_reference(site: pathlib.Path, module: object) -> None:
    page = (site / "reference" / f"{module.__name__}.html").read_text(encoding="utf-8")  # type: ignore[attr-defined]
    missing = [n for n in module.__all__ if f'id="{module.__name__}.{n}"' not in page]  # type: ignore[attr-defined]
    assert not missing, f"no API reference entry for {missing}"
    # the entries carry the docstrings, not only the names
    assert "once per candidate (a what-if child each, in parallel)" in page or module is not shardviz.compare


def test_the_reference_documents_the_names_users_look_up(site: pathlib.Path) -> None:
    package = (site / "reference" / "shardviz.html").read_text(encoding="utf-8")
    assert 'id="shardviz.Program.estimate"' in package and 'id="shardviz.Comparison.best"' in package
    testing = (site / "reference" / "shardviz.testing.html").read_text(encoding="utf-8")
    assert 'id="shardviz.testing.assert_collectives"' in testing


def test_the_guides_and_the_course_are_pages_of_the_site(site: pathlib.Path) -> None:
    for guide in REPO.joinpath("docs").glob("*.md"):
        assert (site / f"{guide.stem}.html").exists(), guide.name
    course = (site / "course.html").read_text(encoding="utf-8")
    assert f'href="course/{NOTEBOOK.stem}.html"' in course
    assert (site / "course" / f"{NOTEBOOK.stem}.html").exists()


def test_a_course_page_of_the_site_redraws_an_edited_spec_offline(
    site: pathlib.Path, offline_context: OfflineContext
) -> None:
    page, watch = offline_context.open(site / "course" / f"{NOTEBOOK.stem}.html")
    # the notebook's second picture: arange(32).reshape(4, 8) on a 2 x 4 mesh, P('x', 'y')
    root = page.locator("[data-shardviz-root]").nth(1)
    expect(root.locator('[data-role="type"]')).to_have_text("float32[4@x,8@y]")
    field = root.locator('[data-role="spec-input"]')
    field.fill("P(None, ('x', 'y'))")
    field.press("Enter")
    mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices()[:8])
    placed = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P(None, ("x", "y"))))
    expect(root.locator('[data-role="type"]')).to_have_text(str(jax.typeof(placed)))
    # every column on its own device: 8 blocks of 4 x 1, as JAX places them
    assert len({tuple((s.start, s.stop) for s in shard.index) for shard in placed.addressable_shards}) == 8
    watch.assert_clean()
    assert not offline_context.aborted, f"the page asked the network for {offline_context.aborted}"
