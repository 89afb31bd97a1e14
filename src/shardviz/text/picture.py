"""Terminal picture of a layout: ``print(layout)`` and ``shardviz.render_text(x)``.

The picture is a header (the typeof line, the mesh, the memory kind, what
each device holds) and a grid of boxes, one per block of the array, each
naming the devices that hold it (``CPU 0-3``). Any rank is drawn: the last
split dimensions form the grid (rows, columns; see ``ranges.picture_dims``),
a rank-1 array is one row, a scalar one box, and the other dimensions of a
rank >= 3 array are folded into a sequence of grids, one per block (or range
of blocks) of them.

When the boxes would not fit the width, neighbouring blocks are merged into
one box that lists all their devices and says how many blocks it holds;
when even that cannot fit, the picture becomes a table. Nothing is cut away:
every device id of the layout is in the text, exactly once per grid.

Index arithmetic lives in :mod:`shardviz.text.ranges`, colour in
:mod:`shardviz.text.ansi`, and widths (in terminal columns, so wide axis
names keep boxes aligned), wrapping and emitting in
:mod:`shardviz.text.lines`; this module plans and draws.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import ansi
from .lines import Line, center, emit, flow, line_width, pad, pad_left, text_lines, text_width, wrap
from .ranges import (
    abbreviate_ids,
    aligned_groups,
    device_label,
    divisors,
    format_bytes,
    format_interval,
    group_extent,
    held_word,
    picture_dims,
    smallest_group,
    unreduced_note,
)


class Layout(Protocol):
    """What the picture reads of a layout (``engine.model.LayoutData`` has it all).

    Written as a protocol so that the text kit needs nothing from the engine:
    the engine's ``Layout`` draws itself with this module, and this module
    must not import the engine back.
    """

    @property
    def type_str(self) -> str: ...
    @property
    def unreduced(self) -> tuple[str, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shard_shape(self) -> tuple[int, ...]: ...
    @property
    def shard_bytes(self) -> int: ...
    @property
    def memory_kind(self) -> str: ...
    @property
    def sharding_name(self) -> str: ...
    @property
    def spec(self) -> tuple[tuple[str, ...], ...]: ...
    @property
    def mesh(self) -> Any: ...  # MeshInfo: axis_names, axis_sizes, axis_types, abstract
    @property
    def blocks(self) -> Any: ...  # BlockAssignment: grid, tile, tile_count, bounds
    @property
    def columns(self) -> Any: ...  # DeviceColumns: ids, kind, kinds, addressable
    @property
    def device_count(self) -> int: ...
    @property
    def physical_axes(self) -> dict[str, tuple[str, ...]]: ...
    @property
    def process_count(self) -> int: ...
    @property
    def process_index(self) -> int: ...


MIN_WIDTH = 20  # narrower widths are drawn as if this wide
MAX_GRIDS = 16  # leading-dim blocks beyond this are merged into ranges
BOX_ROW_BUDGET = 32  # box rows over all grids; more rows are merged
MIN_ROWS_PER_GRID = 4
MAX_TABLE_COLUMNS = 4  # column groups per row in the list fallback
MAX_TABLE_ENTRIES = 32  # entries in the list fallback, over all grids (more are merged)
MAX_LIST_LINES = 3  # a list entry's devices should fit in this many lines ...
MAX_LIST_TRIES = 12  # ... among this many least-merged candidates

# Box drawing: (left, middle, right, horizontal) for the top, separator and bottom rules.
_TOP = ("┌", "┬", "┐")
_MID = ("├", "┼", "┤")
_BOT = ("└", "┴", "┘")
_H = "─"
_V = "│"

# A Line's segments carry the tile whose colour paints them.


# --------------------------------------------------------------------------
# public API


def render_layout(layout: Layout, *, width: int | None = None, color: bool | None = None) -> str:
    """The terminal picture of ``layout``, at most ``width`` columns wide.

    ``width=None`` takes the terminal's width (80 when unknown); widths below
    ``MIN_WIDTH`` are treated as ``MIN_WIDTH``. ``color=None`` colours only
    when stdout is a TTY, honouring ``NO_COLOR`` and ``FORCE_COLOR``;
    ``color=False`` gives plain text with box-drawing characters and no
    escape codes.
    """
    cols = shutil.get_terminal_size((80, 24)).columns if width is None else int(width)
    cols = max(MIN_WIDTH, cols)
    lines = _header(layout, cols) + _body(layout, cols)
    use_color = ansi.color_enabled(color)
    true_color = ansi.truecolor() if use_color else False
    return "\n".join(emit(line, use_color, true_color) for line in lines)


# --------------------------------------------------------------------------
# header


def _header(layout: Layout, width: int) -> list[Line]:
    mesh = layout.mesh
    if mesh is None:
        where = f"sharding {layout.sharding_name}"
    else:
        axes = " ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=True))
        kinds = sorted(set(mesh.axis_types))
        if len(kinds) <= 1:
            where = f"mesh {axes} ({', '.join(kinds + (['abstract'] if mesh.abstract else []))})"
        else:
            triples = zip(mesh.axis_names, mesh.axis_sizes, mesh.axis_types, strict=True)
            typed = " ".join(f"{n}={s} ({t})" for n, s, t in triples)
            where = f"mesh {typed}" + (" (abstract)" if mesh.abstract else "")
        if not mesh.axis_names:
            where = "mesh () (no axes)"
    tiles = layout.blocks.tile_count
    copies = np.bincount(layout.blocks.tile, minlength=tiles) if layout.device_count else np.zeros(1, np.int64)
    lo, hi = int(copies.min()), int(copies.max())
    copy_text = f"{lo}" if lo == hi else f"{lo}-{hi}"
    holding = f"{layout.device_count} {_plural(layout.device_count, 'device')}, {tiles} {_plural(tiles, 'tile')}"
    if hi > 1:
        holding += f" × {copy_text} {held_word(layout.unreduced, _axis_sizes(layout), copies)}"
    shard = f"{layout.dtype}[{','.join(map(str, layout.shard_shape))}]"
    parts = [
        [layout.type_str],
        [where, f"memory {layout.memory_kind}"],
        [holding, f"each device holds {shard} = {format_bytes(layout.shard_bytes)}"],
    ]
    parts.append(unreduced_note(layout.unreduced, _axis_sizes(layout)))
    if layout.physical_axes:
        moves = [f"{axis} along {', '.join(attrs) or 'nothing'}" for axis, attrs in layout.physical_axes.items()]
        parts.append(["physical: " + "; ".join(moves)])
    if layout.process_count > 1:
        parts[-1].append(f"process {layout.process_index} of {layout.process_count}")
        remote = layout.columns.ids[layout.columns.addressable == 0]
        if len(remote) and not (mesh and mesh.abstract):
            parts.append([f"not addressable here (other processes): {abbreviate_ids(remote)}"])
    return text_lines([text for group in parts for text in flow(group, width)])


def _axis_sizes(layout: Layout) -> dict[str, int]:
    return dict(zip(layout.mesh.axis_names, layout.mesh.axis_sizes, strict=True)) if layout.mesh else {}


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


# --------------------------------------------------------------------------
# planning: which blocks share a picture, a row and a box


@dataclass(frozen=True)
class _Fold:
    """The tile grid seen as pictures of rows x columns, with merge factors."""

    lead_grid: tuple[int, ...]  # block counts of the folded leading dims
    lead_group: int  # consecutive leading blocks per picture
    rows: int  # blocks along the row dim (1 below rank 2)
    row_group: int
    cols: int  # blocks along the column dim (1 for a scalar)
    col_group: int

    @property
    def grids(self) -> int:
        return max(1, math.prod(self.lead_grid)) // self.lead_group

    @property
    def row_cells(self) -> int:
        return -(-self.rows // self.row_group)

    @property
    def col_cells(self) -> int:
        return -(-self.cols // self.col_group)


@dataclass(frozen=True)
class _Cell:
    """One box: the devices of its blocks and what to say about them."""

    label: str  # "CPU 0-3"
    note: str  # "2 copies", "4 tiles", ""
    tile: int  # its first tile, whose colour it takes


Dims = tuple[tuple[int, ...], "int | None", "int | None"]  # (folded dims, row dim, column dim)


def _cells(layout: Layout, fold: _Fold, dims: Dims) -> list[_Cell]:
    """Boxes in picture-major, then row-major order, from the per-device columns."""
    lead_dims, row_dim, col_dim = dims
    grid = layout.blocks.grid
    tile = layout.blocks.tile
    n = len(tile)
    coords = np.unravel_index(tile, grid) if grid else ()
    lead = np.zeros(n, np.int64)
    for d, extent in zip(lead_dims, fold.lead_grid, strict=True):
        lead = lead * extent + coords[d]
    row = coords[row_dim] if row_dim is not None else np.zeros(n, np.int64)
    col = coords[col_dim] if col_dim is not None else np.zeros(n, np.int64)
    key = ((lead // fold.lead_group) * fold.row_cells + row // fold.row_group) * fold.col_cells + col // fold.col_group
    cell_count = fold.grids * fold.row_cells * fold.col_cells

    ids = layout.columns.ids
    order = np.lexsort((ids, key))
    key_sorted = key[order]
    edges = np.searchsorted(key_sorted, np.arange(cell_count + 1))
    copies = np.bincount(tile, minlength=layout.blocks.tile_count)
    word = held_word(layout.unreduced, _axis_sizes(layout), copies)
    kinds = layout.columns.kinds
    single_kind = len(kinds) == 1

    out: list[_Cell] = []
    for c in range(cell_count):
        members = order[edges[c] : edges[c + 1]]
        if not len(members):
            out.append(_Cell("no device", "", -1))
            continue
        if single_kind:
            label = f"{device_label(kinds[0][0])} {abbreviate_ids(ids[members])}"
        else:
            kind_of = layout.columns.kind[members]
            label = " ".join(
                f"{device_label(kinds[k][0])} {abbreviate_ids(ids[members[kind_of == k]])}" for k in np.unique(kind_of)
            )
        held = np.unique(tile[members])
        held_copies = copies[held]
        lo, hi = int(held_copies.min()), int(held_copies.max())
        count = f"{lo}" if lo == hi else f"{lo}-{hi}"
        if len(held) == 1:
            note = f"{count} {word}" if hi > 1 else ""
        else:
            note = f"{len(held)} tiles" + (f" × {count} {word}" if hi > 1 else "")
        out.append(_Cell(label, note, int(held[0])))
    return out


def _interval(layout: Layout, dim: int | None, lo: int, hi: int) -> str:
    """Index interval covered by blocks ``[lo, hi)`` of dimension ``dim``."""
    if dim is None:
        return ""
    bounds = layout.blocks.bounds[dim]
    return format_interval(bounds[lo], bounds[min(hi, len(bounds) - 1)])


def _intervals(layout: Layout, dim: int | None, count: int, group: int) -> list[str]:
    return [_interval(layout, dim, lo, lo + group) for lo in range(0, count, group)]


def _grid_title(layout: Layout, fold: _Fold, lead_dims: Sequence[int], index: int) -> list[str]:
    """``dim0 [0:2)``-style parts naming the leading-dim range of picture ``index``."""
    extent = group_extent(fold.lead_grid, fold.lead_group, index)
    return [f"dim{d} {_interval(layout, d, lo, hi)}" for d, (lo, hi) in zip(lead_dims, extent, strict=True)]


# --------------------------------------------------------------------------
# drawing


def _body(layout: Layout, width: int) -> list[Line]:
    grid = layout.blocks.grid
    dims = picture_dims(grid)
    lead_dims, row_dim, col_dim = dims
    lead_grid = tuple(grid[d] for d in lead_dims)
    lead_group = aligned_groups(lead_grid, MAX_GRIDS) if lead_grid else 1
    grids = max(1, math.prod(lead_grid)) // lead_group
    rows = grid[row_dim] if row_dim is not None else 1
    cols = grid[col_dim] if col_dim is not None else 1
    row_group = smallest_group(rows, max(MIN_ROWS_PER_GRID, BOX_ROW_BUDGET // grids))
    row_labels = _intervals(layout, row_dim, rows, row_group)
    label_w = max(map(text_width, row_labels))
    prefix = label_w + 1 if label_w else 0

    lines = text_lines(_legend(layout, lead_dims, row_dim, col_dim, lead_group, width))
    for col_group in divisors(cols):
        col_labels = _intervals(layout, col_dim, cols, col_group)
        inner = max(map(text_width, col_labels)) + 2
        if prefix + 1 + len(col_labels) * (inner + 1) > width:
            continue  # the column headings alone are too wide: merge more
        fold = _Fold(lead_grid, lead_group, rows, row_group, cols, col_group)
        cells = _cells(layout, fold, dims)
        inner = max(inner, max(max(text_width(c.label), text_width(c.note)) for c in cells) + 2)
        if prefix + 1 + len(col_labels) * (inner + 1) > width:
            continue
        lines += _merge_note(fold, row_dim, col_dim, "box", width)
        box_w = prefix + 1 + len(col_labels) * (inner + 1)
        titles = [flow(_grid_title(layout, fold, lead_dims, g), max(box_w, 12), sep=" ") for g in range(fold.grids)]
        title_h = max(map(len, titles))
        panels = [
            _panel(fold, cells, g, titles[g] + [""] * (title_h - len(titles[g])), row_labels, col_labels, inner)
            for g in range(fold.grids)
        ]
        return lines + _side_by_side(panels, width)

    fold, cells = _list_fold(layout, dims, lead_grid, lead_group, rows, cols, width)
    lines += text_lines(wrap("as a list: too many blocks for boxes at this width", width))
    lines += _merge_note(fold, row_dim, col_dim, "entry", width)
    return lines + _table(layout, fold, cells, lead_dims, row_dim, col_dim, width)


def _list_fold(
    layout: Layout, dims: Dims, lead_grid: tuple[int, ...], lead_group: int, rows: int, cols: int, width: int
) -> tuple[_Fold, list[_Cell]]:
    """Merge factors for the list: the least merging whose entries stay short.

    Candidates leave at most ``MAX_TABLE_ENTRIES`` entries; they are tried
    from the least merged, and the first whose longest device list fits in
    ``MAX_LIST_LINES`` lines wins (merging blocks whose devices interleave
    can make lists longer, merging more can make them regular again). If
    none does, the one with the least text overall.
    """
    grids = max(1, math.prod(lead_grid)) // lead_group
    pairs = sorted(
        (
            (h, g)
            for h in divisors(rows)
            for g in divisors(cols)
            if g >= smallest_group(cols, MAX_TABLE_COLUMNS)
            and grids * (-(-rows // h)) * (-(-cols // g)) <= MAX_TABLE_ENTRIES
        ),
        key=lambda hg: (hg[0] * hg[1], hg[0]),
    ) or [(rows, cols)]
    best: tuple[int, _Fold, list[_Cell]] | None = None
    for h, g in pairs[:MAX_LIST_TRIES]:
        fold = _Fold(lead_grid, lead_group, rows, h, cols, g)
        cells = _cells(layout, fold, dims)
        longest = max(text_width(c.label) for c in cells)
        if longest <= MAX_LIST_LINES * max(width - 8, 12):
            return fold, cells
        total = sum(text_width(c.label) for c in cells)
        if best is None or total < best[0]:
            best = (total, fold, cells)
    assert best is not None
    return best[1], best[2]


def _legend(
    layout: Layout,
    lead_dims: Sequence[int],
    row_dim: int | None,
    col_dim: int | None,
    lead_group: int,
    width: int,
) -> list[str]:
    def split(d: int) -> str:
        axes = layout.spec[d]
        return f"dim{d} split by {','.join(axes)}" if axes else f"dim{d} not split"

    if col_dim is None:
        return ["scalar: one block"]
    parts = ([f"rows: {split(row_dim)}"] if row_dim is not None else []) + [f"columns: {split(col_dim)}"]
    lines = flow(parts, width)
    if lead_dims:
        contiguous = list(lead_dims) == list(range(lead_dims[0], lead_dims[-1] + 1))
        if len(lead_dims) == 1:
            names = f"dim{lead_dims[0]}"
        elif contiguous:
            names = f"dim{lead_dims[0]}-{lead_dims[-1]}"
        else:
            names = ",".join(f"dim{d}" for d in lead_dims)
        blocks = math.prod(layout.blocks.grid[d] for d in lead_dims)
        if lead_group == 1:
            how = f"one grid per block of {names} ({blocks} {_plural(blocks, 'grid')})"
        else:
            how = f"{blocks} blocks of {names} in {blocks // lead_group} grids of {lead_group} blocks each"
        lines += flow([f"folded: {how}", *(split(d) for d in lead_dims)], width)
    return lines


def _merge_note(fold: _Fold, row_dim: int | None, col_dim: int | None, what: str, width: int) -> list[Line]:
    notes = []
    if fold.row_group > 1:
        notes.append(f"{fold.row_group} row blocks (dim{row_dim})")
    if fold.col_group > 1:
        notes.append(f"{fold.col_group} column blocks (dim{col_dim})")
    if not notes:
        return []
    return text_lines(wrap(f"to fit, each {what} merges " + " × ".join(notes), width))


def _rule(ends: tuple[str, str, str], prefix: int, count: int, inner: int) -> Line:
    left, mid, right = ends
    return [(" " * prefix + left + mid.join([_H * inner] * count) + right, None)]


def _panel(
    fold: _Fold,
    cells: list[_Cell],
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


def _side_by_side(panels: list[list[Line]], width: int, gap: int = 3) -> list[Line]:
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


def _table(
    layout: Layout,
    fold: _Fold,
    cells: list[_Cell],
    lead_dims: Sequence[int],
    row_dim: int | None,
    col_dim: int | None,
    width: int,
) -> list[Line]:
    """The fallback: one entry per (merged) block, its place and its devices."""
    rows = _intervals(layout, row_dim, fold.rows, fold.row_group)
    cols = _intervals(layout, col_dim, fold.cols, fold.col_group)
    places = [" × ".join(p for p in (r, c) if p) or "[]" for r in rows for c in cols]
    place_w = max(map(text_width, places))
    # Devices follow the place on its line when that leaves room, else go below it.
    beside = place_w + 4 <= width // 2
    indent = " " * (place_w + 4) if beside else "    "
    per_grid = len(places)
    out: list[Line] = []
    for g in range(fold.grids):
        if lead_dims:
            out += text_lines(flow(_grid_title(layout, fold, lead_dims, g), width, sep=" "))
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
