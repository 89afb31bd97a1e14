"""Python source that applies tree rules ("copy code"), equal in effect to :func:`apply_rules`.

The source stands alone: it names the leaves with the same dotted paths
(slashed for a pattern with a ``/``), matches them with
``fnmatch.fnmatchcase`` (the same patterns), keeps each leaf's mesh and
memory kind, and builds the fallback mesh only when some matched leaf had
none. It binds ``shardings`` (the pytree of each array leaf's sharding, for
``jax.jit(in_shardings=..., out_shardings=...)`` and ``jax.device_put``)
and ``resharded`` (the tree on them). ``tree`` stands for the user's pytree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jax.sharding import AbstractMesh, Mesh

from .paths import KEY_ATTRIBUTES
from .rules import Rule, RulesApplied, parse_rules


def rules_code(
    rules: str | Sequence[Rule] | RulesApplied,
    *,
    fallback_mesh: Mesh | AbstractMesh | None = None,
    tree_name: str | None = None,
) -> str:
    """The source for ``rules``; pass what :func:`apply_rules` returned to carry its fallback mesh along.

    The code reads the tree from the variable ``tree_name`` (the placeholder
    ``TREE`` when None) and binds the re-sharded tree to ``resharded``; the
    tree itself is left as it is, as :func:`apply_rules` leaves it.
    """
    source = code_tree_name(tree_name)
    parsed, fallback_mesh = _rules_and_mesh(rules, fallback_mesh)
    imports, mesh_lines = _imports_and_mesh(fallback_mesh)
    table = ["sharding_rules = ["] + [f"    ({r.glob!r}, {_spec_source(r)}),  # line {r.line}" for r in parsed] + ["]"]
    parts = [_header(source, fallback_mesh is not None), "\n".join(imports), ""]
    if mesh_lines:
        parts += ["# The mesh for leaves that have none of their own.", *mesh_lines, ""]
    parts += ["# GLOB = SPEC, first match wins; leaves no rule matches keep their sharding.", *table]
    return "\n".join(parts) + _functions_source(source, fallback_mesh is not None)


def code_tree_name(tree_name: str | None) -> str:
    """The name the copy code reads the tree from: the user's variable, or the placeholder ``TREE``."""
    return tree_name if tree_name is not None and tree_name.isidentifier() else "TREE"


def _rules_and_mesh(
    rules: str | Sequence[Rule] | RulesApplied, fallback_mesh: Mesh | AbstractMesh | None
) -> tuple[tuple[Rule, ...], Mesh | AbstractMesh | None]:
    """The rules parsed, and the mesh for leaves with none (what apply_rules used, unless given)."""
    if isinstance(rules, RulesApplied):
        return rules.rules, rules.fallback_mesh if fallback_mesh is None else fallback_mesh
    return (parse_rules(rules) if isinstance(rules, str) else tuple(rules)), fallback_mesh


def _imports_and_mesh(fallback_mesh: Mesh | AbstractMesh | None) -> tuple[list[str], list[str]]:
    """The import lines (the standard library, then third parties) and the lines that build the mesh."""
    imports = ["import fnmatch", "", "import jax"]
    sharding_imports = ["NamedSharding", "PartitionSpec as P"]
    mesh_lines: list[str] = []
    if fallback_mesh is not None:
        mesh_lines, more_imports, sharding_names = _mesh_source(fallback_mesh)
        imports += more_imports
        sharding_imports = sorted(set(sharding_imports) | set(sharding_names), key=lambda n: n.lower())
    imports.append(f"from jax.sharding import {', '.join(sharding_imports)}")
    return imports, mesh_lines


def _header(source: str, has_mesh: bool) -> str:
    made = "sharding_rules, leaf_path, leaf_sharding, reshard_leaf, shardings" + (", rules_mesh" if has_mesh else "")
    defines = (
        f"# Defines {made} and resharded: {source} with the rules applied ({source} is left as it is);\n"
        "# shardings is the pytree of its NamedShardings, for jax.jit(in_shardings=..., out_shardings=...) "
        "and jax.device_put."
    )
    if source == "TREE":
        defines += "\n# TREE stands for your tree: put its name there."
    return defines


def _functions_source(source: str, has_mesh: bool) -> str:
    """The functions that match leaves and move them, and the two trees they bind."""
    leaf_mesh = "old.mesh if isinstance(old, NamedSharding) else rules_mesh" if has_mesh else "old.mesh"
    return f'''


def leaf_path(key_path, sep="."):
    """layers.0.w (or layers/0/w): dict keys, sequence indices and attribute names joined."""
    parts = []
    for key in key_path:
        attribute = next((a for a in {KEY_ATTRIBUTES!r} if hasattr(key, a)), None)
        parts.append(str(key) if attribute is None else str(getattr(key, attribute)))
    return sep.join(parts)


def leaf_sharding(key_path, x):
    """The sharding the first matching rule gives an array leaf, else its own; None for other leaves."""
    if not isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
        return None
    for pattern, spec in sharding_rules:
        if fnmatch.fnmatchcase(leaf_path(key_path, "/" if "/" in pattern else "."), pattern):
            old = x.sharding
            leaf_mesh = {leaf_mesh}
            return NamedSharding(leaf_mesh, spec, memory_kind=getattr(old, "memory_kind", None))
    return x.sharding


def reshard_leaf(key_path, x):
    """The leaf on its sharding: moved with device_put, or a new ShapeDtypeStruct."""
    sharding = leaf_sharding(key_path, x)
    if sharding is None or sharding is getattr(x, "sharding", None):
        return x
    if isinstance(x, jax.ShapeDtypeStruct):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding, weak_type=x.weak_type)
    return jax.device_put(x, sharding)


# For jax.jit(f, in_shardings=shardings, out_shardings=shardings) and jax.device_put(tree, shardings).
shardings = jax.tree_util.tree_map_with_path(leaf_sharding, {source})
resharded = jax.tree_util.tree_map_with_path(reshard_leaf, {source})
'''


def _spec_source(rule: Rule) -> str:
    entries = []
    for axes in rule.spec:
        if axes is None or not axes:
            entries.append("None")
        elif len(axes) == 1:
            entries.append(repr(axes[0]))
        else:
            entries.append("(" + ", ".join(repr(a) for a in axes) + ")")
    return "P(" + ", ".join(entries) + ")"


def _mesh_source(mesh: Mesh | AbstractMesh) -> tuple[list[str], list[str], list[str]]:
    """Lines that build ``rules_mesh``, the imports they need, and names from jax.sharding.

    Its names (``rules_mesh``, ``rules_devices``, ``rules_by_id``) keep clear of a notebook's own.
    """
    sizes = tuple(int(s) for s in mesh.axis_sizes)
    names = tuple(str(n) for n in mesh.axis_names)
    types = ", ".join(f"AxisType.{t.name}" for t in mesh.axis_types)
    types_arg = f"({types},)" if len(mesh.axis_types) == 1 else f"({types})"
    if isinstance(mesh, AbstractMesh):
        line = f"rules_mesh = AbstractMesh({sizes!r}, {names!r}, axis_types={types_arg})"
        return [line], [], ["AbstractMesh", "AxisType"]
    ids = np.array([d.id for d in mesh.devices.flat], dtype=np.int64)
    if np.array_equal(ids, np.arange(math.prod(sizes))):
        id_list = f"range({len(ids)})"
    else:
        id_list = repr(ids.tolist())
    lines = [
        "rules_by_id = {d.id: d for d in jax.devices()}",
        f"rules_devices = np.array([rules_by_id[i] for i in {id_list}]).reshape({sizes!r})",
        f"rules_mesh = Mesh(rules_devices, {names!r}, axis_types={types_arg})",
    ]
    return lines, ["import numpy as np"], ["AxisType", "Mesh"]
