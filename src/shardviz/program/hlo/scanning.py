"""Scanning HLO text: balanced brackets, quoted strings, and shapes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# --------------------------------------------------------------------------
# scanning: balanced brackets and quotes

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_SPECIAL = re.compile(r"[()\[\]{}\"',]")
_BRACKET = re.compile(r"[()\[\]{}\"']")
_QUOTED = {'"': re.compile(r'"(?:[^"\\]|\\.)*"'), "'": re.compile(r"'(?:[^'\\]|\\.)*'")}


class HloParseError(ValueError):
    """Text that does not read as HLO; the message quotes where."""


def _skip_quoted(text: str, start: int) -> int:
    """Index just past the string literal that opens at ``start``."""
    m = _QUOTED[text[start]].match(text, start)
    if m is None:
        raise HloParseError(f"unterminated string literal: {text[start : start + 60]!r}")
    return m.end()


def closing_index(text: str, start: int) -> int:
    """Index just past the bracket that closes the one at ``start``."""
    stack = [_OPENERS[text[start]]]
    i = start + 1
    while stack:
        m = _BRACKET.search(text, i)
        if m is None:
            raise HloParseError(f"unbalanced {text[start]!r} in {text[start : start + 80]!r}")
        c = m.group()
        i = m.start()
        if c in "\"'":
            i = _skip_quoted(text, i)
            continue
        if c in _OPENERS:
            stack.append(_OPENERS[c])
        elif c == stack[-1]:
            stack.pop()
        else:
            raise HloParseError(f"mismatched {c!r} in {text[start : i + 1][-80:]!r}")
        i += 1
    return i


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` characters outside brackets and quotes."""
    parts: list[str] = []
    start = 0
    i = 0
    while True:
        m = _SPECIAL.search(text, i)
        if m is None:
            break
        c = m.group()
        i = m.start()
        if c in "\"'":
            i = _skip_quoted(text, i)
        elif c in _OPENERS:
            i = closing_index(text, i)
        elif c == sep:
            parts.append(text[start:i])
            start = i = i + 1
        else:
            i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "'": b"'", "\\": b"\\", "?": b"?"}


def unquote(text: str) -> str:
    """A C-escaped string literal (``"..."``) as text; XLA writes non-ASCII bytes as octal escapes."""
    body = text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out += c.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i += 2
        elif nxt == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
            out.append(int(m.group(), 16) if m else ord("x"))
            i += 2 + (len(m.group()) if m else 0)
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(int(m.group(), 8) & 0xFF)
            i += 1 + len(m.group())
        else:
            out += nxt.encode()
            i += 2
    return out.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------
# shapes

# Bytes per element of XLA's primitive types (sub-byte types count as packed).
_ELEMENT_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "u64": 64,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "token": 0,
}

# XLA's element type names as numpy/JAX spell them.
NUMPY_NAMES = {
    "pred": "bool",
    "s8": "int8",
    "u8": "uint8",
    "s16": "int16",
    "u16": "uint16",
    "f16": "float16",
    "bf16": "bfloat16",
    "s32": "int32",
    "u32": "uint32",
    "f32": "float32",
    "s64": "int64",
    "u64": "uint64",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "s4": "int4",
    "u4": "uint4",
    "s2": "int2",
    "u2": "uint2",
}


def element_bits(element_type: str) -> int | None:
    """Bits per element, or None for a type this table does not know."""
    if element_type in _ELEMENT_BITS:
        return _ELEMENT_BITS[element_type]
    m = re.fullmatch(r"f(\d+)e\w*", element_type)  # f8e4m3fn, f8e5m2, f4e2m1fn, ...
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Shape:
    """An HLO shape: an array (``element_type`` and ``dims``) or a tuple of shapes."""

    element_type: str  # "f32", ..., or "tuple"
    dims: tuple[int, ...] = ()
    tuple_shapes: tuple[Shape, ...] = ()
    memory_space: int | None = None  # the layout's S(n), if printed

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def leaves(self) -> tuple[Shape, ...]:
        if not self.is_tuple:
            return (self,)
        return tuple(leaf for s in self.tuple_shapes for leaf in s.leaves)

    @property
    def byte_size(self) -> int:
        """Bytes of the buffer(s); tuples sum their elements (unknown types count 0)."""
        total = 0
        for leaf in self.leaves:
            bits = element_bits(leaf.element_type) or 0
            total += math.ceil(math.prod(leaf.dims) * bits / 8)
        return total

    @property
    def dtype(self) -> str | None:
        """The numpy name of an array's element type (None for tuples and unknown types)."""
        return None if self.is_tuple else NUMPY_NAMES.get(self.element_type, self.element_type)

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(map(str, self.tuple_shapes)) + ")"
        return f"{self.element_type}[{','.join(map(str, self.dims))}]"


_ARRAY_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](\{[^}]*\})?")
INDEX_COMMENT = re.compile(r"/\*[^*]*\*/")


def parse_shape(text: str) -> Shape:
    """``f32[8,16]{1,0}``, ``(f32[8], s32[])`` (nested tuples too), ``f32[<=8]`` (its bound)."""
    text = INDEX_COMMENT.sub("", text).strip()
    if text.startswith("("):
        end = closing_index(text, 0)
        if text[end:].strip():
            raise HloParseError(f"trailing text after tuple shape: {text!r}")
        return Shape("tuple", tuple_shapes=tuple(parse_shape(p) for p in split_top_level(text[1 : end - 1])))
    m = _ARRAY_SHAPE.fullmatch(text)
    if m is None:
        raise HloParseError(f"not an HLO shape: {text!r}")
    dims = tuple(int(d.strip().lstrip("<=")) for d in m.group(2).split(",") if d.strip())
    space = re.search(r"S\((\d+)\)", m.group(3) or "")
    return Shape(m.group(1), dims, memory_space=int(space.group(1)) if space else None)
