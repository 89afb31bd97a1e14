/**
 * The traits Python and the front end share (names are binding), and the
 * host the view reaches them through (./host.ts): the drawing code never sees a model.
 */

import type { Payload } from "../payload/array";
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

/** One collective of a move, as src/shardviz/widgets/array.py `resharding` sends it. */
export interface MoveCollective {
  kind: string;
  /** Mesh axes its groups span; null when they are no set of whole axes. */
  axes: string[] | null;
  group_size: number;
  count: number;
  /** Bytes one device sends for it, runs counted. */
  wire_bytes: number;
  /** A collective-permute's sender-to-receiver pairs. */
  pairs?: number;
}

/** A change of memory kind: each device copies its block (`bytes`) between device and host memory. */
export interface MemoryMove {
  from: string;
  to: string;
  bytes: number;
}

/**
 * What a move had to bring each device, read from the two layouts
 * (src/shardviz/array/move_needs.py): no program can move less.
 */
export interface MoveNeeds {
  /** The most one device lacked of its new block. */
  most_bytes: number;
  /** Devices that lacked any of it. */
  receiving: number;
  /** Devices of the new layout. */
  devices: number;
}

/** A move XLA compiled in a child process (past XLA:CPU's 2,048 devices of one process). */
export interface MoveChild {
  devices: number;
  seconds: number;
}

/**
 * `{}` (nothing moved, or no array), the move's collectives and bytes, or why
 * no single program moves it; with what each device lacked (`needs`, absent
 * from older kernels' answers).
 */
export type MoveSummary =
  | Record<string, never>
  | {
      collectives: MoveCollective[];
      wire_bytes: number;
      memory?: MemoryMove;
      needs?: MoveNeeds;
      child?: MoveChild;
    }
  | { error: string; needs?: MoveNeeds };

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
