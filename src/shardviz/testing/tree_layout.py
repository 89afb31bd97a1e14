"""``assert_tree_layout``: every leaf of a pytree laid out as ``GLOB = SPEC`` rules or a tree of specs say.

The rules are the model view's (:mod:`shardviz.tree.rules`: first match wins,
globs over dotted or slashed paths); a tree of specs has the tree's own
structure with a ``PartitionSpec``, spec text, type string, ``NamedSharding``
or ``Layout`` per leaf (None: not checked). A failure is one table of every
leaf that differs: path, expected, actual, bytes per device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..array.layout import Layout
from ..errors import ShardingError
from ..text.lines import pad, text_width
from ..tree.describe import tree_result
from ..tree.model import TreeData, leaf_name
from ..tree.rules import Rule, first_rules, parse_rules
from ..tree.tree import TreeLayout
from .errors import FailurePage, TreeLayoutMismatch
from .layout import Expected, check_axes, differences, expectation, marks_text, no_marks
from .messages import format_bytes

__all__ = ["assert_tree_layout"]

LISTED = 40  # leaves a failure lists


@dataclass(frozen=True)
class LeafFacts:
    """One array leaf as a comparison reads it (the fields of a Layout that ``differences`` uses)."""

    dtype: str
    shape: tuple[int, ...]
    spec: tuple[tuple[str, ...], ...]
    type_str: str
    memory_kind: str
    sharding: Any = None


@dataclass(frozen=True)
class Check:
    """What one leaf is expected to be, and where that expectation was written."""

    leaf: int
    wanted: Expected | None  # None: no rule states it
    origin: str  # "line 2: *.w1 = fsdp, tp", or the leaf's path in the tree of specs


def assert_tree_layout(tree: Any, expected: Any) -> TreeLayout:
    """Check that every array leaf of ``tree`` is laid out as ``expected`` says; return the TreeLayout.

    ``expected`` is rules text (``GLOB = SPEC`` per line, the model view's
    grammar, first match wins; every array leaf must match a rule and every
    rule must set a leaf) or a pytree shaped like ``tree`` whose leaves are
    PartitionSpecs, spec text, type strings, NamedShardings or Layouts (None
    leaves are not checked). Specs are compared as ``assert_layout`` compares
    them: each dimension's axes, a short spec leaving the last dimensions whole.

    Raises :class:`TreeLayoutMismatch` (an AssertionError) with a table of the
    leaves that differ (path, expected, actual, bytes per device, and what
    differs); ``ShardingError`` for a rule that sets no leaf or names an axis
    the leaf's mesh lacks, or a tree of specs that does not fit the tree.
    """
    __tracebackhide__ = True
    layout = tree_result(tree)
    checks = _from_rules(layout, expected) if isinstance(expected, str) else _from_specs(layout, expected)
    failed: list[tuple[Check, list[str]]] = []
    for check in checks:
        if check.wanted is None:
            failed.append((check, ["no rule states its layout: add one (e.g. a last line '* = None')"]))
            continue
        if int(layout.leaf_group[check.leaf]) < 0:
            failed.append((check, ["a NumPy array in host memory: on no device, so laid out on no mesh"]))
            continue
        facts = _facts(layout, check.leaf)
        names = _mesh_axes(layout, check.leaf)
        try:
            check_axes(check.wanted, names)
        except ShardingError as err:
            raise ShardingError(f"{check.origin}, for leaf {leaf_name(layout.paths[check.leaf])!r}: {err}") from None
        found = differences(check.wanted, facts)
        if found:
            failed.append((check, found))
    if failed:
        message, page = _message(layout, failed, len(checks), rules=isinstance(expected, str))
        raise TreeLayoutMismatch(message, subject=layout, page=page)
    return layout


def _facts(tree: TreeData, i: int) -> LeafFacts:
    g = int(tree.leaf_group[i])
    if g < 0:  # a NumPy array: its shape and dtype, on no device
        source = tree.sources[i]
        return LeafFacts(str(source.dtype), tree.shapes[i], ((),) * len(tree.shapes[i]), tree.other_types[i], "")
    group = tree.groups[g]
    return LeafFacts(group.dtype, tree.shapes[i], group.spec, tree.type_str(i), group.memory_kind)


def _mesh_axes(tree: TreeData, i: int) -> tuple[str, ...]:
    group = tree.groups[int(tree.leaf_group[i])]
    return () if group.mesh is None else tuple(tree.meshes[group.mesh].info.axis_names)


def _arrays(tree: TreeData) -> list[int]:
    """The leaves a layout is expected of: device arrays (and ShapeDtypeStructs) and NumPy arrays."""
    return [i for i in range(tree.leaf_count) if int(tree.leaf_group[i]) >= 0 or _is_numpy(tree, i)]


def _is_numpy(tree: TreeData, i: int) -> bool:
    return i < len(tree.sources) and isinstance(tree.sources[i], (np.ndarray, np.generic))


def _from_rules(tree: TreeData, text: str) -> list[Check]:
    rules = parse_rules(text)
    if not rules:
        raise ShardingError("assert_tree_layout was given rules text with no rule: write GLOB = SPEC, one per line")
    arrays = _arrays(tree)
    winners = first_rules(rules, [tree.segments[i] for i in arrays])
    for k, rule in enumerate(rules):
        if k not in winners:
            raise ShardingError(
                f"line {rule.line}: {rule.glob} sets no leaf of the tree (it matches none, or earlier lines take "
                f"every leaf it matches); paths read like {_example_path(tree, arrays)!r}"
            )
    return [
        Check(i, None if k is None else _rule_expectation(rules[k]), "-" if k is None else _rule_origin(rules[k]))
        for i, k in zip(arrays, winners)
    ]


def _rule_expectation(rule: Rule) -> Expected:
    spec = tuple(() if entry is None else tuple(entry) for entry in rule.spec)
    return Expected(rule.text.rpartition(" = ")[2], None, None, None, spec, no_marks())  # a glob may hold " = "


def _rule_origin(rule: Rule) -> str:
    return f"line {rule.line}: {rule.text}"


def _example_path(tree: TreeData, arrays: list[int]) -> str:
    return tree.paths[arrays[0]] if arrays else "(the tree has no array leaves)"


def _is_spec_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (PartitionSpec, str, NamedSharding, Layout))


def _from_specs(tree: TreeData, expected: Any) -> list[Check]:
    try:
        flat = jax.tree_util.tree_flatten_with_path(expected, is_leaf=_is_spec_leaf)[0]
    except Exception as err:  # a custom node's flatten, or unsortable dict keys
        raise ShardingError(f"cannot flatten the tree of expected specs: {err}") from None
    wanted = {jax.tree_util.keystr(path): spec for path, spec in flat}
    actual = {jax.tree_util.keystr(path): i for i, (path, _) in enumerate(_tree_paths(tree))}
    arrays = set(_arrays(tree))
    missing = [p for p in actual if p not in wanted and actual[p] in arrays]
    extra = [p for p in wanted if p not in actual]
    if missing or extra:
        raise ShardingError(
            "the tree of expected specs does not fit the tree: "
            + "; ".join(
                part
                for part in (
                    f"no spec for {', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else "") if missing else "",
                    f"no leaf at {', '.join(extra[:5])}" + (" ..." if len(extra) > 5 else "") if extra else "",
                )
                if part
            )
            + " (give a spec, or None for a leaf not checked, at each array leaf's path)"
        )
    checks = []
    for path, i in actual.items():
        spec = wanted.get(path)
        if spec is None or i not in arrays:
            continue
        if isinstance(spec, NamedSharding):
            spec = spec.spec
        checks.append(Check(i, expectation(spec), path))
    return checks


def _tree_paths(tree: TreeData) -> list[tuple[Any, Any]]:
    """The tree's key paths in flatten order (the leaves of ``describe_tree``)."""
    source = jax.tree_util.tree_unflatten(tree.treedef, tree.sources)
    return jax.tree_util.tree_flatten_with_path(source, is_leaf=lambda x: x is None)[0]


def _expected_text(check: Check, facts: LeafFacts) -> str:
    wanted = check.wanted
    if wanted is None:
        return "(no rule)"
    if wanted.shape is not None:
        return wanted.text
    spec = wanted.spec + ((),) * (len(facts.shape) - len(wanted.spec))
    dims = ",".join(f"{n}{_at(axes)}" for n, axes in zip(facts.shape, spec))
    return f"{facts.dtype}[{dims}]{marks_text(wanted.marks)}"


def _at(axes: tuple[str, ...]) -> str:
    if not axes:
        return ""
    return f"@{axes[0]}" if len(axes) == 1 else f"@({','.join(axes)})"


def _message(
    tree: TreeData, failed: list[tuple[Check, list[str]]], checked: int, *, rules: bool
) -> tuple[str, FailurePage]:
    how = "the rules say (first match wins)" if rules else "the tree of specs says"
    head = (
        f"{len(failed)} of the {checked} array leaves checked {'is' if len(failed) == 1 else 'are'} "
        f"not laid out as {how}:"
    )
    columns = ("path", "expected", "actual", "per device", "expected by")
    rows: list[tuple[str, ...]] = []
    for check, _ in failed:
        facts = _facts(tree, check.leaf)
        rows.append(
            (
                leaf_name(tree.paths[check.leaf]),
                _expected_text(check, facts),
                facts.type_str,
                format_bytes(int(tree.leaf_bytes[check.leaf])) if int(tree.leaf_group[check.leaf]) >= 0 else "host",
                check.origin,
            )
        )
    widths = [max(text_width(r[c]) for r in [columns, *rows[:LISTED]]) for c in range(len(columns) - 1)]
    lines = [head, "  " + "  ".join(pad(c, w) for c, w in zip(columns, widths)) + "  " + columns[-1]]
    for row, (_, found) in list(zip(rows, failed))[:LISTED]:
        lines.append("  " + "  ".join(pad(cell, w) for cell, w in zip(row, widths)) + "  " + row[-1])
        lines += [f"      {d}" for d in found]
    if len(failed) > LISTED:
        lines.append(f"  ... and {len(failed) - LISTED} more leaves")
    lines.append("if the actual layouts are intended, change what 'expected by' names to say them")
    page = FailurePage(
        budget=f"every array leaf laid out as {how}",
        figure=f"{len(failed)} of {checked} leaves differ",
        columns=(*columns, "what differs"),
        rows=tuple((*row, "; ".join(found)) for row, (_, found) in zip(rows, failed)),
        marked=(True,) * len(rows),
    )
    return "\n".join(lines), page
