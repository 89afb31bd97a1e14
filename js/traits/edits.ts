/**
 * Edit numbering, shared by every view whose edits go to a kernel: each user
 * edit travels with a number (`edit_seq`), and Python sets `edit_answered` to
 * that number once its traits hold the answer. An answer that changes no
 * other trait (the same error again) still changes that one.
 */

import type { AnyModel } from "@anywidget/types";

/** The number sent with every user edit; not a trait Python declares, it only travels with the edit. */
export const EDIT_SEQ = "edit_seq";
/** The trait Python sets to the number of the last edit it answered. */
export const EDIT_ANSWERED = "edit_answered";

/**
 * Sent with every user edit beside its number: the trait it edits and the text. A model
 * sends only the traits that changed, and the kernel's answer to an earlier edit may have
 * put this very text in the trait meanwhile (the edit then went out as a bare number, and a
 * burst of edits ended at the one before the last); a burst the widget manager merges into
 * one message may also carry an older value of the trait beside the newest edit. The
 * number makes it new every time; Python takes it over the trait (widgets/base.py).
 */
export const EDIT = "edit";

export interface StatedEdit {
  seq: number;
  name: string;
  value: unknown;
}

/** The traits every numbered model carries besides its view's own. */
export interface EditNumbers {
  [EDIT_SEQ]: number;
  [EDIT_ANSWERED]: number;
  [EDIT]?: StatedEdit;
}

/** The number of the next edit: above the last sent and the last answered (a reloaded page starts from the kernel's). */
export function nextEditSeq<T extends EditNumbers>(model: AnyModel<T>): number {
  return Math.max(Number(model.get(EDIT_SEQ) ?? 0), Number(model.get(EDIT_ANSWERED) ?? 0)) + 1;
}

/**
 * Sends a user edit, numbered and stated (see EDIT): every view's one way to reach the
 * kernel. Python's own text again (put back after a refusal) clears the refusal and
 * changes nothing else. Called only from user events, never from a change handler, so
 * saving cannot echo.
 */
export function sendEdit<T extends EditNumbers, K extends keyof T>(
  model: AnyModel<T>,
  key: K,
  value: T[K],
  seq: number = nextEditSeq(model),
): void {
  model.set(key, value);
  model.set(EDIT, { seq, name: String(key), value } as T[typeof EDIT]);
  model.set(EDIT_SEQ, seq as T[typeof EDIT_SEQ]);
  model.save_changes();
}
