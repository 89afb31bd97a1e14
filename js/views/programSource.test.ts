/**
 * The program view's source view and memory strip through the real widget
 * entry, on payloads `shardviz.trace` wrote from real compiles: a block per
 * function with its call tree and links, forward and backward on one line,
 * a loop's passes folded into one chip that opens, a line's figures against
 * a hand sum over the payload's columns, the memory strip's steps and groups
 * against Python's timeline, axis labels whole, an output's own row marked,
 * and a pod-scale step drawn with a bounded number of chips.
 */

import { afterEach, describe, expect, it } from "vitest";
import { FAMILIES_SHOWN } from "../components/sourceView";
import type { ProgramPayload } from "../payload/program";
import { loadProgram, type ProgramName, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import { formatBytes } from "../util/ranges";

const all = <T extends Element = HTMLElement>(el: ParentNode, selector: string): T[] =>
  Array.from(el.querySelectorAll<T>(selector));

let shown: RenderedProgram | null = null;
function show(name: ProgramName | ProgramPayload): RenderedProgram {
  shown = renderProgram(typeof name === "string" ? loadProgram(name) : name);
  return shown;
}

afterEach(() => {
  shown?.cleanup();
  shown = null;
});

/** The line number of the first line of the payload's functions whose text includes `needle`. */
function lineOf(payload: ProgramPayload, needle: string): number {
  for (const f of payload.functions ?? []) {
    const k = f.lines.findIndex((t) => t.includes(needle));
    if (k >= 0) return f.first_line + k;
  }
  throw new Error(`no line has ${needle}`);
}

const block = (el: HTMLElement, name: string) => query(el, `[data-role="source-block"][data-function="${name}"]`);
const row = (el: HTMLElement, name: string, line: number) =>
  query(block(el, name), `[data-role="source-line"][data-line="${line}"]`);
const key = (event: string, target: HTMLElement) =>
  target.dispatchEvent(new KeyboardEvent("keydown", { key: event, bubbles: true }));

describe("the source view", () => {
  it("draws each function the step runs as its own block, in call order, with links between them", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    const names = all(el, '[data-role="source-block"]').map((b) => b.getAttribute("data-function"));
    expect(names).toEqual(["train_step", "loss_fn", "mlp_layers", "dense"]);
    // A call site links to its callee's block; following it opens the block and focuses its heading.
    const dense = block(el, "dense");
    const toggle = query(dense, '[data-role="block-toggle"]');
    toggle.click();
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    expect(query(dense, ".sv-block-body").hidden).toBe(true);
    const head = row(el, "loss_fn", lineOf(payload, "logits = dense(pred"));
    const link = query(head, '[data-role="call-link"]');
    expect(link.textContent).toBe("\u2192 dense");
    link.click();
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    expect(query(dense, ".sv-block-body").hidden).toBe(false);
    expect(document.activeElement).toBe(toggle);
    // The block says who calls it, each call a link.
    const callers = all(dense, '[data-role="caller-link"]').map((c) => c.textContent);
    expect(callers.sort()).toEqual(
      [
        `mlp_layers:${lineOf(payload, 'jax.nn.relu(dense(x, layer["wi"]))')}`,
        `mlp_layers:${lineOf(payload, 'x = x + dense(h, layer["wo"])')}`,
        `loss_fn:${lineOf(payload, "logits = dense(pred")}`,
      ].sort(),
    );
  });

  it("walks the call tree with the keyboard and opens a function's block", () => {
    const { el } = show("layers");
    const tree = query(el, '[data-role="call-tree"]');
    expect(tree.getAttribute("role")).toBe("tree");
    const items = all(tree, '[role="treeitem"]');
    expect(items.map((i) => [i.querySelector(".sv-tree-name")?.textContent, i.getAttribute("aria-level")])).toEqual([
      ["train_step", "1"],
      ["loss_fn", "2"],
      ["mlp_layers", "3"],
      ["dense", "4"],
      ["dense", "4"],
      ["dense", "3"],
    ]);
    expect(items.filter((i) => i.tabIndex === 0)).toEqual([items[0]]);
    items[0].focus();
    key("ArrowDown", items[0]);
    expect(document.activeElement).toBe(items[1]);
    key("ArrowLeft", items[1]); // open: closes it, its children hide
    expect(items[1].getAttribute("aria-expanded")).toBe("false");
    key("ArrowDown", items[1]);
    expect(document.activeElement).toBe(items[1]); // nothing below a closed loss_fn
    key("ArrowRight", items[1]);
    key("ArrowRight", items[1]);
    expect(document.activeElement).toBe(items[2]);
    key("ArrowLeft", items[2]); // mlp_layers: closes
    key("ArrowLeft", items[2]); // then to its parent
    expect(document.activeElement).toBe(items[1]);
    key("End", items[1]);
    expect(document.activeElement).toBe(items[items.length - 1]);
    key("Enter", items[items.length - 1]);
    expect(document.activeElement).toBe(query(block(el, "dense"), '[data-role="block-toggle"]'));
  });

  it("shows a line's forward and backward passes together, each as the payload has them", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    const line = lineOf(payload, "return x @ kernel");
    const dense = row(el, "dense", line);
    const passes = all(dense, '[data-role="pass-notes"]').map((p) => p.getAttribute("data-pass"));
    for (const more of all(dense, '[data-role="more-notes"]')) more.click();
    expect(passes).toEqual(["forward", "backward"]);
    // Counted straight from the payload's columns: values made on that line, per pass.
    const entry = payload.lines.findIndex((l) => l.line === line);
    const count = (backward: boolean) =>
      payload.values.line.filter((l, i) => l === entry && (payload.values.backward?.[i] ?? false) === backward).length;
    for (const [pass, backward] of [
      ["forward", false],
      ["backward", true],
    ] as const) {
      const notes = query(dense, `[data-role="pass-notes"][data-pass="${pass}"]`);
      const singles = all(notes, '[data-role="value"]').length;
      const grouped = all(notes, '[data-role="value-family"]').reduce(
        (sum, f) => sum + (f.getAttribute("data-values") ?? "").split(",").length,
        0,
      );
      expect(singles + grouped).toBe(count(backward));
    }
  });

  it("folds a loop's passes into one chip that opens into one per pass, each selectable", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    const line = row(el, "mlp_layers", lineOf(payload, 'jax.nn.relu(dense(x, layer["wi"]))'));
    const family = all(line, '[data-role="value-family"]').find(
      (f) => f.querySelector(".sv-value-name")?.textContent === "h",
    );
    if (!family) throw new Error("no family for h");
    expect(family.textContent).toContain("\u00d74");
    expect(family.textContent).toContain("passes 1\u20134 of 4");
    expect(family.getAttribute("aria-expanded")).toBe("false");
    family.click();
    expect(family.getAttribute("aria-expanded")).toBe("true");
    const members = all(query(line, `#${family.getAttribute("aria-controls")}`), '[data-role="value"]');
    expect(members.map((m) => m.querySelector('[data-role="where"]')?.textContent)).toEqual(
      [1, 2, 3, 4].map((k) => `pass ${k} of 4`),
    );
    members[2].click();
    const selection = query(el, '[data-role="selection"]');
    expect(selection.querySelector(".sv-panel-title")?.textContent).toMatch(/^Value h /);
    expect(selection.textContent).toContain("pass 3 of 4");
    expect(members[2].getAttribute("aria-pressed")).toBe("true");
    family.click();
    expect(family.getAttribute("aria-expanded")).toBe("false");
  });

  it("opens the family that hides a collective chosen in the table", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    const c = payload.collectives.findIndex((x) => x.pass === 3 && !x.backward);
    expect(c).toBeGreaterThanOrEqual(0);
    expect(el.querySelector(`[data-role="line-collective"][data-collective="${c}"]`)).toBeNull();
    query(el, `[data-role="collective"][data-collective="${c}"]`).click();
    const chip = query(el, `[data-role="line-collective"][data-collective="${c}"]`);
    expect(chip.getAttribute("aria-pressed")).toBe("true");
    expect(chip.textContent).toContain("pass 3 of 4");
    const family = chip.parentElement?.previousElementSibling as HTMLElement;
    expect(family.getAttribute("data-role")).toBe("collective-family");
    expect(family.getAttribute("aria-expanded")).toBe("true");
  });

  it("opens the reason of a line's first collective from its sends marker, and lists the line's reasons", () => {
    const payload = loadProgram("layers");
    const reasons = payload.reasons;
    if (!reasons) throw new Error("no reasons");
    const { el } = show("layers");
    const line = lineOf(payload, "return jnp.mean((logits");
    const target = row(el, "loss_fn", line);
    // The first chip listed on the line is the collective the marker opens.
    const first = Number(query(target, '[data-role="line-collective"]').getAttribute("data-collective"));
    const marker = query(target, '[data-role="line-sent"]');
    expect(marker.tagName).toBe("BUTTON");
    expect(Number(marker.getAttribute("data-why-collective"))).toBe(first);
    marker.click();
    const selection = query(el, '[data-role="selection"]');
    expect(selection.querySelector(".sv-panel-title")?.textContent).toContain(
      `Collective ${payload.collectives[first].kind}`,
    );
    const why = reasons.why_table[reasons.whys[first]];
    expect(query(selection, '[data-role="reason-cause"]').textContent).toBe(`Partial sums: ${why.primitive}`);
    expect(query(selection, '[data-role="reason-rule"]').textContent).toBe(`because ${why.rule}`);
    // The line number selects the line; its facts list each distinct reason of its collectives once.
    query(target, '[data-role="line-number"]').click();
    const onLine = payload.lines.flatMap((l) => (l.line === line ? l.collectives : []));
    const distinct = new Set(onLine.map((c) => `because ${reasons.why_table[reasons.whys[c]].rule}`));
    const listed = all(query(selection, '[data-role="line-reasons"]'), "li").map((li) => li.textContent);
    expect(listed).toEqual([...distinct]);
    expect(listed.length).toBeGreaterThan(0);
  });

  it("writes a line's sends marker as the bytes it sends, and marks it red where XLA rematerialized there", () => {
    const payload = loadProgram("layers");
    const reasons = payload.reasons;
    if (!reasons) throw new Error("no reasons");
    const line = lineOf(payload, "return jnp.mean((logits");
    const plain = query(row(show(payload).el, "loss_fn", line), '[data-role="line-sent"]');
    // The line's bytes per call (summed by hand in the test below): the loss's mean, one f32 all-reduced.
    const sent = Number(plain.getAttribute("data-bytes"));
    expect(sent).toBe(4);
    expect(plain.textContent).toBe("4 B");
    expect(plain.classList.contains("sv-why-remat")).toBe(false);
    expect(plain.getAttribute("aria-label")).toBe(`sends ${formatBytes(sent)} per call: why?`);
    shown?.cleanup();
    // The same program with XLA's warning placed on that line, and on no other.
    const remat = { ...reasons.rematerializations[0], line } as (typeof reasons.rematerializations)[number];
    const warned = { ...payload, reasons: { ...reasons, rematerializations: [remat] } };
    const target = row(show(warned).el, "loss_fn", line);
    const marker = query(target, '[data-role="line-sent"]');
    expect(marker.classList.contains("sv-why-remat")).toBe(true);
    expect(marker.getAttribute("aria-label")).toBe(
      `sends ${formatBytes(sent)} per call, with an involuntary full rematerialization: why?`,
    );
    const elsewhere = all(shown?.el ?? document.body, '[data-role="line-sent"].sv-why-remat');
    expect(elsewhere).toEqual([marker]);
  });

  it("selects a line: what it sends and holds at the peak, summed by hand from the payload", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    const line = lineOf(payload, "return jnp.mean((logits");
    const target = row(el, "loss_fn", line);
    query(target, '[data-role="line-number"]').click();
    expect(target.getAttribute("aria-current")).toBe("true");
    const selection = query(el, '[data-role="selection"]');
    expect(selection.querySelector(".sv-panel-title")?.textContent).toMatch(new RegExp(`:${line} \\(loss_fn\\)$`));
    const entry = payload.lines.findIndex((l) => l.line === line);
    const timeline = payload.memory_timeline;
    if (!timeline) throw new Error("no timeline");
    const sent =
      payload.collectives
        .filter((c) => !(c.parts?.length ?? 0) && c.line === line)
        .reduce((s, c) => s + c.total_wire_bytes, 0) +
      payload.collectives
        .flatMap((c) => c.parts ?? [])
        .filter((p) => p.line === line)
        .reduce((s, p) => s + p.total_wire_bytes, 0);
    const held = timeline.groups.line.reduce((s, l, g) => s + (l === entry ? timeline.groups.peak_bytes[g] : 0), 0);
    const facts = query(selection, '[data-role="line-facts"]').textContent ?? "";
    expect(facts).toContain(`sends per call${formatBytes(sent)}`);
    expect(facts).toContain(`holds at the peak${formatBytes(held)}`);
    expect(Number(query(target, '[data-role="line-sent"]').getAttribute("data-bytes"))).toBe(sent);
    expect(Number(query(target, '[data-role="line-peak"]').getAttribute("data-bytes"))).toBe(held);
    // The strip marks the steps where that line runs.
    const runs = Array.from({ length: timeline.steps }, (_, t) => t).filter((t) => {
      let at = -1;
      let n = 0;
      for (const [start, step, count] of timeline.step_lines) {
        if (t < n + count) {
          at = start + step * (t - n);
          break;
        }
        n += count;
      }
      return at === entry;
    });
    const ranges = runs.filter((t, k) => k === 0 || runs[k - 1] !== t - 1).length;
    expect(all(el, ".sv-strip-line-mark")).toHaveLength(ranges);
  });

  it("draws a pod-scale step with its chips folded: far fewer chips than values, each pass row bounded", () => {
    const payload = loadProgram("pod_step");
    const { el } = show("pod_step");
    expect(payload.values.name.length).toBeGreaterThan(1000);
    const chips = all(el, '[data-role="source-listing"] :is([data-role="value"], [data-role="value-family"])');
    expect(chips.length).toBeLessThan(payload.values.name.length / 5);
    for (const pass of all(el, '[data-role="pass-notes"]')) {
      expect(all(pass, ".sv-chip").length).toBeLessThanOrEqual(FAMILIES_SHOWN);
    }
    // A collective of layer 17 is found when chosen, its family opened.
    const c = payload.collectives.findIndex((x) => x.pass === 17);
    query(el, `[data-role="collective"][data-collective="${c}"]`).click();
    expect(query(el, `[data-role="line-collective"][data-collective="${c}"]`).textContent).toContain("pass 17 of 24");
  });
});

describe("the memory strip", () => {
  it("marks the peak and shows what is live there, as Python's timeline measured it", () => {
    const payload = loadProgram("layers");
    const timeline = payload.memory_timeline;
    if (!timeline) throw new Error("no timeline");
    const { el } = show("layers");
    const strip = query(el, '[data-role="memory-strip"]');
    expect(query(strip, '[data-role="memory-peak"]').textContent).toContain(
      `Peak ${formatBytes(timeline.peak_bytes)} per device at step ${timeline.peak_step + 1} of ${timeline.steps}`,
    );
    const track = query(strip, '[data-role="memory-track"]');
    expect(track.getAttribute("role")).toBe("slider");
    expect(track.getAttribute("aria-valuenow")).toBe(String(timeline.peak_step));
    expect(track.getAttribute("aria-valuetext")).toContain("the peak");
    const groups = all(strip, '[data-role="memory-group"]');
    const bytes = groups.map((g) => Number(g.getAttribute("data-bytes")));
    expect(bytes).toEqual([...bytes].sort((a, b) => b - a));
    for (const g of groups) {
      const group = Number(g.getAttribute("data-group"));
      expect(g.textContent).toContain(timeline.groups.label[group]);
      // Python's bytes for the group at the peak; the strip's lack only buffers too small to list.
      expect(Number(g.getAttribute("data-bytes"))).toBeLessThanOrEqual(timeline.groups.peak_bytes[group]);
      expect(Number(g.getAttribute("data-bytes"))).toBeGreaterThan(timeline.groups.peak_bytes[group] * 0.99);
    }
    // Arrow keys move along the program; Home goes to the start.
    key("ArrowRight", track);
    expect(track.getAttribute("aria-valuenow")).toBe(String(timeline.peak_step + 1));
    expect(query(strip, '[data-role="memory-live"]').getAttribute("data-step")).toBe(String(timeline.peak_step + 1));
    expect(strip.textContent).toContain(
      `Step ${timeline.peak_step + 2}: ${formatBytes(timeline.step_bytes[timeline.peak_step + 1])} live`,
    );
    key("Home", track);
    expect(track.getAttribute("aria-valuenow")).toBe("0");
    query(strip, '[data-role="memory-to-peak"]').click();
    expect(track.getAttribute("aria-valuenow")).toBe(String(timeline.peak_step));
  });

  it("selects a group's line in the source view, or the input an argument is", () => {
    const payload = loadProgram("layers");
    const timeline = payload.memory_timeline;
    if (!timeline) throw new Error("no timeline");
    const { el } = show("layers");
    const strip = query(el, '[data-role="memory-strip"]');
    const onLine = all(strip, '[data-role="memory-group"]').find(
      (g) => timeline.groups.line[Number(g.getAttribute("data-group"))] >= 0,
    );
    if (!onLine) throw new Error("no group on a line");
    onLine.click();
    const entry = payload.lines[timeline.groups.line[Number(onLine.getAttribute("data-group"))]];
    const current = query(el, '[data-role="source-line"][aria-current="true"]');
    expect(current.getAttribute("data-line")).toBe(String(entry.line));
    const argument = all(strip, '[data-role="memory-group"]').find((g) => g.getAttribute("data-kind") === "argument");
    if (!argument) throw new Error("no argument live at the peak");
    argument.click();
    const path = timeline.groups.label[Number(argument.getAttribute("data-group"))];
    const k = payload.inputs.findIndex((i) => i.path === path);
    expect(query(el, `[data-role="input-name"][data-index="${k}"]`).getAttribute("aria-pressed")).toBe("true");
  });

  it("is not drawn for a payload without a timeline", () => {
    const { el } = show({ ...loadProgram("mlp"), memory_timeline: null });
    expect(query(el, '[data-role="memory-strip"]').closest("section")?.hidden).toBe(true);
  });
});

describe("labels and marks", () => {
  it("writes a piece of an axis whole, so two different groups never read alike", () => {
    const payload = loadProgram("sub_axes");
    const { el } = show("sub_axes");
    const tableAxes = all(el, '[data-role="collective"]').map((r) =>
      all(r, ".sv-axis-piece").map((p) => p.textContent),
    );
    expect(tableAxes.sort()).toEqual([["y[sub 2 of 4, stride 2]"], ["y[sub 2 of 4]"]]);
    const chips = all(el, '[data-role="line-collective"]');
    const texts = chips.map((c) =>
      all(c, ".sv-axis-piece")
        .map((p) => p.textContent)
        .join("|"),
    );
    expect(new Set(texts).size).toBe(payload.collectives.length);
    expect(texts.sort()).toEqual(["y[sub 2 of 4, stride 2]", "y[sub 2 of 4]"]);
  });

  it("marks an output's own row when it comes back laid out unlike its input", () => {
    for (const name of ["relayout", "helper_twice", "mlp"] as const) {
      const payload = loadProgram(name);
      const { el, cleanup } = renderProgram(payload);
      const changed = (payload.layout_changes ?? []).map((c) => c.output);
      const marked = all(el, '[data-output-row][data-layout-changed="true"]').map(
        (r) => r.querySelector('[data-role="output-name"]')?.textContent,
      );
      expect(marked).toEqual(changed);
      for (const c of payload.layout_changes ?? []) {
        const k = payload.outputs.findIndex((o) => o.path === c.output);
        const note = query(el, `[data-output-row="${k}"] [data-role="layout-changed"]`).textContent ?? "";
        expect(note).toContain(`laid out unlike ${c.input}`);
      }
      cleanup();
    }
    const { el } = show("relayout");
    expect(query(el, '[data-role="layout-changed"]').textContent).toContain(
      "laid out unlike params['w1']: it went in P(), comes back P(None, y)",
    );
  });

  it("names each collective's pass, layer or the output it lays out under its line in the table", () => {
    const payload = loadProgram("layers");
    const { el } = show("layers");
    for (const [i, c] of payload.collectives.entries()) {
      const where = query(el, `[data-role="collective"][data-collective="${i}"]`).querySelector(
        '[data-role="collective-where"]',
      )?.textContent;
      if (c.pass != null) expect(where).toContain(`pass ${c.pass} of ${c.passes}`);
      if (c.backward) expect(where).toContain("backward");
    }
    const sub = loadProgram("sub_axes");
    const charged = sub.collectives.findIndex((c) => c.charged_to);
    const view = renderProgram(sub);
    expect(
      query(view.el, `[data-role="collective"][data-collective="${charged}"] [data-role="collective-where"]`)
        .textContent,
    ).toBe(sub.collectives[charged].where_label);
    view.cleanup();
  });
});

describe("the inputs of a pod-scale step", () => {
  it("shows the first inputs and outputs, the rest behind a button, and a chosen one anyway", () => {
    const payload = loadProgram("pod_step");
    const { el } = show("pod_step");
    const visible = (role: string) => all(el, `[data-${role}-row]`).filter((r) => !r.hidden).length;
    expect(payload.inputs.length).toBeGreaterThan(100);
    expect(visible("input")).toBe(12);
    expect(visible("output")).toBe(12);
    // An argument live at the memory peak, chosen in the strip, shows its row.
    const strip = query(el, '[data-role="memory-strip"]');
    query(strip, '[data-role="memory-more"]').click();
    const hidden = all(strip, '[data-role="memory-group"][data-kind="argument"]').find((g) => {
      const path = payload.memory_timeline?.groups.label[Number(g.getAttribute("data-group"))];
      return payload.inputs.findIndex((i) => i.path === path) >= 12;
    });
    if (!hidden) throw new Error("no argument past the first rows is live at the peak");
    hidden.click();
    expect(visible("input")).toBe(payload.inputs.length);
    query(el, '[data-role="more-rows"][data-rows="output"]').click();
    expect(visible("output")).toBe(payload.outputs.length);
    expect(el.querySelector('[data-role="more-rows"][data-rows="output"]')).toBeNull();
  });
});

describe("a re-trace", () => {
  it("keeps a selected line selected, found by its file and line number", () => {
    const payload = loadProgram("layers");
    const view = show("layers");
    const line = lineOf(payload, 'x = x + dense(h, layer["wo"])');
    query(row(view.el, "mlp_layers", line), '[data-role="line-number"]').click();
    // The same program traced again: a new payload object, drawn anew.
    const again = JSON.parse(JSON.stringify(payload)) as ProgramPayload;
    view.fromPython({ payload: again });
    expect(query(view.el, '[data-role="source-line"][aria-current="true"]').getAttribute("data-line")).toBe(
      String(line),
    );
    expect(query(view.el, '[data-role="selection"] .sv-panel-title').textContent).toContain(`:${line} (mlp_layers)`);
  });
});
