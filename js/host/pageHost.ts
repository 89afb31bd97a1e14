/**
 * The host of a saved page (save_html, the exported course): no kernel, so
 * every edit is answered in the page by the local engine (js/engine/), and
 * the view redraws from the answer. A page of a real array can re-mesh only
 * its own devices; a what-if page on an AbstractMesh takes any mesh.
 */

import { applyEdit } from "../engine/array/edits";
import type { Payload } from "../payload/array";
import { type EditableTrait, payloadTraits, type SyncedTraits, type ViewHost } from "../traits/array";
import { ANSWERED_KEYS, answeredTraits, editOf } from "./localEdits";

export const LOCAL_NOTE = "Computed in this page, no kernel: edit the mesh, the spec or the memory kind.";

export class PageHost implements ViewHost {
  readonly readOnly = false;
  readonly note = LOCAL_NOTE;
  private readonly traits: SyncedTraits;
  private listener: ((keys: (keyof SyncedTraits)[]) => void) | null = null;

  constructor(payload: Payload) {
    this.traits = payloadTraits(payload);
  }

  /** Called with the traits an edit changed (the view's `update`). */
  onChange(listener: (keys: (keyof SyncedTraits)[]) => void): void {
    this.listener = listener;
  }

  get<K extends keyof SyncedTraits>(key: K): SyncedTraits[K] {
    return this.traits[key];
  }

  edit(key: EditableTrait, value: string): void {
    const base = this.traits.payload as Payload;
    const outcome = applyEdit(base, editOf(key, value), { kernel: false });
    // Offline nothing is left to a kernel: the engine refuses what it cannot judge.
    if (outcome.status === "kernel-only")
      throw new Error(`the page engine left an edit to a kernel: ${outcome.reason}`);
    Object.assign(this.traits, answeredTraits(base, outcome));
    this.listener?.([...ANSWERED_KEYS]);
  }
}
