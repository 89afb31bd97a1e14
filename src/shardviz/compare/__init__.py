"""Candidate plans side by side: ``compare`` traces a step on each candidate mesh and layout (what-if
children in parallel) and ranks them by step time and memory on named hardware; ``diff`` sets two
traces of one function side by side. Pure: no widget imports (docs/comparing.md).

``shardviz.compare`` is both this package and the function: importing a submodule sets the
package as an attribute of ``shardviz``, so the package itself calls :func:`compare`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .candidates import Candidate, LogicalRules
from .comparison import Comparison
from .rows import Failure, LineChange, LineCollectives, Row
from .run import compare, diff

__all__ = [
    "Candidate",
    "Comparison",
    "Failure",
    "LineChange",
    "LineCollectives",
    "LogicalRules",
    "Row",
    "compare",
    "diff",
]


class _CallablePackage(types.ModuleType):
    """``shardviz.compare(step, candidates, ...)`` whichever of the package or the function it names."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
