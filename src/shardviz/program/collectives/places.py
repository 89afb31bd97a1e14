"""Which layer, which pass and which array a collective belongs to.

- The *scope* is read from the instruction's ``op_name`` (:mod:`.scopes`).
- A Python loop's *pass* comes from order: the collectives of one place
  (line, call chain, scope, forward or backward) split evenly over the passes
  its values ran, in the compiled schedule's order (:mod:`.passes`).
- A collective XLA adds to lay out an output as its sharding asks (or to take
  in an input laid out otherwise) carries no line of the user's: it is
  *charged* to that output or input, found by following the data from the
  collective to the entry computation's result or back to its parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from .. import hlo
from ..lines.pass_levels import PassLevels
from ..lines.passes import Place, is_scan_trip, number_in_order, place, total_passes
from ..lines.scopes import scope_of_op_name
from ..model import Collective, CollectivePart, SourceLocation

# Instructions that hand an array on, laid out anew or not, without computing with another array.
_HANDS_ON = frozenset(
    {
        "copy",
        "bitcast",
        "reshape",
        "transpose",
        "get-tuple-element",
        "tuple",
        "copy-start",
        "copy-done",
        "slice",
        "dynamic-slice",
        "fusion",
        "convert",
        *hlo.COLLECTIVE_KINDS,
        *(k + "-start" for k in hlo.COLLECTIVE_KINDS),
        *(k + "-done" for k in hlo.COLLECTIVE_KINDS),
        "async-start",
        "async-done",
    }
)
_STEPS = 12  # instructions followed at most either way


def positions(module: hlo.Module) -> dict[tuple[str, str], tuple[int, int]]:
    """Each instruction's place in the compiled schedule: (computation, index) by (computation name, name)."""
    return {
        (comp.name, inst.name): (k, i)
        for k, comp in enumerate(module.computations)
        for i, inst in enumerate(comp.instructions)
    }


Charge = tuple[int, int | None]  # (collective index, part index or None)


def number_passes(
    collectives: Sequence[Collective],
    ops: Sequence[hlo.CollectiveOp],
    module: hlo.Module,
    stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]],
    place_passes: Mapping[Place, int],
    trip_places: frozenset[Place] = frozenset(),
) -> tuple[Collective, ...]:
    """Collectives (and combined ones' operands) with their Python loop's pass, where the order says it.

    First by the instruction that made what the collective moves: the
    instructions of one place and operation (``jvp()/dot_general`` on line 21)
    are one per pass, in schedule order. Else by the collectives themselves:
    those of one place, kind and axes split evenly over the passes. A collective of a scan's
    body that XLA kept as a loop has no pass: it is one collective run once per trip.
    """
    where = positions(module)
    place_of = _places_once(stack_of, place_passes)
    ranks = _Ranks(module, place_of, place_passes)
    levels = PassLevels(module, place_of)
    groups: dict[tuple[Place, str, str], list[tuple[Charge, tuple[int, ...]]]] = {}
    numbered: dict[Charge, tuple[int, int]] = {}
    for i, (c, op) in enumerate(zip(collectives, ops)):
        at = where.get((op.computation, op.inst.name), (0, 0))
        charges: list[tuple[Charge, SourceLocation | None, tuple[SourceLocation, ...], str, str, str]]
        if c.parts:  # an operand of a combined collective is as early as the instruction that made it
            charges = [((i, k), p.source, p.stack, p.scope, p.op_name, p.operand) for k, p in enumerate(c.parts)]
        else:
            first = op.inst.operands[0] if op.inst.operands else ""
            charges = [((i, None), c.source, c.stack, c.scope, c.op_name, first)]
        for charge, source, stack, scope, op_name, operand in charges:
            here = _value_place(place(stack, scope, op_name) if source is not None else None, place_passes)
            if here is None or is_scan_trip(here, trip_places, c.count):
                continue
            names = (operand,) if charge[1] is not None else (op.inst.name, operand)
            by_flow = levels.pass_of(op.computation, names, here, place_passes.get(here, 1))
            found = (by_flow, total_passes(here, place_passes)) if by_flow is not None else None
            if found is None:
                found = ranks.pass_of(op.computation, operand, op_name, here)
            if found is not None:
                numbered[charge] = found
                continue
            position = (*where.get((op.computation, operand), at), charge[1] or 0)
            groups.setdefault((here, c.kind, c.axes_label), []).append((charge, position))
    for (here, _, _), members in groups.items():
        n = place_passes.get(here, 1)
        found_all = number_in_order([pos for _, pos in members], n, bool(here[2]), of=total_passes(here, place_passes))
        if found_all is not None:
            for (charge, _), p in zip(members, found_all):
                numbered[charge] = (p.number, p.of)
    return _with_passes(collectives, numbered)


def _with_passes(
    collectives: Sequence[Collective], numbered: Mapping[Charge, tuple[int, int]]
) -> tuple[Collective, ...]:
    """Each collective and each of its parts with the pass ``numbered`` gives it (as it was where none)."""
    if not numbered:
        return tuple(collectives)
    out = []
    for i, c in enumerate(collectives):
        parts = tuple(_numbered_part(p, numbered.get((i, k))) for k, p in enumerate(c.parts))
        mine = numbered.get((i, None))
        out.append(
            replace(
                c,
                parts=parts,
                pass_number=mine[0] if mine else c.pass_number,
                passes=mine[1] if mine else c.passes,
            )
        )
    return tuple(out)


def _places_once(
    stack_of: Callable[[hlo.Instruction], tuple[SourceLocation, ...]], place_passes: Mapping[Place, int]
) -> Callable[[hlo.Instruction], Place | None]:
    """Each instruction's place (its values' place, from its ``op_name`` and stack; None without an
    ``op_name``), worked out once per ``op_name`` and stack: a loop's passes repeat theirs."""
    # Keyed by the stack's id: the entry keeps the stack, so no other object takes that id while it lives.
    found: dict[tuple[str, int], tuple[tuple[SourceLocation, ...], Place | None]] = {}

    def place_of(inst: hlo.Instruction) -> Place | None:
        op_name = inst.metadata.op_name
        if not op_name:
            return None
        stack = stack_of(inst)
        key = (op_name, id(stack))
        if key not in found:
            found[key] = (stack, _value_place(place(stack, scope_of_op_name(op_name), op_name), place_passes))
        return found[key][1]

    return place_of


class _Ranks:
    """Instructions of one computation by place and ``op_name``, in schedule order."""

    def __init__(
        self,
        module: hlo.Module,
        place_of: Callable[[hlo.Instruction], Place | None],
        place_passes: Mapping[Place, int],
    ) -> None:
        self.module = module
        self.place_of = place_of
        self.place_passes = place_passes
        self.by_op: dict[str, dict[tuple[Place, str], list[str]]] = {}

    def _index(self, computation: str) -> dict[tuple[Place, str], list[str]]:
        if computation not in self.by_op:
            index: dict[tuple[Place, str], list[str]] = {}
            comp = self.module.by_name.get(computation)
            for inst in comp.instructions if comp is not None else ():
                op_name = inst.metadata.op_name
                if not op_name or hlo.collective_kind(inst.opcode) is not None:
                    continue
                here = self.place_of(inst)
                if here is not None:
                    index.setdefault((here, op_name), []).append(inst.name)
            self.by_op[computation] = index
        return self.by_op[computation]

    def pass_of(self, computation: str, operand: str, op_name: str, here: Place) -> tuple[int, int] | None:
        """The pass of the instruction that made ``operand`` (followed back through copies and the like
        to one with the collective's op_name), when its place's instructions are one per pass."""
        comp = self.module.by_name.get(computation)
        if comp is None:
            return None
        current = comp.by_name.get(operand)
        for _ in range(_STEPS):
            if current is None:
                return None
            if current.metadata.op_name == op_name and hlo.collective_kind(current.opcode) is None:
                break
            if current.opcode not in _HANDS_ON or not current.operands:
                return None
            current = comp.by_name.get(current.operands[0])
        else:
            return None
        if current is None:
            return None
        names = self._index(computation).get((here, op_name), [])
        n = self.place_passes.get(here, 1)
        if n < 2 or len(names) % n or current.name not in names:
            return None
        k = names.index(current.name) // (len(names) // n)
        return (n - k if here[2] else k + 1), total_passes(here, self.place_passes)


def _value_place(here: Place | None, place_passes: Mapping[Place, int]) -> Place | None:
    """The values' place a collective's place is: XLA's stacks run on past the traced function
    (into the code that called ``trace``), the jaxpr's stop there, so the longest common start counts."""
    if here is None:
        return None
    chain = cast(tuple[Any, ...], here[0])
    for n in range(len(chain), 0, -1):
        candidate = (chain[:n], *here[1:])
        if candidate in place_passes:
            return candidate
    return None


def _numbered_part(part: CollectivePart, numbered: tuple[int, int] | None) -> CollectivePart:
    return part if numbered is None else replace(part, pass_number=numbered[0], passes=numbered[1])


def layout_charge(
    module: hlo.Module, op: hlo.CollectiveOp, users: Mapping[str, Sequence[hlo.Instruction]]
) -> tuple[str, int] | None:
    """``("output", k)`` when the collective's result goes on, handed on unchanged, to the program's
    k-th result; ``("input", k)`` when it takes the k-th parameter in; None when it does neither."""
    entry = module.entry
    if op.computation != entry.name:
        return None
    found = _to_result(entry, op.inst.name, users)
    if found is not None:
        return "output", found
    return _from_parameter(entry, op.inst)


def entry_users(module: hlo.Module) -> dict[str, list[hlo.Instruction]]:
    """The entry computation's instructions that read each instruction, by name."""
    out: dict[str, list[hlo.Instruction]] = {}
    for inst in module.entry.instructions:
        for operand in dict.fromkeys(inst.operands):
            out.setdefault(operand, []).append(inst)
    return out


def _to_result(entry: hlo.Computation, name: str, users: Mapping[str, Sequence[hlo.Instruction]]) -> int | None:
    current, steps = name, 0
    while steps < _STEPS:
        readers = users.get(current, ())
        if len(readers) != 1:
            root = entry.root
            if root is not None and root.name == current:
                return 0
            return None
        (reader,) = readers
        if reader.is_root and reader.opcode == "tuple":
            return reader.operands.index(current)
        if reader.opcode not in _HANDS_ON:
            return None
        current, steps = reader.name, steps + 1
    return None


def _from_parameter(entry: hlo.Computation, inst: hlo.Instruction) -> tuple[str, int] | None:
    current, steps = inst, 0
    while steps < _STEPS and len(current.operands) == 1:
        before = entry.by_name.get(current.operands[0])
        if before is None:
            return None
        if before.opcode == "parameter":
            number = before.text[before.operand_span[0] + 1 : before.operand_span[1] - 1].strip()
            return ("input", int(number)) if number.isdigit() else None
        if before.opcode not in _HANDS_ON:
            return None
        current, steps = before, steps + 1
    return None
