import { describe, expect, it } from "vitest";
import type { ReasonsPayload, WhyPayload } from "../payload/reasons";
import { blockLabels, renderReason } from "./reasonPanel";

const MESH = { names: ["a", "b"], sizes: [4, 3] };

describe("a layout's small mesh grid", () => {
  it("names the block each device holds, one index per dimension (hand count on a 4x3 mesh)", () => {
    // P('a', 'b'): the device at row i, column j holds block (i, j)
    expect(blockLabels([["a"], ["b"]], MESH).slice(0, 4)).toEqual(["0,0", "0,1", "0,2", "1,0"]);
    // P('b', 'a'): block (j, i)
    expect(blockLabels([["b"], ["a"]], MESH).slice(0, 4)).toEqual(["0,0", "1,0", "2,0", "0,1"]);
    // P(('a', 'b')): one dimension in 12 blocks, 'a' major
    expect(blockLabels([["a", "b"]], MESH)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]);
    // P(None, 'a'): dimension 0 whole on every device
    expect(blockLabels([[], ["a"]], MESH).slice(0, 4)).toEqual(["*,0", "*,0", "*,0", "*,1"]);
  });
});

const WHY: WhyPayload = {
  cause: "partial-sums",
  primitive: "dot_general",
  expression: "return x @ w",
  operands: [
    { label: "x", type: "float32[8,12]", spec: [[], ["a"]] },
    { label: "<img src=x onerror=alert(1)>", type: "f32[12,6]", spec: null },
  ],
  operand: 0,
  dimension: 1,
  axes: ["a"],
  rule: "x is split over 'a' on its contracting dimension 1",
};

describe("the reason panel", () => {
  it("draws each operand's grid, the rule, and asks for fixes only where it can trace", () => {
    const reasons: ReasonsPayload = { why_table: [WHY], whys: [0], rematerializations: [], fixes: {} };
    const sent: string[] = [];
    const panel = renderReason(WHY, reasons, MESH, { key: "0", send: (t) => sent.push(t) });
    expect(panel.querySelector("[data-role='reason-cause']")?.textContent).toBe("Partial sums: dot_general");
    expect(panel.querySelectorAll("[data-role='reason-grid']")).toHaveLength(2);
    expect(panel.querySelectorAll(".sv-reason-cell")).toHaveLength(12); // only the known layout is drawn
    expect(panel.querySelector("[data-role='reason-rule']")?.textContent).toBe(`because ${WHY.rule}`);
    expect(panel.querySelector("img")).toBeNull(); // a user's label is text
    (panel.querySelector("[data-role='find-fixes']") as HTMLButtonElement).click();
    expect(sent).toEqual(["show:0"]);
    const readOnly = renderReason(WHY, reasons, MESH, { key: "0", send: null });
    expect(readOnly.querySelector("[data-role='find-fixes']")).toBeNull();
  });

  it("lists traced fixes with what they change, and Try it sends that fix", () => {
    const fix = {
      kind: "input-spec",
      summary: "input x as P()",
      code: "x = jax.device_put(x, NamedSharding(mesh, P()))",
      removed: true,
      slower: true,
      step_s: 3e-6,
      before_s: 2e-6,
      hardware: "tpu-v5p",
      target: "x",
      changes: [{ line: 13, kind: "all-reduce", axes: "a", before: 288, after: 0 }],
      wire_before: 288,
      wire_after: 0,
    };
    const reasons: ReasonsPayload = { why_table: [WHY], whys: [0], rematerializations: [], fixes: { "0": [fix] } };
    const sent: string[] = [];
    const panel = renderReason(WHY, reasons, MESH, { key: "0", send: (t) => sent.push(t) });
    const row = panel.querySelector("[data-role='reason-fix']");
    expect(row?.getAttribute("data-removed")).toBe("true");
    expect(row?.textContent).toContain("removes it, but the step is slower");
    expect(row?.textContent).toContain("(vanished)");
    expect(row?.textContent).toContain("step 3 \u00b5s on tpu-v5p (now 2 \u00b5s)");
    // A tiny program's step after a fix: 1.39e-10 s reads in picoseconds, not as "0.000139 µs".
    const tiny = renderReason(WHY, { ...reasons, fixes: { "0": [{ ...fix, step_s: 1.3887884267631104e-10 }] } }, MESH, {
      key: "0",
      send: null,
    });
    expect(tiny.querySelector("[data-role='reason-fix']")?.textContent).toContain("step 139 ps on tpu-v5p");
    (panel.querySelector("[data-role='try-fix']") as HTMLButtonElement).click();
    expect(sent).toEqual(["try:0:0"]);
    const saved = renderReason(WHY, reasons, MESH, { key: "0", send: null });
    expect(saved.querySelector("[data-role='try-fix']")).toBeNull();
    expect(saved.querySelector("[data-role='reason-code']")?.textContent).toBe(fix.code);
  });
});
