"""Terminal lines: how wide a text is, and cutting, padding, wrapping and
flowing it to a width; then emitting coloured segments.

Widths are terminal columns, not characters: a wide East Asian character (a
CJK axis name, a full-width path key) takes two, a combining mark none, so
columns line up whatever the names are written in. Every report (the array
picture, the tree report, the program report) lays its lines out with these.

A :data:`Line` is a list of segments, each a text and the index of the colour
that marks it (a tile, a mesh axis) or None; :func:`emit` turns it into a
string, coloured or not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

from . import ansi

ELLIPSIS = "…"
UNITS = ("B", "KiB", "MiB", "GiB", "TiB")  # as ranges.format_bytes writes them

Segment = tuple[str, "int | None"]  # text, and the colour index that marks it
Line = list[Segment]


# --------------------------------------------------------------------------
# width


def text_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide East Asian characters count twice, combining marks not at all."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def prefix_within(text: str, width: int) -> int:
    """How many characters of ``text`` fit in ``width`` columns (at least one, so that cutting moves on)."""
    used = 0
    for k, c in enumerate(text):
        used += text_width(c)
        if used > width:
            return max(1, k)
    return len(text)


def pad(text: str, width: int) -> str:
    """``text`` with spaces after it to ``width`` columns (as ``str.ljust``, counting columns)."""
    return text + " " * max(0, width - text_width(text))


def pad_left(text: str, width: int) -> str:
    """``text`` with spaces before it to ``width`` columns (as ``str.rjust``, counting columns)."""
    return " " * max(0, width - text_width(text)) + text


def center(text: str, width: int) -> str:
    """``text`` centred in ``width`` columns (as ``str.center``, counting columns)."""
    spare = max(0, width - text_width(text))
    left = spare // 2 + (spare & width & 1)  # where str.center puts an odd space
    return " " * left + text + " " * (spare - left)


def line_width(line: Line) -> int:
    return sum(text_width(text) for text, _ in line)


# --------------------------------------------------------------------------
# cutting


def fit(text: str, width: int) -> str:
    """``text`` cut in the middle (``…``) to at most ``width`` columns: both ends of a path stay readable."""
    if text_width(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head, tail = "", ""
    for c in text:
        if text_width(head + c) > (keep + 1) // 2:
            break
        head += c
    for c in reversed(text):
        if text_width(head) + text_width(c + tail) > keep:
            break
        tail = c + tail
    return head + ELLIPSIS + tail


def clip(text: str, width: int) -> str:
    """``text`` cut at the end (``…``) to at most ``width`` columns (at least one character stays)."""
    if text_width(text) <= width:
        return text
    return text[: prefix_within(text, max(1, width - 1))] + ELLIPSIS


# --------------------------------------------------------------------------
# wrapping and flowing

_BREAKS = re.compile(r"[^ ,]*[, ]*")


def wrap(text: str, width: int, *, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken after spaces and commas.

    Continuation lines start with ``indent``; a piece longer than a line is
    split where it must be, so the width always holds. Lines end in no space.
    """
    lines: list[str] = []
    current = ""
    for piece in _BREAKS.findall(text):
        if not piece:
            continue
        if current.strip() and text_width((current + piece).rstrip()) > width:
            lines.append(current.rstrip())
            current = indent
        current += piece
        while text_width(current.rstrip()) > width:
            cut = prefix_within(current, width)
            lines.append(current[:cut])
            current = indent + current[cut:]
    if current.strip() or not lines:
        lines.append(current.rstrip())
    return lines


def wrap_words(text: str, width: int, *, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces only; a word too long is cut.

    A byte count keeps its unit (``48 MiB`` is one word). The text's own
    leading spaces stay; continuation lines start with ``indent``.
    """
    lead = text[: len(text) - len(text.lstrip(" "))]
    lines: list[str] = []
    current = lead
    for word in _words(text[len(lead) :]):
        candidate = current + word if current == lead or current == indent else f"{current} {word}"
        if current.strip() and text_width(candidate) > width:
            lines.append(current)
            candidate = indent + word
        while text_width(candidate) > width:
            cut = prefix_within(candidate, width)
            lines.append(candidate[:cut])
            candidate = indent + candidate[cut:]
        current = candidate
    lines.append(current)
    return lines


def _words(text: str) -> list[str]:
    """Words between single spaces, a byte count and its unit kept together (``48 MiB``)."""
    words: list[str] = []
    for word in text.split(" "):
        if words and word.rstrip(",;:)") in UNITS and words[-1].replace(".", "").replace(",", "").isdigit():
            words[-1] += " " + word
        else:
            words.append(word)
    return words


def flow(parts: Sequence[str], width: int, *, sep: str = ", ") -> list[str]:
    """Parts joined by ``sep``, a new line where the next part does not fit; a part too long is wrapped."""
    lines: list[str] = []
    current = ""
    for part in parts:
        if current and text_width(current) + text_width(sep) + text_width(part) <= width:
            current += sep + part
            continue
        if current:
            lines.append(current)
        *full, current = wrap(part, width, indent="  ")
        lines += full
    return [*lines, current] if current else lines


def flow_after(lead: str, parts: Sequence[str], width: int, sep: str = ", ") -> list[str]:
    """``parts`` after ``lead``, joined by ``sep`` and wrapped word by word at ``width``
    (continuations indented four spaces, a word too long clipped)."""
    words: list[str] = []
    for k, part in enumerate(parts):
        tail = sep.rstrip() if k < len(parts) - 1 else ""
        words += (part + tail).split(" ")
    lines: list[str] = []
    current = lead
    for word in words:
        if current.strip() and text_width(current) + 1 + text_width(word) > width:
            lines.append(current)
            current = "    " + word
        else:
            current = current + (" " if current.strip() else "") + word
    lines.append(current)
    return [clip(line, width) for line in lines]


# --------------------------------------------------------------------------
# emitting


def text_lines(texts: Sequence[str]) -> list[Line]:
    """Plain lines, one segment each, no colour."""
    return [[(t, None)] for t in texts]


Ink = Callable[..., str]  # (text, colour index, *, true_color) -> coloured text


def emit(line: Line, use_color: bool, true_color: bool, ink: Ink = ansi.paint) -> str:
    """One line as a string: coloured segments inked (a tile's colour by default) when ``use_color``.

    Trailing blanks of an uncoloured last segment go (a coloured one is part of a box).
    """
    if line and line[-1][1] is None:
        line = [*line[:-1], (line[-1][0].rstrip(), None)]
    if not use_color:
        return "".join(text for text, _ in line)
    return "".join(text if index is None else ink(text, index, true_color=true_color) for text, index in line)


def emit_axes(line: Line, use_color: bool, true_color: bool) -> str:
    """:func:`emit` with each coloured segment marked in its mesh axis's colour."""
    return emit(line, use_color, true_color, ansi.mark_axis)
