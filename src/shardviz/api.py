"""What the public functions accept, in one place: an array-like (laid out
with ``describe``), a pytree of them (``describe_tree``), or a result already
worked out (a Layout, a TreeLayout, or a Program from ``trace``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .engine.describe import describe
from .engine.layout import Layout
from .errors import ShardingError
from .program.program import Program
from .text.picture import render_layout
from .tree.describe import describe_tree
from .tree.tree import TreeLayout

Result = Layout | TreeLayout | Program


def kind_of(x: Any) -> str:
    """Which view shows ``x``: ``"array"``, ``"tree"`` or ``"program"``."""
    if isinstance(x, Layout):
        return "array"
    if isinstance(x, TreeLayout):
        return "tree"
    if isinstance(x, Program):
        return "program"
    if isinstance(x, (jax.Array, jax.ShapeDtypeStruct, jax.sharding.Sharding, np.ndarray, np.generic)):
        return "array"
    if x is None or jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(x)):
        return "array"  # a lone leaf: describe() says what it cannot lay out
    return "tree"


def as_result(x: Any, **describe_kwargs: Any) -> Result:
    """The result that shows ``x``; ``describe_kwargs`` (shape=, dtype=, platform=) go to describe."""
    kind = kind_of(x)
    if kind == "array":
        return describe(x, **describe_kwargs)
    if describe_kwargs:
        raise ShardingError(f"{', '.join(describe_kwargs)}= go with one array or sharding, not with a {kind}")
    if isinstance(x, (TreeLayout, Program)):
        return x
    return describe_tree(x)


def render_text(
    x: Any,
    *,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    width: int | None = None,
    color: bool | None = None,
) -> str:
    """The terminal picture of ``x``: a Layout, TreeLayout or Program, an
    array, a ShapeDtypeStruct, a Sharding with ``shape=``, or a pytree of arrays.
    ``width`` defaults to the terminal's; ``color=None`` colours only on a
    terminal (``NO_COLOR``/``FORCE_COLOR``)."""
    kwargs = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    result = as_result(x, **kwargs)
    if isinstance(result, TreeLayout):
        return result.to_text(width=width, color=color)
    if isinstance(result, Program):
        return result.render(width=width, color=color)
    return render_layout(result, width=width, color=color)
