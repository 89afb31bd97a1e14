"""Each value's user-facing identity from the jaxpr alone: its lines, name, scope, loop pass and key.

Names are the variables the user's lines bind (``h = relu(x @ w)``, ``q, k, v = x @ wq, x @ wk,
x @ wv``, ``a, b = f(x), g(x)``), or the name a call's line binds for what the call hands back
(``pred = predict(params, x)``); passes come from :mod:`.passes`. Nothing here needs the compiled
program, so ``trace`` reads it while XLA compiles; :mod:`.values` lays the values out after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model import SourceListing, SourceLocation, Value
from .frames import is_user_file, user_frame
from .jaxpr_walk import JaxprValue, _eqn_lists, forward_reads, reader_lines, ref_reads
from .passes import count_scan_trips, passes_of, place, run_numbers, user_chain
from .scopes import scope_of_components
from .sources import bound_names, expression_columns, line_text


@dataclass(frozen=True)
class NamedValues:
    """Every value as the jaxpr alone tells it: its type, lines, name, scope, pass and key, with no
    layout yet. It needs nothing compiled, so ``trace`` reads it while XLA compiles the program."""

    walked: tuple[JaxprValue, ...]
    values: tuple[Value, ...]  # no layout yet: sharding_from "unknown"
    passes: tuple[Any, ...]  # each value's pass of its line (passes.passes_of)
    place_passes: Any
    trip_places: Any
    twins: tuple[tuple[int, int], ...]  # a call's output and its inner twin, by position
    ref_holds: tuple[tuple[int, int], ...]  # a whole read of a Ref argument and what the ref holds then
    io_index: tuple[int | None, ...]  # an input's or output's place among the program's, else None


def name_values(
    walked: Sequence[JaxprValue],
    jaxpr: Any,
    source: SourceListing | None,
    input_paths: Sequence[str],
    output_paths: Sequence[str],
) -> NamedValues:
    """Each value's type, lines, name, scope, pass of its line and key, from the jaxpr alone."""
    walked = tuple(walked)
    bare = [_bare_value(w, source) for w in walked]
    where = {id(w.var): i for i, w in enumerate(walked)}
    twins = tuple((i, where[id(w.twin)]) for i, w in enumerate(walked) if w.twin is not None and id(w.twin) in where)
    holds = ((where.get(read), where.get(id(held))) for read, held in ref_reads(jaxpr).items())
    ref_holds = tuple((i, j) for i, j in holds if i is not None and j is not None)
    scopes = [scope_of_components(w.name_stack) for w in walked]
    places = [
        None if v.role == "input" else place(v.stack, scope, "/".join(w.name_stack))
        for w, v, scope in zip(walked, bare, scopes)
    ]
    operations = _operations(jaxpr)
    columns = [(w.primitive, operations.get(id(w.var)), _spans(v.stack)) for w, v in zip(walked, bare)]
    calls = [_spans(_user_frames(v.stack)[1:]) for v in bare]
    runs = run_numbers(places, columns, calls)
    passes, place_passes = passes_of(places, runs, [w.primitive for w in walked])
    trip_places = count_scan_trips([w.bodies for w in walked], places, place_passes)
    # Names go by line whatever the scope (a Flax module called on a line is still that line's).
    by_line = [None if p is None else (p[0], "", p[2], None) for p in places]
    where_named = (by_line, run_numbers(by_line, columns, calls), calls)
    labels = _labels(walked, bare, where_named, columns, jaxpr, input_paths)
    positions = {id(var): k for k, var in enumerate(jaxpr.invars)}
    positions_out = {id(var): k for k, var in reversed(list(enumerate(jaxpr.outvars)))}
    io_index = tuple(
        positions.get(id(w.var)) if w.role == "input" else positions_out.get(id(w.var)) if w.role == "output" else None
        for w in walked
    )
    for i, (w, k) in enumerate(zip(walked, io_index)):
        if w.role == "output" and k is not None and k < len(output_paths):
            labels[i] = output_paths[k]
    keys = _keys(walked, bare, labels)
    values = tuple(
        replace(
            v,
            label=label,
            scope=scope,
            pass_number=None if p is None else p.number,
            passes=None if p is None else p.of,
            key=key,
        )
        for v, label, scope, p, key in zip(bare, labels, scopes, passes, keys)
    )
    return NamedValues(walked, values, tuple(passes), place_passes, trip_places, twins, ref_holds, io_index)


def _bare_value(v: JaxprValue, source: SourceListing | None) -> Value:
    """A value as its jaxpr equation says it, with no layout yet."""
    aval = v.aval
    return Value(
        name=v.name,
        role=v.role,
        primitive=v.primitive,
        type_str=str(aval),
        shape=tuple(int(d) for d in getattr(aval, "shape", ())),
        dtype=str(getattr(aval, "dtype", "")),
        layout=None,
        sharding_from="unknown",
        note="",
        source=user_frame(v.frames),
        stack=v.frames,
        listing_line=source.line_of(v.frames) if source else None,
        bodies=v.bodies,
    )


def _labels(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    where: tuple[Sequence[Any], Sequence[int | None], Sequence[Any]],
    columns: Sequence[Any],
    jaxpr: Any,
    input_paths: Sequence[str],
) -> list[str]:
    """The user's names: inputs by their paths; the value a line hands
    on to other lines (the last forward one read elsewhere) by the variable the line
    binds (``h = relu(x @ w)``), on every pass of a loop and every call of a helper;
    a value a called function hands back by the variable its call's line binds
    (``pred = predict(params, x)``); the rest ``%`` and the jaxpr's name (``%_1``,
    ``%_2``, ... for results nobody reads), which no mesh axis name can be mistaken for.
    Outputs take their paths after (:func:`name_values`). ``where`` is each value's place by
    line, run and call; ``columns`` what tells a loop's passes apart (:func:`.passes.run_numbers`)."""
    places = where[0]
    labels = _fallback_labels(walked)
    inputs = [i for i, v in enumerate(walked) if v.role == "input"]
    for i, path in zip(inputs, input_paths):
        labels[i] = path
    readers = reader_lines(jaxpr)
    handed: list[int] = []
    for i, (w, v) in enumerate(zip(walked, values)):
        if v.role == "input" or v.source is None or w.dead or places[i] is None:
            continue
        if any(part.startswith("transpose") for part in w.name_stack):
            continue  # a gradient computed on this line, not what the line binds
        here = (v.source.file, v.source.line)
        if v.role == "output" or readers.get(id(w.var), set()) - {here}:
            handed.append(i)
    forward = forward_reads(jaxpr)
    read_on = [id(w.var) in forward for w in walked]  # read by the forward pass, not only kept for the backward
    named = _name_by_line(walked, values, where, (handed, read_on), labels)
    sources = [values[i].source for i in named]
    lines_named = {(source.file, source.line) for source in sources if source is not None}
    _name_by_caller(walked, values, (handed, read_on, places, columns), named, labels, lines_named)
    return labels


def _operations(jaxpr: Any) -> dict[int, tuple[int, Any]]:
    """What an equation result is, beyond its primitive, by the variable's ``id``: its place among
    the equation's results (the halves of one ``split`` are one operation, not two passes of a
    one-line loop) and the equation's dimension numbers, the same on every pass of a loop but not
    for the two products of ``einsum('ij,jk,kl', a, b, c)``. Slices' indices are left out: a loop's
    passes may slice at other places (``ws[i]``)."""
    out: dict[int, tuple[int, Any]] = {}
    for eqns in _eqn_lists(jaxpr):
        for eqn in eqns:
            numbers = eqn.params.get("dimension_numbers")
            for k, v in enumerate(eqn.outvars):
                out[id(v)] = (k, numbers)
    return out


def _user_frames(stack: Sequence[SourceLocation]) -> list[SourceLocation]:
    return [f for f in stack if is_user_file(f.file)]


def _spans(stack: Sequence[SourceLocation]) -> tuple[tuple[int, int, int, int], ...]:
    """Where on its lines a value is made, call by call: a loop's passes make their values at
    the same spans, two operations of one line (``q + k + v``, ``f(x), f(y)``) at different ones."""
    return tuple((f.line, f.column, f.end_line, f.end_column) for f in stack)


def _fallback_labels(walked: Sequence[JaxprValue]) -> list[str]:
    """``%`` and the jaxpr's name; results nobody reads (all ``_`` in the jaxpr) numbered apart."""
    labels = []
    unread = 0
    for v in walked:
        if v.name == "_":
            unread += 1
            labels.append(f"%_{unread}")
        else:
            labels.append(f"%{v.name}")
    return labels


def _name_by_line(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    where: tuple[Sequence[Any], Sequence[int | None], Sequence[Any]],
    hands: tuple[Sequence[int], Sequence[bool]],
    labels: list[str],
) -> set[int]:
    """Name, per pass of each line (and per call of a helper), the value it hands on by what it binds.

    ``where`` is each value's place, run and call; ``hands`` the values handed on and whether the
    forward pass reads each value (:func:`_handed_per_pass`)."""
    named: set[int] = set()
    for found in _handed_per_pass(walked, values, where, hands, named).values():
        source = values[found[0]].source
        assert source is not None
        names = bound_names(line_text(source.file, source.line))
        if names is None:
            continue
        if len(names) == 1:  # one variable: the last value the line hands on
            labels[found[-1]] = names[0]
            named.add(found[-1])
        elif len(found) == len(names) and _one_equation(walked, found):
            for i, name in zip(found, names):  # q, k, v = split(...)
                labels[i] = name
                named.add(i)
        else:  # q, k, v = x @ wq, x @ wk, x @ wv, or a, b = f(x), g(x)
            named.update(_name_by_expression(found, [_user_frames(values[i].stack)[0] for i in found], names, labels))
    return named


def _handed_per_pass(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    where: tuple[Sequence[Any], Sequence[int | None], Sequence[Any]],
    hands: tuple[Sequence[int], Sequence[bool]],
    named: set[int],
) -> dict[tuple[Any, ...], list[int]]:
    """What each pass of each place (and each call) hands on, in order, leaving out values
    already ``named``: the values handed on (read on another line, or outputs), or else,
    on every pass but a place's last, the pass's last forward value that the forward pass reads
    (a one-line loop hands its value on to the same line's next pass; a gradient program also
    keeps values there only its backward pass reads, as ``1 - tanh(x)**2``)."""
    places, runs, calls = where
    handed, read_on = hands
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in handed:
        if i not in named and places[i] is not None:
            groups.setdefault((places[i], runs[i], calls[i], values[i].bodies), []).append(i)
    final: dict[Any, int] = {}  # each place's last run: what it hands on goes to other lines
    for p, r in zip(places, runs):
        if p is not None and r is not None:
            final[p] = max(final.get(p, 0), r)
    last: dict[tuple[Any, ...], int] = {}
    for i, (w, p) in enumerate(zip(walked, places)):
        r = runs[i]
        forward = read_on[i] and not any(t.startswith("transpose") for t in w.name_stack)
        if r is not None and r < final[p] and not w.dead and forward:
            last[(p, r, calls[i], values[i].bodies)] = i
    for key, i in last.items():
        if i not in named:
            groups.setdefault(key, [i])
    return groups


def _name_by_expression(
    found: Sequence[int], frames: Sequence[SourceLocation], names: Sequence[str], labels: list[str]
) -> set[int]:
    """Names a line ``a, b = e1, e2`` binds, each given to the last of ``found`` whose frame on
    that line (``frames``, one each) spans its expression exactly (the operation or call that makes it)."""
    parts = expression_columns(frames[0].file, frames[0].line)
    if parts is None:
        return set()
    by_part: dict[int, int] = {}
    for i, f in zip(found, frames):
        if f.end_line == f.line and (f.column, f.end_column) in parts:
            by_part[parts.index((f.column, f.end_column))] = i
    for k, i in by_part.items():
        labels[i] = names[k]
    return set(by_part.values())


def _name_by_caller(
    walked: Sequence[JaxprValue],
    values: Sequence[Value],
    where: tuple[Sequence[int], Sequence[bool], Sequence[Any], Sequence[Any]],
    named: set[int],
    labels: list[str],
    lines_named: set[Any],
) -> None:
    """A value that a called function hands back unnamed takes the name its call's line binds.

    ``pred = predict(params, x)``: predict's last line binds nothing; what it
    returns is the last value made under the call that other lines read, on
    each pass of a loop (``for p in params: x = block(p, x)``). On a line
    ``a, b = predict(p, x), predict(p, y)`` each call names its own. ``where``
    is the values handed on, whether the forward pass reads each value, each value's
    place by line, and what tells a loop's passes apart. Callers one, two and three
    frames out are tried, innermost first.
    """
    handed, read_on, places, columns = where
    chains = [user_chain(v.stack) for v in values]
    for depth in (1, 2, 3):
        callers = [
            (chain[depth:], "", p[2], None) if p is not None and len(chain) > depth else None
            for chain, p in zip(chains, places)
        ]
        calls = [_spans(_user_frames(v.stack)[depth + 1 :]) for v in values]
        # Values of the call's own line have no caller place, so nothing breaks a run between two
        # calls on one line: their runs need no telling apart, only their names (by ``calls``).
        runs = run_numbers(callers, columns)
        for (here, _, _, _), found in _handed_per_pass(
            walked, values, (callers, runs, calls), (handed, read_on), named
        ).items():
            chain = here[0]
            if chain[0] in lines_named:  # the call's line names a value of its own
                continue
            names = bound_names(line_text(*chain[0]))
            if names is not None and len(names) == 1:
                labels[found[-1]] = names[0]
                named.add(found[-1])
            elif names is not None:
                frames = [_user_frames(values[i].stack)[depth] for i in found]
                named.update(_name_by_expression(found, frames, names, labels))


def _keys(walked: Sequence[JaxprValue], values: Sequence[Value], labels: Sequence[str]) -> list[str]:
    """Keys unique in the program that a trace with other shardings gives again: an input by its
    path, any other value by its line's call chain, its primitive and how many came before it there."""
    seen: dict[str, int] = {}
    out = []
    for w, v, label in zip(walked, values, labels):
        if v.role == "input":
            base = f"in:{label}"
        else:
            chain = ">".join(f"{file.rsplit('/', 1)[-1]}:{line}" for file, line in user_chain(v.stack))
            base = f"{chain}|{v.primitive}|{'/'.join(w.name_stack)}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}#{n}")
    return out


def _one_equation(walked: Sequence[JaxprValue], found: Sequence[int]) -> bool:
    """Whether the values ``found`` are results of one equation, one after another (a split's)."""
    first = walked[found[0]]
    return list(found) == list(range(found[0], found[0] + len(found))) and all(
        walked[i].primitive == first.primitive and walked[i].frames == first.frames for i in found
    )
