/**
 * Edit numbering, shared by every view whose edits go to a kernel: each user
 * edit travels with a number (`edit_seq`), and Python sets `edit_answered` to
 * that number once its traits hold the answer. An answer that changes no
 * other trait (the same error again) still changes that one.
 */

/** The number sent with every user edit; not a trait Python declares, it only travels with the edit. */
export const EDIT_SEQ = "edit_seq";
/** The trait Python sets to the number of the last edit it answered. */
export const EDIT_ANSWERED = "edit_answered";
