"""Which frames of a call stack are the user's: not shardviz's, JAX's, a library's or Python's.

JAX's own filter (``source_info_util``) drops JAX's frames, but it takes
every other file for the user's: shardviz itself (``trace`` calls
``lower()``, and XLA records that call), Flax's ``linear.py``, the standard
library. A line shown as "yours" must be one you wrote, so stacks are
filtered once more here; the whole stack is kept beside the chosen frame.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import jax

from ..model import SourceLocation

_SHARDVIZ = str(Path(__file__).resolve().parents[1])
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


@cache
def _foreign_roots() -> tuple[str, ...]:
    """Folders whose files are never the user's: shardviz, JAX and jaxlib, Python's standard library."""
    roots = {_SHARDVIZ, str(Path(jax.__file__).resolve().parent)}
    jaxlib_file = getattr(sys.modules.get("jaxlib"), "__file__", None)
    if jaxlib_file:
        roots.add(str(Path(jaxlib_file).resolve().parent))
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(str(Path(path).resolve()))
    return tuple(sorted(roots))


@cache
def is_user_file(file: str) -> bool:
    """False for shardviz's, JAX's, an installed library's and the standard library's files.

    An installed package (anything under ``site-packages``) counts as a
    library even when it is the user's own: a line of it is still not the
    line in front of them.
    """
    if not file or file.startswith("<frozen"):
        return False
    if any(part in file for part in _INSTALLED):
        return False
    try:
        resolved = str(Path(file).resolve())
    except (OSError, RuntimeError):
        resolved = file
    return not any(resolved == root or resolved.startswith(root + os.sep) for root in _foreign_roots())


def user_frame(stack: Sequence[SourceLocation]) -> SourceLocation | None:
    """The innermost frame of ``stack`` (innermost first) in the user's own code, or None."""
    return next((f for f in stack if is_user_file(f.file)), None)
