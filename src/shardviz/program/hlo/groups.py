"""Device lists: replica groups in their three printed forms, and source-target pairs."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .scanning import HloParseError, split_top_level

# --------------------------------------------------------------------------
# device lists: iota forms, explicit lists, the mesh form


def iota_array(dims: Sequence[int], reshape: Sequence[int], perm: Sequence[int] | None) -> np.ndarray:
    """``[dims]<=[reshape]T(perm)``: iota over ``reshape``, transposed by ``perm``, reshaped to ``dims``."""
    total = math.prod(reshape)
    if math.prod(dims) != total:
        raise HloParseError(f"iota [{dims}]<=[{reshape}] has {math.prod(dims)} slots for {total} ids")
    arr = np.arange(total, dtype=np.int64).reshape(tuple(reshape))
    if perm is not None:
        arr = arr.transpose(tuple(perm))
    return arr.reshape(tuple(dims))


_IOTA = re.compile(r"\[([\d,\s]*)\]<=\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?")


def ints_in(text: str) -> list[int]:
    return [int(t) for t in text.replace(" ", "").split(",") if t]


@dataclass(frozen=True)
class ReplicaGroups:
    """Replica groups as printed (``form``) and expanded (``groups``)."""

    form: str  # "list", "iota" or "mesh"
    groups: tuple[tuple[int, ...], ...]  # empty: one group of every participant


def parse_replica_groups(text: str) -> ReplicaGroups:
    """All three printed forms of ``replica_groups``.

    - lists: ``{{0,1},{2,3}}`` (``{}`` means one group of everyone);
    - iota: ``[2,4]<=[8]`` or ``[4,2]<=[2,4]T(1,0)``: rows of the iota array;
    - mesh: ``mesh['a'=2,'b'=4] {'a'}``, optionally with ``, device_ids=(...)``
      and sub-axes ``'a':(1)2``, see :func:`mesh_form_groups`.
    """
    text = text.strip()
    if text.startswith("mesh["):
        return ReplicaGroups("mesh", mesh_form_groups(text))
    m = _IOTA.fullmatch(text)
    if m:
        arr = iota_array(ints_in(m.group(1)), ints_in(m.group(2)), ints_in(m.group(3)) if m.group(3) else None)
        return ReplicaGroups("iota", tuple(tuple(int(v) for v in row) for row in arr))
    if text.startswith("{"):
        inner = text[1:-1].strip()
        groups = tuple(tuple(ints_in(g.strip("{}"))) for g in split_top_level(inner)) if inner else ()
        return ReplicaGroups("list", groups)
    raise HloParseError(f"unknown replica_groups form: {text[:120]!r}")


_MESH_FORM = re.compile(r"mesh\[(?P<axes>[^\]]*)\](?:\s*,\s*device_ids=(?P<ids>\(.*\)))?\s*\{(?P<group>[^}]*)\}\s*$")
_MESH_AXIS = re.compile(r"'([^']*)'=(\d+)|\"([^\"]*)\"=(\d+)|([\w.]+)=(\d+)")
_GROUP_AXIS = re.compile(r"^(?:'([^']*)'|\"([^\"]*)\"|([\w.]+))(?::\((\d+)\)(\d+))?$")


def mesh_form_groups(text: str) -> tuple[tuple[int, ...], ...]:
    """Groups of the mesh form ``mesh[names=sizes](, device_ids=(...)) {axes}``.

    The device array (iota, or ``device_ids``) is shaped by the mesh's axes;
    a group is every device that differs only along the listed axes, ordered
    by those axes in the order listed (major first). A sub-axis
    ``'a':(pre)size`` is the ``size``-long piece of axis ``a`` below a major
    piece of ``pre``: axis ``a`` is split into ``[pre, size, rest]``.
    """
    m = _MESH_FORM.match(text.strip())
    if m is None:
        raise HloParseError(f"unreadable mesh-form replica groups: {text[:120]!r}")
    names: list[str] = []
    sizes: list[int] = []
    for am in _MESH_AXIS.finditer(m.group("axes")):
        name = am.group(1) if am.group(1) is not None else am.group(3) if am.group(3) is not None else am.group(5)
        size = am.group(2) or am.group(4) or am.group(6)
        names.append(name)
        sizes.append(int(size))
    total = math.prod(sizes)
    devices = _mesh_device_ids(m.group("ids"), sizes, total)

    refs = _group_axes(m.group("group"), names, sizes, text)

    # Split each mesh axis into factors (major first), marking which listed ref each grouped factor is.
    factors: list[int] = []
    grouped_factor_of_ref: dict[int, int] = {}
    for axis, size in enumerate(sizes):
        mine = sorted((r for r in range(len(refs)) if refs[r][0] == axis), key=lambda r: refs[r][1])
        covered = 1
        for r in mine:
            _, pre, sub = refs[r]
            if pre % covered:
                raise HloParseError(f"sub-axes of {names[axis]!r} overlap in {text[:120]!r}")
            if pre > covered:
                factors.append(pre // covered)
            grouped_factor_of_ref[r] = len(factors)
            factors.append(sub)
            covered = pre * sub
        if size % covered:
            raise HloParseError(f"sub-axes of {names[axis]!r} do not divide its size {size}")
        if covered < size or not mine:
            factors.append(size // covered)
    grouped = [grouped_factor_of_ref[r] for r in range(len(refs))]
    rest = [f for f in range(len(factors)) if f not in grouped]
    group_size = math.prod(factors[f] for f in grouped)
    arr = devices.reshape(factors).transpose(rest + grouped).reshape(total // group_size, group_size)
    return tuple(tuple(int(v) for v in row) for row in arr)


def _group_axes(group: str, names: list[str], sizes: list[int], text: str) -> list[tuple[int, int, int]]:
    """Every axis (or sub-axis) a group lists, as (mesh axis index, pre, size)."""
    refs: list[tuple[int, int, int]] = []
    for part in split_top_level(group):
        gm = _GROUP_AXIS.match(part.strip())
        if gm is None:
            raise HloParseError(f"unreadable group axis {part!r} in {text[:120]!r}")
        name = next(g for g in gm.group(1, 2, 3) if g is not None)
        if name not in names:
            raise HloParseError(f"group axis {name!r} is not in the mesh {names}")
        axis = names.index(name)
        if gm.group(4) is not None:
            refs.append((axis, int(gm.group(4)), int(gm.group(5))))
        else:
            refs.append((axis, 1, sizes[axis]))
    return refs


def _mesh_device_ids(text: str | None, sizes: Sequence[int], total: int) -> np.ndarray:
    if not text:
        return np.arange(total, dtype=np.int64)
    inner = text.strip()[1:-1].strip()  # drop the parentheses
    m = re.fullmatch(r"\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?", inner)
    if m:  # an iota device order, printed as [reshape]T(perm)
        return iota_array([total], ints_in(m.group(1)), ints_in(m.group(2)) if m.group(2) else None)
    m = _IOTA.fullmatch(inner)
    if m:
        return iota_array([total], ints_in(m.group(2)), ints_in(m.group(3)) if m.group(3) else None)
    ids = ints_in(inner.strip("[]{}"))
    if len(ids) != total:
        raise HloParseError(f"device_ids lists {len(ids)} ids for a mesh of {total}")
    return np.asarray(ids, dtype=np.int64)


def parse_source_target_pairs(text: str) -> tuple[tuple[int, int], ...]:
    """``{{0,1},{1,2}}`` -> ((0, 1), (1, 2))."""
    inner = text.strip()[1:-1].strip()
    pairs = []
    for part in split_top_level(inner):
        ids = ints_in(part.strip("{}"))
        if len(ids) != 2:
            raise HloParseError(f"a source-target pair needs two ids, got {part!r}")
        pairs.append((ids[0], ids[1]))
    return tuple(pairs)
