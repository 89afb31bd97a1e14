"""Which blocks of an array share a picture, a row and a box of its terminal picture.

The picture (:mod:`shardviz.text.picture`) reads a layout through the ``Layout``
protocol here. A ``Fold`` says how many consecutive blocks of each dimension one
picture, row and column of boxes hold; ``block_cells`` turns it into the boxes,
each naming its devices and saying how many tiles and copies it holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .ranges import abbreviate_ids, device_label, format_interval, group_extent, held_word


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


def axis_sizes(layout: Layout) -> dict[str, int]:
    return dict(zip(layout.mesh.axis_names, layout.mesh.axis_sizes, strict=True)) if layout.mesh else {}


def plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


@dataclass(frozen=True)
class Fold:
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
class Cell:
    """One box: the devices of its blocks and what to say about them."""

    label: str  # "CPU 0-3"
    note: str  # "2 copies", "4 tiles", ""
    tile: int  # its first tile, whose colour it takes


Dims = tuple[tuple[int, ...], "int | None", "int | None"]  # (folded dims, row dim, column dim)


def block_cells(layout: Layout, fold: Fold, dims: Dims) -> list[Cell]:
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
    word = held_word(layout.unreduced, axis_sizes(layout), copies)
    kinds = layout.columns.kinds
    single_kind = len(kinds) == 1

    out: list[Cell] = []
    for c in range(cell_count):
        members = order[edges[c] : edges[c + 1]]
        if not len(members):
            out.append(Cell("no device", "", -1))
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
        out.append(Cell(label, note, int(held[0])))
    return out


def interval(layout: Layout, dim: int | None, lo: int, hi: int) -> str:
    """Index interval covered by blocks ``[lo, hi)`` of dimension ``dim``."""
    if dim is None:
        return ""
    bounds = layout.blocks.bounds[dim]
    return format_interval(bounds[lo], bounds[min(hi, len(bounds) - 1)])


def intervals(layout: Layout, dim: int | None, count: int, group: int) -> list[str]:
    return [interval(layout, dim, lo, lo + group) for lo in range(0, count, group)]


def grid_title(layout: Layout, fold: Fold, lead_dims: Sequence[int], index: int) -> list[str]:
    """``dim0 [0:2)``-style parts naming the leading-dim range of picture ``index``."""
    extent = group_extent(fold.lead_grid, fold.lead_group, index)
    return [f"dim{d} {interval(layout, d, lo, hi)}" for d, (lo, hi) in zip(lead_dims, extent, strict=True)]


# --------------------------------------------------------------------------
# drawing
