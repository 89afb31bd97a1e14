"""Read XLA's HLO text. The one module in shardviz that parses it.

Text in, small frozen records out: a :class:`Module` of computations, each a
tuple of :class:`Instruction` (name, opcode, result shape, operands, raw
attributes), plus the module's source tables (``FileNames``,
``FunctionNames``, ``FileLocations``, ``StackFrames``). Helpers read the
attribute values that shardviz cares about: replica groups in their three
printed forms, ``source_target_pairs``, ``sharding={...}``, ``metadata={...}``
and a while loop's ``known_trip_count``. :func:`collective_ops` walks the
module and returns every collective once, with how many times one call of
the program runs it.

Nothing here knows about JAX objects; ids in replica groups stay what XLA
prints (partition positions, see :func:`replica_groups_of`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

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


def _match(text: str, start: int) -> int:
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


def _split_top_level(text: str, sep: str = ",") -> list[str]:
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
            i = _match(text, i)
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
_INDEX_COMMENT = re.compile(r"/\*[^*]*\*/")


def parse_shape(text: str) -> Shape:
    """``f32[8,16]{1,0}``, ``(f32[8], s32[])`` (nested tuples too), ``f32[<=8]`` (its bound)."""
    text = _INDEX_COMMENT.sub("", text).strip()
    if text.startswith("("):
        end = _match(text, 0)
        if text[end:].strip():
            raise HloParseError(f"trailing text after tuple shape: {text!r}")
        return Shape("tuple", tuple_shapes=tuple(parse_shape(p) for p in _split_top_level(text[1 : end - 1])))
    m = _ARRAY_SHAPE.fullmatch(text)
    if m is None:
        raise HloParseError(f"not an HLO shape: {text!r}")
    dims = tuple(int(d.strip().lstrip("<=")) for d in m.group(2).split(",") if d.strip())
    space = re.search(r"S\((\d+)\)", m.group(3) or "")
    return Shape(m.group(1), dims, memory_space=int(space.group(1)) if space else None)


# --------------------------------------------------------------------------
# instructions and computations


@dataclass(frozen=True)
class Metadata:
    """An instruction's ``metadata={...}``."""

    op_name: str | None = None
    op_type: str | None = None
    stack_frame_id: int | None = None
    source_file: str | None = None  # older XLA printed these inline
    source_line: int | None = None


_CALLED = re.compile(r"[ ,](body|condition|to_apply|true_computation|false_computation|calls)=(\{[^}]*\}|%?[^\s,{}]+)")
_OPERAND_NAME = re.compile(r"%([^\s,()]+)")
_BRANCHES = re.compile(r"[ ,]branch_computations=\{([^}]*)\}")


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction, read lazily: the name, opcode and ROOT flag at
    once; the shape, operands and attributes (every ``key=value`` as printed)
    when first asked for, so a big module costs little for what is not read."""

    name: str
    opcode: str
    is_root: bool
    text: str  # the instruction's line, stripped
    shape_span: tuple[int, int] = field(repr=False)
    operand_span: tuple[int, int] = field(repr=False)

    @cached_property
    def shape(self) -> Shape:
        return parse_shape(self.text[self.shape_span[0] : self.shape_span[1]])

    @cached_property
    def operands(self) -> tuple[str, ...]:
        start, end = self.operand_span
        inner = self.text[start + 1 : end - 1]
        if "%" in inner and '"' not in inner and "{" not in inner:  # plain %names: read them by pattern
            return tuple(_OPERAND_NAME.findall(inner))
        return tuple(_operand_name(o) for o in _split_top_level(inner))

    @cached_property
    def attributes(self) -> tuple[tuple[str, str], ...]:
        return _parse_attributes(self.text[self.operand_span[1] :])

    def attr(self, key: str) -> str | None:
        if f"{key}=" not in self.text:  # most lookups miss; skip the split
            return None
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    @cached_property
    def metadata(self) -> Metadata:
        raw = self.attr("metadata")
        return parse_metadata(raw) if raw else Metadata()

    @cached_property
    def called_computations(self) -> tuple[tuple[str, str], ...]:
        """``(role, computation)`` for every computation this instruction calls.

        Roles: ``body``, ``condition``, ``calls``, ``to_apply``, ``branch`` (a
        conditional's branches), ``true_computation``, ``false_computation``.
        Read by pattern from the attribute text (no string attribute of HLO
        holds these keys), which keeps big modules cheap.
        """
        tail = self.text[self.operand_span[1] :]
        if "=" not in tail:
            return ()
        out: list[tuple[str, str]] = []
        for m in _CALLED.finditer(tail):
            out.extend((m.group(1), v.strip().lstrip("%")) for v in m.group(2).strip("{}").split(",") if v.strip())
        for m in _BRANCHES.finditer(tail):
            out.extend(("branch", v.strip().lstrip("%")) for v in m.group(1).split(",") if v.strip())
        return tuple(out)


@dataclass(frozen=True)
class Computation:
    name: str
    is_entry: bool
    instructions: tuple[Instruction, ...]

    @cached_property
    def by_name(self) -> Mapping[str, Instruction]:
        return {i.name: i for i in self.instructions}

    @property
    def root(self) -> Instruction | None:
        return next((i for i in self.instructions if i.is_root), None)


@dataclass(frozen=True)
class StackFrame:
    """One frame of the module's ``StackFrames`` table, resolved to text."""

    id: int
    file: str
    function: str
    line: int
    column: int
    parent: int | None  # the calling frame's id; None at the outermost frame


@dataclass(frozen=True)
class Module:
    name: str
    attributes: tuple[tuple[str, str], ...]
    computations: tuple[Computation, ...]
    stack_frames: Mapping[int, StackFrame] = field(default_factory=dict)

    def attr(self, key: str) -> str | None:
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    @cached_property
    def by_name(self) -> Mapping[str, Computation]:
        return {c.name: c for c in self.computations}

    @property
    def entry(self) -> Computation:
        for c in self.computations:
            if c.is_entry:
                return c
        raise HloParseError(f"module {self.name} has no ENTRY computation")

    @property
    def num_partitions(self) -> int:
        return int(self.attr("num_partitions") or 1)

    @property
    def num_replicas(self) -> int:
        return int(self.attr("replica_count") or 1)

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        for comp in self.computations:
            for inst in comp.instructions:
                yield comp, inst

    def frames(self, stack_frame_id: int | None) -> tuple[StackFrame, ...]:
        """The call stack of a ``stack_frame_id``, innermost frame first."""
        out: list[StackFrame] = []
        seen: set[int] = set()
        current = stack_frame_id
        while current is not None and current in self.stack_frames and current not in seen:
            seen.add(current)
            frame = self.stack_frames[current]
            out.append(frame)
            current = frame.parent
        return tuple(out)


_COMPUTATION_HEAD = re.compile(r"^(ENTRY\s+)?%?([^\s(]+)\s*(\(.*)?\{\s*$")
_INSTRUCTION_HEAD = re.compile(r"^(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_OPCODE = re.compile(r"\s*([A-Za-z][\w\-]*)\(")
_NON_SPACE = re.compile(r"\S+")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def parse_module(text: str) -> Module:
    """Parse a whole module as ``Compiled.as_text()`` or an XLA dump prints it."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].startswith("HloModule"):
        i += 1
    if i == len(lines):
        raise HloParseError("no 'HloModule' header line")
    header = lines[i][len("HloModule") :].strip()
    name, _, rest = header.partition(",")
    module_attrs = _parse_attributes(rest)
    i += 1

    tables: dict[str, dict[int, str]] = {t: {} for t in _TABLES}
    computations: list[Computation] = []
    while i < len(lines):
        line = lines[i].strip()
        if not line or line.startswith("//"):
            i += 1
            continue
        if line in _TABLES:
            table = tables[line]
            i += 1
            while i < len(lines) and lines[i].strip():
                key, _, value = lines[i].strip().partition(" ")
                table[int(key)] = value.strip()
                i += 1
            continue
        head = _COMPUTATION_HEAD.match(line)
        if head is None:
            raise HloParseError(f"expected a computation, got {line[:120]!r}")
        body: list[Instruction] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "}":
            if lines[i].strip():
                body.append(parse_instruction(lines[i]))
            i += 1
        if i == len(lines):
            raise HloParseError(f"computation {head.group(2)} is not closed")
        computations.append(Computation(head.group(2), bool(head.group(1)), tuple(body)))
        i += 1
    return Module(name.strip(), module_attrs, tuple(computations), _stack_frames(tables))


def parse_instruction(line: str) -> Instruction:
    """One instruction line: ``[ROOT] %name = shape opcode(operands), key=value, ...``."""
    text = line.strip()
    head = _INSTRUCTION_HEAD.match(text)
    if head is None:
        raise HloParseError(f"not an instruction: {text[:120]!r}")
    pos = head.end()
    if text[pos] == "(":
        end = _match(text, pos)
    else:
        m = _NON_SPACE.match(text, pos)
        assert m is not None
        end = m.end()
    op = _OPCODE.match(text, end)
    if op is None:
        raise HloParseError(f"no opcode in {text[:120]!r}")
    args_start = op.end() - 1
    args_end = _match(text, args_start)
    return Instruction(
        name=head.group(2),
        opcode=op.group(1),
        is_root=bool(head.group(1)),
        text=text,
        shape_span=(pos, end),
        operand_span=(args_start, args_end),
    )


def _operand_name(text: str) -> str:
    """``%x`` or ``f32[8]{0} %x`` -> ``x``; a literal (``constant(0)``) stays as printed."""
    last = text.rsplit(" ", 1)[-1]
    return last[1:] if last.startswith("%") else text


def _parse_attributes(text: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for part in _split_top_level(text):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip() if eq else ""
        # The mesh form prints its device order after a top-level comma:
        # replica_groups=mesh['a'=4,'b'=2], device_ids=([2,2,2]T(0,2,1)) {'a':(2)2}
        if key == "device_ids" and out and out[-1][0] == "replica_groups" and out[-1][1].startswith("mesh["):
            out[-1] = ("replica_groups", f"{out[-1][1]}, device_ids={value}")
            continue
        out.append((key, value))
    return tuple(out)


def parse_metadata(text: str) -> Metadata:
    """``{op_name="jit(f)/dot_general" stack_frame_id=2}`` -> Metadata."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    fields: dict[str, str] = {}
    for m in re.finditer(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|\S+)", body):
        fields[m.group(1)] = unquote(m.group(2)) if m.group(2).startswith('"') else m.group(2)

    def as_int(key: str) -> int | None:
        v = fields.get(key)
        return int(v) if v is not None and re.fullmatch(r"-?\d+", v) else None

    return Metadata(
        op_name=fields.get("op_name"),
        op_type=fields.get("op_type"),
        stack_frame_id=as_int("stack_frame_id"),
        source_file=fields.get("source_file"),
        source_line=as_int("source_line"),
    )


def _stack_frames(tables: Mapping[str, Mapping[int, str]]) -> dict[int, StackFrame]:
    """Resolve the four source tables into frames.

    XLA prints ``parent_frame_id`` one higher than the parent's id: the root
    frame prints ``parent_frame_id=1`` and a frame called from frame ``k``
    prints ``k + 1`` (seen on jax 0.10.2; the tests check it against real
    call chains). A table printed with the plain id would show a root with
    ``parent_frame_id=0``; that is detected and read as printed.
    """
    files = {k: unquote(v) for k, v in tables["FileNames"].items()}
    functions = {k: unquote(v) for k, v in tables["FunctionNames"].items()}
    locations = {k: _brace_fields(v) for k, v in tables["FileLocations"].items()}
    raw = {k: _brace_fields(v) for k, v in tables["StackFrames"].items()}
    shifted = bool(raw) and all(int(f.get("parent_frame_id", "0")) >= 1 for f in raw.values())
    frames: dict[int, StackFrame] = {}
    for frame_id, f in raw.items():
        loc = locations.get(int(f.get("file_location_id", "0")), {})
        parent = int(f.get("parent_frame_id", "0")) - (1 if shifted else 0)
        frames[frame_id] = StackFrame(
            id=frame_id,
            file=files.get(int(loc.get("file_name_id", "0")), "?"),
            function=functions.get(int(loc.get("function_name_id", "0")), "?"),
            line=int(loc.get("line", "0")),
            column=int(loc.get("column", "0")),
            parent=parent if parent >= 1 and parent != frame_id else None,
        )
    return frames


def _brace_fields(text: str) -> dict[str, str]:
    body = text.strip().strip("{}")
    return {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\S+)", body)}


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


def _ints(text: str) -> list[int]:
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
        arr = iota_array(_ints(m.group(1)), _ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
        return ReplicaGroups("iota", tuple(tuple(int(v) for v in row) for row in arr))
    if text.startswith("{"):
        inner = text[1:-1].strip()
        groups = tuple(tuple(_ints(g.strip("{}"))) for g in _split_top_level(inner)) if inner else ()
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

    # Every listed axis (or sub-axis) as (mesh axis index, pre, size).
    refs: list[tuple[int, int, int]] = []
    for part in _split_top_level(m.group("group")):
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


def _mesh_device_ids(text: str | None, sizes: Sequence[int], total: int) -> np.ndarray:
    if not text:
        return np.arange(total, dtype=np.int64)
    inner = text.strip()[1:-1].strip()  # drop the parentheses
    m = re.fullmatch(r"\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?", inner)
    if m:  # an iota device order, printed as [reshape]T(perm)
        return iota_array([total], _ints(m.group(1)), _ints(m.group(2)) if m.group(2) else None)
    m = _IOTA.fullmatch(inner)
    if m:
        return iota_array([total], _ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
    ids = _ints(inner.strip("[]{}"))
    if len(ids) != total:
        raise HloParseError(f"device_ids lists {len(ids)} ids for a mesh of {total}")
    return np.asarray(ids, dtype=np.int64)


def parse_source_target_pairs(text: str) -> tuple[tuple[int, int], ...]:
    """``{{0,1},{1,2}}`` -> ((0, 1), (1, 2))."""
    inner = text.strip()[1:-1].strip()
    pairs = []
    for part in _split_top_level(inner):
        ids = _ints(part.strip("{}"))
        if len(ids) != 2:
            raise HloParseError(f"a source-target pair needs two ids, got {part!r}")
        pairs.append((ids[0], ids[1]))
    return tuple(pairs)


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
    raw = _INDEX_COMMENT.sub("", text).strip()
    body = raw[1:-1].strip() if raw.startswith("{") and raw.endswith("}") else raw
    if body.startswith("{") or not body:
        elements = tuple(parse_sharding(p) for p in _split_top_level(body))
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
    dims = _ints(m.group(1))
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
        arr = iota_array(dims, _ints(iota.group(1)), _ints(iota.group(2)) if iota.group(2) else None)
    else:
        ids = _ints(rest)
        if len(ids) != math.prod(dims):
            raise HloParseError(f"sharding lists {len(ids)} devices for a [{dims}] tile grid: {text[:120]!r}")
        arr = np.asarray(ids, dtype=np.int64).reshape(dims)
    return HloSharding("tiled", raw, tile_assignment=arr, subgroups=subgroups)


# --------------------------------------------------------------------------
# loops, call structure and collectives


def known_trip_count(inst: Instruction) -> int | None:
    """A while loop's ``known_trip_count`` from its backend_config (None when XLA does not know it)."""
    config = inst.attr("backend_config")
    if not config or "known_trip_count" not in config:
        return None
    try:
        data = json.loads(unquote(config) if config.startswith('"') else config)
        return int(data["known_trip_count"]["n"])
    except (ValueError, KeyError, TypeError):
        m = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)', config)
        return int(m.group(1)) if m else None


@dataclass(frozen=True)
class ExecutionCount:
    """How many times one run of the entry computation runs a computation.

    ``exact`` is False when a loop on the way has no known trip count (it is
    counted once) or a conditional branch is on the way (it may not run).
    """

    count: int
    exact: bool


def execution_counts(module: Module) -> dict[str, ExecutionCount]:
    """Per computation: executions per call of the module, multiplied through loop nesting.

    A while body runs ``known_trip_count`` times per run of the while (its
    condition once more); a conditional's branches at most once; any other
    called computation (``calls``, ``to_apply``, async wrappers) once per
    run of its caller. Computations reached from several places add up.
    """
    counts: dict[str, ExecutionCount] = {module.entry.name: ExecutionCount(1, True)}
    order = _topological_computations(module)
    for name in order:
        here = counts.get(name)
        if here is None:
            continue
        comp = module.by_name[name]
        for inst in comp.instructions:
            trips = known_trip_count(inst) if inst.opcode == "while" else None
            for role, callee in inst.called_computations:
                # An async pair names its wrapped computation on both halves; it runs once.
                if callee not in module.by_name or inst.opcode.endswith("-done") or inst.opcode == "async-update":
                    continue
                times, exact = 1, here.exact
                if role == "body":
                    times, exact = (trips, exact) if trips is not None else (1, False)
                elif role == "condition":
                    times, exact = (trips + 1, exact) if trips is not None else (1, False)
                elif role in ("branch", "true_computation", "false_computation"):
                    exact = False
                before = counts.get(callee)
                add = here.count * times
                counts[callee] = (
                    ExecutionCount(add, exact)
                    if before is None
                    else ExecutionCount(before.count + add, before.exact and exact)
                )
    return counts


def _topological_computations(module: Module) -> list[str]:
    """Computations callers first (HLO has no recursion)."""
    callees = {
        c.name: [callee for i in c.instructions for _, callee in i.called_computations] for c in module.computations
    }
    seen: set[str] = set()
    post: list[str] = []

    def visit(name: str) -> None:
        stack = [(name, iter(callees.get(name, ())))]
        seen.add(name)
        while stack:
            node, it = stack[-1]
            nxt = next((c for c in it if c not in seen and c in callees), None)
            if nxt is None:
                post.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(callees.get(nxt, ()))))

    visit(module.entry.name)
    return post[::-1]


COLLECTIVE_KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)


@dataclass(frozen=True)
class CollectiveOp:
    """One collective of the compiled module, counted once.

    An async pair (``all-gather-start`` / ``all-gather-done``) is one
    collective: ``inst`` is the ``-start`` (it carries the groups) and
    ``result`` the shape the ``-done`` returns. ``groups`` are as printed
    (partition positions for cross-partition collectives), or derived from
    ``pairs`` for a collective-permute: the connected devices.
    """

    kind: str
    inst: Instruction
    computation: str
    result: Shape
    operand_count: int
    groups: tuple[tuple[int, ...], ...]
    groups_form: str  # "list", "iota", "mesh", "pairs" or "all"
    pairs: tuple[tuple[int, int], ...]
    channel_id: int | None
    count: int
    count_exact: bool


def collective_kind(opcode: str) -> str | None:
    """``all-gather-start`` -> ``all-gather``; None for ``-done`` and non-collectives."""
    if opcode.endswith("-done"):
        return None
    base = opcode[: -len("-start")] if opcode.endswith("-start") else opcode
    return base if base in COLLECTIVE_KINDS else None


def collective_ops(module: Module) -> list[CollectiveOp]:
    """Every collective in ``module`` once, in module order, with execution counts."""
    counts = execution_counts(module)
    done_shape: dict[tuple[str, str], Shape] = {}
    for comp, inst in module.instructions():
        if inst.opcode.endswith("-done") and inst.operands:
            done_shape[(comp.name, inst.operands[0])] = inst.shape
    participants = module.num_partitions * module.num_replicas
    out: list[CollectiveOp] = []
    for comp, inst in module.instructions():
        kind = collective_kind(inst.opcode)
        if kind is None:
            continue
        here = counts.get(comp.name)
        if here is None:  # not reachable from ENTRY
            continue
        result = done_shape.get((comp.name, inst.name), inst.shape) if inst.opcode.endswith("-start") else inst.shape
        channel = inst.attr("channel_id")
        pairs: tuple[tuple[int, int], ...] = ()
        if kind == "collective-permute":
            pairs = parse_source_target_pairs(inst.attr("source_target_pairs") or "{}")
            groups, form = permute_groups(pairs), "pairs"
        else:
            raw = inst.attr("replica_groups")
            rg = parse_replica_groups(raw) if raw is not None else ReplicaGroups("list", ())
            groups, form = rg.groups, rg.form
            if not groups:
                groups, form = (tuple(range(participants)),), "all"
            elif not channel and inst.attr("use_global_device_ids") != "true" and module.num_replicas == 1:
                # Cross-replica mode with one replica: every partition reduces with itself only.
                groups, form = tuple((p,) for p in range(module.num_partitions)), "all"
        out.append(
            CollectiveOp(
                kind=kind,
                inst=inst,
                computation=comp.name,
                result=_done_result(result, inst),
                operand_count=len(inst.operands),
                groups=groups,
                groups_form=form,
                pairs=pairs,
                channel_id=int(channel) if channel and channel.isdigit() else None,
                count=here.count,
                count_exact=here.exact,
            )
        )
    return out


def _done_result(shape: Shape, inst: Instruction) -> Shape:
    """The data a collective returns: a ``-start`` without its ``-done`` returns
    (operands..., results...) in one tuple, so keep the results half."""
    if inst.opcode.endswith("-start") and shape.is_tuple and len(shape.tuple_shapes) >= 2 * len(inst.operands) > 0:
        n = len(inst.operands)
        rest = shape.tuple_shapes[n : 2 * n]
        return rest[0] if n == 1 else Shape("tuple", tuple_shapes=tuple(rest))
    return shape


def permute_groups(pairs: Sequence[tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    """Devices joined by source-target pairs, as sorted groups (self pairs stay alone)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for x in list(parent):
        members.setdefault(find(x), []).append(x)
    return tuple(tuple(sorted(g)) for _, g in sorted(members.items()))


# --------------------------------------------------------------------------
# the lowered module's mesh declarations

# The meshes a lowered module declares: ``sdy.mesh @mesh = <["x"=2, "y"=4]>``.
_MESH_DECLARATION = re.compile(r"^\s*sdy\.mesh @\S+ = <\[(.*?)\]>", re.M)


_MLIR_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def declared_mesh_axis_names(module_text: str) -> list[bytes]:
    """The axis names of every mesh a lowered (StableHLO/Shardy) module declares, as bytes."""
    return [
        _mlir_string(quoted)
        for declaration in _MESH_DECLARATION.findall(module_text)
        for quoted in _MLIR_STRING.findall(declaration)
    ]


def _mlir_string(body: str) -> bytes:
    """The bytes of an MLIR string literal's body: ``\\\\``, ``\\"`` and ``\\XX`` (hex) escapes."""
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] in '\\"':
            out.append(ord(body[i + 1]))
            i += 2
        elif body[i] == "\\" and i + 2 < len(body) and re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 1 : i + 3]):
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(body[i].encode())
            i += 1
    return bytes(out)
