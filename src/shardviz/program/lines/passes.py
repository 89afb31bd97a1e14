"""Passes of a Python loop: the same line run again and again, told apart by order.

A Python ``for`` loop over layers is unrolled while JAX traces it: every pass
puts values (and, once compiled, collectives) on the same line with the same
call chain, and nothing in the jaxpr or XLA's metadata says which pass made
which. Their order does: the values of one pass come out one after another,
then the next pass's, and a backward pass visits the loop's passes in reverse.

A *run* is a stretch of values that share a place (line, call chain, scope,
forward or backward) with nothing from another line of the same function in
between; values of functions that line calls do not break it. The k-th run of
a place is its k-th pass.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..model import Body, SourceLocation
from .frames import is_user_file
from .scopes import is_gradient

Place = tuple[Hashable, ...]


def user_chain(stack: Sequence[SourceLocation]) -> tuple[tuple[str, int], ...]:
    """The user's own frames of a stack as ``(file, line)``, innermost first."""
    return tuple((f.file, f.line) for f in stack if is_user_file(f.file))


def place(stack: Sequence[SourceLocation], scope: str, name_text: str, extra: Hashable = None) -> Place | None:
    """Where a value or collective comes from, as passes count it; None without a line of the user's,
    and None for the forward pass run again inside the backward one (``jax.checkpoint``'s
    ``rematted_computation``): it visits the loop's lines in forward order, maybe not all of them."""
    chain = user_chain(stack)
    if not chain or "rematted_computation" in name_text:
        return None
    return (chain, scope, is_gradient(name_text), extra)


def run_numbers(
    places: Sequence[Place | None],
    signatures: Sequence[Hashable] | None = None,
    calls: Sequence[Hashable] | None = None,
) -> list[int | None]:
    """For each position, which run of its place it is in (0 first); None where it has no place.

    A stretch of one place is broken by a position of another place whose call
    chain does not pass through this place's line (another line of the loop's
    body, not a function this line calls). With ``calls`` (where on its callers'
    lines each position's call is), two calls of one function on one line
    (``a, b = mlp(x), mlp(y)``) each have their own runs: they are no loop's passes.
    """
    out: list[int | None] = [None] * len(places)
    last: dict[Hashable, int] = {}
    run: dict[Hashable, int] = {}
    for j, here in enumerate(places):
        if here is None:
            continue
        key = here if calls is None else (here, calls[j])
        before = last.get(key)
        if before is None:
            run[key] = 0
        elif _broken(places, before, j, here):
            run[key] += 1
        last[key] = j
        out[j] = run[key]
    return out if signatures is None else _split_repeats(places, out, signatures)


def _split_repeats(
    places: Sequence[Place | None], runs: Sequence[int | None], signatures: Sequence[Hashable]
) -> list[int | None]:
    """Runs that repeat one block of operations, each at the same place in the source, split into
    one run per repeat.

    A loop whose body is this one line (``for w in ws: x = tanh(x @ w)``) leaves
    no other line between its passes; the same operations at the same columns
    over and over are its passes (``q + k + v``'s two adds, or a nested
    ``tanh(tanh(x @ w) @ w)``'s calls, end at other columns, so they are no repeat).
    A backward pass is the exception: a gradient makes several operations of one
    forward operation, all at its place (``a * b`` gives one product per operand),
    so a backward place splits into no more passes than its forward twin ran.
    """
    members: dict[tuple[Place, int], list[int]] = {}
    for k, (here, r) in enumerate(zip(places, runs)):
        if here is not None and r is not None:
            members.setdefault((here, r), []).append(k)
    runs_of: dict[Place, int] = {}
    for here, _ in members:
        runs_of[here] = runs_of.get(here, 0) + 1
    pieces: dict[tuple[Place, int], list[list[int]]] = {}
    forward: dict[Place, int] = {}  # each forward place's passes, once split
    for key in sorted(members, key=lambda key: bool(key[0][2])):  # forward places first
        here, found = key[0], members[key]
        most = None
        if here[2] and (here[0], here[1], False, here[3]) in forward:
            most = forward[(here[0], here[1], False, here[3])] // runs_of[here]
        period = _period([signatures[k] for k in found], most)
        pieces[key] = [found] if period is None else [found[i : i + period] for i in range(0, len(found), period)]
        if not here[2]:
            forward[here] = forward.get(here, 0) + len(pieces[key])
    out: list[int | None] = [None] * len(runs)
    next_run: dict[Place, int] = {}
    for (here, _), chunks in sorted(pieces.items(), key=lambda kv: kv[1][0][0]):
        for chunk in chunks:
            n = next_run.get(here, 0)
            for k in chunk:
                out[k] = n
            next_run[here] = n + 1
    return out


def _period(seq: Sequence[Hashable], most: int | None) -> int | None:
    """The shortest block that ``seq`` repeats at least twice (and at most ``most`` times), or None."""
    for q in range(1, len(seq) // 2 + 1):
        times = len(seq) // q
        if len(seq) % q == 0 and (most is None or times <= most) and list(seq) == list(seq[:q]) * times:
            return q
    return None


def _broken(places: Sequence[Place | None], start: int, stop: int, here: Place) -> bool:
    line = cast(tuple[Any, ...], here[0])[0]
    for k in range(start + 1, stop):
        other = places[k]
        if other is None or other == here:
            continue
        if line not in cast(tuple[Any, ...], other[0]):  # not a callee of this line: another line ran in between
            return True
    return False


@dataclass(frozen=True)
class Pass:
    number: int  # 1-based
    of: int


def passes_of(
    places: Sequence[Place | None], runs: Sequence[int | None], signatures: Sequence[Hashable] | None = None
) -> tuple[list[Pass | None], dict[Place, int]]:
    """Each position's pass (None for a place that ran once) and every place's pass count.

    A backward pass runs the loop's passes last first, so its k-th run is pass ``n - k``.
    With ``signatures`` (each value's primitive), a place's runs count as passes only when
    every run made kinds of operations of one run's (a pass may skip one, as a backward pass does
    where a gradient is not needed, or one that rematerialises a value the first layer has at
    hand, but never adds another kind): a line met twice for another reason (a scan's line, then
    its leftovers later) is not a loop.
    """
    counts: dict[Place, int] = {}
    seen: dict[tuple[Place, int], list[Hashable]] = {}
    for k, (here, r) in enumerate(zip(places, runs)):
        if here is not None and r is not None:
            counts[here] = max(counts.get(here, 0), r + 1)
            if signatures is not None:
                seen.setdefault((here, r), []).append(signatures[k])
    if signatures is not None:
        for here, n in list(counts.items()):
            kinds = [frozenset(seen.get((here, r), ())) for r in range(n)]
            widest = max(kinds, key=len)
            if n > 1 and not all(k <= widest for k in kinds):
                counts[here] = 1
    out: list[Pass | None] = []
    for here, r in zip(places, runs):
        n = counts.get(here, 1) if here is not None else 1
        if here is None or r is None or n < 2:
            out.append(None)
            continue
        backward = bool(here[2])
        out.append(Pass(n - r if backward else r + 1, total_passes(here, counts)))
    return out, counts


def total_passes(here: Place, counts: dict[Place, int] | Any) -> int:
    """The passes a place ran; a backward place says its forward twin's count where that ran more
    (a loop's last pass may need no backward step on some line)."""
    n = int(counts.get(here, 1))
    if here[2]:
        n = max(n, int(counts.get((here[0], here[1], False, here[3]), 1)))
    return n


def count_scan_trips(
    bodies: Sequence[Sequence[Body]], places: Sequence[Place | None], place_passes: dict[Place, int]
) -> frozenset[Place]:
    """Counts a line of a top-level scan's body as run once per trip, and returns the places so counted.

    Where XLA unrolls the loop (``fori_loop(..., unroll=True)``) its collectives are one per trip,
    told apart as that many passes. Where XLA keeps the loop, its body holds each collective once,
    run once per trip: its ``count``, no pass (:func:`is_scan_trip`). A Python loop in the body
    keeps its own passes.
    """
    counted: set[Place] = set()
    for inside, here in zip(bodies, places):
        if here is None or len(inside) != 1 or inside[0].primitive != "scan":
            continue
        trips = inside[0].trip_count or 1
        if trips > 1 and place_passes.get(here, 1) < 2:
            place_passes[here] = trips
            counted.add(here)
    return frozenset(counted)


def is_scan_trip(here: Place, trip_places: frozenset[Place], runs: int) -> bool:
    """Whether a collective of place ``here`` that one call runs ``runs`` times sits in a scan XLA kept
    as a loop: its trips are the loop's, not a Python loop's passes."""
    return here in trip_places and runs > 1


def number_in_order(
    positions: Sequence[tuple[int, ...]], passes: int, backward: bool, of: int | None = None
) -> list[Pass] | None:
    """Passes for ``m`` collectives of one place, by their order in the compiled schedule.

    They split evenly into ``passes`` passes of ``m / passes`` each, in schedule
    order (the last pass first for a backward place); None when ``m`` is not a
    multiple of ``passes`` (the order cannot say which belongs where).
    """
    m = len(positions)
    if passes < 2 or m % passes:
        return None
    per = m // passes
    order = sorted(range(m), key=lambda i: positions[i])
    out: list[Pass] = [Pass(0, passes)] * m
    for rank, i in enumerate(order):
        k = rank // per
        out[i] = Pass(passes - k if backward else k + 1, max(passes, of or passes))
    return out
