/**
 * The program view through the real widget entry, on payloads `shardviz.trace`
 * wrote from real compiles, checked against what JAX says about the same
 * programs (tests/program_js_fixtures.py `jax_truth`: types, the compiled
 * module's collectives and device groups, memory and flops) and against what
 * the Python widget answered to spec edits.
 */

import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { groupColour } from "../components/groupGrid";
import { renderAllExports } from "../host/exportPage";
import { SAVED_PROGRAM_NOTE } from "../host/kinds";
import type { Payload } from "../payload/array";
import { decodeProgram, lineText, type ProgramPayload } from "../payload/program";
import {
  loadProgram,
  PROGRAM_NAMES,
  type ProgramName,
  programAnswers,
  programTruth,
  pythonValues,
  type RenderedProgram,
  renderProgram,
} from "../test/programFixtures";
import { query } from "../test/render";
import { loadJson } from "../test/treeFixtures";
import type { SyncedTraits } from "../traits/array";
import type { ProgramTraits } from "../traits/program";
import { RENDER_MEASURE } from "../util/measure";
import { formatBytes } from "../util/ranges";

const all = <T extends Element = HTMLElement>(el: ParentNode, selector: string): T[] =>
  Array.from(el.querySelectorAll<T>(selector));
const rows = (el: HTMLElement) => all(el, '[data-role="collective"]');
const parity = loadJson<Record<string, (Payload | null)[]>>("program_value_parity");

/** Python answers the front end's last edit: its traits change, then it says the edit is answered. */
function answer(view: RenderedProgram, changes: Partial<ProgramTraits>): void {
  view.model.answer(view.model.editSeqs[view.model.editSeqs.length - 1], changes as Partial<SyncedTraits>);
}

let shown: RenderedProgram | null = null;
function show(name: ProgramName | ProgramPayload): RenderedProgram {
  shown = renderProgram(typeof name === "string" ? loadProgram(name) : name);
  return shown;
}

afterEach(() => {
  shown?.cleanup();
  shown = null;
});

describe("the program view", () => {
  beforeEach(() => performance.clearMeasures());

  for (const name of PROGRAM_NAMES) {
    it(`draws ${name}: types, collectives, totals and memory as JAX reports them`, () => {
      const payload = loadProgram(name);
      const truth = programTruth(name);
      const { el } = show(name);
      expect(el.querySelector('[data-view="program"]')).not.toBeNull();
      expect(el.querySelector('[role="alert"]')).toBeNull();
      // Inputs and outputs with JAX's own types.
      const types = (role: string) => all(el, `[data-${role}-row] .sv-io-type .sv-type-text`).map((t) => t.textContent);
      expect(types("input")).toEqual(truth.input_types);
      expect(types("output")).toEqual(truth.output_types);
      // One row per collective of the compiled module, of the kinds JAX's module has.
      const kinds = rows(el).map((r) => r.getAttribute("data-kind"));
      expect([...kinds].sort()).toEqual(truth.collectives.map((c) => c.kind).sort());
      // A bar per mesh axis with the payload's bytes.
      const bars = all(el, '[data-role="axis-total"]');
      expect(bars.map((b) => b.getAttribute("data-axis"))).toEqual(payload.totals.by_axis.map((r) => r[0]));
      expect(bars.map((b) => Number(b.getAttribute("data-bytes")))).toEqual(payload.totals.by_axis.map((r) => r[1]));
      // Memory and flops as JAX's memory_analysis() and cost_analysis() gave them.
      const memory = truth.memory;
      if (memory) {
        expect(query(el, '[data-role="memory-argument_bytes"]').textContent).toBe(formatBytes(memory.argument_bytes));
        expect(query(el, '[data-role="memory-output_bytes"]').textContent).toBe(formatBytes(memory.output_bytes));
        expect(query(el, '[data-role="memory-temp_bytes"]').textContent).toBe(formatBytes(memory.temp_bytes));
      }
      // Counts past a million in scientific notation, four figures.
      const flops = truth.flops;
      expect(query(el, '[data-role="flops"]').textContent).toBe(
        flops === null
          ? "not reported"
          : flops >= 1e6
            ? `${(flops / 10 ** Math.floor(Math.log10(flops))).toFixed(3)}e${Math.floor(Math.log10(flops))}`
            : Math.round(flops).toLocaleString("en-US"),
      );
      // The source view starts with the traced function's own block: its lines, as written (indentation
      // aside), but for the lines of a function defined inside it, which are that function's block.
      const source = payload.source;
      if (!source) throw new Error("no source");
      const block = query(el, '[data-role="source-block"]');
      expect(block.getAttribute("data-function")).toBe(source.name.split(".").pop());
      const shown = all(block, '[data-role="source-line"]');
      const nested = all(el, '[data-role="source-block"]')
        .slice(1)
        .flatMap((b) => all(b, '[data-role="source-line"]').slice(1))
        .map((l) => Number(l.getAttribute("data-line")));
      const numbers = source.lines.map((_, k) => source.first_line + k).filter((n) => !nested.includes(n));
      expect(shown.map((l) => Number(l.getAttribute("data-line")))).toEqual(numbers);
      for (const line of shown) {
        const text = source.lines[Number(line.getAttribute("data-line")) - source.first_line];
        expect(line.querySelector(".sv-src-code")?.textContent).toBe(text.trimStart() || " ");
      }
      expect(performance.getEntriesByName(RENDER_MEASURE)).toHaveLength(1);
    });
  }

  it("annotates a scan body's lines in its own block, with the loop's collectives ×24", () => {
    const payload = loadProgram("scan_grad");
    const { el } = show("scan_grad");
    const layer = query(el, '[data-role="source-block"][data-function="layer"]');
    expect(layer.textContent).toContain("in a scan \u00d724 body");
    // The scan's collectives are on the body's lines (families open into one chip each), with kind, axes and bytes × 24.
    for (const family of all(layer, '[data-role="collective-family"]')) family.click();
    const chips = all(layer, '[data-role="line-collective"]');
    const loop = payload.collectives.filter((c) => c.count === 24);
    const expected = loop.flatMap((c) => ((c.parts?.length ?? 0) > 0 ? (c.parts ?? []).map(() => c.kind) : [c.kind]));
    expect(chips.map((c) => c.getAttribute("data-kind")).sort()).toEqual(expected.sort());
    for (const chip of chips) {
      const c = payload.collectives[Number(chip.getAttribute("data-collective"))];
      const part = chip.getAttribute("data-part");
      const each = part === null ? c.wire_bytes : (c.parts?.[Number(part)]?.wire_bytes ?? -1);
      expect(chip.textContent).toContain(`over ${c.axes?.join(", ")}`);
      expect(chip.textContent).toContain(`${formatBytes(each)} \u00d724 = ${formatBytes(each * 24)}`);
      if (part !== null) expect(chip.textContent).toContain(`in ${c.name}`);
      // Each on the row of the line that made it.
      const own = part === null ? c : c.parts?.[Number(part)];
      expect(chip.closest('[data-role="source-line"]')?.getAttribute("data-line")).toBe(String(own?.line));
    }
    // The scanning line links to the body's block.
    const scan = all(el, '[data-role="source-line"]').find((l) => l.textContent?.includes("lax.scan("));
    expect(scan?.querySelector('[data-role="call-link"]')?.textContent).toBe("\u2192 layer");
    // Auto axes: the type leaves the axes out, so the spec XLA chose is shown beside it, axes coloured.
    const chip = query(el, '[data-role="value"]');
    expect(chip.querySelector(".sv-spec-text")).not.toBeNull();
  });

  it("puts each operand of a combined collective on the row of the line that made it, in that function's block", () => {
    const payload = loadProgram("train_step");
    const { el } = show("train_step");
    const combined = payload.collectives.findIndex((c) => (c.parts?.length ?? 0) > 1);
    expect(combined).toBeGreaterThanOrEqual(0);
    const parts = payload.collectives[combined].parts ?? [];
    for (const family of all(el, '[data-role="collective-family"]')) family.click();
    const chips = all(el, `[data-role="line-collective"][data-collective="${combined}"]`);
    expect(chips.map((c) => Number(c.getAttribute("data-part"))).sort()).toEqual(parts.map((_, k) => k));
    const file = readFileSync(payload.files[parts[0].file ?? -1], "utf8").split("\n");
    for (const chip of chips) {
      const part = parts[Number(chip.getAttribute("data-part"))];
      expect(chip.textContent).toContain(formatBytes(part.wire_bytes));
      expect(chip.textContent).toContain(`of ${parts.length} in ${payload.collectives[combined].name}`);
      // On its own line's row, whose text is that line of the file, in the block of the function around it.
      const row = chip.closest('[data-role="source-line"]') as HTMLElement;
      expect(row.getAttribute("data-line")).toBe(String(part.line));
      expect(row.querySelector(".sv-src-code")?.textContent).toBe(file[(part.line ?? 0) - 1].trim());
      expect(row.closest('[data-role="source-block"]')?.getAttribute("data-function")).toBe("dp_loss");
    }
    // Selected, the collective lists its operands and says they travel together.
    chips[0].click();
    const listed = all(el, '[data-role="collective-part"]');
    expect(listed).toHaveLength(parts.length);
    expect(query(el, '[data-role="collective-parts"]').textContent).toContain("they travel together");
    // The table keeps one row for the one collective.
    expect(rows(el).filter((r) => r.getAttribute("data-collective") === String(combined))).toHaveLength(1);
    // A line's bytes are its operands' bytes.
    for (const line of all(el, '[data-role="source-line"]')) {
      const sent = Number(query(line, '[data-role="line-sent"]').getAttribute("data-bytes"));
      const n = Number(line.getAttribute("data-line"));
      const own = parts.filter((p) => p.line === n).reduce((sum, p) => sum + p.total_wire_bytes, 0);
      const whole = payload.collectives
        .filter((c) => !(c.parts?.length ?? 0) && c.line === n)
        .reduce((sum, c) => sum + c.total_wire_bytes, 0);
      expect(sent).toBe(own + whole);
    }
  });

  it("shows a helper called from two lines once, naming both calls as links to them", () => {
    const payload = loadProgram("helper_twice");
    const { el } = show("helper_twice");
    const files = payload.file_labels ?? [];
    const helper = payload.lines.findIndex((l) => lineText(payload, l.file, l.line) === "return x @ kernel");
    expect(helper).toBeGreaterThanOrEqual(0);
    const dense = query(el, '[data-role="source-block"][data-function="dense"]');
    expect(all(el, '[data-role="source-block"][data-function="dense"]')).toHaveLength(1);
    const callers = all(dense, '[data-role="caller-link"]');
    const lineOf = (needle: string) =>
      (payload.line_texts ?? []).find(([, , text]) => text.includes(needle))?.[1] ?? -1;
    expect(callers.map((c) => Number(c.getAttribute("data-line"))).sort()).toEqual(
      [lineOf('dense(carry, layer["wi"])'), lineOf('dense(h, layer["wo"])')].sort(),
    );
    // Following a caller link shows that call's line, focused.
    callers[1].click();
    const focused = document.activeElement?.closest('[data-role="source-line"]');
    expect(focused?.getAttribute("data-line")).toBe(callers[1].getAttribute("data-line"));
    // The table names the one line all of a combined collective's operands are on (no "1 lines").
    const combined = payload.collectives.findIndex((c) => (c.parts?.length ?? 0) > 1);
    const row = rows(el).find((r) => r.getAttribute("data-collective") === String(combined));
    const helperLabel = `${files[payload.lines[helper].file ?? -1]}:${payload.lines[helper].line}`;
    expect(row?.textContent).toContain(`${payload.collectives[combined].parts?.length} operands on ${helperLabel}`);
  });

  it("names values by the user's names, and real inputs as the arrays they are", () => {
    const payload = loadProgram("train_step");
    const { el } = show("train_step");
    expect(payload.values.label?.slice(0, 3)).toEqual(["params['w1']", "params['w2']", "x"]);
    const h = payload.values.label?.indexOf("h") ?? -1;
    expect(h).toBeGreaterThanOrEqual(0);
    expect(query(el, `[data-role="value"][data-value="${h}"] .sv-value-name`).textContent).toBe("h");
    // A real input is laid out as passed, not labelled a what-if.
    expect(payload.inputs[0].real).toBe(true);
    query(el, '[data-role="input-name"][data-index="0"]').click();
    const selection = query(el, '[data-role="selection"]');
    expect(selection.textContent).toContain("a real array, laid out as it was passed");
    expect(selection.querySelector('[data-role="what-if"]')).toBeNull();
  });

  it("names sub-axis groups instead of a question mark", () => {
    const payload = loadProgram("sub_axes");
    const { el } = show("sub_axes");
    expect(payload.collectives.length).toBeGreaterThan(0);
    for (const [i, c] of payload.collectives.entries()) {
      expect(c.axes).toBeNull();
      const row = rows(el).find((r) => r.getAttribute("data-collective") === String(i)) as HTMLElement;
      expect(row.textContent).toContain(c.axes_label ?? "missing");
      expect(row.textContent).toContain("y[sub 2 of 4");
    }
  });

  it("flags an output laid out unlike the input it stands for", () => {
    const { el } = show("relayout");
    const flag = query(el, '[data-role="layout-changes"]');
    expect(flag.textContent).toBe("1 output laid out unlike its input");
    expect(flag.title).toContain("out['w1'] comes back P(None, y) but params['w1'] went in P()");
  });

  it("counts in words that agree with the number: 1 value, 1 collective", () => {
    for (const name of PROGRAM_NAMES) {
      const { el, cleanup } = renderProgram(loadProgram(name));
      const summary = query(el, '[data-role="program-summary"]').textContent ?? "";
      expect(summary).not.toMatch(/\b1 (values|collectives)\b/);
      const n = loadProgram(name).collectives.length;
      expect(summary).toContain(`${n} collective${n === 1 ? "" : "s"}`);
      cleanup();
    }
  });

  it("colours a value's @axis types like the array widget's axes (Explicit axes)", () => {
    const payload = loadProgram("explicit");
    const { el } = show("explicit");
    const marked = all(el, '[data-role="value"]').filter((v) => v.querySelector(".sv-axis-ref"));
    expect(marked.length).toBeGreaterThan(0);
    for (const chip of marked) {
      const i = Number(chip.getAttribute("data-value"));
      expect(chip.querySelector(".sv-type-text")?.textContent).toBe(payload.types[payload.values.type[i]].type_str);
      for (const mark of all(chip, ".sv-axis-ref")) {
        const axis = payload.mesh?.names.indexOf(mark.textContent ?? "") ?? -1;
        expect(axis).toBeGreaterThanOrEqual(0);
        expect(mark.style.getPropertyValue("--sv-axis")).not.toBe("");
      }
      expect(chip.querySelector(".sv-spec-text")).toBeNull(); // Explicit: the type says it all
    }
  });

  it("sorts the collectives by bytes, both ways, and back to the program's order", () => {
    const { el } = show("scan_grad");
    const bytes = () => rows(el).map((r) => Number(r.getAttribute("data-bytes")));
    const order = () => rows(el).map((r) => Number(r.getAttribute("data-collective")));
    const sort = query(el, '[data-role="sort-bytes"]');
    expect(bytes()).toEqual([...bytes()].sort((a, b) => b - a));
    expect(sort.closest("th")?.getAttribute("aria-sort")).toBe("descending");
    sort.click();
    expect(bytes()).toEqual([...bytes()].sort((a, b) => a - b));
    expect(sort.closest("th")?.getAttribute("aria-sort")).toBe("ascending");
    sort.click();
    expect(order()).toEqual([...order()].sort((a, b) => a - b));
    expect(sort.closest("th")?.getAttribute("aria-sort")).toBe("none");
  });

  it("selecting a value shows its layout, computed in the browser equal to Python's", () => {
    const payload = loadProgram("mlp");
    const expected = parity.mlp;
    const { el } = show("mlp");
    const i = payload.values.role.findIndex((r, k) => r === 1 && expected[k] !== null);
    query(el, `[data-role="value"][data-value="${i}"]`).click();
    const selection = query(el, '[data-role="selection"]');
    const want = expected[i] as Payload;
    expect(query(selection, '[data-role="type"]').textContent).toBe(want.type_str);
    const cells = all(selection, ".sv-mesh [data-device-id]");
    expect(cells.map((c) => Number(c.getAttribute("data-device-id")))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const tiles: number[] = [];
    for (const [start, step, count] of want.devices.tile) for (let k = 0; k < count; k++) tiles.push(start + k * step);
    expect(cells.map((c) => Number(c.getAttribute("data-tile-of")))).toEqual(tiles);
    expect(selection.querySelector(".sv-map")).not.toBeNull();
    expect(query(el, `[data-role="value"][data-value="${i}"]`).getAttribute("aria-pressed")).toBe("true");
    // Escape clears the selection.
    selection.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(query(selection, ".sv-selection-layout").hidden).toBe(true);
    expect(query(el, `[data-role="value"][data-value="${i}"]`).getAttribute("aria-pressed")).toBe("false");
  });

  it("says a value's sharding is unknown, and why, instead of guessing", () => {
    const payload = loadProgram("shard_map");
    const { el } = show("shard_map");
    const manual = payload.values.from.indexOf(payload.origins.indexOf("manual"));
    expect(manual).toBeGreaterThanOrEqual(0);
    const chip = el.querySelector<HTMLElement>(`[data-role="value"][data-value="${manual}"]`);
    if (!chip) throw new Error("no chip for the manual value");
    expect(chip.textContent).toContain("per device");
    chip.click();
    const note = query(el, '[data-role="sharding-unknown"]');
    expect(note.textContent).toContain(payload.notes[payload.values.note[manual]]);
    expect(query(el, '[data-role="selection"]').querySelector(".sv-mesh")).toBeNull();
  });

  it("selecting a collective colours its device groups, one colour per group, as JAX's module groups them", () => {
    const truth = programTruth("permuted");
    const { el } = show("permuted");
    rows(el)[0].click();
    const grid = query(el, '[data-role="group-grid"]');
    const cells = all(grid, "[data-device-id]");
    expect(cells).toHaveLength(8);
    const byGroup = new Map<string, number[]>();
    for (const cell of cells) {
      const g = cell.getAttribute("data-group") as string;
      expect(cell.style.backgroundColor).toBe(toRgb(groupColour(Number(g))));
      byGroup.set(g, [...(byGroup.get(g) ?? []), Number(cell.getAttribute("data-device-id"))]);
    }
    const ours = [...byGroup.values()].map((g) => g.sort((a, b) => a - b)).sort((a, b) => a[0] - b[0]);
    const theirs = (truth.collectives[0].groups ?? [])
      .map((g) => [...g].sort((a, b) => a - b))
      .sort((a, b) => a[0] - b[0]);
    expect(ours).toEqual(theirs);
    expect(new Set(cells.map((c) => c.style.backgroundColor)).size).toBe(theirs.length);
    expect(all(grid, '[data-role="group"]')).toHaveLength(theirs.length);
    expect(rows(el)[0].getAttribute("aria-selected")).toBe("true");
    expect(query(el, '[data-role="hlo"]').textContent).toContain("all-reduce");
  });

  it("shows a collective-permute's sends on the grid as JAX's source-target pairs", () => {
    const truth = programTruth("shard_map");
    const { el } = show("shard_map");
    query(el, '[data-role="collective"][data-kind="collective-permute"]').click();
    const pairs = (truth.collectives.find((c) => c.kind === "collective-permute")?.pairs ?? []).map(([s, t]) => [s, t]);
    for (const [source, target] of pairs) {
      const cell = query(el, `[data-role="group-grid"] [data-device-id="${source}"]`);
      expect(cell.textContent).toContain(`\u2192${target}`);
      expect(cell.getAttribute("aria-label")).toContain(`sends to device ${target}`);
    }
  });

  it("a collective chip in the listing selects the same collective as its table row", () => {
    const { el } = show("mlp");
    const chip = query(el, '[data-role="line-collective"]');
    chip.click();
    const c = chip.getAttribute("data-collective");
    expect(query(el, `[data-role="collective"][data-collective="${c}"]`).getAttribute("aria-selected")).toBe("true");
    expect(chip.getAttribute("aria-pressed")).toBe("true");
    expect(all(el, '[data-role="group-grid"] [data-device-id][data-group]')).toHaveLength(8);
  });

  it("sends an input spec edit on Enter with Python's texts for the other inputs, and redraws Python's answer", () => {
    const answers = programAnswers();
    const view = show("mlp");
    const editor = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="0"]');
    expect(all<HTMLInputElement>(view.el, '[data-role="input-spec"]').map((i) => i.value)).toEqual(answers.start);
    editor.value = "x, y";
    editor.dispatchEvent(new Event("input"));
    expect(view.saved()).toHaveLength(0); // typing alone sends nothing
    editor.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(view.saved()).toEqual([{ input_specs: ["x, y", answers.start[1], answers.start[2]] }]);
    expect(query(view.el, '[data-role="retracing"]')).not.toBeNull();
    answer(view, { payload: answers.good.payload, input_specs: answers.good.input_specs });
    expect(view.el.querySelector('[data-role="retracing"]')).toBeNull();
    expect(editor.value).toBe(answers.good.input_specs[0]);
    const kinds = rows(view.el).map((r) => r.getAttribute("data-kind"));
    expect(kinds.sort()).toEqual(answers.good.payload.collectives.map((c) => c.kind).sort());
    expect(kinds.length).toBeGreaterThan(loadProgram("mlp").collectives.length);
  });

  it("sends an input's spec equal to Python's while an earlier edit is unanswered", () => {
    const answers = programAnswers();
    const view = show("mlp");
    const editor = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="0"]');
    editor.value = "x, y";
    editor.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    editor.value = answers.start[0];
    editor.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    // Python answers the first edit: its spec is now "x, y", and the edit back is still on its way.
    view.model.answer(view.model.editSeqs[0], {
      payload: answers.good.payload,
      input_specs: answers.good.input_specs,
    } as unknown as Partial<SyncedTraits>);
    editor.value = answers.good.input_specs[0];
    editor.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(view.saved().map((edit) => edit.input_specs?.[0])).toEqual([
      "x, y",
      answers.start[0],
      answers.good.input_specs[0],
    ]);
  });

  it("shows a bad spec's error beside its input, keeps what was typed, and a program error in the general alert", () => {
    const answers = programAnswers();
    const view = show("mlp");
    const w1 = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="1"]');
    w1.value = "q";
    w1.dispatchEvent(new Event("input"));
    w1.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(view.saved()[0].input_specs?.[1]).toBe("q");
    answer(view, { error: answers.bad_spec.error, error_source: answers.bad_spec.error_source });
    const alert = query(view.el, '[role="alert"][data-source="input:1"]');
    expect(alert.textContent).toBe(answers.bad_spec.error);
    expect(alert.closest('[data-input-row="1"]')).not.toBeNull(); // beside its own input
    expect(w1.value).toBe("q");
    expect(w1.getAttribute("aria-invalid")).toBe("true");
    // Escape puts Python's text back; Enter on Python's own text clears the error without a re-trace.
    w1.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    expect(w1.value).toBe(answers.start[1]);
    w1.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    // Python's own text, sent as it is: the edit's number alone asks Python to answer.
    expect(view.saved()[1].input_specs?.[1]).toBe(answers.start[1]);
    expect(view.model.editSeqs).toEqual([1, 2]);
    answer(view, { error: "", error_source: "" });
    expect(view.el.querySelector('[role="alert"]')).toBeNull();
    // A program that fails under new shardings: the general alert, the editor keeps the text it sent.
    const x = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="0"]');
    x.value = "x, y";
    x.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    answer(view, { error: answers.failing.error, error_source: answers.failing.error_source });
    const general = query(view.el, '[role="alert"][data-source="program"]');
    expect(general.textContent).toContain(answers.failing.error);
    expect(general.closest("[data-input-row]")).toBeNull();
    expect(x.value).toBe("x, y");
    expect(x.getAttribute("aria-invalid")).toBe("true");
  });

  it("numbers each edit and ends the re-tracing line when Python answers, even an answer that changes nothing", () => {
    const answers = programAnswers();
    const view = show("mlp");
    const w1 = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="1"]');
    for (const round of [1, 2]) {
      w1.value = "q";
      w1.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(query(view.el, '[data-role="retracing"]')).not.toBeNull();
      expect(view.model.editSeqs).toHaveLength(round);
      // The same refusal twice: the second time no trait changes, only the answered message comes.
      if (round === 1) view.fromPython({ error: answers.bad_spec.error, error_source: answers.bad_spec.error_source });
      view.model.answer(view.model.editSeqs[round - 1]);
      expect(view.el.querySelector('[data-role="retracing"]')).toBeNull();
      expect(query(view.el, '[role="alert"][data-source="input:1"]').textContent).toBe(answers.bad_spec.error);
      expect(w1.value).toBe("q");
    }
  });

  it("keeps the refused text when Python's answer comes one trait at a time", () => {
    const answers = programAnswers();
    const view = show("mlp");
    const w1 = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="1"]');
    w1.value = "q";
    w1.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    // As a kernel publishes them: the trait the front end wrote put back, then error, then its source.
    view.fromPython({ input_specs: answers.start });
    view.fromPython({ error: answers.bad_spec.error });
    view.fromPython({ error_source: answers.bad_spec.error_source });
    view.model.answer(view.model.editSeqs[0]);
    expect(w1.value).toBe("q");
    expect(query(view.el, '[role="alert"][data-source="input:1"]').textContent).toBe(answers.bad_spec.error);
  });

  it("sends nothing for the same spec written another way", () => {
    const view = show("mlp");
    const x = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="0"]');
    x.value = "P('x', None)";
    x.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(view.saved()).toHaveLength(0);
    expect(x.value).toBe("x");
  });

  it("shows Python's notice and keeps the selection across a re-trace", () => {
    const answers = programAnswers();
    const view = show("mlp");
    query(view.el, '[data-role="input-name"][data-index="0"]').click();
    expect(query(view.el, '[data-role="selection"] [data-role="type"]').textContent).toBe("float32[16,32]");
    view.fromPython({ payload: answers.good.payload, notice: "re-traced" });
    expect(query(view.el, '[data-role="notice"]').textContent).toBe("re-traced");
    const cells = all(view.el, '[data-role="selection"] .sv-mesh [data-tile-of]');
    // x is now split over (x, y): eight tiles, one per device.
    expect(new Set(cells.map((c) => c.getAttribute("data-tile-of"))).size).toBe(8);
  });

  it("keeps a selected value across a re-trace by its key, as Python keys it", () => {
    const answers = programAnswers();
    const before = pythonValues("mlp");
    const view = show("mlp");
    // the last value Python made, an intermediate of the MLP: after the re-trace the same key is still there
    const i = before.map((v) => v.role).lastIndexOf("intermediate");
    query(view.el, `[data-role="value"][data-value="${i}"]`).click();
    // a re-trace may name the jaxpr's variables anew (a reshard inserted before shifts every later name)
    const after = JSON.parse(JSON.stringify(answers.good.payload)) as ProgramPayload;
    after.values.name = after.values.name.map((name) => `${name}_`);
    view.fromPython({ payload: after, notice: "re-traced" });
    const pressed = all(view.el, '[data-role="value"][aria-pressed="true"]');
    expect(pressed).toHaveLength(1);
    const j = Number(pressed[0].getAttribute("data-value"));
    expect(decodeProgram(after).valueKeys[j]).toBe(before[i].key);
    expect(query(pressed[0], ".sv-value-name").textContent).toBe(before[i].label);
  });

  it("drops a selected value the re-trace no longer has, and keeps a selected collective by its name", () => {
    const answers = programAnswers();
    const gone = show("mlp");
    const i = pythonValues("mlp")
      .map((v) => v.role)
      .lastIndexOf("intermediate");
    query(gone.el, `[data-role="value"][data-value="${i}"]`).click();
    const renamed = JSON.parse(JSON.stringify(answers.good.payload)) as ProgramPayload;
    renamed.key_stems = renamed.key_stems.map((stem) => `${stem}'`);
    gone.fromPython({ payload: renamed, notice: "re-traced" });
    expect(all(gone.el, '[data-role="value"][aria-pressed="true"]')).toHaveLength(0);
    expect(query(gone.el, '[data-role="selection"] .sv-selection-layout').hidden).toBe(true);

    const kept = show("mlp");
    rows(kept.el)[0].click();
    const name = loadProgram("mlp").collectives[0].name;
    kept.fromPython({ payload: answers.good.payload, notice: "re-traced" });
    const c = answers.good.payload.collectives.findIndex((x) => x.name === name);
    expect(c).toBeGreaterThanOrEqual(0);
    expect(query(kept.el, `[data-role="collective"][data-collective="${c}"]`).getAttribute("aria-selected")).toBe(
      "true",
    );
  });

  it("reports memory and flops JAX did not give as not reported", () => {
    const payload = { ...loadProgram("mlp"), memory: null, flops: null, bytes_accessed: null };
    const { el } = show(payload);
    expect(query(el, '[data-role="memory-none"]').textContent).toBe("not reported");
    expect(query(el, '[data-role="flops"]').textContent).toBe("not reported");
    expect(query(el, '[data-role="bytes-accessed"]').textContent).toBe("not reported");
  });

  it("adds the matrix multiplies with loops counted where the cost analysis counted a loop once", () => {
    const scanned = show({ ...loadProgram("mlp"), flops: 1000, matmul_flops: 24000 });
    expect(query(scanned.el, '[data-role="matmul-flops"]').textContent).toBe("24,000");
    const flat = show({ ...loadProgram("mlp"), flops: 1000, matmul_flops: 1000 });
    expect(flat.el.querySelector('[data-role="matmul-flops"]')).toBeNull();
  });

  it("draws a program with no collectives and no mesh", () => {
    const { el } = show("single_device");
    expect(rows(el)).toHaveLength(0);
    expect(query(el, '[data-role="no-collectives"]').textContent).toContain("No collectives");
    query(el, '[data-role="value"]').click();
    expect(query(el, '[data-role="no-mesh"]').textContent).toContain("device 3");
  });

  it("keeps hostile axis names as text", () => {
    const { el } = show("hostile");
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector("script")).toBeNull();
    const marks = all(el, ".sv-axis-ref").map((m) => m.textContent);
    expect(marks).toContain("<img src=x onerror=alert(1)>");
    rows(el)[0].click();
    expect(el.querySelector("img")).toBeNull();
  });

  it("keeps the last good picture and says why when a payload cannot be drawn", () => {
    const view = show("mlp");
    const broken = { ...loadProgram("mlp"), version: 9 } as unknown as ProgramPayload;
    view.fromPython({ payload: broken });
    expect(query(view.el, '[role="alert"][data-source="payload"]').textContent).toContain("version");
    expect(rows(view.el)).toHaveLength(1);
  });

  it("switches to the program view when a widget's payload becomes a program", () => {
    const view = renderProgram({} as unknown as ProgramPayload);
    shown = view;
    expect(view.el.querySelector('[data-view="program"]')).toBeNull();
    view.fromPython({ payload: loadProgram("mlp") });
    expect(view.el.querySelector('[data-view="program"]')).not.toBeNull();
  });
});

describe("a saved program page", () => {
  it("draws everything read-only, with a plain note that tracing again needs a kernel", () => {
    const host = document.createElement("div");
    const payload = loadProgram("scan_grad");
    host.innerHTML = '<div data-shardviz-root></div><script type="application/json" data-shardviz-payload></script>';
    (host.querySelector("script") as HTMLScriptElement).textContent = JSON.stringify(payload);
    document.body.append(host);
    const views = renderAllExports(document);
    expect(views).toHaveLength(1);
    expect(query(host, '[data-role="read-only-note"]').textContent).toBe(SAVED_PROGRAM_NOTE);
    const editors = all<HTMLInputElement>(host, '[data-role="input-spec"]');
    expect(editors).toHaveLength(payload.inputs.length);
    for (const editor of editors) expect(editor.disabled).toBe(true);
    expect(rows(host)).toHaveLength(payload.collectives.length);
    // Layouts and groups are computed in the page.
    query(host, '[data-role="value"]').click();
    expect(host.querySelector('[data-role="selection"] .sv-mesh')).not.toBeNull();
    rows(host)[0].click();
    expect(all(host, '[data-role="group-grid"] [data-device-id][data-group]')).toHaveLength(8);
    views[0].destroy();
  });
});

/** `#rrggbb` as jsdom reports a style colour. */
function toRgb(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  return `rgb(${r}, ${g}, ${b})`;
}
