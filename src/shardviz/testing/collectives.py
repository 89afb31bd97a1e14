"""``assert_collectives``: which collectives a program may run, over which mesh axes, and how many bytes.

Bytes are what one device sends per call of the program (loops counted), as
``Program.totals`` counts them: in the program's dtypes, as a TPU or GPU
moves them (``program.with_bytes("cpu")`` checks XLA:CPU's module's bytes,
which widen bf16 and f16 to f32); a combined collective's operands are
charged to their own lines, as the program view shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ShardingError
from ..program.hlo import COLLECTIVE_KINDS
from ..program.lines.frames import is_user_file
from ..program.memory.device_bytes import counted_dtype, short_dtype
from ..program.model import Collective, ProgramData, SourceLocation
from .errors import CollectiveBudgetExceeded, FailurePage
from .messages import exact_bytes, format_bytes, function_names, label_of, layer_of, line_code, where
from .sizes import parse_bytes

__all__ = ["LineCharge", "assert_collectives", "line_charges"]

ANY_AXES = "*"
# What the bytes count in, said where XLA:CPU's module widened some of them (Program.with_bytes switches).
COUNTED = {
    "device": "bytes in the program's dtypes, as a TPU or GPU moves them (XLA:CPU's module moves bf16/f16 "
    "as f32: check program.with_bytes('cpu') to budget its bytes)",
    "cpu": "bytes as XLA:CPU's module moves them, bf16/f16 as f32 (program.with_bytes('device') counts the "
    "program's dtypes)",
}
LISTED = 12  # lines a message lists before it says how many more there are


@dataclass(frozen=True)
class LineCharge:
    """The bytes one collective sends on behalf of one source line, per call (runs counted)."""

    collective: Collective
    source: SourceLocation | None
    wire_bytes: int
    stack: tuple[SourceLocation, ...] = ()  # the call chain, innermost first
    layer: str = ""  # the name scope it runs in (layers_2/attn), where the program records one
    label: str = ""  # all that tells it apart on its line: the layer, a loop's pass, the array it lays out
    dtype: str = ""  # what the bytes count in: the program's dtype, or XLA:CPU's module's (Program.with_bytes)
    why: Any = None  # shardviz.program.why.reasons.Why: why the collective is there, from the program

    @property
    def key(self) -> tuple[str, int, str] | None:
        """The line it is charged to, told apart by layer where a loop's layers share the line."""
        return None if self.source is None else (self.source.file, self.source.line, self.layer)


def line_charges(program: ProgramData) -> list[LineCharge]:
    """Each collective on its line; a combined collective's operands each on their own line, each
    multiplied by the runs of the collective that carries it."""
    out = []
    counted = program.bytes_from
    for c in program.collectives:
        if c.parts:
            out += [
                LineCharge(
                    c,
                    part.source,
                    part.wire_bytes * c.count,
                    _chain(part.stack, program),
                    layer_of(part),
                    label_of(part),
                    counted_dtype(part, counted),
                    part.why,
                )
                for part in c.parts
            ]
        else:
            out.append(
                LineCharge(
                    c,
                    c.source,
                    c.total_wire_bytes,
                    _chain(c.stack, program),
                    layer_of(c),
                    label_of(c),
                    counted_dtype(c, counted),
                    c.why,
                )
            )
    return out


def _chain(stack: tuple[SourceLocation, ...], program: ProgramData) -> tuple[SourceLocation, ...]:
    """The user's frames of a stack from the innermost up to the traced function's own (not its callers)."""
    out = []
    for frame in stack:
        if not is_user_file(frame.file):
            continue
        out.append(frame)
        if program.source is not None and program.source.contains(frame.file, frame.line):
            break
    return tuple(out)


def assert_collectives(
    program: Any,
    *,
    allow: Mapping[str, Any] | Iterable[str] | str | None = None,
    max_wire_bytes: int | str | None = None,
    per_line: int | str | Mapping[str | int, int | str] | None = None,
) -> ProgramData:
    """Check a traced program's collectives against the budgets given; return the program.

    ``allow`` maps each collective kind the program may run to the mesh axes
    it may run over (``{"all-reduce": ["data"]}``; ``"*"`` or None for any
    axes; a list of kinds allows them over any axes). A collective of a kind
    not named, or over an axis not listed (a piece of an axis counts as the
    axis; groups that span no mesh axes count as ``?``), fails. Collectives
    whose groups hold one device move nothing and are not checked.

    ``max_wire_bytes`` caps ``program.totals.wire_bytes``, the bytes one
    device sends per call. ``per_line`` caps each source line's bytes: one
    number for every line, or a mapping from ``"file.py:42"`` (the file's
    name or a path ending in it), a line number (any file) or a function name
    (each of its lines) to bytes; the most specific key wins. Budgets are
    ints or strings such as ``"16 MiB"``.

    Raises :class:`CollectiveBudgetExceeded` (an AssertionError) naming each
    offending collective's kind, axes, bytes and source line, and each line
    over its budget with its text; ``ShardingError`` for a budget of the wrong
    type, an unknown kind, an axis the mesh lacks, or a key that names no
    file or function of the program.
    """
    __tracebackhide__ = True
    if not isinstance(program, ProgramData):
        raise ShardingError(
            f"assert_collectives checks a program traced with shardviz.trace(f, *args), not {type(program).__name__}"
        )
    axis_names = program.mesh.axis_names if program.mesh is not None else ()
    allowed = None if allow is None else _allowed(allow, axis_names)
    total_cap = None if max_wire_bytes is None else parse_bytes(max_wire_bytes, "max_wire_bytes")
    caps = None if per_line is None else _line_caps(per_line, program)
    charges = line_charges(program)

    sections: list[list[str]] = []
    marked: set[Any] = set()  # the lines that break a budget
    if allowed is not None:
        sections.append(_not_allowed(charges, allowed, marked))
    if total_cap is not None and program.totals.wire_bytes > total_cap:
        sections.append(_over_total(program, charges, total_cap, marked))
    if caps is not None:
        sections.append(_over_lines(charges, caps, marked))
    sections = [s for s in sections if s]
    if sections:
        budget = _budget_text(allowed, total_cap, per_line)
        raise CollectiveBudgetExceeded(
            _message(program, sections, allowed), subject=program, page=_page(program, charges, budget, marked)
        )
    return program


# ---------------------------------------------------------------------------- reading the budgets


def _kind(name: Any) -> str:
    if not isinstance(name, str):
        raise ShardingError(f"allow's keys name collective kinds ({', '.join(COLLECTIVE_KINDS)}), not {name!r}")
    kind = name.strip().lower().replace("_", "-")
    if kind not in COLLECTIVE_KINDS:
        raise ShardingError(f"unknown collective kind {name!r} in allow: the kinds are {', '.join(COLLECTIVE_KINDS)}")
    return kind


def _allowed(allow: Any, axis_names: tuple[str, ...]) -> dict[str, frozenset[str] | None]:
    """Kind -> the axes it may run over (None: any)."""
    if isinstance(allow, str):
        return {_kind(allow): None}
    if not isinstance(allow, Mapping):
        if not isinstance(allow, Iterable):
            raise ShardingError(
                "allow maps collective kinds to mesh axes, e.g. {'all-reduce': ['data']} "
                f"(or lists kinds), not {type(allow).__name__}"
            )
        return {_kind(name): None for name in allow}
    out: dict[str, frozenset[str] | None] = {}
    for name, axes in allow.items():
        kind = _kind(name)
        if axes is None or axes == ANY_AXES:
            out[kind] = None
            continue
        listed = (axes,) if isinstance(axes, str) else axes
        if not isinstance(listed, Iterable) or not all(isinstance(a, str) for a in listed):
            raise ShardingError(
                f"allow[{name!r}] lists the mesh axes {kind} may run over, e.g. ['data'] (or '*' for any), not {axes!r}"
            )
        for axis in listed:
            if axis not in axis_names:
                mesh = ", ".join(axis_names) if axis_names else "none: the program has no mesh"
                raise ShardingError(
                    f"allow[{name!r}] names the axis {axis!r}, which the program's mesh lacks (axes: {mesh})"
                )
        out[kind] = frozenset(listed)
    return out


@dataclass(frozen=True)
class LineCaps:
    """Per-line budgets: one for every line, or by file:line, line number or function."""

    every: int | None
    by_place: Mapping[tuple[str, int], int]  # (file as written, line)
    by_number: Mapping[int, int]
    by_function: Mapping[str, int]

    def cap(self, charge: LineCharge) -> tuple[int | None, str]:
        """The budget of a charge's line and the key it comes from."""
        source = charge.source
        if source is not None:
            for (file, line), cap in self.by_place.items():
                if line == source.line and _same_file(source.file, file):
                    return cap, f"{file}:{line}"
            if source.line in self.by_number:
                return self.by_number[source.line], f"line {source.line}"
        for name in _functions_of(charge):
            if name in self.by_function:
                return self.by_function[name], f"function {name}"
        return self.every, "every line"


def _functions_of(charge: LineCharge) -> list[str]:
    """The functions a charge's line runs in, innermost first: its own, then each caller's."""
    frames = (charge.source, *charge.stack) if charge.source is not None else charge.stack
    return [name for frame in frames for name in function_names(frame.function) if name]


def _same_file(file: str, written: str) -> bool:
    file, written = file.replace("\\", "/"), written.replace("\\", "/")
    return file == written or file.endswith("/" + written.lstrip("./"))


def _line_caps(per_line: Any, program: ProgramData) -> LineCaps:
    if not isinstance(per_line, Mapping):
        return LineCaps(parse_bytes(per_line, "per_line"), {}, {}, {})
    charges = [ch for ch in line_charges(program) if ch.collective.group_size > 1]
    by_place: dict[tuple[str, int], int] = {}
    by_number: dict[int, int] = {}
    by_function: dict[str, int] = {}
    for key, value in per_line.items():
        cap = parse_bytes(value, f"per_line[{key!r}]")
        if isinstance(key, int) and not isinstance(key, bool):
            hits = [ch for ch in charges if ch.source is not None and ch.source.line == key]
            by_number[key] = cap
        elif isinstance(key, str) and ":" in key and key.rpartition(":")[2].strip().isdigit():
            file, _, line = key.rpartition(":")
            file = file.strip()
            hits = [ch for ch in charges if ch.source is not None and _same_file(ch.source.file, file)]
            if not hits:
                files = sorted({_file_name(ch.source.file) for ch in charges if ch.source is not None})
                raise ShardingError(
                    f"per_line[{key!r}]: no collective of the program is on a line of a file {file!r} "
                    f"(files with collectives: {', '.join(files) or 'none'})"
                )
            hits = [ch for ch in hits if ch.source is not None and ch.source.line == int(line)]
            by_place[(file, int(line))] = cap
        elif isinstance(key, str) and key.strip():
            hits = [ch for ch in charges if key in _functions_of(ch)]
            by_function[key] = cap
        else:
            raise ShardingError(f"per_line's keys are 'file.py:42', a line number or a function name, not {key!r}")
        if not hits:
            raise ShardingError(f"per_line[{key!r}] {_no_collective(key, charges)}")
    return LineCaps(None, by_place, by_number, by_function)


def _file_name(file: str) -> str:
    return file.replace("\\", "/").rsplit("/", 1)[-1]


def _no_collective(key: Any, charges: list[LineCharge]) -> str:
    """Why a per_line key covers nothing, with what it could name: a budget must not outlive its code."""
    if isinstance(key, str) and not key.rpartition(":")[2].strip().isdigit():
        functions = sorted({name for ch in charges for name in _functions_of(ch) if "." not in name})
        return (
            f"names a function in which no collective runs (functions with collectives, their callees' "
            f"included: {', '.join(functions) or 'none'}); keys are 'file.py:42', a line number or a function name"
        )
    places = sorted(
        {(_file_name(ch.source.file), ch.source.line) for ch in charges if ch.source is not None},
    )
    listed = ", ".join(f"{file}:{line}" for file, line in places[:LISTED]) or "none"
    return (
        f"names a line with no collective (lines with collectives: {listed}{' ...' if len(places) > LISTED else ''}); "
        "a budget must name a line that sends something, so that it cannot outlive the code it was written for"
    )


# ---------------------------------------------------------------------------- what breaks them


def _axes_of(c: Collective) -> frozenset[str] | None:
    if c.axes is not None:
        return frozenset(c.axes)
    if c.pieces is not None:
        return frozenset(p.axis for p in c.pieces)
    return None


def _runs(c: Collective) -> str:
    return f"x{c.count}" + ("" if c.count_exact else "+")


def _not_allowed(
    charges: list[LineCharge], allowed: Mapping[str, frozenset[str] | None], marked: set[Any]
) -> list[str]:
    out: list[str] = []
    shown = 0
    on: dict[Collective, list[LineCharge]] = {}
    for ch in charges:
        on.setdefault(ch.collective, []).append(ch)
    for c in sorted(on, key=lambda c: -c.total_wire_bytes):
        if c.group_size <= 1:
            continue  # groups of one device move nothing
        axes = _axes_of(c)
        if c.kind not in allowed:
            why = f"no {c.kind} is allowed"
        else:
            may = allowed[c.kind]
            if may is None or (axes is not None and axes <= may):
                continue
            why = f"{c.kind} is allowed only over {', '.join(sorted(may)) or 'no axis'}"
        marked.update(ch.key for ch in on[c])
        shown += 1
        if shown > LISTED:
            continue  # counted, not listed
        out.append(
            f"  {c.kind} over {c.axes_label}: {format_bytes(c.total_wire_bytes)} per call "
            f"({format_bytes(c.wire_bytes)} {_runs(c)}); {why}"
        )
        for ch in dict((ch.key, ch) for ch in on[c]).values():
            out.append(f"      at {where(ch.source, layer=ch.label)}")
            if ch.why is not None:
                out.append(f"        {ch.why.text}")
    if shown > LISTED:
        out.append(f"  ... and {shown - LISTED} more collectives not allowed (the largest are listed)")
    return ["collectives not allowed:", *out] if out else []


def _by_line(charges: list[LineCharge]) -> list[tuple[LineCharge, int, list[LineCharge]]]:
    """Each line (and layer) with its bytes and its charges, most bytes first; the first charge stands for it."""
    lines: dict[tuple[str, int, str] | None, list[LineCharge]] = {}
    for ch in charges:
        lines.setdefault(ch.key, []).append(ch)
    rows = [(members[0], sum(ch.wire_bytes for ch in members), members) for members in lines.values()]
    return sorted(rows, key=lambda row: -row[1])


def _place(ch: LineCharge, *, code: bool = True) -> str:
    return where(ch.source, code=code, layer=ch.layer)


def _charge_row(ch: LineCharge) -> str:
    c = ch.collective
    told_apart = f"  [{ch.label}]" if ch.label and ch.label != ch.layer else ""
    dtype = short_dtype(ch.dtype) if ch.dtype else ""
    row = f"      {c.kind:<18} {c.axes_label:<12} {dtype:>4} {format_bytes(ch.wire_bytes):>9} per call ({_runs(c)})"
    because = f"\n        {ch.why.text}" if ch.why is not None else ""
    return row + told_apart + because


def _over_total(program: ProgramData, charges: list[LineCharge], cap: int, marked: set[Any]) -> list[str]:
    total = program.totals.wire_bytes
    out = [
        f"{exact_bytes(total)} sent per device per call, over max_wire_bytes {exact_bytes(cap)}; "
        "the lines that send the most:"
    ]
    rows = _by_line(charges)
    for first, sent, _ in rows[:LISTED]:
        marked.add(first.key)
        out.append(f"  {format_bytes(sent):>9}  {_place(first)}")
    if len(rows) > LISTED:
        out.append(f"  ... and {len(rows) - LISTED} more lines")
    return out


def _over_lines(charges: list[LineCharge], caps: LineCaps, marked: set[Any]) -> list[str]:
    out: list[str] = []
    for first, sent, members in _by_line(charges):
        cap, key = caps.cap(first)
        if cap is None or sent <= cap:
            continue
        marked.add(first.key)
        out.append(f"  {_place(first)}")
        out.append(
            f"    sends {exact_bytes(sent)} per call, over its budget {exact_bytes(cap)} ({key}) "
            f"by {format_bytes(sent - cap)}:"
        )
        out += [_charge_row(ch) for ch in sorted(members, key=lambda ch: -ch.wire_bytes)]
    return ["lines over their per_line budget:", *out] if out else []


def _message(
    program: ProgramData, sections: list[list[str]], allowed: Mapping[str, frozenset[str] | None] | None
) -> str:
    mesh = program.mesh
    mesh_text = " ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes)) if mesh else "no mesh"
    head = [
        f"the program {program.name} breaks its collective budget (mesh {mesh_text}; "
        "bytes are what one device sends per call, loops counted)"
    ]
    if any(c.widened for c in program.collectives):
        head.append(COUNTED[program.bytes_from])
    if allowed is not None:
        rules = [
            f"{kind} over {'any axes' if axes is None else ', '.join(sorted(axes)) or 'no axis'}"
            for kind, axes in allowed.items()
        ]
        head.append(f"allowed: {'; '.join(rules) or 'no collectives'}")
    body: list[str] = []
    for section in sections:
        body += ["", *section]
    accept = "if this traffic is intended, allow it or raise the budget it breaks, as named above"
    return "\n".join(head + body + ["", *_every_line(program), "", accept])


def _every_line(program: ProgramData) -> list[str]:
    """The program's collectives line by line, as the message's picture of what it does."""
    rows = _by_line(line_charges(program))
    out = [f"every collective, per line ({format_bytes(program.totals.wire_bytes)} per call in all):"]
    for first, sent, members in rows[:LISTED]:
        out.append(f"  {format_bytes(sent):>9}  {_place(first)}")
        out += [_charge_row(ch) for ch in sorted(members, key=lambda ch: -ch.wire_bytes)]
    if len(rows) > LISTED:
        out.append(f"  ... and {len(rows) - LISTED} more lines (print the program for all of them)")
    return out


def _budget_text(allowed: Mapping[str, frozenset[str] | None] | None, total_cap: int | None, per_line: Any) -> str:
    parts = []
    if allowed is not None:
        parts.append(
            "allow "
            + (
                "; ".join(f"{k} over {'any axes' if a is None else ', '.join(sorted(a))}" for k, a in allowed.items())
                or "nothing"
            )
        )
    if total_cap is not None:
        parts.append(f"max_wire_bytes {exact_bytes(total_cap)}")
    if per_line is not None:
        parts.append(
            f"per_line {exact_bytes(parse_bytes(per_line, 'per_line'))} every line"
            if not isinstance(per_line, Mapping)
            else "per_line " + ", ".join(f"{k}: {v}" for k, v in per_line.items())
        )
    return "; ".join(parts)


def _page(program: ProgramData, charges: list[LineCharge], budget: str, marked: set[Any]) -> FailurePage:
    """Every line's collectives for the failure page, the lines that break the budget marked."""
    rows: list[tuple[str, ...]] = []
    flags: list[bool] = []
    for first, _, members in _by_line(charges):
        for ch in sorted(members, key=lambda ch: -ch.wire_bytes):
            c = ch.collective
            rows.append(
                (
                    _place(first, code=False),
                    line_code(first.source),
                    c.kind,
                    c.axes_label,
                    format_bytes(ch.wire_bytes),
                    _runs(c),
                )
            )
            flags.append(first.key in marked)
    return FailurePage(
        budget=budget,
        figure=f"{exact_bytes(program.totals.wire_bytes)} sent per device per call",
        columns=("line", "code", "collective", "axes", "bytes per call", "runs"),
        rows=tuple(rows),
        marked=tuple(flags),
    )
