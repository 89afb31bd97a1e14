/**
 * The traits of the tree (model) view (names are binding: src/shardviz/widgets/tree.py),
 * and the narrow interface the tree view uses to reach them. Only the entries
 * (js/widget.ts, the export page) implement it.
 */

import type { Payload } from "../payload/array";
import type { TreePayload } from "../payload/tree";

export interface TreeTraits {
  /** docs/tree-payload.md plus `rules_text` and `code`; `{}` before Python has sent one. */
  payload: TreePayload | Record<string, never>;
  /** "" when the last rules edit was fine; else what it got wrong, naming the line. */
  error: string;
  /** `rules` (or `general` for an edit the widget could not read). */
  error_source: string;
  /** What the last good rules edit did ("3 leaves re-sharded by 2 rules."). */
  notice: string;
  /** The rules in force, one `GLOB = SPEC` per line (the only trait the front end writes). */
  rules_text: string;
}

export const TREE_TRAIT_NAMES: readonly (keyof TreeTraits)[] = [
  "payload",
  "error",
  "error_source",
  "notice",
  "rules_text",
];

/** Asks Python for the array payload of one leaf it lays out itself (a leaf off every mesh). */
export interface LeafLayoutRequest {
  kind: "leaf_layout";
  leaf: number;
}

export type LeafLayoutReply =
  | { kind: "leaf_layout"; leaf: number; payload: Payload }
  | { kind: "leaf_layout"; leaf: number; error: string };

export interface TreeHost {
  readonly readOnly: boolean;
  /** A line the rules editor shows about where edits go (or why there are none). */
  readonly note?: string;
  get<K extends keyof TreeTraits>(key: K): TreeTraits[K];
  /**
   * Records a rules edit, numbered like every view's (the same text again is
   * answered too). Called only from user events, never from a change handler.
   */
  edit(key: "rules_text", value: string): void;
  /** Sends a custom message to the kernel; absent where there is none. */
  send?: (message: LeafLayoutRequest) => void;
  /** True while a rules edit sent to the kernel awaits its answer; absent where edits are answered at once. */
  editsInFlight?: () => boolean;
}

export function isLeafLayoutReply(message: unknown): message is LeafLayoutReply {
  const m = message as { kind?: unknown; leaf?: unknown } | null;
  return typeof m === "object" && m !== null && m.kind === "leaf_layout" && typeof m.leaf === "number";
}
