"""The tree (model) view's widget: every leaf's sharding and every device's
memory, re-sharded live by rules.

The front end edits one trait, ``rules_text`` (``GLOB = SPEC`` per line);
each edit applies the rules to the tree the widget was given (with
``jax.device_put`` for arrays, new ShapeDtypeStructs for abstract leaves;
the user's leaves are never changed) and lays the result out again with
:func:`shardviz.describe_tree`. A bad rule names its line and keeps the last
good picture.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import traitlets

from ..engine.edits import EditError
from ..errors import ShardingError
from ..tree.code import rules_code
from ..tree.describe import describe_tree
from ..tree.rules import RulesApplied, apply_rules, rules_notice
from ..tree.tree import TreeLayout
from .base import ViewWidget
from .naming import caller_name

SOURCE = "rules"


@dataclass(frozen=True, eq=False)
class TreeState:
    """What the tree view shows: the user's tree, the rules in force and the result."""

    original: Any
    rules_text: str
    applied: RulesApplied | None
    tree_layout: TreeLayout
    # The user's variable for the tree, read by the rules' copy code (None: a placeholder).
    tree_name: str | None = None

    @property
    def tree(self) -> Any:
        """The tree under the current rules (the original when there are none)."""
        return self.original if self.applied is None else self.applied.tree

    @functools.cached_property
    def payload(self) -> dict[str, Any]:
        payload = self.tree_layout.to_json()
        payload["rules_text"] = self.rules_text
        payload["code"] = rules_code(self.applied, tree_name=self.tree_name) if self.applied is not None else ""
        return payload

    def with_rules(self, text: str) -> tuple[TreeState, str]:
        if not text.strip():
            return replace(self, rules_text="", applied=None, tree_layout=describe_tree(self.original)), ""
        try:
            applied = apply_rules(self.original, text)
            layout = describe_tree(applied.tree)
        except ShardingError as err:
            raise EditError(str(err), SOURCE) from None
        notice = rules_notice(applied)
        return replace(self, rules_text=text, applied=applied, tree_layout=layout), notice


class TreeWidget(ViewWidget[TreeState]):
    """A live table of a pytree's leaves, per-device memory and an audit, with rules.

    ``TreeWidget(tree, rules=...)`` takes anything :func:`shardviz.describe_tree`
    accepts; ``rules`` (text, one ``GLOB = SPEC`` per line) starts it re-sharded.
    ``name=`` is the tree's variable name for the rules' copy code (found in the
    caller's namespace when not given).
    """

    rules_text = traitlets.Unicode("").tag(sync=True)

    EDITABLE = ("rules_text",)

    def __init__(self, tree: Any, *, rules: str = "", name: str | None = None) -> None:
        layout = tree if isinstance(tree, TreeLayout) else describe_tree(tree)
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

    def _editor_texts(self, state: TreeState) -> dict[str, str]:
        return {"rules_text": state.rules_text}

    def _edit_source(self, edits: dict[str, Any]) -> str:
        return SOURCE

    def _edit(self, state: TreeState, edits: dict[str, Any]) -> tuple[TreeState, str]:
        return state.with_rules(edits.get("rules_text", ""))

    def _answer(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """A leaf's layout for the front end, for leaves it cannot lay out itself.

        ``{"kind": "apply_rules", "rules_text": ...}`` applies rules the
        trait cannot carry: the text the trait already holds, sent again to
        clear a refused edit's error (a model sends only changed traits).
        """
        if content.get("kind") == "apply_rules":
            text = content.get("rules_text")
            if isinstance(text, str):
                self.apply_edit(rules_text=text)
            return None
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
