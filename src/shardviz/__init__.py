"""shardviz: see how JAX lays arrays out on devices.

The engines are pure (JAX objects in, an immutable result with ``to_json()``
out): ``describe`` for one array, ``describe_tree`` for a pytree of them,
``trace`` for a jitted program. ``render_text`` draws a terminal picture.
The widgets (``ShardingWidget``, ``TreeWidget``, ``ProgramWidget``),
``show`` and ``save_html`` need the widget machinery
(anywidget). Every public name is imported on first use, so ``import
shardviz`` (which the pytest plugin of ``shardviz.testing`` does in every
test run) costs nothing until a name is read, and a script that only
describes layouts never loads the widget machinery.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any

from .errors import ShardingError

try:
    __version__ = importlib.metadata.version("shardviz")
except importlib.metadata.PackageNotFoundError:  # a source checkout on sys.path, never installed
    from ._version import __version__ as __version__

# Public name -> the module that defines it, imported when the name is first read.
_LAZY = {
    "render_text": "shardviz.api",
    "describe": "shardviz.array.describe",
    "AdaptedSpec": "shardviz.array.edits",
    "adapt_spec": "shardviz.array.edits",
    "parse_mesh": "shardviz.array.grammar",
    "parse_spec": "shardviz.array.grammar",
    "Layout": "shardviz.array.layout",
    "DeviceInfo": "shardviz.array.model",
    "MeshInfo": "shardviz.array.model",
    "Tile": "shardviz.array.model",
    "Candidate": "shardviz.compare.candidates",
    "LogicalRules": "shardviz.compare.candidates",
    "Comparison": "shardviz.compare.comparison",
    "compare": "shardviz.compare.run",
    "diff": "shardviz.compare.run",
    "search": "shardviz.search",
    "Estimate": "shardviz.plan.estimate",
    "estimate": "shardviz.plan.estimate",
    "HARDWARE": "shardviz.plan.hardware",
    "Hardware": "shardviz.plan.hardware",
    "WhatIf": "shardviz.program.whatif.parent",
    "trace": "shardviz.program.trace",
    "Program": "shardviz.program.program",
    "describe_tree": "shardviz.tree.describe",
    "RulesApplied": "shardviz.tree.rules",
    "apply_rules": "shardviz.tree.rules",
    "TreeLayout": "shardviz.tree.tree",
    "KINDS": "shardviz.kinds",
    # each kind's widget as kinds.py names it (kinds.py imports JAX: a test keeps the two equal)
    "ShardingWidget": "shardviz.widgets.array",
    "ProgramWidget": "shardviz.widgets.program",
    "TreeWidget": "shardviz.widgets.tree",
    "ComparisonWidget": "shardviz.widgets.compare",
    "show": "shardviz.widgets.show",
    "save_html": "shardviz.export.page",
}

__all__ = [
    "HARDWARE",
    "AdaptedSpec",
    "Candidate",
    "Comparison",
    "ComparisonWidget",
    "DeviceInfo",
    "Estimate",
    "Hardware",
    "Layout",
    "LogicalRules",
    "MeshInfo",
    "Program",
    "ProgramWidget",
    "RulesApplied",
    "ShardingError",
    "ShardingWidget",
    "Tile",
    "TreeLayout",
    "TreeWidget",
    "WhatIf",
    "adapt_spec",
    "apply_rules",
    "compare",
    "describe",
    "describe_tree",
    "diff",
    "estimate",
    "parse_mesh",
    "parse_spec",
    "render_text",
    "save_html",
    "search",
    "show",
    "trace",
]

if TYPE_CHECKING:
    from .api import render_text
    from .array.describe import describe
    from .array.edits import AdaptedSpec, adapt_spec
    from .array.grammar import parse_mesh, parse_spec
    from .array.layout import Layout
    from .array.model import DeviceInfo, MeshInfo, Tile
    from .compare.candidates import Candidate, LogicalRules
    from .compare.comparison import Comparison
    from .compare.run import compare, diff
    from .export.page import save_html
    from .kinds import KINDS as KINDS
    from .plan.estimate import Estimate, estimate
    from .plan.hardware import HARDWARE, Hardware
    from .program.program import Program
    from .program.trace import trace
    from .program.whatif.parent import WhatIf
    from .search import search
    from .tree.describe import describe_tree
    from .tree.rules import RulesApplied, apply_rules
    from .tree.tree import TreeLayout
    from .widgets.array import ShardingWidget
    from .widgets.compare import ComparisonWidget
    from .widgets.program import ProgramWidget
    from .widgets.show import show
    from .widgets.tree import TreeWidget


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shardviz' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # read once: later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
