/**
 * A line's facts in the selection panel, on the payload `shardviz.trace` wrote for the layered step
 * (tests/program_js_fixtures.py): `dense`'s `return x @ kernel` runs 7 collectives of its own and 9 operands
 * of a combined all-reduce; the loss's line runs one more operand of it. Variants change only which
 * reason each collective has, to show a line with two distinct reasons and one whose collectives share one.
 */

import { describe, expect, it } from "vitest";
import type { ProgramPayload } from "../payload/program";
import { decodeProgram, lineLabel, lineText } from "../payload/program";
import { sourcePlan } from "../payload/programSource";
import { whyText } from "../payload/reasons";
import { loadProgram } from "../test/programFixtures";
import { h } from "../util/dom";
import { lineFacts } from "./lineFacts";

/** The panel's content in one element, to query. */
function shown(payload: ProgramPayload, entry: number, planned = false): { title: string; el: HTMLElement } {
  const program = decodeProgram(payload);
  const facts = lineFacts(program, planned ? sourcePlan(program) : null, entry);
  return { title: facts.title, el: h("div", {}, facts.content) };
}

/** The entry of the payload's line whose source text is `text` (as Python read it; its file is
 * tests/program_js_fixtures.py, whose line numbers move as it is edited). */
function entryWithText(payload: ProgramPayload, text: string): number {
  const found = payload.lines.findIndex((l) => lineText(payload, l.file, l.line).trim() === text);
  if (found < 0) throw new Error(`no line of the layered step reads ${text}`);
  return found;
}
const listed = (el: HTMLElement): string[] =>
  Array.from(el.querySelectorAll('[data-role="line-reasons"] li')).map((li) => li.textContent ?? "");
const chips = (el: HTMLElement): HTMLElement[] => Array.from(el.querySelectorAll('[data-role="line-collective"]'));

/** The layered step with `dense`'s 7 collectives given the reasons `whys` (indices into its table of reasons). */
function withReasons(payload: ProgramPayload, whys: number[]): ProgramPayload {
  const reasons = payload.reasons;
  if (!reasons) throw new Error("no reasons");
  const table = [...reasons.whys];
  whys.forEach((k, c) => {
    table[c] = k;
  });
  return { ...payload, reasons: { ...reasons, whys: table } };
}

describe("a line's facts", () => {
  const payload = loadProgram("layers");
  const reasons = payload.reasons;
  if (!reasons) throw new Error("no reasons");
  const dense = entryWithText(payload, "return x @ kernel"); // the second line of `def dense`
  // the loop's first layer line, which runs no collective of its own (`dense`'s line runs them)
  const relu = entryWithText(payload, 'h = jax.nn.relu(dense(x, layer["wi"]))');
  // the loss's line, which runs one operand of the combined all-reduce
  const loss = entryWithText(payload, 'return jnp.mean((logits - batch["y"]) ** 2)');

  it("lists no collectives and no reasons for a line that runs none", () => {
    const entry = relu;
    expect(payload.lines[entry].collectives).toEqual([]);
    expect(payload.lines[entry].parts ?? []).toEqual([]);
    const { el, title } = shown(payload, entry);
    // without a source plan the line has no block to name
    expect(title).toBe(`Line ${lineLabel(payload, payload.lines[entry].file, payload.lines[entry].line)}`);
    expect(el.querySelector('[data-role="line-facts"]')?.textContent).toContain("sends per call0 B");
    expect(el.querySelector(".sv-line-collectives")).toBeNull();
    expect(el.querySelector('[data-role="line-reasons"]')).toBeNull();
  });

  it("lists each of two distinct reasons once, in the order of the line's collectives", () => {
    // collective 0 has reason 4, the other six reason 0 (two different rules)
    const { el } = shown(withReasons(payload, [4, 0, 0, 0, 0, 0, 0]), dense);
    expect(el.querySelector(".sv-chip-row.sv-line-collectives")?.children).toHaveLength(16);
    expect(listed(el)).toEqual([`because ${reasons.why_table[4].rule}`, `because ${reasons.why_table[0].rule}`]);
  });

  it("lists a reason two collectives share once", () => {
    const { el } = shown(withReasons(payload, [4, 4, 4, 4, 4, 4, 4]), dense);
    expect(chips(el)).toHaveLength(16);
    expect(listed(el)).toEqual([`because ${reasons.why_table[4].rule}`]);
    expect(el.querySelector("ul.sv-line-reasons")?.children).toHaveLength(1);
  });

  it("lists nothing for a collective whose reason was not read", () => {
    // -1: no reason (as Python writes it for a collective it could not read)
    const { el } = shown(withReasons(payload, [-1, 4, 4, 4, 4, 4, 4]), dense);
    expect(listed(el)).toEqual([`because ${reasons.why_table[4].rule}`]);
  });

  it("shows the real line's own collectives and combined operands, and its two different rules once each", () => {
    const line = payload.lines[dense];
    // 7 collectives of its own (reasons 0 to 4, the last three sharing reason 4) and 9 operands of collective 7;
    // reasons 0 to 3 are the four layers' one contraction, with one rule, and reason 4 has another
    expect(line.collectives).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(line.collectives.map((c) => reasons.whys[c])).toEqual([0, 1, 2, 3, 4, 4, 4]);
    expect((line.parts ?? []).map(([c]) => c)).toEqual([7, 7, 7, 7, 7, 7, 7, 7, 7]);
    const { el, title } = shown(payload, dense, true);
    // the line's own text, as Python read it from the source
    expect(el.querySelector("pre.sv-line-text")?.textContent?.trim()).toBe("return x @ kernel");
    expect(chips(el)).toHaveLength(16);
    expect(el.querySelectorAll('[data-role="combined"]')).toHaveLength(9);
    expect([1, 2, 3].map((k) => reasons.why_table[k].rule)).toEqual(Array(3).fill(reasons.why_table[0].rule));
    expect(reasons.why_table[4].rule).not.toBe(reasons.why_table[0].rule);
    expect(listed(el)).toEqual([whyText(reasons.why_table[0]), whyText(reasons.why_table[4])]);
    // the line's block is `dense`, named after where it is
    expect(title).toBe(`Line ${lineLabel(payload, line.file, line.line)} (dense)`);
  });

  it("shows a combined collective only as its operand on the line of that operand", () => {
    const entry = loss;
    expect(payload.lines[entry].collectives).toEqual([7]);
    const { el } = shown(payload, entry);
    const [chip] = chips(el);
    expect(chips(el)).toHaveLength(1);
    expect(chip.querySelector('[data-role="combined"]')?.textContent).toBe(
      `1 of ${payload.collectives[7].parts?.length} in ${payload.collectives[7].name}`,
    );
    expect(listed(el)).toEqual([whyText(reasons.why_table[reasons.whys[7]])]);
  });

  it("lists no reasons where the payload has none, and still the collectives", () => {
    const { el } = shown({ ...payload, reasons: undefined }, dense);
    expect(chips(el)).toHaveLength(16);
    expect(el.querySelector('[data-role="line-reasons"]')).toBeNull();
  });
});
