"""Where the built front end lives: the bundle the widgets load and the pages inline.

The bundle is built from ``js/`` by esbuild into ``static/`` (not committed);
a missing file gets one clear message saying how to build it.
"""

from __future__ import annotations

import pathlib

STATIC = pathlib.Path(__file__).parent / "static"


def bundle_path(name: str) -> pathlib.Path:
    """The built file ``name`` (``widget.js``, ``widget.css``, ``standalone.js``)."""
    path = STATIC / name
    if not path.exists():
        raise RuntimeError(
            f"the shardviz front end is not built ({path} is missing); run `make install` "
            "or `npm ci && npm run build` in the repository"
        )
    return path


def bundle_text(name: str) -> str:
    """The built file ``name`` as text, or (where it is not built) a module that fails saying how to build it.

    Widgets take the text, not the path: anywidget keeps every widget given a path alive, connected to the
    file's change signal, so closed widgets were never freed.
    """
    path = STATIC / name
    if path.exists():
        return path.read_text(encoding="utf-8")
    missing = f"the shardviz front end is not built ({path} is missing); run `make install`"
    return f"throw new Error({missing!r});" if name.endswith(".js") else f"/* {missing} */"
