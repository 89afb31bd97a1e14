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

import numpy as np

from . import ansi
from .blocks import Cell, Dims, Fold, Layout, axis_sizes, block_cells, grid_title, intervals, plural
from .boxes import panel, side_by_side, table
from .lines import Line, emit, flow, text_lines, text_width, wrap
from .ranges import (
    abbreviate_ids,
    aligned_groups,
    divisors,
    format_bytes,
    held_word,
    picture_dims,
    smallest_group,
    unreduced_note,
)

__all__ = ["Layout", "render_layout"]

MIN_WIDTH = 20  # narrower widths are drawn as if this wide
MAX_GRIDS = 16  # leading-dim blocks beyond this are merged into ranges
BOX_ROW_BUDGET = 32  # box rows over all grids; more rows are merged
MIN_ROWS_PER_GRID = 4
MAX_TABLE_COLUMNS = 4  # column groups per row in the list fallback
MAX_TABLE_ENTRIES = 32  # entries in the list fallback, over all grids (more are merged)
MAX_LIST_LINES = 3  # a list entry's devices should fit in this many lines ...
MAX_LIST_TRIES = 12  # ... among this many least-merged candidates


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
    holding = f"{layout.device_count} {plural(layout.device_count, 'device')}, {tiles} {plural(tiles, 'tile')}"
    if hi > 1:
        holding += f" × {copy_text} {held_word(layout.unreduced, axis_sizes(layout), copies)}"
    shard = f"{layout.dtype}[{','.join(map(str, layout.shard_shape))}]"
    parts = [
        [layout.type_str],
        [where, f"memory {layout.memory_kind}"],
        [holding, f"each device holds {shard} = {format_bytes(layout.shard_bytes)}"],
    ]
    parts.append(unreduced_note(layout.unreduced, axis_sizes(layout)))
    if layout.physical_axes:
        moves = [f"{axis} along {', '.join(attrs) or 'nothing'}" for axis, attrs in layout.physical_axes.items()]
        parts.append(["physical: " + "; ".join(moves)])
    if layout.process_count > 1:
        parts[-1].append(f"process {layout.process_index} of {layout.process_count}")
        remote = layout.columns.ids[layout.columns.addressable == 0]
        if len(remote) and not (mesh and mesh.abstract):
            parts.append([f"not addressable here (other processes): {abbreviate_ids(remote)}"])
    return text_lines([text for group in parts for text in flow(group, width)])


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
    row_labels = intervals(layout, row_dim, rows, row_group)
    label_w = max(map(text_width, row_labels))
    prefix = label_w + 1 if label_w else 0

    lines = text_lines(_legend(layout, lead_dims, row_dim, col_dim, lead_group, width))
    for col_group in divisors(cols):
        col_labels = intervals(layout, col_dim, cols, col_group)
        inner = max(map(text_width, col_labels)) + 2
        if prefix + 1 + len(col_labels) * (inner + 1) > width:
            continue  # the column headings alone are too wide: merge more
        fold = Fold(lead_grid, lead_group, rows, row_group, cols, col_group)
        cells = block_cells(layout, fold, dims)
        inner = max(inner, max(max(text_width(c.label), text_width(c.note)) for c in cells) + 2)
        if prefix + 1 + len(col_labels) * (inner + 1) > width:
            continue
        lines += _merge_note(fold, row_dim, col_dim, "box", width)
        box_w = prefix + 1 + len(col_labels) * (inner + 1)
        titles = [flow(grid_title(layout, fold, lead_dims, g), max(box_w, 12), sep=" ") for g in range(fold.grids)]
        title_h = max(map(len, titles))
        panels = [
            panel(fold, cells, g, titles[g] + [""] * (title_h - len(titles[g])), row_labels, col_labels, inner)
            for g in range(fold.grids)
        ]
        return lines + side_by_side(panels, width)

    fold, cells = _list_fold(layout, dims, lead_grid, lead_group, rows, cols, width)
    lines += text_lines(wrap("as a list: too many blocks for boxes at this width", width))
    lines += _merge_note(fold, row_dim, col_dim, "entry", width)
    return lines + table(layout, fold, cells, lead_dims, row_dim, col_dim, width)


def _list_fold(
    layout: Layout, dims: Dims, lead_grid: tuple[int, ...], lead_group: int, rows: int, cols: int, width: int
) -> tuple[Fold, list[Cell]]:
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
    best: tuple[int, Fold, list[Cell]] | None = None
    for h, g in pairs[:MAX_LIST_TRIES]:
        fold = Fold(lead_grid, lead_group, rows, h, cols, g)
        cells = block_cells(layout, fold, dims)
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
            how = f"one grid per block of {names} ({blocks} {plural(blocks, 'grid')})"
        else:
            how = f"{blocks} blocks of {names} in {blocks // lead_group} grids of {lead_group} blocks each"
        lines += flow([f"folded: {how}", *(split(d) for d in lead_dims)], width)
    return lines


def _merge_note(fold: Fold, row_dim: int | None, col_dim: int | None, what: str, width: int) -> list[Line]:
    notes = []
    if fold.row_group > 1:
        notes.append(f"{fold.row_group} row blocks (dim{row_dim})")
    if fold.col_group > 1:
        notes.append(f"{fold.col_group} column blocks (dim{col_dim})")
    if not notes:
        return []
    return text_lines(wrap(f"to fit, each {what} merges " + " × ".join(notes), width))
