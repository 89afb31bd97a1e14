"""Search a step's plans: meshes and per-parameter strategies explored analytically, the best few
traced in what-if children with ``compare`` (docs/searching.md). Pure: no widget imports.

``shardviz.search`` is both this package and the function, as ``shardviz.compare`` is: the
package itself calls :func:`search`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .run import Considered, SearchSpace, search

__all__ = ["Considered", "SearchSpace", "search"]


class _CallablePackage(types.ModuleType):
    """``shardviz.search(step, args, ...)`` whichever of the package or the function it names."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return search(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
