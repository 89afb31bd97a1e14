"""The model view's edit state (pure: no widget code): the user's tree, the rules
in force and the layout under them, and what a rules edit does.

A rules edit re-shards the original tree with :func:`apply_rules`
(``jax.device_put`` for arrays, new ShapeDtypeStructs for abstract leaves;
the user's tree is never changed) and describes the result. The payload is
the TreeLayout's with the rules in force and their copy code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from ..array.edits import EditError
from ..errors import ShardingError
from .code import code_tree_name, rules_code
from .describe import describe_tree
from .rules import RulesApplied, apply_rules, rules_notice
from .tree import TreeLayout

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
        # The browser writes the same copy code for a rules edit it answers first.
        payload["code_tree"] = code_tree_name(self.tree_name)
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
