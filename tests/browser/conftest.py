"""Fixtures of the real-browser tests: Debian's Chromium through Playwright
(sync API), a context cut off from the network, and a JupyterLab server with
a live kernel. Every process started here is ended at teardown, by id.

Helpers live in browser_support.py (a name of its own: tests/conftest.py is
also a module named `conftest`).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import (
    UI_TIMEOUT_MS,
    JupyterLab,
    OfflineContext,
    check_front_end_built,
    launch_chromium,
    require_chromium,
    start_jupyter_lab,
    stop_jupyter_lab,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything in this folder is a browser test (`-m browser` / `-m 'not browser'`)."""
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright. Fails (never skips) when it is missing."""
    try:
        require_chromium()
    except RuntimeError as err:
        pytest.fail(str(err))
    with launch_chromium() as chromium:
        yield chromium


@pytest.fixture
def offline_context(browser: Any) -> Iterator[OfflineContext]:
    """A light-theme context cut off from every network: offline, and every routed request aborted."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    context.set_default_timeout(UI_TIMEOUT_MS)
    cut = OfflineContext(context)

    def route(r: Any) -> None:
        if r.request.url in cut.allowed:
            r.continue_()
        else:
            cut.aborted.append(r.request.url)
            r.abort("internetdisconnected")

    context.route("**/*", route)
    context.set_offline(True)
    try:
        yield cut
    finally:
        context.close()


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """JupyterLab 4 on a free 127.0.0.1 port with a random token; kernels see 8 CPU devices."""
    check_front_end_built()
    try:
        lab = start_jupyter_lab(tmp_path_factory.mktemp("jupyter-lab"))
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield lab
    finally:
        stop_jupyter_lab(lab)
