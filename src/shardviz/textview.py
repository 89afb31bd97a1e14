"""Terminal picture of a Layout (placeholder until the text view lands)."""

from __future__ import annotations

from typing import Any


def render_layout(layout: Any) -> str:
    return layout.type_str


def render_text(x: Any, **kwargs: Any) -> str:
    from .layout import describe

    return render_layout(describe(x, **kwargs))
