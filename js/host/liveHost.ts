/**
 * The host of a live widget: local answer first, the kernel's answer last.
 *
 * A user edit is answered at once by the local engine (js/engine/), drawn in
 * the same task as the keystroke, and sent to the kernel as always, numbered
 * (`edit_seq`). Python sets `edit_answered` to that number once it has
 * answered, after every other trait of its answer (a trait rather than a
 * custom message: the widget manager applies trait updates in order but may
 * deliver a custom message before them). From then on the model's traits,
 * the kernel's answer built from real JAX objects, are what the view shows.
 * When the two answers differ the kernel wins and both are logged with
 * console.warn. Edits only the kernel can judge (engine `kernel-only`) are
 * simply waited for, and so is every later edit until the kernel catches up.
 */

import type { AnyModel } from "@anywidget/types";
import { applyEdit } from "../engine/edits";
import { isPayload, PAYLOAD_VERSION } from "../payload/array";
import type { EditableTrait, PreviewRequest, SyncedTraits, ViewHost } from "../traits/array";
import { EDIT_ANSWERED, EDIT_SEQ, nextEditSeq, sendEdit } from "../traits/edits";
import { ANSWERED_KEYS, type AnsweredTraits, answeredTraits, editOf } from "./localEdits";

export { EDIT_ANSWERED, EDIT_SEQ };

export type LiveModel = AnyModel<SyncedTraits & { [EDIT_SEQ]: number; [EDIT_ANSWERED]: number }>;

interface PendingEdit {
  seq: number;
  key: EditableTrait;
  value: string;
  /** The local engine's answer; null when the kernel alone answers. */
  local: AnsweredTraits | null;
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));
}

export class LiveHost implements ViewHost {
  readonly readOnly = false;
  private readonly model: LiveModel;
  private readonly pending: PendingEdit[] = [];
  /** The local answer drawn while the kernel has not answered it yet. */
  private shown: AnsweredTraits | null = null;
  private listener: ((keys: (keyof SyncedTraits)[]) => void) | null = null;

  constructor(model: LiveModel) {
    this.model = model;
  }

  /** Called with the traits a local answer (or its end) changed (the view's `update`). */
  onChange(listener: (keys: (keyof SyncedTraits)[]) => void): void {
    this.listener = listener;
  }

  get<K extends keyof SyncedTraits>(key: K): SyncedTraits[K] {
    const shown = this.shown as Partial<SyncedTraits> | null;
    if (shown && key in shown) return shown[key] as SyncedTraits[K];
    return this.model.get(key);
  }

  edit(key: EditableTrait, value: string): void {
    // Numbered on the model, shared by every view of it, and above the last answer (a reloaded page
    // starts again from the kernel's count), so each answer changes the trait.
    const seq = nextEditSeq(this.model);
    const local = this.localAnswer(key, value);
    this.pending.push({ seq, key, value, local });
    if (local) this.show(local);
    sendEdit(this.model, key, value, seq);
  }

  /** Sends a custom message (an arrow: the view calls it detached). */
  readonly send = (message: PreviewRequest): void => this.model.send(message);

  /** Takes the kernel's answer to edit `seq` (and to any earlier one it merged in), now in the model. */
  answered(seq: number): void {
    const answered: PendingEdit[] = [];
    while (this.pending.length > 0 && this.pending[0].seq <= seq) answered.push(this.pending.shift() as PendingEdit);
    if (answered.length === 0) return; // another view's edit
    const own = answered[answered.length - 1];
    // Several edits sent close together may reach the kernel as one message (the widget
    // manager merges them): its answer is then to the merged edit, not comparable.
    if (own.seq === seq && own.local && answered.length === 1 && !this.agrees(own)) {
      // Later local answers started from the disagreeing one: let the kernel answer those too.
      for (const later of this.pending) later.local = null;
    }
    this.show([...this.pending].reverse().find((p) => p.local)?.local ?? null);
  }

  /** A trait of the model changed: the view hears of it unless a local answer stands in front of it. */
  modelChanged(key: keyof SyncedTraits): void {
    const shown = this.shown as Partial<SyncedTraits> | null;
    if (shown && key in shown) return;
    this.listener?.([key]);
  }

  /** Puts `next` (or, for null, the model) in front of the view, which hears of the traits that changed. */
  private show(next: AnsweredTraits | null): void {
    const before = ANSWERED_KEYS.map((key) => this.get(key));
    this.shown = next;
    // Only changes: a redrawn alert would be announced again, a redrawn picture repainted.
    const changed = ANSWERED_KEYS.filter((key, i) => !sameValue(before[i], this.get(key)));
    if (changed.length > 0) this.listener?.(changed);
  }

  private localAnswer(key: EditableTrait, value: string): AnsweredTraits | null {
    // After an edit only the kernel answers, nothing here knows the state it starts from.
    if (this.pending.some((p) => p.local === null)) return null;
    const base = this.get("payload");
    if (!isPayload(base) || base.version !== PAYLOAD_VERSION) return null;
    const outcome = applyEdit(base, editOf(key, value), { kernel: true });
    return outcome.status === "kernel-only" ? null : answeredTraits(base, outcome);
  }

  private agrees(edit: PendingEdit): boolean {
    const local = edit.local as AnsweredTraits;
    const kernel: AnsweredTraits = {
      spec_text: this.model.get("spec_text"),
      mesh_text: this.model.get("mesh_text"),
      memory_kind: this.model.get("memory_kind"),
      payload: this.model.get("payload"),
      error: this.model.get("error"),
      error_source: this.model.get("error_source"),
      notice: this.model.get("notice") ?? "",
    };
    const same =
      JSON.stringify(local.payload) === JSON.stringify(kernel.payload) &&
      local.error === kernel.error &&
      local.error_source === kernel.error_source &&
      local.notice === kernel.notice;
    if (!same) {
      console.warn(
        "shardviz: the layout computed in the browser differs from the kernel's; the kernel's answer stays.",
        { edit: { [edit.key]: edit.value }, browser: local, kernel },
      );
    }
    return same;
  }
}
