"""The kinds of result shardviz shows, in one place: array, program, tree, compare.

Each kind says what it accepts, the result it makes (``describe``,
``describe_tree``, or a ``trace`` already made), the text of that result, the
widget that shows it and the title of its saved page. ``api.kind_of``,
``render_text``, ``show``, ``save_html`` and ``shardviz.testing`` all read this
table; a new view is one more entry here and one in js/host/kinds.ts
(docs/payload.md, "Adding a kind"), which a test holds equal to this one.

The widgets are named, not imported: they need anywidget, and code that only
describes layouts should not load it. ``Kind.widget_class`` imports one on
first use, as ``shardviz.ShardingWidget`` does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .array.describe import describe
from .array.layout import Layout
from .array.payload import PAYLOAD_VERSION
from .compare.comparison import FORMAT_VERSION as COMPARE_PAYLOAD_VERSION
from .compare.comparison import Comparison
from .program.model import ProgramData
from .program.program import Program
from .program.result.payload import PROGRAM_PAYLOAD_VERSION
from .tree.describe import tree_result
from .tree.payload import TREE_PAYLOAD_VERSION
from .tree.tree import TreeLayout

Result = Layout | TreeLayout | Program | Comparison


@dataclass(frozen=True)
class Kind:
    """One kind of result and everything the rest of shardviz needs to know of it."""

    name: str  # the payload's "kind", and what kind_of answers
    version: int  # the payload's "version" (js/host/kinds.ts draws the same)
    result: type  # the result class
    accepts: tuple[type, ...]  # what else is taken as this kind (besides its result)
    build: Callable[..., Any]  # x -> result; only the array kind takes describe's keywords
    text: Callable[..., str]  # (result, *, width, color) -> the terminal text
    widget: str  # "module:Class" of its widget, imported on first use
    title: Callable[[dict[str, Any]], str]  # a saved page's title, from the payload

    def widget_class(self) -> type:
        module, _, name = self.widget.partition(":")
        return getattr(importlib.import_module(module), name)


def _as_is(x: Any) -> Any:
    return x


def _array_title(payload: dict[str, Any]) -> str:
    # Also the title of a payload of no known kind.
    return str(payload.get("title") or payload.get("type_str") or payload.get("kind", "layout"))


ARRAY = Kind(
    name="array",
    version=PAYLOAD_VERSION,
    result=Layout,
    accepts=(jax.Array, jax.ShapeDtypeStruct, jax.sharding.Sharding, np.ndarray, np.generic),
    build=describe,
    text=Layout.to_text,
    widget="shardviz.widgets.array:ShardingWidget",
    title=_array_title,
)
PROGRAM = Kind(
    name="program",
    version=PROGRAM_PAYLOAD_VERSION,
    result=Program,
    accepts=(ProgramData,),  # what shardviz.trace made (or a record read back); never guessed from a value
    build=_as_is,
    text=Program.render,
    widget="shardviz.widgets.program:ProgramWidget",
    title=lambda payload: f"program {payload['name']}",
)
TREE = Kind(
    name="tree",
    version=TREE_PAYLOAD_VERSION,
    result=TreeLayout,
    accepts=(),  # any pytree of more than one leaf (see kind_of)
    build=tree_result,
    text=TreeLayout.to_text,
    widget="shardviz.widgets.tree:TreeWidget",
    title=lambda payload: f"{payload['leaves']['count']} leaves",
)

COMPARE = Kind(
    name="compare",
    version=COMPARE_PAYLOAD_VERSION,
    result=Comparison,
    accepts=(),  # made by shardviz.compare or shardviz.diff
    build=_as_is,
    text=Comparison.render,
    widget="shardviz.widgets.compare:ComparisonWidget",
    title=lambda payload: f"compare {payload['step']}",
)

KINDS: dict[str, Kind] = {kind.name: kind for kind in (ARRAY, PROGRAM, TREE, COMPARE)}


def kind_named(name: Any) -> Kind:
    """The kind a payload's ``kind`` names; the array kind for anything else (its view says what is wrong)."""
    return KINDS.get(name, ARRAY) if isinstance(name, str) else ARRAY


def page_title(payload: dict[str, Any]) -> str:
    """The title of a saved page showing ``payload``."""
    return kind_named(payload.get("kind")).title(payload)
