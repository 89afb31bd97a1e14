/**
 * Hosts of the program view: over a live model (an input spec edit goes to
 * the kernel, which traces and compiles the program again), and over a saved
 * page's payload (read-only: tracing needs a kernel).
 */

import type { AnyModel } from "@anywidget/types";
import type { ProgramPayload } from "../payload/program";
import { EDIT_ANSWERED, EDIT_SEQ, type EditNumbers, sendEdit } from "../traits/edits";
import type { ProgramHost, ProgramTraits } from "../traits/program";
import { readOnlyHost } from "../traits/readOnly";

/**
 * The live host. Edits are numbered (`edit_seq`, as every view's are) and Python sets
 * `edit_answered` to that number once its traits hold the answer: an answer that changes
 * no other trait (the same error again) still changes that one.
 */
export type ProgramModel = AnyModel<ProgramTraits & EditNumbers>;

export function modelProgramHost(model: ProgramModel): ProgramHost {
  return {
    readOnly: false,
    get: (key) => model.get(key),
    edit: (key, value) => sendEdit(model, key, value),
    editsInFlight: () => Number(model.get(EDIT_SEQ) ?? 0) > Number(model.get(EDIT_ANSWERED) ?? 0),
  };
}

export const SAVED_PROGRAM_NOTE =
  "Saved page, no kernel: this is the program as traced. Changing an input's spec traces and compiles the program again, which needs a live kernel (shardviz.ProgramWidget in a notebook).";

export function staticProgramHost(payload: ProgramPayload): ProgramHost {
  const traits: ProgramTraits = {
    payload,
    error: "",
    error_source: "",
    notice: "",
    input_specs: payload.inputs.map((i) => i.spec_text),
  };
  return readOnlyHost(traits, SAVED_PROGRAM_NOTE);
}
