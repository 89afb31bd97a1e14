/**
 * The array view's live host: its spec, mesh and memory-kind edits answered
 * by the local engine (js/engine/array/edits.ts) first, the kernel's answer last
 * (./localFirst.ts says how the two meet).
 */

import type { AnyModel } from "@anywidget/types";
import { applyEdit } from "../engine/array/edits";
import { isPayload, PAYLOAD_VERSION } from "../payload/array";
import type { EditableTrait, PreviewRequest, SyncedTraits, ViewHost } from "../traits/array";
import type { EditNumbers } from "../traits/edits";
import { ANSWERED_KEYS, type AnsweredTraits, answeredTraits, editOf } from "./localEdits";
import { EDIT_ANSWERED, EDIT_SEQ, LocalFirstHost } from "./localFirst";

export { EDIT_ANSWERED, EDIT_SEQ };

export type LiveModel = AnyModel<SyncedTraits & EditNumbers>;

export class LiveHost extends LocalFirstHost<SyncedTraits, keyof AnsweredTraits> implements ViewHost {
  constructor(model: LiveModel) {
    super(model, {
      answeredKeys: ANSWERED_KEYS,
      comparedKeys: ["payload", "error", "error_source", "notice"],
      disagreement:
        "shardviz: the layout computed in the browser differs from the kernel's; the kernel's answer stays.",
      answer: (get, key, value) => {
        const base = get("payload");
        if (!isPayload(base) || base.version !== PAYLOAD_VERSION) return null;
        const outcome = applyEdit(base, editOf(key as EditableTrait, value), { kernel: true });
        return outcome.status === "kernel-only" ? null : answeredTraits(base, outcome);
      },
    });
  }

  /** Sends a custom message (an arrow: the view calls it detached). */
  readonly send = (message: PreviewRequest): void => this.model.send(message);
}
