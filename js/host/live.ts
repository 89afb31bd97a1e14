/**
 * The host of every live widget: each user edit goes to the kernel as one
 * numbered message, `{type: "edit", seq, control, text}`, and the kernel
 * answers with one write of the `answer` trait carrying the highest number it
 * has answered (docs/payload.md). A view with a local engine draws the
 * engine's prediction at once; the kernel's answer wins when it has answered
 * every edit this host sent. A host never touches the model: js/widget.ts
 * hands it a KernelLink and tells it when the answer changes.
 */

import { ANSWERED, type Answer, answerTraits, changedKeys, type Host } from "../traits/host";

/** What a live host may do with its widget's model (js/widget.ts makes it). */
export interface KernelLink {
  /** The kernel's latest answer: the `answer` trait. */
  answer(): Partial<Answer>;
  /** A message to the kernel. */
  send(message: object): void;
  /** The next edit number: above every number this page sent for the model and the kernel's last answered. */
  nextSeq(): number;
}

/** The browser's prediction of Python's answer to an edit, for instant pictures and saved pages. */
export interface LocalEngine<T> {
  /** The traits Python would answer `control = text` with, starting from `shown`; null where only the kernel can say. */
  answer(shown: T, control: keyof T, text: unknown): T | null;
  /** The traits on which a prediction and the kernel's answer must agree (a disagreement is logged). */
  compared: readonly (keyof T)[];
  /** Hears each of the kernel's answers (the tree engine keeps the tree as given). */
  heard?(kernel: T): void;
}

interface Pending<T> {
  seq: number;
  control: keyof T;
  text: unknown;
  /** The engine's prediction; null where the kernel alone answers. */
  local: T | null;
}

/** The longest an edit predicted here waits for its picture's frame before it is sent (see `sendAfterFrame`). */
export const SEND_WAIT_MS = 100;

/** After its frame, an edit waits at most this long for the browser to be idle before it is sent. */
export const SEND_IDLE_MS = 30;

export class LiveHost<T extends object, C extends keyof T = never, M = never> implements Host<T, C, M> {
  readonly readOnly = false;
  private readonly link: KernelLink;
  private readonly engine: LocalEngine<T> | null;
  private pending: Pending<T>[] = [];
  /** What the view draws: the kernel's answer, or the latest prediction in front of it. */
  private shown: T;
  private listener: (keys: string[]) => void = () => {};
  /** A predicted edit whose message waits for its picture's frame. */
  private unsent: object | null = null;

  constructor(link: KernelLink, engine: LocalEngine<T> | null = null) {
    this.link = link;
    this.engine = engine;
    this.shown = this.kernel();
    engine?.heard?.(this.shown);
  }

  get<K extends keyof T>(key: K): T[K] {
    return this.shown[key];
  }

  onChange(listener: (keys: string[]) => void): void {
    this.listener = listener;
  }

  /** A request message (an arrow: views call it detached). */
  readonly send = (message: M): void => this.link.send(message as object);

  readonly editsInFlight = (): boolean => this.pending.length > 0;

  edit<K extends C>(control: K, text: T[K]): void {
    this.flush(); // an earlier edit still waiting goes first: edits reach the kernel in order
    const seq = this.link.nextSeq();
    // After an edit only the kernel answers, nothing here knows the state the next one starts from.
    const guessable = this.engine !== null && this.pending.every((p) => p.local !== null);
    const local = guessable ? (this.engine as LocalEngine<T>).answer(this.shown, control, text) : null;
    this.pending.push({ seq, control, text, local });
    const message = { type: "edit", seq, control, text };
    if (local === null) {
      this.link.send(message);
      return;
    }
    this.show(local, []);
    this.sendAfterFrame(message);
  }

  /** The `answer` trait changed (js/widget.ts calls this): the kernel answered an edit, or a cell changed the widget. */
  answered(): void {
    const kernel = this.kernel();
    this.engine?.heard?.(kernel);
    const seq = Number(this.link.answer().seq ?? 0);
    const done = this.pending.filter((p) => p.seq <= seq);
    this.pending = this.pending.filter((p) => p.seq > seq);
    const own = done[done.length - 1];
    if (own?.seq === seq && own.local && !this.agrees(own, kernel)) {
      // Later predictions started from the one the kernel disagreed with: the kernel answers those too.
      for (const later of this.pending) later.local = null;
    }
    const prediction = [...this.pending].reverse().find((p) => p.local)?.local;
    this.show(prediction ?? kernel, done.length > 0 ? [ANSWERED] : []);
  }

  private kernel(): T {
    return answerTraits<T>(this.link.answer());
  }

  /** Puts `next` in front of the view, which hears of the traits that changed (and of `extra`). */
  private show(next: T, extra: string[]): void {
    // Only changes: a redrawn alert would be announced again, a redrawn picture repainted.
    const keys = [...changedKeys(this.shown, next), ...extra];
    this.shown = next;
    if (keys.length > 0) this.listener(keys);
  }

  private agrees(edit: Pending<T>, kernel: T): boolean {
    const local = edit.local as T;
    const same = (this.engine as LocalEngine<T>).compared.every(
      (key) => JSON.stringify(local[key] ?? "") === JSON.stringify(kernel[key] ?? ""),
    );
    if (!same) {
      console.warn("shardviz: the browser's answer differs from the kernel's; the kernel's answer stays.", {
        edit: { [edit.control]: edit.text },
        browser: local,
        kernel,
      });
    }
    return same;
  }

  /**
   * Sends a predicted edit once the frame showing the prediction is drawn and
   * the browser's own work after it is done (or after SEND_WAIT_MS where no
   * frame comes: a hidden page): a local kernel shares the machine's cores,
   * and its work would otherwise delay that frame, and the message's own
   * encoding would delay the tasks that follow it.
   */
  private sendAfterFrame(message: object): void {
    this.unsent = message;
    if (typeof requestAnimationFrame !== "function") {
      this.flush();
      return;
    }
    requestAnimationFrame(() => {
      if (typeof requestIdleCallback === "function") requestIdleCallback(() => this.flush(), { timeout: SEND_IDLE_MS });
      else setTimeout(() => this.flush(), 0);
    });
    setTimeout(() => this.flush(), SEND_WAIT_MS);
  }

  private flush(): void {
    const message = this.unsent;
    this.unsent = null;
    if (message) this.link.send(message);
  }
}
