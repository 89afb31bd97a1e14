"""What the comparison view shows: a Comparison, and each candidate's rules text where it has one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ShardingError
from .comparison import Comparison
from .run import CompareOrigin, retrace

SOURCE = "rules"


def candidate_rules(comparison: Comparison) -> dict[str, str]:
    """Each candidate's rules text, for those given as ``GLOB = SPEC`` text (the ones the view edits)."""
    origin = comparison.origin
    if not isinstance(origin, CompareOrigin):
        return {}
    return {c.name: c.shardings for c in origin.candidates if isinstance(c.shardings, str)}


@dataclass(frozen=True, eq=False)
class CompareState:
    comparison: Comparison

    @property
    def payload(self) -> dict[str, Any]:
        payload = self.comparison.to_json()
        payload["rules"] = candidate_rules(self.comparison)
        payload["editable"] = isinstance(self.comparison.origin, CompareOrigin)
        return payload

    def with_edit(self, text: str) -> tuple[CompareState, str]:
        """An edit ``{"candidate": name, "rules": text}`` (JSON): that candidate traced again, alone."""
        try:
            edit = json.loads(text)
        except ValueError:
            raise ShardingError('a rules edit is JSON: {"candidate": name, "rules": text}') from None
        if (
            not isinstance(edit, dict)
            or not isinstance(edit.get("candidate"), str)
            or not isinstance(edit.get("rules"), str)
        ):
            raise ShardingError("a rules edit names a candidate and its rules text")
        name, rules = edit["candidate"], edit["rules"]
        if name not in candidate_rules(self.comparison):
            raise ShardingError(f"candidate {name!r} has no rules text to edit")
        comparison = retrace(self.comparison, name, rules)
        row = next((r for r in comparison.rows if r.candidate == name), None)
        done = f"{name} traced again" + (f": {row.step_s * 1e3:.2f} ms per step on {row.hardware}" if row else "")
        return CompareState(comparison), done
