"""Pieces the failure messages share: a source line as users read it, two pictures side by side."""

from __future__ import annotations

import os
from typing import Any

from ..program.lines.sources import line_text
from ..program.model import SourceLocation
from ..text.files import file_label
from ..text.lines import pad, text_width
from ..text.ranges import format_bytes, format_seconds

MESSAGE_WIDTH = 120  # columns a failure message keeps within (pytest does not wrap)
GAP = "   "

__all__ = [
    "exact_bytes",
    "format_bytes",
    "format_change",
    "format_seconds",
    "function_names",
    "label_of",
    "layer_of",
    "line_code",
    "side_by_side",
    "where",
]


def layer_of(item: Any) -> str:
    """The layer a collective (or one operand of a combined one) runs in: its name scope from XLA's
    ``op_name`` (a Flax module path, ``jax.named_scope``: ``layers_2/attn``), "" where the program has none.
    Stable from one trace to the next, so snapshots tell a line's layers apart by it."""
    scope = getattr(item, "scope", "")
    return scope if isinstance(scope, str) else ""


def label_of(item: Any) -> str:
    """All that tells a collective apart from others on its line, as the program says it (its
    ``where_label``: the layer, a Python loop's pass, the output or input it lays out), or ""."""
    label = getattr(item, "where_label", "")
    return label if isinstance(label, str) else ""


def format_change(before: int, after: int) -> str:
    """``+16 MiB``, ``-768 KiB (-50%)``: how much a byte count grew or shrank, as people read it."""
    delta = after - before
    sign = "+" if delta > 0 else "-" if delta < 0 else "±"
    text = f"{sign}{format_bytes(abs(delta))}"
    if before:
        text += (
            f" ({sign}{abs(delta) / before:.0%})"
            if abs(delta) / before >= 0.01
            else f" ({sign}{abs(delta) / before:.2%})"
        )
    return text


def exact_bytes(count: int) -> str:
    """``4.5 KiB (4608 B)``; just ``512 B`` where the two would say the same."""
    short = format_bytes(count)
    return short if short == f"{count} B" else f"{short} ({count} B)"


def where(source: SourceLocation | None, *, code: bool = True, layer: str = "") -> str:
    """``model.py:42 (loss; in layers_2/attn)  h = x @ w``: the file, line, function, layer and, where
    readable, the line's text. A lambda or a comprehension is named by the function it is written in."""
    if source is None:
        return "(no line of yours: the collective comes from library code)" + (f" (in {layer})" if layer else "")
    function = function_names(source.function)[-1]
    named = "; in ".join(part for part in (function, layer) if part)
    head = f"{file_label(source.file)}:{source.line}" + (f" ({named})" if named else "")
    text = line_text(source.file, source.line) if code else ""
    return f"{head}  {text}" if text else head


def line_code(source: SourceLocation | None) -> str:
    """The text of a source line, where it can be read."""
    return "" if source is None else line_text(source.file, source.line)


def function_names(function: str) -> list[str]:
    """The names a line's function goes by: its qualified name and its own name, and for a lambda or a
    comprehension (``step.<locals>.<lambda>``) the function it is written in (``step``)."""
    names = [function, function.rsplit(".", 1)[-1]]
    parts = function.split(".")
    while parts and parts[-1].startswith("<"):  # <lambda>, <dictcomp>, and the <locals> before them
        parts.pop()
        if parts and not parts[-1].startswith("<"):
            names += [".".join(parts), parts[-1]]
            break
    return names


def relative_file(file: str, base: str | os.PathLike[str]) -> str:
    """``file`` relative to ``base`` with ``/`` separators (the file itself when on another drive)."""
    try:
        return os.path.relpath(file, base).replace(os.sep, "/")
    except ValueError:
        return file.replace(os.sep, "/")


def side_by_side(left_title: str, left: str, right_title: str, right: str, width: int = MESSAGE_WIDTH) -> list[str]:
    """Two pictures next to each other when they fit in ``width`` columns, else one after the other."""
    left_lines = [left_title, *left.splitlines()]
    right_lines = [right_title, *right.splitlines()]
    left_width = max(text_width(line) for line in left_lines)
    right_width = max(text_width(line) for line in right_lines)
    if left_width + len(GAP) + right_width > width:
        return [*left_lines, "", *right_lines]
    rows = max(len(left_lines), len(right_lines))
    left_lines += [""] * (rows - len(left_lines))
    right_lines += [""] * (rows - len(right_lines))
    return [(pad(a, left_width) + GAP + b).rstrip() for a, b in zip(left_lines, right_lines)]
