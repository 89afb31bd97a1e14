"""The editors' text grammars for specs and meshes: parse and format.

Text typed in the widget is parsed here by a small tokenizer, never by
``eval``. See docs/payload.md for the grammar.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ShardingError
from .checks import check_mesh_size

AXIS_TYPES = {"auto": "Auto", "explicit": "Explicit", "manual": "Manual"}
MAX_TEXT = 2000

# Axis name: a quoted string, or a bare run of characters that are not
# separators. Bare names cover identifiers and unicode alike.
_TOKEN = re.compile(r"""\s*(?:(?P<quoted>'[^']*'|"[^"]*")|(?P<punct>[(),=:])|(?P<bare>[^\s(),=:'"]+))""")


_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class MeshRequest:
    """A mesh as typed: axis names, sizes and types, in mesh order."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    types: tuple[str, ...]


def _tokens(text: str, what: str) -> list[tuple[str, str]]:
    if len(text) > MAX_TEXT:
        raise ShardingError(f"the {what} text is {len(text)} characters long; at most {MAX_TEXT} are accepted")
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ShardingError(f"cannot read the {what} at character {pos + 1}: {text[pos : pos + 12]!r}")
        if m.group("quoted") is not None:
            out.append(("name", m.group("quoted")[1:-1]))
        elif m.group("punct") is not None:
            out.append((m.group("punct"), m.group("punct")))
        else:
            out.append(("word", m.group("bare")))
        pos = m.end()
    return out


def parse_spec(text: str) -> tuple[tuple[str, ...] | None, ...]:
    """Parse ``P('x', None)``, ``x, None`` or ``(a, b), None``.

    Returns one entry per listed dimension: ``None`` or a tuple of axis names.
    """
    toks = _tokens(text, "spec")
    if len(toks) >= 2 and toks[0][0] == "word" and toks[0][1] in ("P", "PartitionSpec") and toks[1][0] == "(":
        if toks[-1][0] != ")":
            raise ShardingError(f"the spec {text.strip()!r} opens {toks[0][1]}( but never closes it")
        toks = toks[2:-1]
    entries: list[tuple[str, ...] | None] = []
    i = 0
    while i < len(toks):
        kind, value = toks[i]
        if kind == "(":
            names: list[str] = []
            i += 1
            while i < len(toks) and toks[i][0] != ")":
                k, v = toks[i]
                if k == ",":
                    i += 1
                    continue
                if k not in ("name", "word") or (k == "word" and v == "None"):
                    raise ShardingError(f"inside ( ) of the spec only axis names may stand, not {v!r}")
                names.append(v)
                i += 1
            if i >= len(toks):
                raise ShardingError(f"the spec {text.strip()!r} has a ( without its )")
            entries.append(tuple(names) if names else None)
            i += 1
        elif kind == "word" and value == "None":
            entries.append(None)
            i += 1
        elif kind in ("name", "word"):
            entries.append((value,))
            i += 1
        else:
            raise ShardingError(f"unexpected {value!r} in the spec {text.strip()!r}")
        if i < len(toks):
            if toks[i][0] != ",":
                raise ShardingError(f"expected a comma after entry {len(entries)} of the spec, found {toks[i][1]!r}")
            i += 1
    for entry in entries:
        for name in entry or ():
            if not name:
                raise ShardingError("the spec has an empty axis name")
    return tuple(entries)


def parse_mesh(text: str) -> MeshRequest:
    """Parse ``x=2, y=4`` (optionally ``y=4:auto``) into a MeshRequest.

    A mesh beyond ``checks.MAX_DEVICES`` devices is refused here, before
    anything is allocated for it.
    """
    toks = _tokens(text, "mesh")
    if not toks:
        raise ShardingError("the mesh text is empty; write axes as name=size, e.g. x=2, y=4")
    names: list[str] = []
    sizes: list[int] = []
    types: list[str] = []
    i = 0
    while i < len(toks):
        if (
            i + 2 >= len(toks)
            or toks[i][0] not in ("name", "word")
            or toks[i + 1][0] != "="
            or toks[i + 2][0] != "word"
        ):
            shown = " ".join(v for _, v in toks[i : i + 3])
            raise ShardingError(f"mesh axis {len(names) + 1} should read name=size (e.g. x=2), found {shown!r}")
        name, size_text = toks[i][1], toks[i + 2][1]
        i += 3
        axis_type = "Explicit"
        if i < len(toks) and toks[i][0] == ":":
            if i + 1 >= len(toks) or toks[i + 1][1].lower() not in AXIS_TYPES:
                found = toks[i + 1][1] if i + 1 < len(toks) else ""
                raise ShardingError(f"mesh axis {name!r}: unknown axis type {found!r}; use auto, explicit or manual")
            axis_type = AXIS_TYPES[toks[i + 1][1].lower()]
            i += 2
        if not name:
            raise ShardingError(f"mesh axis {len(names) + 1} has an empty name")
        if name in names:
            raise ShardingError(f"mesh axis {name!r} appears twice; axis names must be unique")
        # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
        if not _DIGITS.fullmatch(size_text) or int(size_text) < 1:
            raise ShardingError(f"mesh axis {name!r} has size {size_text!r}; a size is a whole number of at least 1")
        names.append(name)
        sizes.append(int(size_text))
        types.append(axis_type)
        if i < len(toks):
            if toks[i][0] != ",":
                raise ShardingError(f"expected a comma after mesh axis {name!r}, found {toks[i][1]!r}")
            i += 1
    check_mesh_size(names, sizes)
    return MeshRequest(tuple(names), tuple(sizes), tuple(types))


def _name_text(name: str) -> str:
    bare = _TOKEN.fullmatch(name)
    if bare and bare.group("bare") == name and name != "None" and name not in ("P", "PartitionSpec"):
        return name
    return repr(name) if "'" not in name else f'"{name}"'


def format_spec(spec: Sequence[Sequence[str]]) -> str:
    """The spec in the editor's grammar, trailing unpartitioned dims dropped."""
    entries = list(spec)
    while entries and not entries[-1]:
        entries.pop()
    parts = []
    for axes in entries:
        if not axes:
            parts.append("None")
        elif len(axes) == 1:
            parts.append(_name_text(axes[0]))
        else:
            parts.append("(" + ", ".join(_name_text(a) for a in axes) + ")")
    return ", ".join(parts)


def format_mesh(names: Sequence[str], sizes: Sequence[int], types: Sequence[str]) -> str:
    """The mesh in the editor's grammar; Explicit axes carry no suffix."""
    return ", ".join(
        f"{_name_text(n)}={s}" + ("" if t == "Explicit" else f":{t.lower()}") for n, s, t in zip(names, sizes, types)
    )
