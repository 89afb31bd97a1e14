/**
 * What a local answer looks like as synced traits: the values the Python
 * widget publishes after the same edit (ViewWidget._publish), so a view
 * cannot tell which side computed them.
 */

import type { EditOutcome } from "../engine/array/edits";
import type { Payload } from "../payload/array";
import type { EditableTrait, SyncedTraits } from "../traits/array";

export type AnsweredTraits = Pick<
  SyncedTraits,
  "payload" | "error" | "error_source" | "notice" | "spec_text" | "mesh_text" | "memory_kind"
>;

/** The traits after an answered edit: the new layout, or the refusal beside the last good one. */
export function answeredTraits(
  base: Payload,
  outcome: Exclude<EditOutcome, { status: "kernel-only" }>,
): AnsweredTraits {
  const shown = outcome.status === "applied" ? outcome.payload : base;
  return {
    // The editors show the canonical text of what is drawn (a refused edit puts the last good text back).
    spec_text: shown.spec_text,
    mesh_text: shown.mesh_text,
    memory_kind: shown.memory_kind,
    payload: shown,
    error: outcome.status === "refused" ? outcome.message : "",
    error_source: outcome.status === "refused" ? outcome.source : "",
    notice: outcome.status === "applied" ? outcome.notice : "",
  };
}

export const ANSWERED_KEYS: readonly (keyof AnsweredTraits)[] = [
  "spec_text",
  "mesh_text",
  "memory_kind",
  "payload",
  "error",
  "error_source",
  "notice",
];

/** One edit as the engine takes it. */
export function editOf(key: EditableTrait, value: string): { [K in EditableTrait]?: string } {
  return { [key]: value };
}
