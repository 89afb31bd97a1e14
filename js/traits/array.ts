/**
 * The traits Python and the front end share (names are binding), and the
 * host the view reaches them through (./host.ts): the drawing code never sees a model.
 */

import type { Payload } from "../payload/array";
import type { MoveSummary } from "../payload/move";
import type { Host } from "./host";

/**
 * The control an error belongs beside. Python also sends `general` (an edit
 * it could not read) and `internal` (a failure inside shardviz, not a
 * refusal); a view shows any source it has no control for below its editors.
 */
export type ErrorSource = "spec" | "mesh" | "memory_kind" | "general" | "internal" | "";

export interface SyncedTraits {
  /** docs/payload.md; `{}` before Python has sent one. */
  payload: Payload | Record<string, never>;
  /** "" when the last edit was fine. */
  error: string;
  /** The control the error belongs beside. */
  error_source: ErrorSource;
  spec_text: string;
  mesh_text: string;
  memory_kind: string;
  /** What the last good edit changed on its own (a spec carried over to a new mesh); "" otherwise. */
  notice: string;
  /** What moving the array to this layout cost (Python's `move`); absent where there is no kernel. */
  move?: MoveSummary;
}

/** The traits a user edit sets; Python answers by updating the others. */
export type EditableTrait = "spec_text" | "mesh_text" | "memory_kind";

export interface PreviewRequest {
  kind: "preview";
  device: number;
  dims: number[];
}

/** The array view's host: its three controls, value previews asked of the kernel. */
export type ViewHost = Host<SyncedTraits, EditableTrait, PreviewRequest>;

/** The traits a model would hold with `payload` shown and nothing wrong: the editors' texts are the payload's. */
export function payloadTraits(payload: Payload): SyncedTraits {
  return {
    payload,
    error: "",
    error_source: "",
    spec_text: payload.spec_text ?? "",
    mesh_text: payload.mesh_text ?? "",
    memory_kind: payload.memory_kind ?? "",
    notice: "",
  };
}
