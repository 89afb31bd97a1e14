/**
 * The source view's plan on real compiles (tests/program_js_fixtures.py):
 * every value and collective lands once, on the row of the line that made
 * it, forward and backward apart; the blocks and the call tree are the
 * functions the program's source defines and calls (counted by hand from
 * the fixtures' source text); a loop's passes are one family; bytes add up
 * to Python's totals. Axis labels split only between pieces.
 */

import { describe, expect, it } from "vitest";
import { familySpan } from "../components/programChips";
import { axesLabelPieces, axesText } from "../components/programText";
import { loadProgram, PROGRAM_NAMES, type ProgramName } from "../test/programFixtures";
import { decodeProgram, type ProgramPayload } from "./program";
import { type CallNode, type SourcePlan, type SourceRow, sourcePlan } from "./programSource";

const planOf = (name: ProgramName | ProgramPayload): { plan: SourcePlan; payload: ProgramPayload } => {
  const payload = typeof name === "string" ? loadProgram(name) : name;
  return { plan: sourcePlan(decodeProgram(payload)), payload };
};

const rowsOf = (plan: SourcePlan): SourceRow[] => [...plan.blocks.flatMap((b) => b.rows), ...plan.elsewhere];

/** The line number of the first line of the fixture file whose text includes `needle`. */
function lineOf(payload: ProgramPayload, needle: string): number {
  for (const f of payload.functions ?? []) {
    const k = f.lines.findIndex((t) => t.includes(needle));
    if (k >= 0) return f.first_line + k;
  }
  throw new Error(`no line has ${needle}`);
}

/** The tree as `name@line` nested lists, to compare with a hand-written one. */
const shape = (plan: SourcePlan, node: CallNode): unknown => {
  const name = `${plan.blocks[node.block].name}${node.line === null ? "" : `@${node.line}`}`;
  return node.children.length > 0 ? [name, node.children.map((c) => shape(plan, c))] : name;
};

describe("the source view's plan", () => {
  for (const name of PROGRAM_NAMES) {
    it(`puts each of ${name}'s values and collectives once, on its own line, forward and backward apart`, () => {
      const { plan, payload } = planOf(name);
      const rows = rowsOf(plan);
      const seenValues: number[] = [];
      const seenItems: string[] = [];
      for (const row of rows) {
        for (const pass of ["forward", "backward"] as const) {
          for (const family of row[pass].values) {
            for (const i of family.values) {
              seenValues.push(i);
              // On the row of its own line, in the pass Python says it belongs to.
              expect(row.entries).toContain(payload.values.line[i]);
              expect(payload.values.backward?.[i] ?? false).toBe(pass === "backward");
              expect(payload.values.type[i]).toBe(family.type);
            }
          }
          for (const family of row[pass].collectives) {
            for (const item of family.items) {
              seenItems.push(`${item.collective}.${item.part}`);
              const c = payload.collectives[item.collective];
              const own = item.part === null ? c : c.parts?.[item.part];
              expect(own?.backward ?? c.backward ?? false).toBe(pass === "backward");
              expect(c.kind).toBe(family.kind);
              const entry = row.entries.map((e) => payload.lines[e]);
              expect(
                entry.some((l) =>
                  item.part === null
                    ? l.collectives.includes(item.collective)
                    : (l.parts ?? []).some(([o, k]) => o === item.collective && k === item.part),
                ),
              ).toBe(true);
            }
          }
        }
      }
      const inputs = payload.values.role.map((r, i) => (payload.roles[r] === "input" ? i : -1)).filter((i) => i >= 0);
      const expected = payload.values.name.map((_, i) => i).filter((i) => !inputs.includes(i));
      expect(seenValues.sort((a, b) => a - b)).toEqual(expected);
      const items = payload.collectives.flatMap((c, i) =>
        (c.parts?.length ?? 0) > 0 ? (c.parts ?? []).map((_, k) => `${i}.${k}`) : [`${i}.null`],
      );
      expect(seenItems.sort()).toEqual(items.sort());
      // Rows of blocks are lines of their block's function, in order.
      for (const block of plan.blocks) {
        for (const row of block.rows) {
          expect(row.lineNo).toBeGreaterThanOrEqual(block.firstLine);
          expect(row.lineNo).toBeLessThanOrEqual(block.lastLine);
          for (const e of row.entries)
            expect([payload.lines[e].file, payload.lines[e].line]).toEqual([block.file, row.lineNo]);
        }
      }
      // Bytes sent, line by line, add up to Python's total.
      const sent = rows.reduce((sum, r) => sum + r.sentBytes, 0);
      expect(sent).toBe(payload.totals.wire_bytes);
    });
  }

  it("draws train_step, loss_fn, mlp_layers and dense as blocks, the lambda in its line, the calls as a tree", () => {
    const { plan, payload } = planOf("layers");
    expect(plan.blocks.map((b) => b.name)).toEqual(["train_step", "loss_fn", "mlp_layers", "dense"]);
    // The one-line lambda is no block of its own: its values are on train_step's line.
    const lambda = lineOf(payload, "jax.tree.map(lambda p, g");
    const update = plan.blocks[0].rows.find((r) => r.lineNo === lambda);
    expect(update?.forward.valueCount).toBeGreaterThan(0);
    const call = lineOf(payload, "jax.value_and_grad(loss_fn)");
    const pred = lineOf(payload, "pred = mlp_layers(");
    const head = lineOf(payload, "logits = dense(pred");
    const first = lineOf(payload, 'jax.nn.relu(dense(x, layer["wi"]))');
    const second = lineOf(payload, 'x = x + dense(h, layer["wo"])');
    expect(plan.tree.map((n) => shape(plan, n))).toEqual([
      [
        "train_step",
        [[`loss_fn@${call}`, [[`mlp_layers@${pred}`, [`dense@${first}`, `dense@${second}`]], `dense@${head}`]]],
      ],
    ]);
    // Only the first place a function is reached lists it as new; the others are repeats.
    const repeats: string[] = [];
    const walk = (n: CallNode) => {
      if (n.repeat) repeats.push(`${plan.blocks[n.block].name}@${n.line}`);
      n.children.forEach(walk);
    };
    plan.tree.forEach(walk);
    expect(repeats).toEqual([`dense@${second}`, `dense@${head}`]);
    // Each call site is a link on its row; each block knows its callers.
    const dense = plan.blocks.findIndex((b) => b.name === "dense");
    const mlp = plan.blocks.findIndex((b) => b.name === "mlp_layers");
    expect(plan.blocks[dense].callers.sort()).toEqual(
      [
        [mlp, first],
        [mlp, second],
        [1, head],
      ].sort(),
    );
    expect(plan.blocks[mlp].rows.find((r) => r.lineNo === first)?.calls).toEqual([dense]);
  });

  it("groups a Python loop's passes into one family per name and type, passes 1 to 4", () => {
    const { plan, payload } = planOf("layers");
    const first = lineOf(payload, 'jax.nn.relu(dense(x, layer["wi"]))');
    const row = plan.blocks[2].rows.find((r) => r.lineNo === first);
    const h = row?.forward.values.find((f) => f.name === "h");
    expect(h?.values).toHaveLength(4); // four layers in the fixture
    expect(h?.values.map((i) => payload.values.pass?.[i])).toEqual([1, 2, 3, 4]);
    // dense's one line runs forward and backward: both are on it, each collective family of 4 passes or fewer.
    const dense = plan.blocks[3].rows.find((r) => r.text === "return x @ kernel");
    expect(dense?.forward.collectives.length).toBeGreaterThan(0);
    expect(dense?.backward.collectives.length).toBeGreaterThan(0);
    const forwardAllReduce = dense?.forward.collectives.find(
      (f) => f.kind === "all-reduce" && f.items.every((it) => it.part === null),
    );
    expect(forwardAllReduce?.items.map((it) => payload.collectives[it.collective].pass)).toEqual([1, 2, 3, 4]);
  });

  it("charges each line's memory groups at the peak to its row, as Python's groups say", () => {
    for (const name of ["layers", "train_step", "scan_grad"] as const) {
      const { plan, payload } = planOf(name);
      const timeline = payload.memory_timeline;
      if (!timeline) throw new Error("no timeline");
      const rows = rowsOf(plan);
      for (const row of rows) {
        const want = timeline.groups.line.reduce(
          (sum, l, g) => sum + (row.entries.includes(l) ? timeline.groups.peak_bytes[g] : 0),
          0,
        );
        expect(row.peakBytes).toBe(want);
      }
      const onLines = rows.reduce((sum, r) => sum + r.peakBytes, 0);
      const args = timeline.groups.line.reduce((sum, l, g) => sum + (l < 0 ? timeline.groups.peak_bytes[g] : 0), 0);
      // What the lines hold and what no line holds (arguments) is all the groups hold at the peak: no more than it.
      expect(onLines + args).toBeLessThanOrEqual(timeline.peak_bytes);
      expect(onLines + args).toBe(timeline.groups.peak_bytes.reduce((a, b) => a + b, 0));
    }
  });

  it("draws a function defined inside another as its own block, one row standing for it in the outer one", () => {
    const { plan, payload } = planOf("nested");
    const outer = plan.blocks.findIndex((b) => b.name === "nested_loss");
    const inner = plan.blocks.findIndex((b) => b.name === "layer");
    expect(outer).toBeGreaterThanOrEqual(0);
    expect(inner).toBeGreaterThanOrEqual(0);
    const def = lineOf(payload, "def layer(h, p):");
    const stands = plan.blocks[outer].rows.find((r) => r.nested === inner);
    expect(stands?.lineNo).toBe(def);
    // The outer block skips the inner one's lines; the inner block has them, with the scan body's values.
    const innerLines = plan.blocks[inner].rows.map((r) => r.lineNo);
    expect(innerLines).toEqual([def, def + 1, def + 2]);
    for (const r of plan.blocks[outer].rows) expect(r === stands || !innerLines.includes(r.lineNo)).toBe(true);
    const body = plan.blocks[inner].rows.flatMap((r) => r.forward.values.flatMap((f) => f.values));
    expect(body.length).toBeGreaterThan(0);
    for (const i of body) expect(payload.values.body[i]).toBe(0);
    expect(plan.blocks[inner].bodies).toEqual([0]);
  });

  it("reads a payload from before source blocks: the traced function is the one block", () => {
    const payload = loadProgram("train_step");
    const old = { ...payload, functions: undefined, calls: undefined };
    const { plan } = planOf(old);
    expect(plan.blocks.map((b) => b.name)).toEqual([payload.source?.name]);
    expect(plan.blocks[0].rows.map((r) => r.lineNo)).toEqual(
      payload.source?.lines.map((_, k) => (payload.source?.first_line ?? 0) + k),
    );
    // dp_loss's lines are in no block now: listed apart, with their text.
    expect(plan.elsewhere.some((r) => r.text.startsWith("h = jnp.tanh"))).toBe(true);
  });
});

describe("axis labels and family spans", () => {
  it("splits an axes label only between pieces, never inside one", () => {
    expect(axesLabelPieces("y[sub 2 of 4, stride 2]")).toEqual(["y[sub 2 of 4, stride 2]"]);
    expect(axesLabelPieces("x,y[sub 2 of 4, stride 2]")).toEqual(["x", "y[sub 2 of 4, stride 2]"]);
    expect(axesLabelPieces("a[sub 2 of 4],b[sub 2 of 8, stride 4]")).toEqual([
      "a[sub 2 of 4]",
      "b[sub 2 of 8, stride 4]",
    ]);
    // The two collectives of sub_axes read differently, each whole.
    const { collectives } = loadProgram("sub_axes");
    const texts = collectives.map((c) => axesText(c));
    expect(texts).toEqual(["over y[sub 2 of 4]", "over y[sub 2 of 4, stride 2]"]);
  });

  it("says what tells a family apart: a run of passes, or the first and last scope", () => {
    expect(familySpan(["pass 1 of 4", "pass 2 of 4", "pass 3 of 4", "pass 4 of 4"])).toBe("passes 1\u20134 of 4");
    expect(familySpan(["pass 2 of 9", "pass 4 of 9", "pass 6 of 9"])).toBe("passes 2, 4, 6 of 9");
    expect(familySpan(["pass 3 of 9", "pass 5 of 9", "pass 7 of 9", "pass 9 of 9", "pass 1 of 9"])).toBe(
      "5 passes: 1, 3, \u2026 9 of 9",
    );
    expect(familySpan(["layers_0", "layers_1", "layers_2"])).toBe("layers_0 \u2026 layers_2");
    expect(familySpan(["layers_0", "layers_1"])).toBe("layers_0, layers_1");
    expect(familySpan(["", ""])).toBe("");
  });
});
