/**
 * Memory over the program, read for the strip, on real compiles: the kinds
 * stacked at each step add up to the bytes Python says are live there; what
 * is live at the peak is, group by group, what Python's timeline measured at
 * its peak; a strip narrower than the program keeps each run's largest step
 * and always the peak.
 */

import { describe, expect, it } from "vitest";
import { loadProgram, PROGRAM_NAMES } from "../test/programFixtures";
import type { ProgramMemoryTimeline } from "./program";
import { liveAt, memoryPlan, stepsOfLine, stripColumns } from "./programMemory";

const timelines = PROGRAM_NAMES.map((name) => [name, loadProgram(name).memory_timeline] as const).filter(
  (entry): entry is readonly [(typeof PROGRAM_NAMES)[number], ProgramMemoryTimeline] => Boolean(entry[1]),
);

describe("memory over the program", () => {
  it("has timelines to test", () => {
    expect(timelines.map(([name]) => name)).toEqual(expect.arrayContaining(["layers", "pod_step", "scan_grad"]));
  });

  for (const [name, timeline] of timelines) {
    it(`stacks ${name}'s kinds to the bytes live at each step, and finds Python's groups at the peak`, () => {
      const plan = memoryPlan(timeline);
      if (!plan) throw new Error("no plan");
      for (let t = 0; t < timeline.steps; t++) {
        const stacked = plan.byKind.reduce((sum, row) => sum + row[t], 0);
        expect(stacked).toBe(timeline.step_bytes[t]);
      }
      const other = plan.byKind[plan.byKind.length - 1];
      if (timeline.buffers_left_out === 0) expect(other.every((b) => b === 0)).toBe(true);
      // Live at the peak, group by group: Python's own figure for each group at its peak, less only the
      // buffers too small to list (which the payload leaves out, and which are all that step's bytes lack).
      const live = liveAt(timeline, timeline.peak_step);
      const found = new Map(live.map((g) => [g.group, g.bytes]));
      const listedBytes = live.reduce((sum, g) => sum + g.bytes, 0);
      let missing = 0;
      timeline.groups.peak_bytes.forEach((bytes, g) => {
        const ours = found.get(g) ?? 0;
        expect(ours).toBeLessThanOrEqual(bytes);
        missing += bytes - ours;
      });
      expect(missing).toBe(timeline.step_bytes[timeline.peak_step] - listedBytes);
      if (timeline.buffers_left_out === 0) expect(missing).toBe(0);
      expect(missing).toBeLessThan(timeline.peak_bytes * 1e-4 * Math.max(1, timeline.buffers_left_out));
      // Most first.
      for (let k = 1; k < live.length; k++) expect(live[k - 1].bytes).toBeGreaterThanOrEqual(live[k].bytes);
    });
  }

  it("keeps the peak and each run's largest step when the strip is narrower than the program", () => {
    const timeline = loadProgram("pod_step").memory_timeline;
    const plan = memoryPlan(timeline);
    if (!plan || !timeline) throw new Error("no plan");
    expect(timeline.steps).toBeGreaterThan(100);
    const columns = stripColumns(plan, 100);
    expect(columns).toHaveLength(100);
    expect(columns).toContain(timeline.peak_step);
    columns.forEach((step, c) => {
      const from = Math.floor((c * timeline.steps) / 100);
      const to = Math.floor(((c + 1) * timeline.steps) / 100);
      expect(step).toBeGreaterThanOrEqual(from);
      expect(step).toBeLessThan(to);
      const most = Math.max(...timeline.step_bytes.slice(from, to));
      expect(timeline.step_bytes[step]).toBe(most);
    });
    // One column per step when the strip is wider.
    expect(stripColumns(plan, 10 * timeline.steps)).toEqual(Array.from({ length: timeline.steps }, (_, t) => t));
  });

  it("finds the steps a line runs at", () => {
    const timeline = loadProgram("layers").memory_timeline;
    const plan = memoryPlan(timeline);
    if (!plan) throw new Error("no plan");
    const entry = plan.stepLines.find((l) => l >= 0) ?? -1;
    const ranges = stepsOfLine(plan, [entry]);
    const steps = ranges.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, k) => a + k));
    const expected = Array.from(plan.stepLines)
      .map((l, t) => (l === entry ? t : -1))
      .filter((t) => t >= 0);
    expect(steps).toEqual(expected);
    // Ranges are maximal: no two touch.
    for (let k = 1; k < ranges.length; k++) expect(ranges[k][0]).toBeGreaterThan(ranges[k - 1][1] + 1);
  });

  it("draws nothing for a payload without a timeline", () => {
    expect(memoryPlan(null)).toBeNull();
    expect(memoryPlan(undefined)).toBeNull();
  });
});
