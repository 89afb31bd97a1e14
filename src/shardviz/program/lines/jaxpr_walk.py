"""Every value a traced jaxpr computes, with where the user wrote it.

Walks the closed jaxpr of ``jax.jit(f).trace(...)`` and the jaxprs nested in
its equations (scan, while and cond bodies, shard_map, nested jit), in
program order. Names follow the jaxpr printer's scheme (``a``, ``b``, ...,
``ba``) in the order it prints; they equal ``print(traced.jaxpr)``'s names
unless the printer hoists a shared sub-jaxpr to the top.

Two of JAX's internals are read here and nowhere else: the user-frame filter
of ``jax._src.source_info_util`` (which frames are the user's, as JAX itself
decides for its error messages and HLO metadata) and the equations' name
stacks (``jvp()``, ``transpose(jvp())``), which tell a forward value from its
gradient twin on the same line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from jax import tree_util
from jax.extend import core as jex_core

from ..model import Body, SourceLocation
from .frames import user_frame

try:  # the frames JAX itself calls the user's
    from jax._src import source_info_util as _source_info
except ImportError:  # pragma: no cover - a JAX without it leaves values without lines
    _source_info = None  # type: ignore[assignment]

BODY_PRIMITIVES = ("scan", "while", "cond")
# Calls whose outputs are their one inner jaxpr's outputs, array for array.
CALL_PRIMITIVES = (
    "pjit",
    "jit",
    "closed_call",
    "core_call",
    "custom_jvp_call",
    "custom_vjp_call",
    "remat",
    "checkpoint",
    "remat2",  # jax.checkpoint's primitive
)


@dataclass(frozen=True)
class JaxprValue:
    """One value of the jaxpr walk (``var`` and ``aval`` are JAX's own objects)."""

    name: str
    role: str
    primitive: str | None
    aval: Any = field(compare=False)
    var: Any = field(compare=False)
    name_stack: tuple[str, ...]
    frames: tuple[SourceLocation, ...]  # innermost first
    bodies: tuple[Body, ...]
    manual: bool  # inside a shard_map body: a per-device block
    twin: Any = field(default=None, compare=False)  # the same array under another name (a call's output inside or out)
    dead: bool = False  # a top-level result nothing needs, even through other unneeded values: XLA drops it
    effect: bool = False  # made by an equation with an effect (a write to a ref, a callback): that still happens


def encode_name(n: int) -> str:
    """The jaxpr printer's variable names: a..z, ba, bb, ... (base 26, a = 0)."""
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def __call__(self, var: Any) -> str:
        key = id(var)
        if key not in self.names:
            self.names[key] = encode_name(len(self.names))
        return self.names[key]


def user_frames(source_info: Any) -> tuple[SourceLocation, ...]:
    """The user's frames of an equation, innermost first (JAX's own filter)."""
    if _source_info is None or source_info is None:
        return ()
    traceback = source_info.traceback
    try:
        codes, offsets = traceback.raw_frames() if traceback else ([], [])
        key = (tuple(map(id, codes)), tuple(offsets))
    except Exception:  # a traceback without raw frames is read as JAX reads it, every time
        return _read_user_frames(traceback)
    found = _USER_FRAMES.get(key)
    if found is None:
        # The entry holds the code objects, so no other code object takes one of their ids while it lives.
        found = (tuple(codes), _read_user_frames(traceback))
        if len(_USER_FRAMES) >= _USER_FRAMES_KEPT:
            _USER_FRAMES.pop(next(iter(_USER_FRAMES)))
        _USER_FRAMES[key] = found
    return found[1]


# The frames of each distinct call stack (code objects and offsets), read once: the equations
# of a loop's passes, and of a line's forward and backward values, share theirs.
_USER_FRAMES: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[Any, ...], tuple[SourceLocation, ...]]] = {}
_USER_FRAMES_KEPT = 4096


def _read_user_frames(traceback: Any) -> tuple[SourceLocation, ...]:
    try:
        frames = _source_info.user_frames(traceback)
        return tuple(
            SourceLocation(f.file_name, f.start_line, f.start_column, f.function_name, f.end_line, f.end_column)
            for f in frames
        )
    except Exception:  # a traceback JAX cannot read gives no line rather than a failure
        return ()


def _stack_components(name_stack: Any) -> tuple[str, ...]:
    text = str(name_stack) if name_stack is not None else ""
    return tuple(p for p in text.split("/") if p)


def walk(closed_jaxpr: Any) -> list[JaxprValue]:
    """Inputs, then every equation's outputs (nested bodies included) in printing order."""
    jaxpr = closed_jaxpr.jaxpr
    namer = _Namer()
    out: list[JaxprValue] = []
    for v in jaxpr.constvars:
        namer(v)
    for v in jaxpr.invars:
        out.append(JaxprValue(namer(v), "input", None, v.aval, v, (), (), (), False))
    outputs = {id(v) for v in jaxpr.outvars if isinstance(v, jex_core.Var)}
    inputs = {id(v) for v in jaxpr.invars}
    unread, dead = _unused(jaxpr)
    out.extend(_walk_eqns(jaxpr, namer, None, (), False, outputs - inputs, dead, unread))
    return out


def _unused(jaxpr: Any) -> tuple[set[int], set[int]]:
    """Top-level results nobody reads (the printer shows them as ``_``), and those nothing needs.

    The second set also holds results read only by equations whose own
    results nothing needs (``b = sin(a)`` read by an unused ``cos(b)``): XLA
    computes none of them. An equation with an effect (a write to a ref, a
    callback) runs whatever reads its results, so what it reads is needed.
    """
    read = {id(v) for v in jaxpr.outvars if isinstance(v, jex_core.Var)}
    needed = set(read)
    unread: set[int] = set()
    dead: set[int] = set()
    for eqn in reversed(jaxpr.eqns):
        outs = [id(v) for v in eqn.outvars if not isinstance(v, jex_core.DropVar)]
        unread.update(k for k in outs if k not in read)
        dead.update(k for k in outs if k not in needed)
        ins = [id(v) for v in eqn.invars if isinstance(v, jex_core.Var)]
        read.update(ins)
        if eqn.effects or any(k in needed for k in outs):
            needed.update(ins)
    return unread, dead


def _walk_eqns(
    jaxpr: Any,
    namer: _Namer,
    parent_stack: Any,
    bodies: tuple[Body, ...],
    manual: bool,
    outputs: set[int],
    dropped: set[int],
    unread: set[int],
    caller_frames: tuple[SourceLocation, ...] = (),
) -> Iterator[JaxprValue]:
    for eqn in jaxpr.eqns:
        stack = eqn.source_info.name_stack if parent_stack is None else parent_stack + eqn.source_info.name_stack
        # Equations of a library function JAX traced elsewhere may carry no user
        # frame; the user's line that calls them is where they come from. Those of
        # a body (scan, shard_map, ...) keep only the body's own frames: the
        # calling equation's frames complete their stack.
        frames = _with_callers(user_frames(eqn.source_info), caller_frames)
        name = eqn.primitive.name
        subs = [sub for key in sorted(eqn.params) for sub in _jaxprs(eqn.params[key])]
        call_outputs = (
            subs[0].outvars
            if name in CALL_PRIMITIVES and len(subs) == 1 and len(subs[0].outvars) == len(eqn.outvars)
            else ()
        )
        for k, v in enumerate(eqn.outvars):
            if isinstance(v, jex_core.DropVar):
                continue
            role = "output" if id(v) in outputs else "intermediate"
            twin = call_outputs[k] if call_outputs and isinstance(call_outputs[k], jex_core.Var) else None
            dead = id(v) in dropped
            yield JaxprValue(
                "_" if id(v) in unread else namer(v),  # the printer shows an unread result as _ and names it not
                role,
                name,
                v.aval,
                v,
                _stack_components(stack),
                frames,
                bodies,
                manual,
                twin,
                dead,
                bool(eqn.effects),
            )
        inner_bodies = bodies
        if name in BODY_PRIMITIVES:
            trip = eqn.params.get("length") if name == "scan" else None
            where = frames[0] if frames else None
            inner_bodies = (*bodies, Body(name, int(trip) if trip is not None else None, where))
        inner_manual = manual or name == "shard_map"
        for sub in subs:
            for v in (*sub.constvars, *sub.invars):
                namer(v)
            yield from _walk_eqns(sub, namer, stack, inner_bodies, inner_manual, set(), set(), set(), frames)


def _with_callers(inner: tuple[SourceLocation, ...], callers: tuple[SourceLocation, ...]) -> tuple[SourceLocation, ...]:
    """An equation's frames (innermost first) followed by its caller's that it does not already list."""
    if not inner or not callers:
        return inner or callers
    last = inner[-1]
    if last in callers:  # the stack already runs into the caller's: add only what lies beyond
        return inner + callers[callers.index(last) + 1 :]
    return inner + callers


# Collectives that only move data to another layout (a reduction is the math's own).
RESHARDING_KINDS = ("all-gather", "all-to-all", "collective-permute")
Redirects = dict[tuple[str, int], tuple[SourceLocation, ...]]


def constraint_redirects(jaxpr: Any) -> Redirects:
    """Where a ``with_sharding_constraint`` re-lays out the result of an equation on another line.

    XLA's metadata gives the collectives a constraint causes the name and
    line of an operation that made the constrained value (the line before
    the constraint, typically; not always the same operation of that line,
    e.g. the matmul inside ``relu(x @ w)``). Keyed by that line, the value is
    the constraint's own frames, innermost first.
    """
    out: Redirects = {}
    for eqns in _eqn_lists(jaxpr):
        producer: dict[int, Any] = {}
        for eqn in eqns:
            for v in eqn.outvars:
                producer[id(v)] = eqn
            if eqn.primitive.name != "sharding_constraint" or not eqn.invars:
                continue
            made_by = producer.get(id(eqn.invars[0]))
            if made_by is None:
                continue
            where, here = user_frame(user_frames(made_by.source_info)), user_frames(eqn.source_info)
            mine = user_frame(here)
            if where is None or mine is None or (where.file, where.line) == (mine.file, mine.line):
                continue
            out.setdefault((where.file, where.line), here[here.index(mine) :])
    return out


def reader_lines(jaxpr: Any, caller: tuple[str, int] | None = None) -> dict[int, set[tuple[str, int]]]:
    """For each variable (by ``id``), the user lines of the equations that read it.

    An equation with no line of the user's (inside a library function) reads
    on the line that called it.
    """
    out: dict[int, set[tuple[str, int]]] = {}
    for eqn in jaxpr.eqns:
        mine = user_frame(user_frames(eqn.source_info))
        where = (mine.file, mine.line) if mine is not None else caller
        if where is not None:
            for v in eqn.invars:
                if isinstance(v, jex_core.Var):
                    out.setdefault(id(v), set()).add(where)
        for key in sorted(eqn.params):
            for sub in _jaxprs(eqn.params[key]):
                for k, lines in reader_lines(sub, where).items():
                    out.setdefault(k, set()).update(lines)
    return out


def forward_reads(jaxpr: Any, backward: bool = False) -> set[int]:
    """The variables (by ``id``) that an equation of the forward pass reads, not only a gradient's
    (JAX's ``transpose``), which also reads what the forward pass kept for it (``1 - tanh(x)**2``)."""
    out: set[int] = set()
    for eqn in jaxpr.eqns:
        mine = backward or "transpose" in str(eqn.source_info.name_stack)
        if not mine:
            out.update(id(v) for v in eqn.invars if isinstance(v, jex_core.Var))
        for key in sorted(eqn.params):
            for sub in _jaxprs(eqn.params[key]):
                out |= forward_reads(sub, mine)
    return out


def ref_reads(jaxpr: Any) -> dict[int, Any]:
    """For each whole read of a ``Ref`` argument (``w = w_ref[...]``, ``jax.ref.get``), by the
    read value's ``id``, the variable the ref holds then: the argument itself until a whole
    write (``w_ref[...] = new``) hands it ``new``. XLA has no instruction for such a read (the
    value is the ref's buffer), so its layout is what the ref holds. After a write to part of
    the ref (``w_ref[0] = row``) what it holds is no one variable, and its reads are left out.
    """
    holds: dict[int, Any] = {id(v): v for v in jaxpr.invars if _is_ref(v)}
    out: dict[int, Any] = {}
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name not in ("get", "swap") or not eqn.invars or id(eqn.invars[0]) not in holds:
            continue
        ref, whole = eqn.invars[0], _whole_ref(eqn)
        held = holds[id(ref)]
        if name == "get" and whole and held is not None:
            out[id(eqn.outvars[0])] = held
        elif name == "swap":
            holds[id(ref)] = eqn.invars[1] if whole and isinstance(eqn.invars[1], jex_core.Var) else None
    return out


def _is_ref(var: Any) -> bool:
    return isinstance(var, jex_core.Var) and type(var.aval).__name__ == "AbstractRef"


def _whole_ref(eqn: Any) -> bool:
    """Whether a ``get`` or ``swap`` reads or writes the whole ref (no indexers: ``ref[...]``)."""
    return eqn.params.get("tree") == _NO_INDEXERS and len(eqn.invars) == (2 if eqn.primitive.name == "swap" else 1)


_NO_INDEXERS = tree_util.tree_structure(())


def _eqn_lists(jaxpr: Any) -> Iterator[list[Any]]:
    yield list(jaxpr.eqns)
    for eqn in jaxpr.eqns:
        for key in sorted(eqn.params):
            for sub in _jaxprs(eqn.params[key]):
                yield from _eqn_lists(sub)


def _jaxprs(value: Any) -> Iterator[Any]:
    items = value if isinstance(value, tuple) else (value,)
    for item in items:
        if isinstance(item, jex_core.ClosedJaxpr):
            yield item.jaxpr
        elif isinstance(item, jex_core.Jaxpr):
            yield item
