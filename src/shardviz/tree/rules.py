"""Sharding rules for a whole tree: ``GLOB = SPEC``, one per line, first match wins.

``GLOB`` is an ``fnmatch`` pattern matched (case-sensitively) against a
leaf's dotted path (``layers.*.w``; ``*`` crosses dots too), or, when it
holds a ``/``, against the same path joined by slashes as Flax and Orbax
write it (``params/layers_0/kernel``, ``*/w1``). ``SPEC`` is in
the array widget's grammar (``None, model``, ``P('data', None)``,
``(data, model)``). Blank lines and lines starting with ``#`` are skipped;
leaves that no rule matches keep their sharding.

Rules apply with real JAX objects: a matched array is copied onto its new
sharding with ``jax.device_put`` (the user's array is never changed or
deleted), a matched ShapeDtypeStruct is replaced by a new one. A leaf keeps
its own mesh and memory kind; a leaf that has no mesh (on one device, or a
ShapeDtypeStruct without a sharding) takes the tree's first mesh, or the
``mesh=`` given. Every error names the line it comes from.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec

from ..array.checks import check_spec, entry_axes, spec_from_entries
from ..array.grammar import MAX_TEXT, format_spec, parse_spec
from ..errors import ShardingError
from ..memory_guard import Placement, check_room
from .paths import path_segments

MAX_RULES_TEXT = 50 * MAX_TEXT
SLASH = "/"  # a glob with a slash matches paths written the Flax and Orbax way: params/layers_0/kernel


@dataclass(frozen=True)
class Rule:
    """One line of rules: which leaves (``glob``) get which spec."""

    line: int  # 1-based line number in the rules text
    glob: str
    spec: tuple[tuple[str, ...] | None, ...]  # as parse_spec gives it: None or axis names per dimension

    @property
    def partition_spec(self) -> PartitionSpec:
        return spec_from_entries(self.spec)

    @property
    def text(self) -> str:
        """The rule in canonical form, e.g. ``layers.*.w = None, model``."""
        spec = format_spec([() if e is None else e for e in self.spec])
        return f"{self.glob} = {spec}" if spec else f"{self.glob} = None"


@dataclass(frozen=True, eq=False)
class RulesApplied:
    """The tree after the rules, and what each rule did.

    ``tree`` has the structure of the input with matched leaves replaced;
    ``matched[k]`` lists the dotted paths rule ``k`` set; ``changed`` the
    dotted paths whose sharding the rules really changed (a rule may set what
    a leaf already had); ``fallback_mesh`` is the mesh given to leaves that
    had none (None when no leaf needed it).
    """

    tree: Any
    rules: tuple[Rule, ...]
    matched: tuple[tuple[str, ...], ...]
    fallback_mesh: Mesh | AbstractMesh | None
    changed: tuple[str, ...] = ()


def parse_rules(text: str) -> tuple[Rule, ...]:
    """Parse rules text; a bad line raises :class:`ShardingError` naming it."""
    if not isinstance(text, str):
        raise ShardingError(f"rules are text (one GLOB = SPEC per line), not {type(text).__name__}")
    if len(text) > MAX_RULES_TEXT:
        raise ShardingError(f"the rules text is {len(text)} characters long; at most {MAX_RULES_TEXT} are accepted")
    rules = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        # The spec grammar has no "=", so the last one splits: a key may contain "=".
        glob, equals, spec_text = line.rpartition("=")
        glob = glob.strip()
        if not equals or not glob:
            raise ShardingError(f"line {number}: expected GLOB = SPEC (e.g. layers.*.w = None, model), got {line!r}")
        _check_glob(glob, number)
        try:
            spec = parse_spec(spec_text)
        except ShardingError as err:
            raise ShardingError(f"line {number}: {err}") from None
        rules.append(Rule(number, glob, spec))
    return tuple(rules)


def _check_glob(glob: str, line: int) -> None:
    """Refuse a ``[`` that is never closed, which fnmatch would quietly read as a plain character."""
    i = 0
    while i < len(glob):
        if glob[i] != "[":
            i += 1
            continue
        j = i + 1  # as fnmatch reads a set: an opening "!" or "]" belongs to it
        if glob[j : j + 1] == "!":
            j += 1
        if glob[j : j + 1] == "]":
            j += 1
        end = glob.find("]", j)
        if end < 0:
            raise ShardingError(f"line {line}: bad glob {glob!r}: the [ at character {i + 1} is never closed")
        members = glob[i + 1 : end].removeprefix("!")
        for k in range(1, len(members) - 1):
            if members[k] == "-" and members[k - 1] > members[k + 1]:
                reversed_range = members[k - 1 : k + 2]
                raise ShardingError(f"line {line}: bad glob {glob!r}: the range {reversed_range} is reversed")
        i = end + 1
    try:
        re.compile(fnmatch.translate(glob))
    except re.error as err:  # e.g. a reversed range such as [z-a]
        raise ShardingError(f"line {line}: bad glob {glob!r}: {err}") from None


def apply_rules(tree: Any, rules: str | Sequence[Rule], *, mesh: Mesh | AbstractMesh | None = None) -> RulesApplied:
    """Re-shard the leaves of ``tree`` that the rules match; returns the new tree and what each rule did.

    Raises :class:`ShardingError` naming the line for a spec that does not
    fit a leaf it matches (unknown axis, an axis used twice, a dimension the
    axes do not divide, more entries than the leaf has dimensions), a rule
    that matches no leaf, or a leaf with no mesh to use. Nothing in ``tree``
    is changed.
    """
    parsed = parse_rules(rules) if isinstance(rules, str) else tuple(rules)
    try:
        flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    except Exception as err:  # a custom node's flatten, or unsortable dict keys
        raise ShardingError(f"cannot flatten the tree: {err}") from None
    array_index = [i for i, (_, x) in enumerate(flat) if isinstance(x, (jax.Array, jax.ShapeDtypeStruct))]
    matcher = _Matcher(parsed, path_segments([flat[i][0] for i in array_index]))
    tree_mesh = mesh if mesh is not None else _first_mesh(flat)
    shardings = _Shardings()
    matched: list[list[str]] = [[] for _ in parsed]
    winner: dict[int, int] = {}  # leaf index -> the rule that set it
    moves: list[tuple[int, Any]] = []  # (leaf index, new sharding) for arrays
    new_leaves = [x for _, x in flat]
    changed: list[str] = []
    used_fallback = False
    for n, (i, path) in enumerate(zip(array_index, matcher.paths)):
        k = matcher.first_rule(n)
        if k is None:
            continue
        x, rule = new_leaves[i], parsed[k]
        matched[k].append(path)
        winner[i] = k
        old = x.sharding
        leaf_mesh = old.mesh if isinstance(old, NamedSharding) else tree_mesh
        if leaf_mesh is None:
            raise ShardingError(
                f"line {rule.line}: {rule.glob} matches leaf {path!r}, which has no mesh, and the tree has none "
                "to give it; pass mesh="
            )
        used_fallback |= not isinstance(old, NamedSharding)
        sharding = shardings.of(rule, k, leaf_mesh, tuple(x.shape), getattr(old, "memory_kind", None), path)
        if not lays_out_alike(old, sharding, len(x.shape)):
            changed.append(path)
        if isinstance(x, jax.ShapeDtypeStruct):
            new_leaves[i] = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding, weak_type=x.weak_type)
        elif x.is_deleted():
            raise ShardingError(f"line {rule.line}: leaf {path!r} is a deleted array; it cannot be moved")
        else:
            moves.append((i, sharding))
    _check_every_rule_sets_something(parsed, matched, matcher, array_index, winner)
    _check_room_for_moves(new_leaves, moves, {i: p for i, p in zip(array_index, matcher.paths)})
    _move(new_leaves, moves)
    return RulesApplied(
        tree=jax.tree_util.tree_unflatten(treedef, new_leaves),
        rules=parsed,
        matched=tuple(tuple(m) for m in matched),
        fallback_mesh=tree_mesh if used_fallback else None,
        changed=tuple(changed),
    )


def lays_out_alike(old: Any, new: NamedSharding, ndim: int) -> bool:
    """Whether a leaf on ``old`` already sits where ``new`` would put it.

    True for one mesh, one memory kind, and per dimension the same mesh axes
    once axes of size 1 (which split nothing) are left out: what JAX's
    ``is_equivalent_to`` answers, without building HLO shardings (which
    asserts on some specs over Manual axes).
    """
    if not isinstance(old, NamedSharding) or old.mesh != new.mesh:
        return False
    if (old.memory_kind or "device") != (new.memory_kind or "device"):
        return False
    return _splitting_axes(old, ndim) == _splitting_axes(new, ndim)


def _splitting_axes(sharding: NamedSharding, ndim: int) -> tuple[tuple[str, ...], ...]:
    size = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
    axes = [tuple(a for a in entry_axes(e) if size[a] != 1) for e in sharding.spec]
    return tuple(axes[:ndim]) + ((),) * (ndim - len(axes))


def first_rules(rules: Sequence[Rule], segments: Sequence[tuple[str, ...]]) -> list[int | None]:
    """For each leaf (its path segments), the index of the first rule that matches it, None where none does."""
    matcher = _Matcher(rules, segments)
    return [matcher.first_rule(n) for n in range(len(segments))]


class _Matcher:
    """Which rule a leaf's path matches first: dotted paths, or slashed for a glob with a slash."""

    def __init__(self, rules: Sequence[Rule], segments: Sequence[tuple[str, ...]]) -> None:
        self.patterns = [re.compile(fnmatch.translate(r.glob)) for r in rules]
        self.slashed = [SLASH in r.glob for r in rules]
        self.paths = [".".join(s) for s in segments]
        self.slash_paths = [SLASH.join(s) for s in segments]

    def hits(self, k: int, n: int) -> bool:
        return bool(self.patterns[k].match(self.slash_paths[n] if self.slashed[k] else self.paths[n]))

    def first_rule(self, n: int) -> int | None:
        return next((k for k in range(len(self.patterns)) if self.hits(k, n)), None)


class _Shardings:
    """The sharding a rule gives a leaf, checked against the leaf's shape, made once per mesh, rule and memory."""

    def __init__(self) -> None:
        self.made: dict[tuple[Any, ...], NamedSharding] = {}  # (mesh, rule, memory kind) -> its sharding
        self.fits: set[tuple[Any, ...]] = set()  # (mesh, rule, shape) already checked

    def of(self, rule: Rule, k: int, mesh: Any, shape: tuple[int, ...], memory_kind: str | None, path: str) -> Any:
        if (mesh, k, shape) not in self.fits:
            try:
                check_spec(mesh, rule.partition_spec, shape)
            except ShardingError as err:
                raise ShardingError(f"line {rule.line}: {rule.glob} matches leaf {path!r}: {err}") from None
            self.fits.add((mesh, k, shape))
        sharding = self.made.get((mesh, k, memory_kind))
        if sharding is None:
            try:
                sharding = NamedSharding(mesh, rule.partition_spec, memory_kind=memory_kind)
            except Exception as err:  # JAX's own refusal, in its words
                raise ShardingError(f"line {rule.line}: JAX refuses the sharding for leaf {path!r}: {err}") from None
            self.made[(mesh, k, memory_kind)] = sharding
        return sharding


def _check_every_rule_sets_something(
    rules: Sequence[Rule],
    matched: Sequence[Sequence[str]],
    matcher: _Matcher,
    array_index: Sequence[int],
    winner: dict[int, int],
) -> None:
    """A rule that sets no leaf is a mistake: say whether an earlier line took its leaves or it matches none."""
    for k, rule in enumerate(rules):
        if matched[k]:
            continue
        leaves = [i for n, i in enumerate(array_index) if matcher.hits(k, n)]
        taken = sorted({rules[winner[i]].line for i in leaves if i in winner})
        if taken:
            lines = ", ".join(map(str, taken))
            raise ShardingError(
                f"line {rule.line}: every leaf {rule.glob} matches is taken first by line {lines}, "
                "so this rule sets nothing"
            )
        raise ShardingError(
            f"line {rule.line}: {rule.glob} matches no array leaf{_path_hint(rule.glob, matcher.paths)}"
        )


def _check_room_for_moves(leaves: list[Any], moves: Sequence[tuple[int, Any]], paths: dict[int, str]) -> None:
    """Refuse the moves when their new shards need more memory than there is, before any is made."""
    placements = [Placement(s, tuple(leaves[i].shape), leaves[i].dtype, name=repr(paths[i])) for i, s in moves]
    if placements:
        check_room(
            placements,
            action="These rules",
            hint="Rules that split the largest leaves over more of the mesh's devices need less.",
        )


def _move(leaves: list[Any], moves: Sequence[tuple[int, Any]]) -> None:
    """Puts the arrays on their new shardings: one device_put for all, so JAX batches the transfers."""
    if not moves:
        return
    try:
        moved = jax.device_put([leaves[i] for i, _ in moves], [s for _, s in moves])
    except Exception as err:  # JAX's own refusal, in its words
        raise ShardingError(f"jax.device_put refused the new shardings: {err}") from None
    for (i, _), y in zip(moves, moved):
        leaves[i] = y


def rules_notice(applied: RulesApplied) -> str:
    """``3 leaves re-sharded by 2 rules (1 already so)``: only leaves whose sharding changed count."""
    changed = len(applied.changed)
    matched = sum(len(m) for m in applied.matched)
    rules = len(applied.rules)
    text = f"{changed} {'leaf' if changed == 1 else 'leaves'} re-sharded by {rules} {'rule' if rules == 1 else 'rules'}"
    if matched > changed:
        text += f" ({matched - changed} already laid out so)"
    return text + "."


def _path_hint(glob: str, paths: Sequence[str]) -> str:
    """What the paths look like, in both forms, so a pattern written for another form can be fixed."""
    if not paths:
        return " (the tree has no array leaves)"
    shown = next((p for p in paths if "." in p), paths[0])
    return f"; paths read like {shown!r}, or {shown.replace('.', SLASH)!r} in a pattern with a slash"


def _first_mesh(flat: Sequence[tuple[Any, Any]]) -> Mesh | AbstractMesh | None:
    for _, x in flat:
        sharding = getattr(x, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    return None
