/**
 * Parity with Python, byte for byte: for rules texts typed over real and
 * random trees (js/fixtures/tree_rules_parity.json, written by
 * tests/tree_js_fixtures.py from `TreeState.with_rules`), the browser's answer
 * is Python's: the same payload and notice, or the same refusal. Only an
 * edit whose rules reach a leaf off every mesh may be left to the kernel.
 */

import { describe, expect, it } from "vitest";
import type { TreePayload } from "../../payload/tree";
import { loadJson } from "../../test/treeFixtures";
import { applyTreeRules } from "./edits";

type Answer =
  | { status: "applied"; payload: TreePayload; notice: string }
  | { status: "refused"; message: string; source: string };

interface ParityFile {
  seed: number;
  cases: {
    name: string;
    original: TreePayload;
    edits: ({ rules_text: string; kernel_may_answer: boolean } & Answer)[];
  }[];
}

const data = loadJson<ParityFile>("tree_rules_parity");

describe("a rules edit answered in the browser", () => {
  it("covers applied and refused edits, several meshes, what-if trees and renamed copy code", () => {
    const edits = data.cases.flatMap((c) => c.edits);
    expect(edits.filter((e) => e.status === "applied").length).toBeGreaterThan(80);
    expect(edits.filter((e) => e.status === "refused").length).toBeGreaterThan(80);
    expect(edits.some((e) => e.status === "applied" && e.notice.startsWith("0 leaves"))).toBe(true);
    expect(edits.some((e) => e.status === "applied" && /^[1-9]\d* lea/.test(e.notice))).toBe(true);
    expect(edits.some((e) => e.status === "applied" && e.payload.meshes.some((m) => m.abstract))).toBe(true);
    expect(edits.some((e) => e.status === "applied" && e.payload.audit.imbalance !== null)).toBe(true);
    expect(edits.some((e) => e.status === "applied" && e.payload.audit.replicated.length > 0)).toBe(true);
    expect(data.cases.some((c) => c.original.code_tree === "TREE")).toBe(true);
    expect(data.cases.some((c) => c.original.code_tree !== "TREE")).toBe(true);
  });

  for (const { name, original, edits } of data.cases) {
    it(`answers as Python does on ${name}`, () => {
      edits.forEach((edit, k) => {
        const outcome = applyTreeRules(original, edit.rules_text);
        if (outcome.status === "kernel-only") {
          expect([k, edit.rules_text, edit.kernel_may_answer]).toEqual([k, edit.rules_text, true]);
        } else if (edit.status === "refused") {
          expect([k, outcome]).toEqual([k, { status: "refused", message: edit.message, source: edit.source }]);
        } else {
          expect([k, outcome.status]).toEqual([k, "applied"]);
          if (outcome.status !== "applied") return;
          expect([k, outcome.notice]).toEqual([k, edit.notice]);
          expect([k, JSON.stringify(outcome.payload)]).toEqual([k, JSON.stringify(edit.payload)]);
        }
      });
    });
  }

  it("leaves a payload without its copy code's tree name to the kernel", () => {
    const original = structuredClone(data.cases[0].original);
    delete original.code_tree;
    expect(applyTreeRules(original, "*.w = None").status).toBe("kernel-only");
  });
});
