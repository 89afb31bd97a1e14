"""The public ``Layout``: the pure layout data, plus its payload and its picture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..text.picture import render_layout
from .model import LayoutData
from .payload import layout_payload


@dataclass(frozen=True, eq=False)
class Layout(LayoutData):
    """How one array (real or hypothetical) is laid out over devices.

    ``to_json()`` is the payload the widget draws (docs/payload.md);
    ``to_text()`` the terminal picture (``str(layout)`` at the terminal's width).
    """

    def to_json(self) -> dict[str, Any]:
        """The compact payload the widget sends; see docs/payload.md."""
        return layout_payload(self)

    def to_text(self, *, width: int | None = None, color: bool | None = None) -> str:
        """The terminal picture at ``width`` columns; ``color`` as in ``shardviz.render_text``."""
        return render_layout(self, width=width, color=color)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        mesh = "" if self.mesh is None else f", mesh={self.mesh.shape}"
        counts = f"tiles={self.blocks.tile_count}, devices={self.device_count}"
        return f"Layout({self.type_str}, memory_kind={self.memory_kind!r}{mesh}, {counts})"
