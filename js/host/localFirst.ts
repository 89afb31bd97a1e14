/**
 * The host of a live widget whose edits the browser can answer: local answer
 * first, the kernel's answer last. Every view with a local engine (the
 * array's edits, the tree's rules) is one use of this class.
 *
 * A user edit is answered at once by the local engine, drawn in the same task
 * as the keystroke, and sent to the kernel once that frame is drawn (see
 * `sendAfterFrame`), numbered (`edit_seq`).
 * Python sets `edit_answered` to that number once it has answered, after
 * every other trait of its answer (a trait rather than a custom message: the
 * widget manager applies trait updates in order but may deliver a custom
 * message before them). From then on the model's traits, the kernel's answer
 * built from real JAX objects, are what the view shows. When the two answers
 * differ the kernel wins and both are logged with console.warn. Edits only
 * the kernel can judge are simply waited for, and so is every later edit
 * until the kernel catches up.
 */

import type { AnyModel } from "@anywidget/types";
import { EDIT_ANSWERED, EDIT_SEQ, type EditNumbers, nextEditSeq, sendEdit } from "../traits/edits";

/** What a local engine answers an edit with: the traits Python would publish, or null (the kernel's call). */
export type LocalAnswer<T, A extends keyof T> = (
  get: <K extends keyof T>(key: K) => T[K],
  key: keyof T,
  value: string,
) => Pick<T, A> | null;

export interface LocalFirstOptions<T, A extends keyof T> {
  /** The traits an answer sets (the view hears of those that change). */
  answeredKeys: readonly A[];
  /** The traits on which the two answers must agree. */
  comparedKeys: readonly A[];
  answer: LocalAnswer<T, A>;
  /** The message logged when they do not. */
  disagreement: string;
  /**
   * Pass the kernel's answer to an edit the browser left to it on to the view
   * as `edit_answered`, even when it changed no trait (the tree view's editor
   * waits for it).
   */
  announceKernelAnswers?: boolean;
}

interface PendingEdit<T, A extends keyof T> {
  seq: number;
  key: keyof T;
  value: string;
  /** The local engine's answer; null when the kernel alone answers. */
  local: Pick<T, A> | null;
}

/** The longest an edit answered here waits before it is sent to the kernel. */
export const SEND_WAIT_MS = 100;

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));
}

export class LocalFirstHost<T extends object, A extends keyof T> {
  readonly readOnly = false;
  protected readonly model: AnyModel<T & EditNumbers>;
  private readonly options: LocalFirstOptions<T, A>;
  private readonly pending: PendingEdit<T, A>[] = [];
  /** The local answer drawn while the kernel has not answered it yet. */
  private shown: Pick<T, A> | null = null;
  private listener: ((keys: (keyof T)[]) => void) | null = null;
  /** An edit answered here whose message to the kernel waits for that answer's frame (see `edit`). */
  private unsent: (() => void) | null = null;

  constructor(model: AnyModel<T & EditNumbers>, options: LocalFirstOptions<T, A>) {
    this.model = model;
    this.options = options;
  }

  /** Called with the traits a local answer (or its end) changed (the view's `update`). */
  onChange(listener: (keys: (keyof T)[]) => void): void {
    this.listener = listener;
  }

  get<K extends keyof T>(key: K): T[K] {
    const shown = this.shown as Partial<T> | null;
    if (shown && key in shown) return shown[key] as T[K];
    return this.modelValue(key);
  }

  edit(key: keyof T, value: string): void {
    // An earlier edit still waiting goes first: edits reach the kernel in order.
    this.sendWaiting();
    // Numbered on the model, shared by every view of it, and above the last answer (a reloaded page
    // starts again from the kernel's count), so each answer changes the trait.
    const seq = nextEditSeq(this.model);
    // After an edit only the kernel answers, nothing here knows the state it starts from.
    const local = this.pending.some((p) => p.local === null)
      ? null
      : this.options.answer((k) => this.get(k), key, value);
    this.pending.push({ seq, key, value, local });
    if (local) this.show(local);
    // The edited trait is one of T's; the model's type cannot say which, so it is written as its text.
    const send = () =>
      sendEdit(this.model as AnyModel<EditNumbers & Record<string, string>>, key as string, value, seq);
    if (local) this.sendAfterFrame(send);
    else send();
  }

  /**
   * Sends an edit the browser has answered once the frame that shows the answer
   * has been drawn (or after SEND_WAIT_MS, where no frame comes: a hidden page).
   * A local kernel shares the machine's cores, and its work on the edit then
   * runs beside the next frame: at 512 devices on two cores that frame's commit
   * waited 5 to 10 ms for the compositor. The kernel's answer comes a frame later.
   */
  private sendAfterFrame(send: () => void): void {
    if (typeof requestAnimationFrame !== "function") {
      send();
      return;
    }
    this.unsent = send;
    const later = () => setTimeout(() => this.sendWaiting(), 0);
    requestAnimationFrame(later);
    setTimeout(() => this.sendWaiting(), SEND_WAIT_MS);
  }

  /** Sends the edit waiting for its frame, if any. */
  private sendWaiting(): void {
    const send = this.unsent;
    this.unsent = null;
    send?.();
  }

  /** True while an edit sent to the kernel awaits its answer. */
  editsInFlight(): boolean {
    return this.pending.length > 0;
  }

  /** Takes the kernel's answer to edit `seq` (and to any earlier one it merged in), now in the model. */
  answered(seq: number): void {
    const answered: PendingEdit<T, A>[] = [];
    while (this.pending.length > 0 && this.pending[0].seq <= seq)
      answered.push(this.pending.shift() as PendingEdit<T, A>);
    if (answered.length === 0) return; // another view's edit
    const own = answered[answered.length - 1];
    // Several edits sent close together may reach the kernel as one message (the widget
    // manager merges them): its answer is then to the merged edit, not comparable.
    if (own.seq === seq && own.local && answered.length === 1 && !this.agrees(own)) {
      // Later local answers started from the disagreeing one: let the kernel answer those too.
      for (const later of this.pending) later.local = null;
    }
    this.show([...this.pending].reverse().find((p) => p.local)?.local ?? null);
    if (this.options.announceKernelAnswers && !own.local) this.listener?.([EDIT_ANSWERED as keyof T]);
  }

  /** A trait of the model changed: the view hears of it unless a local answer stands in front of it. */
  modelChanged(key: keyof T): void {
    const shown = this.shown as Partial<T> | null;
    if (shown && key in shown) return;
    this.listener?.([key]);
  }

  /** The kernel's value of a trait. */
  protected modelValue<K extends keyof T>(key: K): T[K] {
    return this.model.get(key as keyof (T & EditNumbers)) as unknown as T[K];
  }

  /** Puts `next` (or, for null, the model) in front of the view, which hears of the traits that changed. */
  private show(next: Pick<T, A> | null): void {
    const keys = this.options.answeredKeys;
    const before = keys.map((key) => this.get(key));
    this.shown = next;
    // Only changes: a redrawn alert would be announced again, a redrawn picture repainted.
    const changed = keys.filter((key, i) => !sameValue(before[i], this.get(key)));
    if (changed.length > 0) this.listener?.(changed);
  }

  private agrees(edit: PendingEdit<T, A>): boolean {
    const local = edit.local as Pick<T, A>;
    const kernel = Object.fromEntries(this.options.answeredKeys.map((key) => [key, this.modelValue(key)])) as Pick<
      T,
      A
    >;
    const same = this.options.comparedKeys.every(
      (key) => JSON.stringify(local[key] ?? "") === JSON.stringify(kernel[key] ?? ""),
    );
    if (!same) console.warn(this.options.disagreement, { edit: { [edit.key]: edit.value }, browser: local, kernel });
    return same;
  }
}

export { EDIT_ANSWERED, EDIT_SEQ };
