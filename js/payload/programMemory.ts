/**
 * Memory over a program per device (the payload's `memory_timeline`), read
 * for a strip along the program: bytes live at each step split by kind of
 * group (arguments, outputs, activations saved for the backward pass,
 * temporaries; buffers too small to list count as `other`), what is live at
 * a step, and columns of a strip narrower than the program has steps (each
 * column the step with the most bytes in it, so the peak is never averaged
 * away). Pure arithmetic on the payload.
 */

import { expandRuns } from "./array";
import type { ProgramMemoryTimeline } from "./program";

export interface MemoryPlan {
  timeline: ProgramMemoryTimeline;
  steps: number;
  /** Per kind (the timeline's `kinds`, then `other`), bytes live at each step. */
  byKind: Float64Array[];
  /** The names of those rows: the timeline's kinds and `other`. */
  kindNames: string[];
  /** The `lines` entry each step's instruction comes from (-1: none). */
  stepLines: Int32Array;
}

export interface LiveGroup {
  group: number;
  bytes: number;
}

/** Decodes a timeline; null when there is none or it does not hold together. */
export function memoryPlan(timeline: ProgramMemoryTimeline | null | undefined): MemoryPlan | null {
  if (!timeline || timeline.steps <= 0 || timeline.step_bytes.length !== timeline.steps) return null;
  const steps = timeline.steps;
  const kinds = timeline.kinds.length;
  const byKind = Array.from({ length: kinds + 1 }, () => new Float64Array(steps + 1));
  const { group, start, end, bytes } = timeline.buffers;
  // Each buffer adds its bytes from its first step to its last: a difference array per kind.
  group.forEach((g, b) => {
    const kind = timeline.groups.kind[g];
    const row = kind >= 0 && kind < kinds ? byKind[kind] : byKind[kinds];
    const from = Math.max(0, start[b]);
    const to = Math.min(steps - 1, end[b]);
    if (to < from) return;
    row[from] += bytes[b];
    row[to + 1] -= bytes[b];
  });
  const listed = new Float64Array(steps);
  for (let k = 0; k < kinds; k++) {
    const row = byKind[k];
    for (let t = 1; t <= steps; t++) row[t] += row[t - 1];
    for (let t = 0; t < steps; t++) listed[t] += row[t];
  }
  // What the listed buffers leave out of each step's bytes (buffers too small to list) is `other`.
  const other = byKind[kinds];
  for (let t = 1; t <= steps; t++) other[t] += other[t - 1];
  for (let t = 0; t < steps; t++) other[t] += Math.max(0, timeline.step_bytes[t] - listed[t] - other[t]);
  let stepLines: Int32Array;
  try {
    stepLines = expandRuns(timeline.step_lines, steps);
  } catch {
    stepLines = new Int32Array(steps).fill(-1);
  }
  return {
    timeline,
    steps,
    byKind: byKind.map((row) => row.subarray(0, steps)),
    kindNames: [...timeline.kinds, "other"],
    stepLines,
  };
}

/** The groups live at `step` with their bytes then, most first (ties in group order). */
export function liveAt(timeline: ProgramMemoryTimeline, step: number): LiveGroup[] {
  const sums = new Map<number, number>();
  const { group, start, end, bytes } = timeline.buffers;
  group.forEach((g, b) => {
    if (start[b] <= step && step <= end[b]) sums.set(g, (sums.get(g) ?? 0) + bytes[b]);
  });
  return Array.from(sums, ([g, n]) => ({ group: g, bytes: n })).sort((a, b) => b.bytes - a.bytes || a.group - b.group);
}

/**
 * The strip's columns when it is `width` columns wide: each the step with the most bytes among the
 * steps it covers (the peak step always shows as itself). One column per step when there are fewer.
 */
export function stripColumns(plan: MemoryPlan, width: number): number[] {
  const { steps } = plan;
  const { step_bytes, peak_step } = plan.timeline;
  const count = Math.max(1, Math.min(steps, Math.floor(width)));
  const columns: number[] = [];
  for (let c = 0; c < count; c++) {
    const from = Math.floor((c * steps) / count);
    const to = Math.max(from + 1, Math.floor(((c + 1) * steps) / count));
    let best = from;
    for (let t = from; t < to; t++) if (step_bytes[t] > step_bytes[best]) best = t;
    if (peak_step >= from && peak_step < to) best = peak_step;
    columns.push(best);
  }
  return columns;
}

/** The column of a strip `count` columns wide that shows step `step`. */
export function columnOfStep(steps: number, count: number, step: number): number {
  if (steps <= 0) return 0;
  return Math.min(count - 1, Math.floor((step * count) / steps));
}

/** Step ranges `[first, last]` where the program runs instructions of `lines` entry `entry`. */
export function stepsOfLine(plan: MemoryPlan, entries: readonly number[]): [number, number][] {
  const ranges: [number, number][] = [];
  const wanted = new Set(entries);
  for (let t = 0; t < plan.steps; t++) {
    if (!wanted.has(plan.stepLines[t])) continue;
    const last = ranges[ranges.length - 1];
    if (last && last[1] === t - 1) last[1] = t;
    else ranges.push([t, t]);
  }
  return ranges;
}
