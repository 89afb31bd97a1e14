"""The terminal report of a tree's layout: a header, the leaf table and the audit.

Plain text that reads at 80 columns and with ``NO_COLOR``; on a colour
terminal each ``@axis`` of a type is inked in its mesh axis colour (as the
widget marks it). Colour choice lives in :mod:`shardviz.ansi`, byte and id
formatting in :mod:`shardviz.ranges`; this module lays out lines.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import numpy as np

from ..text.ansi import color_enabled, truecolor
from ..text.lines import Line
from ..text.lines import emit_axes as _emit
from ..text.lines import fit as _fit
from ..text.lines import pad as _pad
from ..text.lines import text_width as _width
from ..text.lines import wrap_words as _wrap
from ..text.ranges import abbreviate_ids, format_bytes
from .model import TreeData, leaf_name

DEFAULT_ROWS = 40  # leaves listed by print(); to_text(max_rows=None) lists them all
MIN_WIDTH = 40
MIN_COLUMN = 16  # a path column narrower than this puts a leaf's numbers on a line of their own
TYPE_INDENT = "    "
GAP = "  "


def render_tree(
    data: TreeData,
    *,
    width: int | None = None,
    color: bool | None = None,
    max_rows: int | None = DEFAULT_ROWS,
    sort: str = "flatten",
) -> str:
    """The report: at most ``width`` columns (the terminal's by default), ``max_rows`` leaves.

    ``sort="bytes"`` lists the leaves that cost most per device first;
    ``"flatten"`` keeps the tree's order. ``color`` as in
    :func:`shardviz.render_text` (``NO_COLOR`` is honoured).
    """
    if sort not in ("flatten", "bytes"):
        raise ValueError(f"sort must be 'flatten' or 'bytes', not {sort!r}")
    cols = shutil.get_terminal_size((80, 24)).columns if width is None else int(width)
    cols = max(MIN_WIDTH, cols)
    blank: Line = [("", None)]
    table = _table(data, cols, max_rows, sort) if max_rows != 0 else []  # 0: the header and the audit only
    lines = [*_header(data, cols), *([blank, *table] if table else []), *_audit(data, cols)]
    use_color = color_enabled(color)
    true_color = truecolor() if use_color else False
    return "\n".join(_emit(line, use_color, true_color) for line in lines)


# --------------------------------------------------------------------------
# header


def _header(data: TreeData, width: int) -> list[Line]:
    others = data.leaf_count - data.array_count
    counts = f"{data.leaf_count:,} {_plural(data.leaf_count, 'leaf', 'leaves')}"
    if others:
        counts += f": {data.array_count:,} {_plural(data.array_count, 'array', 'arrays')} and {others:,} other"
    texts = [f"{counts}, {format_bytes(data.total_bytes)} in all"]
    for k, mesh in enumerate(data.meshes):
        info = mesh.info
        axes = " ".join(f"{n}={s}" for n, s in zip(info.axis_names, info.axis_sizes)) or "()"
        kinds = ", ".join(sorted(set(info.axis_types)) + (["abstract"] if info.abstract else []))
        texts.append(f"{'mesh' if k == 0 else 'also on mesh'} {axes} ({kinds})")
    if data.device_count:
        totals = data.device_totals()
        low, high = int(totals.min()), int(totals.max())
        if low == high:
            line = f"{data.device_count:,} {_plural(data.device_count, 'device', 'devices')}, each holds "
            line += format_bytes(high)
        else:
            line = f"{data.device_count:,} devices hold {_byte_range(low, high)} each"
        if len(data.bytes_by_kind) > 1:  # the most any device holds of each kind
            line += " (" + ", ".join(f"{k} {format_bytes(int(v.max()))}" for k, v in data.bytes_by_kind.items()) + ")"
        texts.append(line)
    replicated = [(a, b) for a, b in data.replicated_bytes.items() if b]
    if replicated:
        texts.append("replicated, per device: " + ", ".join(f"over {a} {format_bytes(b)}" for a, b in replicated))
    if data.process_count > 1:
        remote = data.devices.ids[data.devices.addressable == 0]
        note = f"process {data.process_index} of {data.process_count}"
        if len(remote) and not (data.mesh and data.mesh.abstract):
            note += f"; other processes' devices: {abbreviate_ids(remote)}"
        texts.append(note)
    return [[(t, None)] for text in texts for t in _wrap(text, width, indent="  ")]


def _byte_range(low: int, high: int) -> str:
    """``low to high``, exact when rounding would make them read the same."""
    a, b = format_bytes(low), format_bytes(high)
    return f"{a} to {b}" if a != b else f"{low:,} B to {high:,} B"


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


# --------------------------------------------------------------------------
# the leaf table


def _rows(data: TreeData, max_rows: int | None, sort: str) -> list[int]:
    order = np.arange(data.leaf_count)
    if sort == "bytes":
        order = np.argsort(-data.leaf_bytes, kind="stable")
    return order[: max_rows if max_rows is not None else data.leaf_count].tolist()


def _table(data: TreeData, width: int, max_rows: int | None, sort: str) -> list[Line]:
    if not data.leaf_count:
        return [[("(an empty tree: no leaves)", None)]]
    rows = _rows(data, max_rows, sort)
    multi_kind = len(data.bytes_by_kind) > 1
    head = ["path", "type", "per device", "copies"] + (["memory"] if multi_kind else [])
    cells = [[leaf_name(p), t, b, c] + ([m] if multi_kind else []) for p, t, b, c, m in _cells(data, rows)]
    widths = [max(_width(r[k]) for r in [head, *cells]) for k in range(len(head))]
    numbers_w = sum(widths[2:]) + len(GAP) * (len(widths) - 3)
    axes_of = [_axis_names(data, i) for i in rows]
    out: list[Line] = []
    if widths[0] + widths[1] + 2 * len(GAP) + numbers_w <= width:  # one line per leaf
        out.append(_row(head, widths, ()))
        out += [_row(cell, widths, axes) for cell, axes in zip(cells, axes_of)]
    elif width - numbers_w - len(GAP) >= MIN_COLUMN:  # the path and its numbers, the type below
        path_w = width - numbers_w - len(GAP)
        out.append([(_pad("path", path_w) + GAP + _numbers(head, widths), None)])
        out.append([(TYPE_INDENT + "type", None)])
        for cell, axes in zip(cells, axes_of):
            out.append([(_pad(_fit(cell[0], path_w), path_w) + GAP + _numbers(cell, widths), None)])
            out.append([(TYPE_INDENT, None), *_marked(_fit(cell[1], width - len(TYPE_INDENT)), axes)])
    else:  # very narrow: path, type and numbers each on a line
        out.append([("path / type / " + ", ".join(head[2:]), None)])
        for cell, axes in zip(cells, axes_of):
            out += [[(t, None)] for t in _wrap(cell[0], width, indent=TYPE_INDENT)]
            out.append([(TYPE_INDENT, None), *_marked(_fit(cell[1], width - len(TYPE_INDENT)), axes)])
            out.append([(_fit(TYPE_INDENT + GAP.join(c.strip() for c in cell[2:]), width), None)])
    hidden = data.leaf_count - len(rows)
    if hidden:
        how = "the largest first" if sort == "bytes" else "in flatten order"
        out += [
            [(t, None)]
            for t in _wrap(
                f"... {hidden:,} more {_plural(hidden, 'leaf', 'leaves')} (shown: {len(rows):,} {how}); "
                "tl.to_text(max_rows=None) lists all, sort='bytes' puts the largest first",
                width,
                indent="  ",
            )
        ]
    return out


def _cells(data: TreeData, rows: Sequence[int]) -> list[tuple[str, str, str, str, str]]:
    out = []
    for i in rows:
        g = int(data.leaf_group[i])
        if g < 0:
            out.append((data.paths[i], data.type_str(i), "-", "-", "-"))
            continue
        group = data.groups[g]
        copies = str(group.replication)
        if len(group.positions) < data.device_count:
            ids = data.devices.ids[group.positions]
            copies += f" (dev {abbreviate_ids(ids)})" if len(ids) < 4 else f" ({len(ids)} devs)"
        logical = data.logical_text(i)
        kind = data.type_str(i) + (f"  {logical}" if logical else "")
        out.append((data.paths[i], kind, format_bytes(int(data.leaf_bytes[i])), copies, group.memory_kind))
    return out


def _axis_names(data: TreeData, i: int) -> tuple[str, ...]:
    g = int(data.leaf_group[i])
    if g < 0 or data.groups[g].mesh is None:
        return ()
    mesh = data.groups[g].mesh
    assert mesh is not None
    return data.meshes[mesh].info.axis_names


def _row(cells: Sequence[str], widths: Sequence[int], axes: Sequence[str]) -> Line:
    """One table line: path and type padded to their columns, then the numbers."""
    path = _pad(cells[0], widths[0])
    kind = _pad(cells[1], widths[1])
    return [(path + GAP, None), *_marked(kind, axes), (GAP + _numbers(cells, widths), None)]


def _numbers(cells: Sequence[str], widths: Sequence[int]) -> str:
    """Bytes and copies to the right of their columns, the memory kind to the left."""
    return GAP.join(c.rjust(w) if k < 2 else _pad(c, w) for k, (c, w) in enumerate(zip(cells[2:], widths[2:])))


# --------------------------------------------------------------------------
# the audit


def _audit(data: TreeData, width: int) -> list[Line]:
    audit = data.audit
    if not data.array_count:
        return []
    texts: list[tuple[str, str]] = [("", ""), ("audit", "")]
    if audit.largest:
        texts.append(("  largest per device:", "    "))
        sizes = [format_bytes(int(data.leaf_bytes[i])) for i in audit.largest[:5]]
        size_w = max(map(len, sizes))
        path_w = width - size_w - 6
        texts += [
            (f"    {size.rjust(size_w)}  {_fit(leaf_name(data.paths[i]), path_w)}", "")
            for size, i in zip(sizes, audit.largest)
        ]
    if audit.replicated:
        count = audit.replicated_count
        texts.append(
            (
                f"  replicated over an axis that divides a dimension ({count:,} {_plural(count, 'case', 'cases')}):",
                "    ",
            )
        )
        texts += [("    " + f.message, "      ") for f in audit.replicated]
        if audit.replicated_count > len(audit.replicated):
            texts.append((f"    ... {audit.replicated_count - len(audit.replicated):,} more", "      "))
        if count > 1:
            saving = ", ".join(f"over {a} {format_bytes(b)}" for a, b in audit.replicated_saving.items())
            texts.append((f"    sharding every one saves, per device: {saving}", "      "))
    else:
        texts.append(("  no leaf is replicated over an axis that divides one of its dimensions", "    "))
    if audit.imbalance is not None:
        texts.append(("  uneven: " + audit.imbalance.message, "    "))
    else:
        texts.append(("  every device holds the same bytes", "    "))
    return [[(t, None)] for text, indent in texts for t in _wrap(text, width, indent=indent)]


# --------------------------------------------------------------------------
# text helpers


def _marked(text: str, axis_names: Sequence[str]) -> Line:
    """Split a type string so each ``@axis`` (or each name in ``@(a,b)``) carries its axis index."""
    if "@" not in text or not axis_names:
        return [(text, None)]
    by_length = sorted(range(len(axis_names)), key=lambda a: -len(axis_names[a]))
    out: Line = []
    plain = ""
    i = 0
    inside = False
    while i < len(text):
        start_axis = text[i] == "@" or (inside and text[i - 1] in "(,")
        if text[i] == "@" and i + 1 < len(text) and text[i + 1] == "(":
            plain += "@("
            i += 2
            inside = True
            start_axis = True
        elif text[i] == "@":
            plain += "@"
            i += 1
        if start_axis:
            hit = next((a for a in by_length if axis_names[a] and text.startswith(axis_names[a], i)), None)
            if hit is not None:
                if plain:
                    out.append((plain, None))
                    plain = ""
                out.append((axis_names[hit], hit))
                i += len(axis_names[hit])
                continue
        if i < len(text):
            if text[i] == ")":
                inside = False
            plain += text[i]
            i += 1
    if plain:
        out.append((plain, None))
    return out
