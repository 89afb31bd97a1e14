/**
 * The host of a saved page whose edits the page answers itself (save_html, the
 * exported course): no kernel, so the view's local engine answers every edit
 * and the view redraws from that answer.
 */

import { ANSWERED, changedKeys, type Host } from "../traits/host";
import type { LocalEngine } from "./live";

export class PageHost<T extends object, C extends keyof T = never> implements Host<T, C> {
  readonly readOnly = false;
  readonly note: string;
  private traits: T;
  private readonly engine: LocalEngine<T>;
  private listener: (keys: string[]) => void = () => {};

  constructor(traits: T, engine: LocalEngine<T>, note: string) {
    this.traits = traits;
    this.engine = engine;
    this.note = note;
  }

  get<K extends keyof T>(key: K): T[K] {
    return this.traits[key];
  }

  onChange(listener: (keys: string[]) => void): void {
    this.listener = listener;
  }

  edit<K extends C>(control: K, text: T[K]): void {
    const next = this.engine.answer(this.traits, control, text);
    // Offline nothing is left to a kernel: a page's engine refuses what it cannot judge.
    if (next === null) throw new Error(`the page's engine left an edit of ${String(control)} to a kernel`);
    const keys = changedKeys(this.traits, next);
    this.traits = next;
    this.listener([...keys, ANSWERED]);
  }
}
