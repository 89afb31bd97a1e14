"""A module: computations of instructions, their metadata, and the source tables (stack frames)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from .scanning import HloParseError, Shape, closing_index, parse_shape, split_top_level, unquote

# --------------------------------------------------------------------------
# instructions and computations

_T = TypeVar("_T")


class _Lazy(Generic[_T]):
    """``functools.cached_property`` without its lock: Python 3.11's takes one lock shared by every
    instance on each first read, and a module reads several properties of thousands of instructions."""

    def __init__(self, read: Callable[[Any], _T]) -> None:
        self.read = read
        self.name = read.__name__
        self.__doc__ = read.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _Lazy[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _T | _Lazy[_T]:
        if instance is None:
            return self
        value = self.read(instance)
        instance.__dict__[self.name] = value  # later reads find it there, as with functools'
        return value


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
    # Read texts shared by a module's instructions: a loop's passes repeat the same shapes,
    # attributes and metadata once per pass, and each distinct text is read once.
    read: dict[tuple[str, str], object] | None = field(default=None, repr=False, compare=False)

    @_Lazy
    def shape(self) -> Shape:
        return _read_once(self.read, "shape", self.text[self.shape_span[0] : self.shape_span[1]], parse_shape)

    @_Lazy
    def operands(self) -> tuple[str, ...]:
        start, end = self.operand_span
        inner = self.text[start + 1 : end - 1]
        if "%" in inner and '"' not in inner and "{" not in inner:  # plain %names: read them by pattern
            return tuple(_OPERAND_NAME.findall(inner))
        return tuple(_operand_name(o) for o in split_top_level(inner))

    @_Lazy
    def attributes(self) -> tuple[tuple[str, str], ...]:
        return _read_once(self.read, "attributes", self.text[self.operand_span[1] :], _parse_attributes)

    def attr(self, key: str) -> str | None:
        text = self.text
        if f"{key}=" not in text:  # most lookups miss; skip the split
            return None
        # A braced value (metadata, sharding) is cut out where it starts: with no quote before it and
        # every bracket before it closed, its ", key={" is at the top level, as the split would find it.
        tail = self.operand_span[1]
        at = text.find(f", {key}={{", tail)
        if at >= 0 and _plain_and_closed(text, tail, at):
            start = at + len(key) + 3
            return text[start : closing_index(text, start)]
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    @_Lazy
    def metadata(self) -> Metadata:
        raw = self.attr("metadata")
        return _read_once(self.read, "metadata", raw, parse_metadata) if raw else Metadata()

    @_Lazy
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

    @_Lazy
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
    # What analyses of this module worked out, kept for the next that asks (execution counts): never changed
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def attr(self, key: str) -> str | None:
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    @_Lazy
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
    read: dict[tuple[str, str], object] = {}
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
                body.append(parse_instruction(lines[i], read))
            i += 1
        if i == len(lines):
            raise HloParseError(f"computation {head.group(2)} is not closed")
        computations.append(Computation(head.group(2), bool(head.group(1)), tuple(body)))
        i += 1
    return Module(name.strip(), module_attrs, tuple(computations), _stack_frames(tables))


def parse_instruction(line: str, read: dict[tuple[str, str], object] | None = None) -> Instruction:
    """One instruction line: ``[ROOT] %name = shape opcode(operands), key=value, ...``."""
    text = line.strip()
    head = _INSTRUCTION_HEAD.match(text)
    if head is None:
        raise HloParseError(f"not an instruction: {text[:120]!r}")
    pos = head.end()
    if text[pos] == "(":
        end = closing_index(text, pos)
    else:
        m = _NON_SPACE.match(text, pos)
        assert m is not None
        end = m.end()
    op = _OPCODE.match(text, end)
    if op is None:
        raise HloParseError(f"no opcode in {text[:120]!r}")
    args_start = op.end() - 1
    args_end = closing_index(text, args_start)
    return Instruction(
        name=head.group(2),
        opcode=op.group(1),
        is_root=bool(head.group(1)),
        text=text,
        shape_span=(pos, end),
        operand_span=(args_start, args_end),
        read=read,
    )


def _read_once(read: dict[tuple[str, str], object] | None, kind: str, text: str, parse: Callable[[str], _T]) -> _T:
    """``parse(text)``, or what it gave for the same text before in this module (its results are immutable)."""
    if read is None:
        return parse(text)
    key = (kind, text)
    if key not in read:
        read[key] = parse(text)
    return cast(_T, read[key])


def _plain_and_closed(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds no quote and closes every bracket it opens."""
    part = text[start:end]
    return (
        '"' not in part
        and "'" not in part
        and part.count("{") == part.count("}")
        and part.count("[") == part.count("]")
        and part.count("(") == part.count(")")
    )


def _operand_name(text: str) -> str:
    """``%x`` or ``f32[8]{0} %x`` -> ``x``; a literal (``constant(0)``) stays as printed."""
    last = text.rsplit(" ", 1)[-1]
    return last[1:] if last.startswith("%") else text


def _parse_attributes(text: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for part in split_top_level(text):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip() if eq else ""
        # The mesh form prints its device order after a top-level comma:
        # replica_groups=mesh['a'=4,'b'=2], device_ids=([2,2,2]T(0,2,1)) {'a':(2)2}
        if key == "device_ids" and out and out[-1][0] == "replica_groups" and out[-1][1].startswith("mesh["):
            out[-1] = ("replica_groups", f"{out[-1][1]}, device_ids={value}")
            continue
        out.append((key, value))
    return tuple(out)


_METADATA_FIELD = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|\S+)")
_INTEGER = re.compile(r"-?\d+")


def parse_metadata(text: str) -> Metadata:
    """``{op_name="jit(f)/dot_general" stack_frame_id=2}`` -> Metadata."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    fields: dict[str, str] = {}
    for key, value in _METADATA_FIELD.findall(body):
        fields[key] = unquote(value) if value.startswith('"') else value

    def as_int(key: str) -> int | None:
        v = fields.get(key)
        return int(v) if v is not None and _INTEGER.fullmatch(v) else None

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
