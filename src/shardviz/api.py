"""What the public functions accept, in one place: an array-like (laid out
with ``describe``), a pytree of them (``describe_tree``), or a result already
worked out (a Layout, a TreeLayout, or a Program from ``trace``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from .errors import ShardingError
from .kinds import ARRAY, KINDS, TREE, Kind, Result

__all__ = ["Result", "as_result", "kind_of", "render_text"]


def _kind(x: Any) -> Kind:
    for kind in KINDS.values():
        if isinstance(x, kind.result):
            return kind
    for kind in KINDS.values():
        if kind.accepts and isinstance(x, kind.accepts):
            return kind
    if x is None or jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(x)):
        return ARRAY  # a lone leaf: describe() says what it cannot lay out
    return TREE


def kind_of(x: Any) -> str:
    """Which view shows ``x``: ``"array"``, ``"tree"`` or ``"program"``."""
    return _kind(x).name


def as_result(x: Any, **describe_kwargs: Any) -> Result:
    """The result that shows ``x``; ``describe_kwargs`` (shape=, dtype=, platform=) go to describe."""
    kind = _kind(x)
    if describe_kwargs and kind is not ARRAY:
        raise ShardingError(f"{', '.join(describe_kwargs)}= go with one array or sharding, not with a {kind.name}")
    return kind.build(x, **describe_kwargs)


def render_text(
    x: Any,
    *,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    width: int | None = None,
    color: bool | None = None,
) -> str:
    """The terminal text of ``x``: a Layout, TreeLayout or Program (the one
    name for the text of any result; ``str(result)`` is the same at the
    terminal's width), an array, a ShapeDtypeStruct, a Sharding with
    ``shape=``, or a pytree of arrays. ``width`` defaults to the terminal's;
    ``color=None`` colours only on a terminal (``NO_COLOR``/``FORCE_COLOR``)."""
    kwargs = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    result = as_result(x, **kwargs)
    return _kind(result).text(result, width=width, color=color)
