/**
 * The local engines of the views that have one, as hosts use them
 * (./live.ts, ./page.ts): an edit answered with the traits Python's widget
 * would answer it with (src/shardviz/widgets/), so a view cannot tell which
 * side computed them. The array's edits go through js/engine/array/edits.ts, the
 * tree's rules through js/engine/tree/edits.ts; the program view has none
 * (tracing needs JAX).
 */

import { applyEdit } from "../engine/array/edits";
import { applyTreeRules } from "../engine/tree/edits";
import { isPayload, PAYLOAD_VERSION } from "../payload/array";
import { isTreePayload, TREE_PAYLOAD_VERSION, type TreePayload } from "../payload/tree";
import type { EditableTrait, SyncedTraits } from "../traits/array";
import type { TreeTraits } from "../traits/tree";
import type { LocalEngine } from "./live";

const COMPARED = ["payload", "error", "error_source", "notice"] as const;

/** The array view's edits; `kernel`: a kernel stands behind (an edit only JAX can judge is left to it). */
export function arrayEngine(kernel: boolean): LocalEngine<SyncedTraits> {
  return {
    compared: COMPARED,
    answer(shown, control, text) {
      const base = shown.payload;
      if (!isPayload(base) || base.version !== PAYLOAD_VERSION) return null;
      const outcome = applyEdit(base, { [control as EditableTrait]: String(text) }, { kernel });
      if (outcome.status === "kernel-only") {
        if (kernel) return null;
        throw new Error(`the page engine left an edit to a kernel: ${outcome.reason}`);
      }
      const drawn = outcome.status === "applied" ? outcome.payload : base;
      return {
        ...shown,
        // The controls show the canonical text of what is drawn (a refused edit puts the last good text back).
        spec_text: drawn.spec_text,
        mesh_text: drawn.mesh_text,
        memory_kind: drawn.memory_kind,
        payload: drawn,
        error: outcome.status === "refused" ? outcome.message : "",
        error_source: outcome.status === "refused" ? outcome.source : "",
        notice: outcome.status === "applied" ? outcome.notice : "",
      };
    },
  };
}

/** A saved tree has no variable name: the copy code says TREE, as Python's does for an unnamed tree. */
const PLACEHOLDER_TREE = "TREE";

/**
 * The tree view's rules, applied to the tree as given: on a live widget, the
 * kernel's payload with no rules in force (`original` null until it is heard);
 * on a saved page, the payload saved.
 */
export function treeEngine(original: TreePayload | null): LocalEngine<TreeTraits> {
  const offline = original !== null;
  let given = original;
  return {
    compared: ["payload", "rules_text", "error", "error_source", "notice"],
    heard(kernel) {
      const payload = kernel.payload;
      if (isTreePayload(payload) && kernel.rules_text === "" && !payload.rules_text) given = payload;
    },
    answer(shown, _control, text) {
      const rules = String(text);
      if (!isTreePayload(shown.payload) || shown.payload.version !== TREE_PAYLOAD_VERSION) return null;
      // The rules in force again: nothing to redo, a refusal shown is over (as Python answers).
      if (rules === shown.rules_text) return { ...shown, error: "", error_source: "" };
      if (given === null) return null;
      const tree = offline ? (given.code_tree ?? PLACEHOLDER_TREE) : undefined;
      const outcome = applyTreeRules(given, rules, tree);
      if (outcome.status === "applied") {
        return { payload: outcome.payload, rules_text: rules, error: "", error_source: "", notice: outcome.notice };
      }
      if (outcome.status === "kernel-only" && !offline) return null;
      const message = outcome.status === "refused" ? outcome.message : outcome.reason;
      return { ...shown, error: message, error_source: "rules", notice: "" };
    },
  };
}
