"""What XLA's partitioner decided for each value, under Auto axes.

The jaxpr says nothing about shardings on Auto axes. The module XLA dumps
just before SPMD partitioning carries ``sharding={...}`` on (nearly) every
instruction. An equation's output is found there by what JAX wrote into the
instruction's metadata when it lowered the equation: the primitive (the
last part of ``op_name``), the user's line and column (``stack_frame_id``),
and the global shape and dtype. Of the instructions an equation lowers to,
only those whose result leaves the equation count (a user of another key,
or none). When the candidates disagree, the name stack (``jvp()`` against
``transpose(jvp())``) narrows them; when they still disagree, or none is
found, the value's sharding is unknown and says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..hlo import HloSharding, Instruction, Module, parse_sharding
from ..lines.jaxpr_walk import JaxprValue

# Equations whose outputs HLO names after the loop it lowers to.
_PRIMITIVE_ALIASES = {"scan": "while"}

Key = tuple[str, str, int, int, tuple[int, ...], str]


@dataclass(frozen=True)
class _Candidate:
    sharding: HloSharding
    op_components: tuple[str, ...]
    normal: str  # the sharding as compared (:func:`_normal`), worked out once per distinct sharding text


def index_module(module: Module) -> dict[Key, list[_Candidate]]:
    """Instructions of the pre-partitioning module that end an equation, by key.

    A key whose instructions carry no sharding maps to an empty list.
    """
    index: dict[Key, list[_Candidate]] = defaultdict(list)
    # A loop written in Python repeats each sharding once per pass: parse and compare each text once.
    parsed: dict[str, tuple[HloSharding, str]] = {}
    for comp in module.computations:
        keys: dict[str, Key | None] = {}
        for inst in comp.instructions:
            keys[inst.name] = _key(module, inst)
        users: dict[str, set[str]] = defaultdict(set)
        for inst in comp.instructions:
            for op in inst.operands:
                users[op].add(inst.name)
        for inst in comp.instructions:
            key = keys[inst.name]
            raw = inst.attr("sharding")
            if key is None:
                continue
            if raw is None:
                index.setdefault(key, [])
                continue
            mine = users.get(inst.name, set())
            leaves = inst.is_root or not mine or any(keys.get(u) != key for u in mine)
            if not leaves:
                continue
            if raw not in parsed:
                sharding = parse_sharding(raw)
                parsed[raw] = (sharding, _normal(sharding))
            sharding, normal = parsed[raw]
            op_name = inst.metadata.op_name or ""
            index[key].append(_Candidate(sharding, tuple(p for p in op_name.split("/") if p), normal))
    return index


def _key(module: Module, inst: Instruction) -> Key | None:
    if "stack_frame_id=" not in inst.text:  # JAX's instructions name their line; the rest cannot be matched
        return None
    meta = inst.metadata
    if not meta.op_name or meta.stack_frame_id is None or inst.shape.is_tuple:
        return None
    f = module.stack_frames.get(meta.stack_frame_id)  # the innermost frame: the line itself
    if f is None:
        return None
    primitive = meta.op_name.rsplit("/", 1)[-1]
    return (primitive, f.file, f.line, f.column, inst.shape.dims, inst.shape.dtype or "")


def find_sharding(value: JaxprValue, index: dict[Key, list[_Candidate]]) -> tuple[HloSharding | None, str]:
    """XLA's sharding of ``value``, or None and why not."""
    if value.primitive is None or not value.frames:
        return None, "it has no line of yours, and XLA's choices are found by the line that made the value"
    f = value.frames[0]
    primitive = _PRIMITIVE_ALIASES.get(value.primitive, value.primitive)
    dtype = str(getattr(value.aval, "dtype", ""))
    key = (primitive, f.file, f.line, f.column, tuple(int(d) for d in value.aval.shape), dtype)
    candidates = index.get(key)
    if candidates is None:
        return None, (
            "XLA merged it into another operation or dropped it before choosing layouts, "
            "so it never got a layout of its own"
        )
    if not candidates:
        return None, (
            "XLA chose no layout for it ahead of splitting the program "
            "(it often leaves small values such as scalars open)"
        )
    chosen = _agreeing(candidates)
    if chosen is None:
        narrowed = [c for c in candidates if _subsequence(value.name_stack, c.op_components)]
        chosen = _agreeing(narrowed)
    if chosen is None:
        return None, (
            "its line makes several arrays of this shape that XLA laid out differently, and which one this is "
            "cannot be told"
        )
    return chosen, ""


def _agreeing(candidates: list[_Candidate]) -> HloSharding | None:
    if not candidates:
        return None
    texts = {c.normal for c in candidates}
    return candidates[0].sharding if len(texts) == 1 else None


def _normal(sharding: HloSharding) -> str:
    """Shardings compare by what they say, not by the metadata printed with them."""
    tiles = sharding.tile_assignment
    if tiles is not None:
        return f"tiled {tiles.shape} {tiles.ravel().tolist()} {sharding.subgroups}"
    return f"{sharding.kind} {sharding.device} {[_normal(e) for e in sharding.elements]}"


def _subsequence(needle: tuple[str, ...], haystack: tuple[str, ...]) -> bool:
    it = iter(haystack)
    return all(any(part == h for h in it) for part in needle)
