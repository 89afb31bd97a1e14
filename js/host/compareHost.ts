/**
 * Hosts of the comparison view: over a live widget's model (an edit of a
 * candidate's rules is sent to the kernel, which traces that candidate
 * again) and over a saved page's payload (read-only).
 */

import type { AnyModel } from "@anywidget/types";
import type { CompareHost } from "../views/compare";

/** The comparison widget's traits (names are binding: src/shardviz/widgets/compare.py). */
export interface CompareTraits {
  payload: unknown;
  error: string;
  notice: string;
  /** JSON `{"candidate", "rules"}`: the only trait the front end writes. */
  rules_edit: string;
}

export const COMPARE_TRAIT_NAMES: readonly (keyof CompareTraits)[] = ["payload", "error", "notice"];

export function modelCompareHost(model: AnyModel<CompareTraits>): CompareHost {
  return {
    get: (key) => model.get(key),
    edit: (candidate, rules) => {
      model.set("rules_edit", JSON.stringify({ candidate, rules }));
      model.save_changes();
    },
  };
}

export function staticCompareHost(payload: unknown): CompareHost {
  return { get: (key) => (key === "payload" ? payload : "") };
}
