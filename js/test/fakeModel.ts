/**
 * A stand-in for an anywidget model that speaks the widget's protocol
 * (docs/payload.md): it holds the `answer` trait and records the edit
 * messages the front end sends. Tests write and read the view's traits flat
 * (`spec_text`, `payload`, ...); the model keeps them as Python's answer does.
 */

import type { Payload } from "../payload/array";
import type { SyncedTraits } from "../traits/array";
import type { Answer } from "../traits/host";

type Handler = (...args: unknown[]) => void;

/** The controls of every view: their texts travel in the answer's `texts`. */
const CONTROLS = new Set(["spec_text", "mesh_text", "memory_kind", "rules_text", "input_specs"]);

export interface EditMessage {
  type: "edit";
  seq: number;
  control: string;
  text: unknown;
}

export class FakeModel {
  /** The view's traits as Python's last answer holds them. */
  readonly traits: SyncedTraits;
  readonly listeners = new Map<string, Set<Handler>>();
  /** Each edit the front end sent, as `{control: text}`. */
  readonly saved: Partial<SyncedTraits>[] = [];
  /** Every other message the front end sent. */
  readonly sent: unknown[] = [];
  /** The edit messages, whole. */
  readonly edits: EditMessage[] = [];
  /** The number sent with each edit. */
  readonly editSeqs: number[] = [];
  /** The highest edit number Python answered. */
  seq = 0;
  /** The `drawn_seq` values the front end saved (its acknowledgements of answers drawn). */
  readonly drawnSeqs: number[] = [];
  private pending: Record<string, unknown> = {};
  /** Set while a change handler runs, to catch messages sent from inside one. */
  private inChangeHandler = false;
  savesInsideChangeHandlers = 0;

  constructor(payload: Payload | Record<string, never>, overrides: Partial<SyncedTraits> = {}) {
    const p = payload as Partial<Payload>;
    this.traits = {
      payload,
      error: "",
      error_source: "",
      spec_text: p.spec_text ?? "",
      mesh_text: p.mesh_text ?? "",
      memory_kind: p.memory_kind ?? "",
      notice: "",
      ...overrides,
    };
  }

  /** The traits a test reads flat; `answer` as Python writes it. */
  get(key: string): unknown {
    if (key !== "answer") return (this.traits as unknown as Record<string, unknown>)[key];
    const answer: Answer = { seq: this.seq, payload: {}, error: "", error_source: "", notice: "", texts: {} };
    for (const [name, value] of Object.entries(this.traits)) {
      if (CONTROLS.has(name)) answer.texts[name] = value;
      else answer[name] = value;
    }
    return answer;
  }

  /** Python answers edit `seq` with one write of `answer`: the traits its answer changed, and the number. */
  answer(seq: number, changes: Partial<SyncedTraits> = {}): void {
    this.seq = Math.max(this.seq, seq);
    this.fromPython(changes);
  }

  set(key: string, value: unknown): void {
    this.pending[key] = value;
  }

  save_changes(): void {
    if ("drawn_seq" in this.pending) this.drawnSeqs.push(Number(this.pending.drawn_seq));
    this.pending = {};
  }

  send(content: unknown): void {
    if (this.inChangeHandler) this.savesInsideChangeHandlers++;
    const edit = content as Partial<EditMessage> | null;
    if (edit?.type === "edit" && typeof edit.seq === "number" && typeof edit.control === "string") {
      this.edits.push(edit as EditMessage);
      this.editSeqs.push(edit.seq);
      this.saved.push({ [edit.control]: edit.text } as Partial<SyncedTraits>);
    } else {
      this.sent.push(content);
    }
  }

  on(event: string, handler: Handler): void {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)?.add(handler);
  }

  off(event?: string | null, handler?: Handler | null): void {
    if (!event) {
      this.listeners.clear();
      return;
    }
    if (!handler) this.listeners.delete(event);
    else this.listeners.get(event)?.delete(handler);
  }

  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  /** Python changes the widget (a cell, or an answer): one write of `answer`, one change event. */
  fromPython(changes: Partial<SyncedTraits>): void {
    Object.assign(this.traits, changes);
    this.inChangeHandler = true;
    try {
      for (const handler of this.listeners.get("change:answer") ?? []) handler();
    } finally {
      this.inChangeHandler = false;
    }
  }

  /** Python sends a custom message. */
  message(content: unknown): void {
    for (const handler of this.listeners.get("msg:custom") ?? []) handler(content, []);
  }
}
