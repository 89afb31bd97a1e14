"""``TreeLayout``: the public face of a tree's layout (data, payload, text, per-leaf layouts)."""

from __future__ import annotations

from typing import Any

import jax

from ..array.describe import describe
from ..array.layout import Layout
from ..errors import ShardingError
from ..text.ranges import format_bytes
from .model import TreeData
from .payload import tree_payload
from .report import DEFAULT_ROWS, render_tree


class TreeLayout(TreeData):
    """How every leaf of a pytree is laid out, and what each device holds. Immutable.

    Made by :func:`shardviz.describe_tree`. ``leaves`` lists every leaf in
    flatten order; ``device_bytes`` maps each device id to the bytes it holds
    (``device_bytes_by_kind`` per memory kind); ``audit`` says what costs
    most, what is needlessly replicated and what is uneven.
    """

    def to_json(self) -> dict[str, Any]:
        """The compact payload the widget sends; see docs/tree-payload.md."""
        return tree_payload(self)

    def to_text(
        self,
        *,
        width: int | None = None,
        color: bool | None = None,
        max_rows: int | None = DEFAULT_ROWS,
        sort: str = "flatten",
    ) -> str:
        """The terminal report; ``max_rows=None`` lists every leaf, ``sort="bytes"`` the largest first."""
        return render_tree(self, width=width, color=color, max_rows=max_rows, sort=sort)

    def __str__(self) -> str:
        return render_tree(self)

    def __repr__(self) -> str:
        mesh = ""
        if self.mesh is not None:
            mesh = ", mesh=" + repr(self.mesh.shape) + (" (abstract)" if self.mesh.abstract else "")
        return (
            f"TreeLayout({self.leaf_count} leaves, {self.array_count} arrays{mesh}, "
            f"devices={self.device_count}, total={format_bytes(self.total_bytes)})"
        )

    @property
    def tree(self) -> Any:
        """The tree this layout describes (its leaves are the very objects passed in)."""
        return jax.tree_util.tree_unflatten(self.treedef, self.sources)

    def leaf_layout(self, which: int | str) -> Layout:
        """The :class:`shardviz.Layout` of one leaf, by flatten index or dotted path."""
        i = self._leaf_index(which)
        g = int(self.leaf_group[i])
        if g < 0:
            raise ShardingError(f"leaf {self.paths[i]!r} is a {self.other_types[i]}, not an array: it has no layout")
        return describe(self.sources[i])

    def _leaf_index(self, which: int | str) -> int:
        if isinstance(which, str):
            try:
                return self.index_of(which)
            except KeyError:
                raise ShardingError(f"no leaf has the path {which!r}") from None
            except LookupError as err:
                raise ShardingError(str(err)) from None
        if isinstance(which, bool) or not isinstance(which, int):
            raise ShardingError(f"a leaf is chosen by index (int) or dotted path (str), not {type(which).__name__}")
        if not -self.leaf_count <= which < self.leaf_count:
            raise ShardingError(f"leaf index {which} is out of range for a tree of {self.leaf_count} leaves")
        return which % self.leaf_count
