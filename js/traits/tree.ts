/**
 * The traits of the tree (model) view (names are binding: src/shardviz/widgets/tree.py),
 * and the host the tree view reaches them through.
 */

import type { Payload } from "../payload/array";
import type { TreePayload } from "../payload/tree";
import type { Host } from "./host";

export interface TreeTraits {
  /** docs/tree-payload.md plus `rules_text` and `code`; `{}` before Python has sent one. */
  payload: TreePayload | Record<string, never>;
  /** "" when the last rules edit was fine; else what it got wrong, naming the line. */
  error: string;
  /** `rules` (or `general` for an edit the widget could not read). */
  error_source: string;
  /** What the last good rules edit did ("3 leaves re-sharded by 2 rules."). */
  notice: string;
  /** The rules in force, one `GLOB = SPEC` per line (the only control). */
  rules_text: string;
}

/** Asks Python for the array payload of one leaf it lays out itself (a leaf off every mesh). */
export interface LeafLayoutRequest {
  kind: "leaf_layout";
  leaf: number;
}

export type LeafLayoutReply =
  | { kind: "leaf_layout"; leaf: number; payload: Payload }
  | { kind: "leaf_layout"; leaf: number; error: string };

/** The tree view's host: the rules editor, leaf layouts asked of the kernel. */
export type TreeHost = Host<TreeTraits, "rules_text", LeafLayoutRequest>;

export function isLeafLayoutReply(message: unknown): message is LeafLayoutReply {
  const m = message as { kind?: unknown; leaf?: unknown } | null;
  return typeof m === "object" && m !== null && m.kind === "leaf_layout" && typeof m.leaf === "number";
}
