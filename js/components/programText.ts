/** Words for what a program payload says: collectives' axes and bytes, where a sharding came from. */

import type { Program, ProgramCollective, ProgramPayload } from "../payload/program";
import { lineLabel } from "../payload/program";
import { formatBytes } from "../util/ranges";

/**
 * The pieces of an axes label, split at its top-level commas only: `y[sub 2 of 4, stride 2],x` is
 * `y[sub 2 of 4, stride 2]` and `x` (a piece's own comma, inside its brackets, stays in it).
 */
export function axesLabelPieces(label: string): string[] {
  const pieces: string[] = [];
  let depth = 0;
  let piece = "";
  for (const ch of label) {
    if (ch === "[") depth++;
    else if (ch === "]") depth = Math.max(0, depth - 1);
    if (ch === "," && depth === 0) {
      pieces.push(piece);
      piece = "";
    } else {
      piece += ch;
    }
  }
  pieces.push(piece);
  return pieces.map((p) => p.trim()).filter((p) => p !== "");
}

/** The axes a collective's groups span, whole (`["x", "y"]`) or pieces (`["y[sub 2 of 4, stride 2]"]`); null when none tell. */
export function axesPieces(c: ProgramCollective): string[] | null {
  if (c.axes !== null) return c.axes;
  if (c.axes_label && c.axes_label !== "?") return axesLabelPieces(c.axes_label);
  return null;
}

/** `over y`, `over x, y`, `over y[sub 2 of 4, stride 2]` (a piece of an axis), `within each device`, or why none. */
export function axesText(c: ProgramCollective): string {
  const pieces = axesPieces(c);
  if (pieces === null) return "over device groups no mesh axis or piece of one makes";
  if (pieces.length === 0) return "within each device (groups of one)";
  return `over ${pieces.join(", ")}`;
}

/** `×24` (or `≥×24` where a loop of unknown trip count or a branch is on the way). */
export function runsText(c: ProgramCollective): string {
  return `${c.count_exact ? "" : "\u2265"}\u00d7${c.count}`;
}

/** `3.0 KiB ×24 = 72 KiB`, or `1.5 KiB` for a collective that runs once; `part` picks one operand's bytes. */
export function bytesText(c: ProgramCollective, part?: number): string {
  const operand = part === undefined ? undefined : c.parts?.[part];
  const each = operand ? operand.wire_bytes : c.wire_bytes;
  if (c.count === 1 && c.count_exact) return formatBytes(each);
  return `${formatBytes(each)} ${runsText(c)} = ${formatBytes(each * c.count)}`;
}

/** The collective's source line, `file.py:12`, or "" when XLA kept none. */
export function collectiveLine(payload: ProgramPayload, c: ProgramCollective): string {
  return lineLabel(payload, c.file, c.line);
}

const ORIGINS: Record<string, string> = {
  argument: "the argument's own sharding",
  compiled: "the compiled program's output sharding",
  jaxpr: "its type in the jaxpr (Explicit axes)",
  xla: "XLA's partitioner, before SPMD partitioning",
  "single device": "the program's one device",
  manual: "none: inside shard_map each device holds its own block",
  dead: "none: nothing needs it, so XLA keeps none of it",
  unknown: "unknown",
};

/** Where value i's sharding came from, in words. */
export function originText(program: Program, i: number): string {
  const origin = program.payload.origins[program.payload.values.from[i]] ?? "unknown";
  return ORIGINS[origin] ?? origin;
}

/** How the program's values got their shardings, for the summary. */
export function modeText(mode: string): string {
  switch (mode) {
    case "explicit":
      return "shardings from the jaxpr's types (Explicit axes)";
    case "auto":
      return "shardings as XLA's partitioner chose them (Auto axes)";
    case "mixed":
      return "shardings from XLA's partitioner (mixed axis types)";
    default:
      return "no mesh: one device";
  }
}

/** `16,640` flops, or a plain "not reported". */
export function countText(n: number | null): string {
  if (n === null) return "not reported";
  return n >= 1e6 ? n.toExponential(3).replace("e+", "e") : Math.round(n).toLocaleString("en-US");
}
