"""A Python loop's passes in the compiled program, read from the data flow.

Every instruction XLA made from one line (a *place*: line, call chain, scope,
forward or backward) looks alike whatever pass made it: the metadata is the
same. What tells passes apart is what each reads: pass 2 of ``outputs =
jnp.dot(inputs, W) + b`` reads what pass 1 handed on through the loop's other
lines, and a backward pass 3 reads what backward pass 4 handed on. So the
place's instructions are joined into *pieces* where one reads another directly
(the dot and the add of one pass), and each piece's *level* is one more than
the highest level of any other piece it reads from, however far back. A
place that ran ``n`` passes whose pieces have levels exactly 1 to ``k`` (``k <= n``)
has its passes: level ``k`` is forward pass ``k`` or backward pass ``n + 1 - k``.
Fewer levels than passes means XLA removed a whole pass's work on the line because
nothing reads its results: the last forward pass's (a pipeline's final shift), or
the first layer's gradient with respect to the program's input, which the backward
pass reaches last.

This holds however many different products a pass makes on the line (the
gradients of both ``W`` and ``inputs``, and of ``b``, in one backward pass),
and whatever order the schedule runs them in. A one-line loop (``x =
tanh(x @ w)``) is one piece, since each pass reads the last directly: its
levels say nothing and other means number it (:mod:`.collective_places`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

from .. import hlo


class PassLevels:
    """Levels of each place's pieces in one computation, worked out once per (computation, place)."""

    def __init__(self, module: hlo.Module, place_of: Callable[[hlo.Instruction], Hashable | None]) -> None:
        self.module = module
        self.place_of = place_of
        self._places: dict[str, dict[str, Hashable | None]] = {}
        self._levels: dict[tuple[str, Hashable], dict[str, int] | None] = {}

    def pass_of(self, computation: str, names: Sequence[str], here: Hashable, passes: int) -> int | None:
        """The pass (1-based, backward passes counted from the last) of the first of ``names``
        that is an instruction of place ``here``, or None when the levels cannot say."""
        if passes < 2:
            return None
        levels = self.levels(computation, here, passes)
        if levels is None:
            return None
        for name in names:
            level = levels.get(name)
            if level is not None:
                backward = bool(here[2]) if isinstance(here, tuple) and len(here) > 2 else False
                return passes + 1 - level if backward else level
        return None

    def levels(self, computation: str, here: Hashable, passes: int) -> dict[str, int] | None:
        key = (computation, here)
        if key not in self._levels:
            self._levels[key] = self._work_out(computation, here, passes)
        return self._levels[key]

    def _place_map(self, computation: hlo.Computation) -> dict[str, Hashable | None]:
        if computation.name not in self._places:
            self._places[computation.name] = {i.name: self.place_of(i) for i in computation.instructions}
        return self._places[computation.name]

    def _work_out(self, name: str, here: Hashable, passes: int) -> dict[str, int] | None:
        computation = self.module.by_name.get(name)
        if computation is None:
            return None
        places = self._place_map(computation)
        # A combined collective gathers what several passes made: it is no pass's own, and what
        # reads it (each result's get-tuple-element) inherits no level through it.
        combined = {i.name for i in computation.instructions if hlo.collective_kind(i.opcode) and len(i.operands) > 1}
        members = {n for n, p in places.items() if p == here and n not in combined}
        if len(members) < 2:
            return None
        behind = _members_behind(computation, members)
        piece = _pieces(computation, members, behind)
        level = _piece_levels(computation, piece, behind, combined, passes)
        if (
            level is None
            or set(level.values()) != set(range(1, max(level.values()) + 1))
            or len(set(level.values())) < 2
        ):
            return None
        return {m: level[piece[m]] for m in members}


def _pieces(computation: hlo.Computation, members: set[str], behind: Mapping[str, str | None]) -> dict[str, str]:
    """Each member's piece (a representative member): members joined where one reads another,
    directly or through instructions with no metadata of their own."""
    parent = {m: m for m in members}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for inst in computation.instructions:
        if inst.name not in members:
            continue
        for operand in inst.operands:
            found = behind.get(operand)
            if found is not None:
                a, b = find(found), find(inst.name)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {m: find(m) for m in members}


def _members_behind(computation: hlo.Computation, members: set[str]) -> dict[str, str | None]:
    """For each instruction, itself if it is a member, else the member that a chain of
    metadata-less one-operand instructions (bitcasts, copies) hands on, else None."""
    out: dict[str, str | None] = {}
    for inst in computation.instructions:  # operands come first, so a chain is resolved in one sweep
        if inst.name in members:
            out[inst.name] = inst.name
        elif not inst.metadata.op_name and len(inst.operands) == 1:
            out[inst.name] = out.get(inst.operands[0])
        else:
            out[inst.name] = None
    return out


def _piece_levels(
    computation: hlo.Computation,
    piece: Mapping[str, str],
    behind: Mapping[str, str | None],
    combined: set[str],
    passes: int,
) -> dict[str, int] | None:
    """Each piece's level: one more than the highest level of another piece it reads from.
    Worked out from what each piece reads until nothing changes; pieces that
    read each other in a circle never settle, and give None."""
    reads = _pieces_read(computation, piece, behind, combined)
    level = dict.fromkeys(set(piece.values()), 1)
    for _ in range(passes + 1):
        settled = {root: 1 + max((level[other] for other in reads[root]), default=0) for root in level}
        if settled == level:
            return level
        if max(settled.values()) > passes:
            return None
        level = settled
    return None


def _pieces_read(
    computation: hlo.Computation, piece: Mapping[str, str], behind: Mapping[str, str | None], combined: set[str]
) -> dict[str, set[str]]:
    """For each piece, the pieces it reads from: another piece's member directly, or any piece
    through what it reads (instructions of no piece, or its own members), over the schedule
    (operands come first). A piece that reads itself through others is in its own set."""
    carried: dict[str, frozenset[str]] = {}  # per instruction: the pieces whose results reach it
    reads: dict[str, set[str]] = {root: set() for root in piece.values()}
    for inst in computation.instructions:
        mine = piece.get(inst.name)
        found: set[str] = set()
        for operand in () if inst.name in combined else inst.operands:
            member = behind.get(operand)
            if member is None:
                found.update(carried.get(operand, ()))
            elif piece[member] != mine:
                found.add(piece[member])
            else:  # the same piece: what it read from other pieces
                found.update(carried.get(member, ()))
        carried[inst.name] = frozenset(found)
        if mine is not None:
            reads[mine].update(found)
    return reads
