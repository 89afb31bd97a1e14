"""Pieces the failure messages share: a source line as users read it, two pictures side by side."""

from __future__ import annotations

import os

from ..program.model import SourceLocation
from ..program.sources import file_label, line_text
from ..text.lines import pad, text_width
from ..text.ranges import format_bytes

MESSAGE_WIDTH = 120  # columns a failure message keeps within (pytest does not wrap)
GAP = "   "

__all__ = ["exact_bytes", "format_bytes", "function_names", "side_by_side", "where"]


def exact_bytes(count: int) -> str:
    """``4.5 KiB (4608 B)``; just ``512 B`` where the two would say the same."""
    short = format_bytes(count)
    return short if short == f"{count} B" else f"{short} ({count} B)"


def where(source: SourceLocation | None, *, code: bool = True) -> str:
    """``model.py:42 (loss)  h = x @ w``: the file, line, function and, where readable, the line's text.

    A lambda or a comprehension is named by the function it is written in."""
    if source is None:
        return "(no line of yours: the collective comes from library code)"
    function = function_names(source.function)[-1]
    head = f"{file_label(source.file)}:{source.line}" + (f" ({function})" if function else "")
    text = line_text(source.file, source.line) if code else ""
    return f"{head}  {text}" if text else head


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
