"""Drawing the terminal picture: grids of boxes side by side, or the list that replaces them.

Each function here takes the boxes ``blocks.block_cells`` made and lays them out
in terminal columns (:mod:`shardviz.text.lines`); a Line's segments carry the
tile whose colour paints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from .blocks import Cell, Fold, Layout, grid_title, intervals
from .lines import Line, center, flow, line_width, pad, pad_left, text_lines, text_width, wrap

# Box drawing: (left, middle, right, horizontal) for the top, separator and bottom rules.
_TOP = ("┌", "┬", "┐")
_MID = ("├", "┼", "┤")
_BOT = ("└", "┴", "┘")
_H = "─"
_V = "│"


def _rule(ends: tuple[str, str, str], prefix: int, count: int, inner: int) -> Line:
    left, mid, right = ends
    return [(" " * prefix + left + mid.join([_H * inner] * count) + right, None)]


def panel(
    fold: Fold,
    cells: list[Cell],
    g: int,
    title: list[str],
    row_labels: list[str],
    col_labels: list[str],
    inner: int,
) -> list[Line]:
    """One grid of boxes (the blocks of picture ``g``) under its title lines."""
    label_w = max(map(text_width, row_labels))
    prefix = label_w + 1 if label_w else 0
    per_grid = fold.row_cells * fold.col_cells
    has_note = any(c.note for c in cells)  # over all grids, so that panels line up
    box = cells[g * per_grid : (g + 1) * per_grid]
    out: list[Line] = text_lines(title)
    if any(col_labels):
        out.append([(" " * (prefix + 1) + " ".join(center(lbl, inner) for lbl in col_labels), None)])
    out.append(_rule(_TOP, prefix, fold.col_cells, inner))
    for r in range(fold.row_cells):
        row = box[r * fold.col_cells : (r + 1) * fold.col_cells]
        texts = [[c.label for c in row]] + ([[c.note for c in row]] if has_note else [])
        for k, content in enumerate(texts):
            head = pad_left(row_labels[r], label_w) + " " if label_w and not k else " " * prefix
            line: Line = [(head + _V, None)]
            for c, text in zip(row, content, strict=True):
                line += [(center(text, inner), c.tile if c.tile >= 0 else None), (_V, None)]
            out.append(line)
        out.append(_rule(_MID if r + 1 < fold.row_cells else _BOT, prefix, fold.col_cells, inner))
    return out


def side_by_side(panels: list[list[Line]], width: int, gap: int = 3) -> list[Line]:
    """Panels left to right while they fit the width, then the next row of them."""
    if not panels:
        return []
    panel_w = max(line_width(line) for panel in panels for line in panel)
    height = max(len(panel) for panel in panels)
    per_row = max(1, (width + gap) // (panel_w + gap))
    out: list[Line] = []
    for first in range(0, len(panels), per_row):
        group = panels[first : first + per_row]
        for k in range(height):
            line: Line = []
            for j, panel in enumerate(group):
                part = panel[k] if k < len(panel) else []
                if j:
                    line.append((" " * gap, None))
                line += part
                if j + 1 < len(group):
                    line.append((" " * (panel_w - line_width(part)), None))
            out.append(line)
    return out


def table(
    layout: Layout,
    fold: Fold,
    cells: list[Cell],
    lead_dims: Sequence[int],
    row_dim: int | None,
    col_dim: int | None,
    width: int,
) -> list[Line]:
    """The fallback: one entry per (merged) block, its place and its devices."""
    rows = intervals(layout, row_dim, fold.rows, fold.row_group)
    cols = intervals(layout, col_dim, fold.cols, fold.col_group)
    places = [" × ".join(p for p in (r, c) if p) or "[]" for r in rows for c in cols]
    place_w = max(map(text_width, places))
    # Devices follow the place on its line when that leaves room, else go below it.
    beside = place_w + 4 <= width // 2
    indent = " " * (place_w + 4) if beside else "    "
    per_grid = len(places)
    out: list[Line] = []
    for g in range(fold.grids):
        if lead_dims:
            out += text_lines(flow(grid_title(layout, fold, lead_dims, g), width, sep=" "))
        for place, cell in zip(places, cells[g * per_grid : (g + 1) * per_grid], strict=True):
            text = cell.label + (f" ({cell.note})" if cell.note else "")
            body = [t[len(indent) :] for t in wrap(indent + text, width, indent=indent)]
            tile = cell.tile if cell.tile >= 0 else None
            if beside:
                out.append([("  ", None), (pad(place, place_w), tile), ("  " + body[0], None)])
                body = body[1:]
            else:  # the place alone may need two lines: "[a:b) ×" and "[c:d)"
                out += [[("  ", None), (part, tile)] for part in wrap(place, width - 2)]
            out += [[(indent + more, None)] for more in body]
    return out
