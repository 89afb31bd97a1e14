/**
 * A rules edit answered in the browser: what `TreeState.with_rules`
 * (src/shardviz/tree/state.py) answers, from the payload of the tree the
 * rules apply to (the tree as the user gave it). Each matched leaf keeps its
 * mesh and memory kind and takes its rule's spec; the tree is laid out again
 * and audited. Rules that touch a leaf off every mesh, a payload too old to
 * carry its type pieces, or glob syntax this engine cannot read are the
 * kernel's (`kernel-only`): JAX decides those.
 */

import { decodePathSegments, TREE_PAYLOAD_VERSION, type TreePayload } from "../../payload/tree";
import { LayoutError } from "../array/errors";
import { pyStrip } from "../array/pytext";
import { rulesCode } from "./code";
import { type LeafSpec, relayoutTree } from "./relayout";
import { checkEveryRuleSetsSomething, checkRuleFits, parseRules, RuleMatcher, rulesNotice } from "./rules";

export type TreeEditOutcome =
  | { status: "applied"; payload: TreePayload; notice: string }
  | { status: "refused"; message: string; source: "rules" }
  | { status: "kernel-only"; reason: string };

/** Why the browser leaves an edit to the kernel, as a saved page says it beside the editor. */
const kernelOnly = (reason: string): TreeEditOutcome => ({ status: "kernel-only", reason });
const OFF_MESH =
  "these rules reach a leaf off every mesh (on one device, or laid out only through index maps): " +
  "JAX gives it the tree's mesh, which needs a live kernel";
const OLD_PAYLOAD = "this tree's payload lacks what the browser needs to apply rules (a newer shardviz writes it)";
const TYPED_ONE_BY_ONE = "JAX typed this tree's leaves one by one (an axis name that reads like a number)";
const NOT_HERE =
  "the browser could not apply these rules (a glob its regular expressions cannot take); a live kernel can";

/** Axes per dimension with the axes of size 1 left out: two specs alike so lay a leaf out alike. */
function effective(spec: LeafSpec, names: readonly string[], sizes: readonly number[]): string {
  return JSON.stringify(spec.map((axes) => axes.filter((a) => sizes[names.indexOf(a)] !== 1)));
}

/**
 * `original` (the payload of the tree as given, no rules in force) under the
 * rules `text`; the copy code reads the tree from `treeName` (by default the
 * name the payload carries: a payload without one is the kernel's to answer).
 */
export function applyTreeRules(
  original: TreePayload,
  text: string,
  treeName: string | undefined = original.code_tree,
): TreeEditOutcome {
  if (original.version !== TREE_PAYLOAD_VERSION || treeName === undefined) return kernelOnly(OLD_PAYLOAD);
  if (original.groups.some((g) => g.type.length === 0)) return kernelOnly(TYPED_ONE_BY_ONE);
  try {
    return answer(original, text, treeName);
  } catch (err) {
    if (err instanceof LayoutError) return { status: "refused", message: err.message, source: "rules" };
    return kernelOnly(NOT_HERE); // a glob JavaScript cannot compile, or a payload this engine misreads
  }
}

function answer(original: TreePayload, text: string, treeName: string): TreeEditOutcome {
  // No rules: the tree as given.
  if (!pyStrip(text)) return { status: "applied", payload: { ...original, rules_text: "", code: "" }, notice: "" };
  const rules = parseRules(text);
  const { leaves, groups, meshes } = original;
  const segments = decodePathSegments(leaves.path);
  const arrayLeaves: number[] = [];
  for (let i = 0; i < leaves.count; i++) if (leaves.group[i] >= 0) arrayLeaves.push(i);
  const matcher = new RuleMatcher(
    rules,
    arrayLeaves.map((i) => segments[i]),
  );
  const matched = rules.map(() => 0);
  const winner = new Map<number, number>();
  const specs = new Map<number, LeafSpec>();
  let changed = 0;
  for (let n = 0; n < arrayLeaves.length; n++) {
    const k = matcher.firstRule(n);
    if (k === null) continue;
    const i = arrayLeaves[n];
    const group = groups[leaves.group[i]];
    if (group.mesh === null) return kernelOnly(OFF_MESH); // the leaf takes the tree's mesh, or has none: JAX's call
    const rule = rules[k];
    matched[k]++;
    winner.set(n, k);
    const mesh = meshes[group.mesh];
    const shape = leaves.shape[i];
    checkRuleFits(rule, mesh, shape, matcher.paths[n]);
    const spec = shape.map((_, d) => rule.spec[d] ?? []);
    specs.set(i, spec);
    if (effective(spec, mesh.names, mesh.sizes) !== effective(group.spec, mesh.names, mesh.sizes)) changed++;
  }
  checkEveryRuleSetsSomething(rules, matched, matcher, winner);
  const payload = relayoutTree(
    original,
    specs,
    segments.map((s) => s.join(".")),
  );
  const total = matched.reduce((a, b) => a + b, 0);
  return {
    status: "applied",
    payload: { ...payload, rules_text: text, code: rulesCode(rules, treeName) },
    notice: rulesNotice(changed, total, rules.length),
  };
}
