"""shardviz: see how JAX lays arrays out on devices.

The engines are pure (JAX objects in, an immutable result with ``to_json()``
out): ``describe`` for one array, ``describe_tree`` for a pytree of them,
``trace`` for a jitted program. ``render_text`` draws a terminal picture.
The widgets (``ShardingWidget``, ``TreeWidget``, ``ProgramWidget``),
``show`` and ``save_html`` need the widget machinery
(anywidget), so they are imported on first use: a script that only
describes layouts does not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .api import render_text
from .engine.describe import describe
from .engine.edits import AdaptedSpec, adapt_spec
from .engine.grammar import parse_mesh, parse_spec
from .engine.layout import Layout
from .engine.model import DeviceInfo, MeshInfo, Tile
from .errors import ShardingError
from .kinds import KINDS
from .plan.estimate import Estimate, estimate
from .plan.hardware import HARDWARE, Hardware
from .plan.whatif import WhatIf, trace
from .program.program import Program
from .tree.describe import describe_tree
from .tree.rules import RulesApplied, apply_rules
from .tree.tree import TreeLayout

__version__ = "0.1.0"

__all__ = [
    "HARDWARE",
    "AdaptedSpec",
    "DeviceInfo",
    "Estimate",
    "Hardware",
    "Layout",
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
    "describe",
    "describe_tree",
    "estimate",
    "parse_mesh",
    "parse_spec",
    "render_text",
    "save_html",
    "show",
    "trace",
]

# Public names imported on first use: each kind's widget (kinds.py names it), show and save_html.
_LAZY = {
    **{name: module for module, _, name in (kind.widget.partition(":") for kind in KINDS.values())},
    "show": "shardviz.widgets.show",
    "save_html": "shardviz.export.page",
}

if TYPE_CHECKING:
    from .export.page import save_html
    from .widgets.array import ShardingWidget
    from .widgets.program import ProgramWidget
    from .widgets.show import show
    from .widgets.tree import TreeWidget


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'shardviz' has no attribute {name!r}")
