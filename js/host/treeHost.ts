/**
 * Hosts of the tree view: over a live model (rules edits go to the kernel,
 * leaf layouts can be asked for), and over a saved page's payload (read-only:
 * rules need a kernel to apply them with JAX).
 */

import type { AnyModel } from "@anywidget/types";
import type { TreePayload } from "../payload/tree";
import { type EditNumbers, sendEdit } from "../traits/edits";
import { readOnlyHost } from "../traits/readOnly";
import type { LeafLayoutRequest, TreeHost, TreeTraits } from "../traits/tree";

/** A tree widget's model: its traits and the edit numbers every view's edits carry. */
export type TreeModel = AnyModel<TreeTraits & EditNumbers>;

export function modelTreeHost(model: TreeModel): TreeHost {
  return {
    readOnly: false,
    get: (key) => model.get(key),
    edit: (key, value) => sendEdit(model, key, value),
    send: (message: LeafLayoutRequest) => model.send(message),
  };
}

export const SAVED_PAGE_NOTE =
  "Saved page, no kernel: the rules in force are shown; applying new ones needs a live kernel.";

export function staticTreeHost(payload: TreePayload): TreeHost {
  const traits: TreeTraits = {
    payload,
    error: "",
    error_source: "",
    notice: "",
    rules_text: payload.rules_text ?? "",
  };
  return readOnlyHost(traits, SAVED_PAGE_NOTE);
}
