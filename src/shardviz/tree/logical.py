"""Logical axes: the names Flax puts on a parameter's dimensions, and the mesh axes they land on.

Flax Linen's ``nn.with_logical_partitioning`` boxes a parameter in
``nn.LogicallyPartitioned`` (``names``: one logical name or None per
dimension); Flax NNX's ``nnx.with_partitioning`` and ``nnx.Param(...,
sharding=...)`` keep the names in the variable's metadata (``sharding_names``,
earlier ``sharding``). MaxText-style logical-axis rules map each name to mesh
axes (``("embed", "fsdp")``, ``("mlp", "model")``). The names are read here
without importing Flax: a box is any pytree node with such an attribute, and
its leaf keeps the dotted path ``describe_tree`` gives it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import jax

from ..errors import ShardingError
from .paths import path_segments

Names = tuple[str | None, ...]
NAME_ATTRIBUTES = ("names",)  # Linen's box
NAME_METADATA = ("out_sharding", "sharding_names", "sharding")  # NNX's metadata: the newest name first


def _names_of(x: Any) -> Names | None:
    """The logical names a Flax box or variable holds (all strings or None), else None."""
    if isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
        return None
    candidates = [getattr(x, a, None) for a in NAME_ATTRIBUTES]
    getter = getattr(x, "get_metadata", None)
    if callable(getter) and not isinstance(x, type):
        meta = getter()
        if isinstance(meta, Mapping):
            candidates += [meta.get(a) for a in NAME_METADATA]
    for value in candidates:
        if isinstance(value, (tuple, list)) and value and all(v is None or isinstance(v, str) for v in value):
            return tuple(value)
    return None


# A node registered with JAX's pytree registry, but for a namedtuple (optax's states): the only kind a box can be.
_REGISTERED_NODE = re.compile(r"CustomNode\((?!namedtuple\[)")


def may_hold_boxes(treedef: Any) -> bool:
    """Whether a tree of this structure has a node that could be a Flax box or variable: dicts, lists,
    tuples, None and namedtuples never are, so a tree of only those is not walked a second time."""
    return _REGISTERED_NODE.search(str(treedef)) is not None


def _is_box(x: Any) -> bool:
    try:
        return _names_of(x) is not None
    except Exception:  # an object whose attributes raise is no box of ours
        return False


def logical_names(tree: Any) -> dict[str, Names]:
    """Each boxed leaf's dotted path (as ``describe_tree`` writes it) and its logical names."""
    try:
        boxes = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_box)[0]
    except Exception:
        return {}
    found: dict[str, Names] = {}
    for path, box in boxes:
        names = _names_of(box) if _is_box(box) else None
        if names is None:
            continue
        inner = jax.tree_util.tree_flatten_with_path(box)[0] if not _is_plain(box) else [((), box)]
        for sub, leaf in inner:
            if hasattr(leaf, "shape") and len(leaf.shape) == len(names):
                found[".".join(path_segments([(*path, *sub)])[0])] = names
    return found


def _is_plain(x: Any) -> bool:
    return isinstance(x, (jax.Array, jax.ShapeDtypeStruct))


def mesh_axes_of(names: Names, spec: Sequence[Sequence[str]]) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    """Each dimension's logical name beside the mesh axes that split it in ``spec``."""
    padded = list(spec) + [()] * (len(names) - len(spec))
    return tuple((name, tuple(axes)) for name, axes in zip(names, padded))


def logical_text(names: Names, spec: Sequence[Sequence[str]]) -> str:
    """``embed -> fsdp, mlp -> model``: each named dimension and where it lies (``-`` for replicated)."""
    parts = []
    for name, axes in mesh_axes_of(names, spec):
        if name is None:
            continue
        where = "+".join(axes) if axes else "-"
        parts.append(f"{name} -> {where}")
    return ", ".join(parts)


def parse_logical_rules(rules: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Logical-axis rules as MaxText and Flax write them: pairs ``(logical name, mesh axis or axes
    or None)``, in priority order (:func:`spec_for`)."""
    if isinstance(rules, Mapping):
        rules = list(rules.items())
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
        raise ShardingError(f"logical-axis rules are pairs (name, mesh axis), got a {type(rules).__name__}")
    out: list[tuple[str, tuple[str, ...]]] = []
    for i, pair in enumerate(rules):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise ShardingError(f"logical-axis rule {i + 1} is {pair!r}; a rule is (logical name, mesh axis)")
        target = pair[1]
        axes = () if target is None else (target,) if isinstance(target, str) else target
        if not isinstance(axes, (tuple, list)) or not all(isinstance(a, str) for a in axes):
            raise ShardingError(f"logical-axis rule {i + 1} ({pair[0]!r}) names {target!r}; mesh axes are strings")
        out.append((pair[0], tuple(axes)))
    return tuple(out)


def spec_for(names: Names, rules: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[tuple[str, ...], ...]:
    """The mesh axes of each dimension by the rules, as Flax's ``logical_to_mesh_axes`` reads them:
    rules in order, each taking its name's dimension if that is still unassigned and none of its mesh
    axes is used yet by the array (a later rule for the same name is a fallback)."""
    assigned: dict[int, tuple[str, ...]] = {}
    for name, axes in rules:
        if name not in names:
            continue
        pos = names.index(name)
        used = {a for taken in assigned.values() for a in taken}
        if pos not in assigned and not used.intersection(axes):
            assigned[pos] = axes
    return tuple(assigned.get(i, ()) for i in range(len(names)))
