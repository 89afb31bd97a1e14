/** A stand-in for an anywidget model that records what the front end does with it. */

import type { SyncedTraits } from "../host/traits";
import type { Payload } from "../payload/array";

type Handler = (...args: unknown[]) => void;

export class FakeModel {
  readonly traits: SyncedTraits;
  readonly listeners = new Map<string, Set<Handler>>();
  readonly saved: Partial<SyncedTraits>[] = [];
  readonly sent: unknown[] = [];
  /** The number sent with each saved edit. */
  readonly editSeqs: number[] = [];
  /** Set while a change handler runs, to catch save_changes calls from inside one. */
  private inChangeHandler = false;
  savesInsideChangeHandlers = 0;
  private pending: Partial<SyncedTraits> = {};

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

  get<K extends keyof SyncedTraits>(key: K): SyncedTraits[K] {
    return this.traits[key];
  }

  /** As a widget model does: a value equal to the one held is no change, and is not sent. */
  set<K extends keyof SyncedTraits>(key: K, value: SyncedTraits[K]): void {
    if (JSON.stringify(this.traits[key]) === JSON.stringify(value)) return;
    this.traits[key] = value;
    this.pending[key] = value;
  }

  /** Python answers edit `seq`: the traits its answer changed, then `edit_answered`. */
  answer(seq: number, changes: Partial<SyncedTraits> = {}): void {
    this.fromPython(changes);
    (this.traits as SyncedTraits & { edit_answered?: number }).edit_answered = seq;
    this.inChangeHandler = true;
    try {
      for (const handler of this.listeners.get("change:edit_answered") ?? []) handler();
    } finally {
      this.inChangeHandler = false;
    }
  }

  save_changes(): void {
    if (this.inChangeHandler) this.savesInsideChangeHandlers++;
    // The edit's number and statement travel with it (js/traits/edits.ts); `saved` reads as the
    // edits Python takes: the changed traits, the stated edit's over its trait.
    const {
      edit_seq: seq,
      edit: stated,
      ...edit
    } = this.pending as Partial<SyncedTraits> & {
      edit_seq?: number;
      edit?: { name: string; value: unknown };
    };
    this.saved.push(stated ? { ...edit, [stated.name]: stated.value } : edit);
    if (seq !== undefined) this.editSeqs.push(seq);
    this.pending = {};
  }

  send(content: unknown): void {
    this.sent.push(content);
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

  /** Python changes traits: set them, then fire change events as the widget manager does. */
  fromPython(changes: Partial<SyncedTraits>): void {
    Object.assign(this.traits, changes);
    this.inChangeHandler = true;
    try {
      for (const key of Object.keys(changes)) {
        for (const handler of this.listeners.get(`change:${key}`) ?? []) handler();
      }
    } finally {
      this.inChangeHandler = false;
    }
  }

  /** Python sends a custom message. */
  message(content: unknown): void {
    for (const handler of this.listeners.get("msg:custom") ?? []) handler(content, []);
  }
}
