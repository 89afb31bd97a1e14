"""Loops, call structure and collectives: every collective once, with how many times a call runs it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import cast

from .groups import ReplicaGroups, parse_replica_groups, parse_source_target_pairs
from .module import Instruction, Module
from .scanning import Shape, unquote

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


def execution_counts(module: Module) -> Mapping[str, ExecutionCount]:
    """Per computation: executions per call of the module, multiplied through loop nesting.

    A while body runs ``known_trip_count`` times per run of the while (its
    condition once more); a conditional's branches at most once; any other
    called computation (``calls``, ``to_apply``, async wrappers) once per
    run of its caller. Computations reached from several places add up. Worked out once per module:
    the collectives, the flops and the bytes through memory all ask.
    """
    known = module.derived.get("execution_counts")
    if known is None:
        known = module.derived["execution_counts"] = MappingProxyType(_execution_counts(module))
    return cast(Mapping[str, ExecutionCount], known)


def _execution_counts(module: Module) -> dict[str, ExecutionCount]:
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
    (operands..., results...) in one tuple, so keep the results half: flat for one
    operand, ``((operands...), (results...))`` for several."""
    if not inst.opcode.endswith("-start") or not shape.is_tuple:
        return shape
    n = len(inst.operands)
    halves = shape.tuple_shapes
    if n > 1 and len(halves) == 2 and all(h.is_tuple and len(h.tuple_shapes) == n for h in halves):
        return halves[1]
    if len(shape.tuple_shapes) >= 2 * n > 0:
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
