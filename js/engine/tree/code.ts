/**
 * The rules' copy code, a port of src/shardviz/tree/code.py for rules whose
 * leaves all keep their own mesh (a rules edit that would give a leaf the
 * tree's mesh is the kernel's to answer). It binds `shardings` and
 * `resharded`, and reads the tree from `treeName` (`TREE` when unknown).
 */

import { specSource } from "../array/codegen";
import { pyRepr } from "../array/pytext";
import type { Rule } from "./rules";

const KEY_ATTRIBUTES = "('key', 'idx', 'name')"; // repr of src/shardviz/tree/paths.py's KEY_ATTRIBUTES

function header(source: string): string {
  let text =
    "# Defines sharding_rules, leaf_path, leaf_sharding, reshard_leaf, shardings and resharded: " +
    `${source} with the rules applied (${source} is left as it is);\n` +
    "# shardings is the pytree of its NamedShardings, for jax.jit(in_shardings=..., out_shardings=...) " +
    "and jax.device_put.";
  if (source === "TREE") text += "\n# TREE stands for your tree: put its name there.";
  return text;
}

function functionsSource(source: string): string {
  return `


def leaf_path(key_path, sep="."):
    """layers.0.w (or layers/0/w): dict keys, sequence indices and attribute names joined."""
    parts = []
    for key in key_path:
        attribute = next((a for a in ${KEY_ATTRIBUTES} if hasattr(key, a)), None)
        parts.append(str(key) if attribute is None else str(getattr(key, attribute)))
    return sep.join(parts)


def leaf_sharding(key_path, x):
    """The sharding the first matching rule gives an array leaf, else its own; None for other leaves."""
    if not isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
        return None
    for pattern, spec in sharding_rules:
        if fnmatch.fnmatchcase(leaf_path(key_path, "/" if "/" in pattern else "."), pattern):
            old = x.sharding
            leaf_mesh = old.mesh
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
shardings = jax.tree_util.tree_map_with_path(leaf_sharding, ${source})
resharded = jax.tree_util.tree_map_with_path(reshard_leaf, ${source})
`;
}

export function rulesCode(rules: readonly Rule[], treeName: string): string {
  const rows = rules.map(
    (rule) => `    (${pyRepr(rule.glob)}, ${specSource(rule.spec.map((axes) => axes ?? []))}),  # line ${rule.line}`,
  );
  const parts = [
    header(treeName),
    "import fnmatch\n\nimport jax\nfrom jax.sharding import NamedSharding, PartitionSpec as P",
    "",
    "# GLOB = SPEC, first match wins; leaves no rule matches keep their sharding.",
    "sharding_rules = [",
    ...rows,
    "]",
  ];
  return parts.join("\n") + functionsSource(treeName);
}
