"""The comparison view's widget: candidate plans ranked side by side (docs/comparing.md).

The front end edits one control, ``rules_edit`` (JSON: a candidate's name and
its new ``GLOB = SPEC`` rules); each edit traces that candidate again, alone,
in a what-if child, and ranks the comparison anew. A refused edit (bad rules,
a failed trace) names what went wrong and keeps the last good comparison.
"""

from __future__ import annotations

from typing import Any

from ..compare.comparison import Comparison
from ..compare.state import SOURCE, CompareState
from ..errors import ShardingError
from .base import ViewWidget


class ComparisonWidget(ViewWidget[CompareState]):
    """A ranked, sortable table of candidates with their bars and memory headroom; two chosen side by side."""

    CONTROLS = ("rules_edit",)

    def __init__(self, comparison: Comparison) -> None:
        if not isinstance(comparison, Comparison):
            raise ShardingError(
                f"ComparisonWidget shows a shardviz Comparison (shardviz.compare), not a {type(comparison).__name__}"
            )
        super().__init__(CompareState(comparison))

    @property
    def comparison(self) -> Comparison:
        """The comparison now shown (the last good one while an error shows)."""
        return self.state.comparison

    @property
    def rules_edit(self) -> str:
        """The control's text in force: always empty, since an edit is answered by the comparison itself."""
        return str(self._text("rules_edit"))

    def _editor_texts(self, state: CompareState) -> dict[str, str]:
        return {"rules_edit": ""}

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return SOURCE

    def _edit(self, state: CompareState, edits: dict[str, Any]) -> tuple[CompareState, str]:
        return state.with_edit(edits.get("rules_edit", ""))


__all__ = ["ComparisonWidget"]
