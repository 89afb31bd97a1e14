"""The tree (model) view's widget: every leaf's sharding and every device's
memory, re-sharded live by rules.

The front end edits one control, ``rules_text`` (``GLOB = SPEC`` per line);
each edit applies the rules to the tree the widget was given (with
``jax.device_put`` for arrays, new ShapeDtypeStructs for abstract leaves;
the user's leaves are never changed) and lays the result out again with
:func:`shardviz.describe_tree`. A bad rule names its line and keeps the last
good picture.
"""

from __future__ import annotations

from typing import Any

from ..errors import ShardingError
from ..tree.describe import tree_result
from ..tree.state import SOURCE, TreeState
from ..tree.tree import TreeLayout
from .base import ViewWidget
from .naming import caller_name


class TreeWidget(ViewWidget[TreeState]):
    """A live table of a pytree's leaves, per-device memory and an audit, with rules.

    ``TreeWidget(tree, rules=...)`` takes anything :func:`shardviz.describe_tree`
    accepts; ``rules`` (text, one ``GLOB = SPEC`` per line) starts it re-sharded.
    ``name=`` is the tree's variable name for the rules' copy code (found in the
    caller's namespace when not given).
    """

    CONTROLS = ("rules_text",)

    def __init__(self, tree: Any, *, rules: str = "", name: str | None = None) -> None:
        layout = tree_result(tree)
        original = layout.tree if tree is layout else tree
        name = name if name is not None else caller_name(tree)
        state = TreeState(original=original, rules_text="", applied=None, tree_layout=layout, tree_name=name)
        if rules:
            state, _ = state.with_rules(rules)
        super().__init__(state)

    @property
    def tree_layout(self) -> TreeLayout:
        """The TreeLayout now shown (the last good one while an error shows)."""
        return self.state.tree_layout

    @property
    def tree(self) -> Any:
        """The tree under the current rules; the tree passed in is never changed."""
        return self.state.tree

    @property
    def rules_text(self) -> str:
        """The rules in force."""
        return str(self._text("rules_text"))

    @rules_text.setter
    def rules_text(self, text: str) -> None:
        self.apply_edit(rules_text=text)  # as the front end's edit: a refusal shows, nothing raises

    def _editor_texts(self, state: TreeState) -> dict[str, str]:
        return {"rules_text": state.rules_text}

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return SOURCE

    def _edit(self, state: TreeState, edits: dict[str, Any]) -> tuple[TreeState, str]:
        return state.with_rules(edits.get("rules_text", ""))

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """A leaf's layout for the front end, for leaves it cannot lay out itself."""
        if content.get("kind") != "leaf_layout":
            return None
        leaf = content.get("leaf")
        reply: dict[str, Any] = {"kind": "leaf_layout", "leaf": leaf}
        if not isinstance(leaf, int) or isinstance(leaf, bool):
            return {**reply, "error": f"leaf must be a leaf index, not {leaf!r}"}
        try:
            return {**reply, "payload": self.tree_layout.leaf_layout(leaf).to_json()}
        except ShardingError as err:
            return {**reply, "error": str(err)}


__all__ = ["TreeState", "TreeWidget"]
