/**
 * What a view says in its status slot about the payload it was sent: nothing
 * yet, or why a new payload is not drawn (the last good picture stays).
 * One wording for every view.
 */

import { h, replaceChildren } from "../util/dom";

/** "Nothing to show yet." */
export function sayNothingYet(slot: HTMLElement): void {
  replaceChildren(slot, [h("p", { class: "sv-muted" }, ["Nothing to show yet."])]);
}

/**
 * `decode()`'s answer with the slot cleared, or null with the slot saying why
 * this `what` (a layout, a program, a tree) cannot be drawn.
 */
export function decodedOrSaid<T>(slot: HTMLElement, what: string, decode: () => T): T | null {
  try {
    const decoded = decode();
    replaceChildren(slot, []);
    return decoded;
  } catch (error) {
    replaceChildren(slot, [
      h("div", { class: "sv-error", role: "alert", "data-source": "payload" }, [
        `Cannot draw this ${what}: ${error instanceof Error ? error.message : String(error)}`,
      ]),
    ]);
    return null;
  }
}
