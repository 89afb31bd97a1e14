/**
 * Hosts of the tree view: over a live model (rules edits go to the kernel,
 * leaf layouts can be asked for), and over a saved page's payload (read-only:
 * rules need a kernel to apply them with JAX).
 */

import type { AnyModel } from "@anywidget/types";
import type { TreePayload } from "../payload/tree";
import { readOnlyHost } from "../traits/readOnly";
import type { ApplyRulesRequest, LeafLayoutRequest, TreeHost, TreeTraits } from "../traits/tree";

export function modelTreeHost(model: AnyModel<TreeTraits>): TreeHost {
  return {
    readOnly: false,
    get: (key) => model.get(key),
    edit: (key, value) => {
      if (model.get(key) === value) {
        // Unchanged, the trait would not be sent: ask Python to apply the text again.
        const again: ApplyRulesRequest = { kind: "apply_rules", rules_text: value };
        model.send(again);
        return;
      }
      // Only user events reach here (never a change: handler), so saving cannot echo back into a loop.
      model.set(key, value);
      model.save_changes();
    },
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
