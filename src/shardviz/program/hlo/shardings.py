"""An instruction's ``sharding={...}``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .groups import ints_in, iota_array
from .scanning import INDEX_COMMENT, HloParseError, split_top_level

# --------------------------------------------------------------------------
# sharding={...}


@dataclass(frozen=True)
class HloSharding:
    """A parsed ``sharding={...}``.

    ``kind`` is ``replicated``, ``maximal`` (one device: ``device``),
    ``manual``, ``tiled``, ``tuple`` (``elements``) or ``other`` (printed
    forms this reader does not take apart, e.g. ``unknown``). For ``tiled``,
    ``tile_assignment`` holds partition positions shaped by the tile
    dimensions, including the trailing subgroup dimensions named by
    ``subgroups`` (``replicated``, ``manual``, ...).
    """

    kind: str
    text: str
    tile_assignment: np.ndarray | None = field(default=None, compare=False)
    subgroups: tuple[str, ...] = ()
    device: int | None = None
    elements: tuple[HloSharding, ...] = ()

    @property
    def data_tile_dims(self) -> tuple[int, ...]:
        """Tile counts of the array's own dimensions (subgroup dimensions left out)."""
        if self.tile_assignment is None:
            return ()
        dims = self.tile_assignment.shape
        return tuple(dims[: len(dims) - len(self.subgroups)])


_TILED = re.compile(r"devices=\[([\d,\s]*)\](.*)", re.S)


def parse_sharding(text: str) -> HloSharding:
    """``{replicated}``, ``{maximal device=3}``, ``{manual}``,
    ``{devices=[2,1,4]<=[8] last_tile_dim_replicate}``,
    ``{devices=[2,4]0,1,2,3,4,5,6,7}``, ``{devices=[1,2,4]<=[8] last_tile_dims={manual}}``
    and tuples ``{{replicated}, {devices=...}}``.
    """
    raw = INDEX_COMMENT.sub("", text).strip()
    body = raw[1:-1].strip() if raw.startswith("{") and raw.endswith("}") else raw
    if body.startswith("{") or not body:
        elements = tuple(parse_sharding(p) for p in split_top_level(body))
        return HloSharding("tuple", raw, elements=elements)
    body = re.sub(r"\s*metadata=\{.*\}\s*$", "", body)  # sharding metadata says where it came from
    if body == "replicated":
        return HloSharding("replicated", raw)
    if body == "manual":
        return HloSharding("manual", raw)
    m = re.fullmatch(r"maximal device=(\d+)", body)
    if m:
        return HloSharding("maximal", raw, device=int(m.group(1)))
    m = _TILED.fullmatch(body)
    if m is None:
        return HloSharding("other", raw)
    dims = ints_in(m.group(1))
    rest = m.group(2).strip()
    subgroups: tuple[str, ...] = ()
    flags = re.search(r"\s(last_tile_dim_replicate|last_tile_dims=\{[^}]*\})\s*$", " " + rest)
    if flags:
        rest = rest[: len(rest) - len(flags.group(1))].strip()
        if flags.group(1) == "last_tile_dim_replicate":
            subgroups = ("replicated",)
        else:
            subgroups = tuple(s.strip() for s in flags.group(1)[len("last_tile_dims={") : -1].split(","))
    iota = re.fullmatch(r"<=\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?", rest)
    if iota:
        arr = iota_array(dims, ints_in(iota.group(1)), ints_in(iota.group(2)) if iota.group(2) else None)
    else:
        ids = ints_in(rest)
        if len(ids) != math.prod(dims):
            raise HloParseError(f"sharding lists {len(ids)} devices for a [{dims}] tile grid: {text[:120]!r}")
        arr = np.asarray(ids, dtype=np.int64).reshape(dims)
    return HloSharding("tiled", raw, tile_assignment=arr, subgroups=subgroups)
