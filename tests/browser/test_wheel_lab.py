"""The widget drawn in JupyterLab running from the installed wheel's venv (tests/wheel_install.py):
no node or npm on the server's PATH, no checkout on its kernel's path, the bundle the wheel ships."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import JupyterLab, open_notebook, start_jupyter_lab, stop_jupyter_lab
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.wheel]

CELLS = [
    """import shutil, sys
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz

assert shutil.which('node') is None and shutil.which('npm') is None, 'node is on the kernel PATH'
assert shardviz.__file__.startswith(sys.prefix), shardviz.__file__
mesh = jax.make_mesh((2, 4), ('x', 'y'))
x = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
w = shardviz.show(x)
w""",
]


@pytest.fixture(scope="module")
def wheel_lab(wheel_install: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    try:
        lab = start_jupyter_lab(
            tmp_path_factory.mktemp("wheel-lab"), python=wheel_install.python, path=wheel_install.path
        )
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield lab
    finally:
        stop_jupyter_lab(lab)


def test_the_installed_wheel_draws_a_widget_in_jupyterlab(wheel_lab: JupyterLab, browser: Any) -> None:
    with open_notebook(wheel_lab, browser, "wheel.ipynb", CELLS) as nb:
        nb.run_all(len(CELLS))
        picture = nb.output(0)
        # a 2 x 4 mesh: one device cell per device, drawn by the wheel's widget.js
        expect(picture.locator("[data-device-id]")).to_have_count(8)
        expect(picture.locator('[data-role="type"]')).to_have_text("float32[4@x,8@y]")
        nb.assert_healthy()
