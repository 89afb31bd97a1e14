/**
 * The tree view through the real widget entry, on payloads the real tree
 * engine wrote, checked against what JAX says about the same trees
 * (tests/tree_js_fixtures.py `jax_truth`) and what Python answered
 * (leaf layouts, rules errors).
 */

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ROW_HEIGHT, VISIBLE_ROWS } from "../components/leafTable";
import type { Payload } from "../payload/array";
import type { TreePayload } from "../payload/tree";
import { loadFixture } from "../test/fixtures";
import { expectCleansUp, query } from "../test/render";
import { renderTree } from "../test/renderTree";
import { loadJson, loadTreeFixture, type RulesErrorFixture } from "../test/treeFixtures";
import { RENDER_MEASURE } from "../util/measure";

interface Truth {
  paths: string[];
  types: string[];
  device_bytes: Record<string, Record<string, number>>;
  holdings: Record<string, [string, number][]>;
}

interface ParityFile {
  cases: { name: string; tree: TreePayload; leaves: (Payload | { kernel: string; payload: Payload } | null)[] }[];
}

const truth = loadJson<Record<string, Truth>>("tree_truth");
const parity = loadJson<ParityFile>("tree_leaf_parity");

const rows = (el: HTMLElement) => Array.from(el.querySelectorAll<HTMLElement>('[data-role="leaf"]'));
const rowLeaves = (el: HTMLElement) => rows(el).map((r) => Number(r.getAttribute("data-leaf")));
const cellText = (row: HTMLElement, n: number) => (row.children[n] as HTMLElement).textContent;
const rowOf = (el: HTMLElement, path: string) => {
  const row = rows(el).find((r) => cellText(r, 0) === path);
  if (!row) throw new Error(`no row for ${path}`);
  return row;
};
const typeIn = (el: HTMLElement, text: string) => {
  const input = query<HTMLInputElement>(el, '[data-role="leaf-filter"]');
  input.value = text;
  input.dispatchEvent(new Event("input"));
};

describe("the tree view", () => {
  beforeEach(() => performance.clearMeasures());

  it("draws the summary, the table, the heat map, the audit and the rules of a concrete tree", () => {
    const payload = loadTreeFixture("tree_concrete");
    const expected = truth.tree_concrete;
    const { el } = renderTree(payload);
    expect(el.querySelector('[data-view="tree"]')).not.toBeNull();
    expect(query(el, '[data-role="tree-summary"]').textContent).toContain(`${expected.paths.length} leaves`);
    // Flatten order, each row's type JAX's own (Python type names for other leaves).
    const drawn = rows(el);
    expect(drawn.length).toBe(Math.min(expected.paths.length, VISIBLE_ROWS + 4));
    drawn.forEach((row, n) => {
      expect(cellText(row, 0)).toBe(expected.paths[n]);
      expect(cellText(row, 1)).toBe(expected.types[n]);
    });
    // @axis marks coloured like the mesh axes.
    const w = rowOf(el, "opt_state.mu.layers.0.mlp.w");
    expect(Array.from(w.querySelectorAll(".sv-axis-ref")).map((m) => m.textContent)).toEqual(["data", "model"]);
    // One heat-map cell per device, its label saying what JAX says the device holds.
    const cells = el.querySelectorAll<HTMLElement>('[data-role="heat-map"] [data-device-id]');
    expect(cells).toHaveLength(8);
    for (const cell of cells) {
      const id = cell.getAttribute("data-device-id") as string;
      const total = Object.values(expected.device_bytes[id]).reduce((a, b) => a + b, 0);
      expect(cell.getAttribute("aria-label")).toContain(`Device ${id}`);
      expect(cell.style.backgroundColor).not.toBe("");
      expect(total).toBeGreaterThan(0);
    }
    expect(query(el, '[data-role="audit"]').textContent).toContain("is replicated over");
    expect(query<HTMLTextAreaElement>(el, '[data-role="rules-input"]').value).toBe(payload.rules_text);
    expect(query(el, '[data-role="code"]').textContent).toContain("fnmatch.fnmatchcase");
    expect(el.querySelector('[role="alert"]')).toBeNull();
    expect(performance.getEntriesByName(RENDER_MEASURE)).toHaveLength(1);
  });

  it("keeps only the rows in view in the DOM for 10,000 leaves on 4096 devices, and scrolls through them", () => {
    const payload = loadTreeFixture("tree_whatif_4096");
    const paths = truth.tree_whatif_4096_plain.paths;
    const { el } = renderTree(payload);
    expect(payload.leaves.count).toBe(paths.length);
    expect(query(el, '[data-role="leaf-count"]').textContent).toBe(`${paths.length.toLocaleString("en-US")} leaves`);
    expect(rows(el).length).toBeLessThanOrEqual(VISIBLE_ROWS + 12);
    const body = query(el, ".sv-grid-body");
    body.scrollTop = 5000 * ROW_HEIGHT;
    body.dispatchEvent(new Event("scroll"));
    const leaves = rowLeaves(el);
    expect(leaves.length).toBeLessThanOrEqual(VISIBLE_ROWS + 12);
    expect(leaves).toContain(5000);
    for (const row of rows(el)) expect(cellText(row, 0)).toBe(paths[Number(row.getAttribute("data-leaf"))]);
    expect(query(el, '[data-role="heat-map"] .sv-mesh').getAttribute("data-render")).toBe("canvas");
    expect(query(el, '[data-role="heat-map"] .sv-mesh').getAttribute("data-device-count")).toBe("4096");
  });

  it("filters by path, as text or as a glob", () => {
    const paths = truth.tree_concrete_plain.paths;
    const { el } = renderTree(loadTreeFixture("tree_concrete_plain"));
    typeIn(el, "MLP.W");
    const expected = paths.map((p, i) => [p, i] as const).filter(([p]) => p.toLowerCase().includes("mlp.w"));
    expect(rowLeaves(el)).toEqual(expected.map(([, i]) => i));
    expect(query(el, '[data-role="leaf-count"]').textContent).toBe(`${expected.length} of ${paths.length} leaves`);
    typeIn(el, "params.layers.?.attn.*");
    expect(rows(el).map((r) => cellText(r, 0))).toEqual(paths.filter((p) => /^params\.layers\.\d\.attn\./.test(p)));
    typeIn(el, "nothing-like-this");
    expect(rows(el)).toHaveLength(0);
    expect(el.textContent).toContain("No leaf path matches");
  });

  it("sorts by bytes per device: largest first, smallest first, flatten order", () => {
    const payload = loadTreeFixture("tree_concrete_plain");
    const { el } = renderTree(payload);
    const sort = query(el, '[data-role="sort-bytes"]');
    sort.click();
    expect(sort.closest('[role="columnheader"]')?.getAttribute("aria-sort")).toBe("descending");
    const bytes = rowLeaves(el).map((i) => payload.leaves.bytes[i]);
    expect(bytes).toEqual([...bytes].sort((a, b) => b - a));
    expect(rowLeaves(el)[0]).toBe(payload.audit.largest[0]); // Python's largest leaf leads
    sort.click();
    const up = rowLeaves(el).map((i) => payload.leaves.bytes[i]);
    expect(up).toEqual([...up].sort((a, b) => a - b));
    sort.click();
    expect(rowLeaves(el)).toEqual(Array.from({ length: rowLeaves(el).length }, (_, i) => i));
  });

  it("shows a selected leaf's layout, laid out in the browser as Python lays it out", () => {
    const concrete = parity.cases.find((c) => c.name === "concrete");
    if (!concrete) throw new Error("no concrete parity case");
    const { el } = renderTree(concrete.tree);
    const path = "params.layers.0.mlp.w";
    const leaf = truth.tree_concrete_plain.paths.indexOf(path);
    typeIn(el, path);
    rowOf(el, path).click();
    const python = concrete.leaves[leaf] as Payload;
    const detail = query(el, '[data-role="leaf-detail"]');
    expect(query(detail, '[data-role="type"]').textContent).toBe(truth.tree_concrete_plain.types[leaf]);
    expect(query(detail, '[data-role="type"]').textContent).toBe(python.type_str);
    expect(detail.querySelectorAll("[data-device-id]")).toHaveLength(python.devices.count);
    const tiles = python.tiles.bounds.reduce((n, runs) => n * (runs.reduce((k, run) => k + run[2], 0) - 1), 1);
    expect(query(detail, "[data-total-tiles]").getAttribute("data-total-tiles")).toBe(String(tiles));
    expect(rowOf(el, path).getAttribute("aria-selected")).toBe("true");
    expect(detail.querySelector('[data-role="spec-input"]')).toBeNull(); // pictures, not editors
  });

  it("lists what a clicked device holds, as JAX's shards say", () => {
    const expected = truth.tree_concrete_plain;
    const { el } = renderTree(loadTreeFixture("tree_concrete_plain"));
    for (const id of Object.keys(expected.holdings)) {
      query(el, `[data-role="heat-map"] [data-device-id="${id}"]`).click();
      const panel = query(el, '[data-role="device-holdings"]');
      expect(panel.getAttribute("data-device-id")).toBe(id);
      const listed = Array.from(panel.querySelectorAll("li")).map((li) => [
        li.querySelector("button")?.textContent,
        li.querySelector(".sv-audit-bytes")?.getAttribute("title"),
      ]);
      const held = [...expected.holdings[id]].sort((a, b) => b[1] - a[1]);
      expect(listed.length).toBe(Math.min(12, held.length));
      const total = Object.values(expected.device_bytes[id]).reduce((a, b) => a + b, 0);
      expect(panel.textContent).toContain(`${total.toLocaleString("en-US")} B`);
      for (const [name] of listed) expect(held.map(([p]) => p)).toContain(name);
      expect(listed.map(([name]) => held.find(([p]) => p === name)?.[1])).toEqual(held.slice(0, 12).map(([, b]) => b));
      query(el, `[data-role="heat-map"] [data-device-id="${id}"]`).click(); // unpin
    }
  });

  it("selects a leaf from the audit and from a device's list", () => {
    const payload = loadTreeFixture("tree_concrete_plain");
    const paths = truth.tree_concrete_plain.paths;
    const { el } = renderTree(payload);
    const finding = payload.audit.replicated[0];
    query(el, `[data-role="audit-replicated"] [data-leaf="${finding.leaf}"]`).click();
    expect(query(el, '[data-role="leaf-detail"] h3').textContent).toBe(`Leaf ${paths[finding.leaf]}`);
    query(el, '[data-role="heat-map"] [data-device-id="3"]').click();
    const first = query(el, '[data-role="device-holdings"] li button');
    first.click();
    expect(query(el, '[data-role="leaf-detail"] h3').textContent).toBe(`Leaf ${first.textContent}`);
  });

  it("asks the kernel for a leaf off every mesh, and shows its answer or its error", () => {
    const multi = parity.cases.find((c) => c.name === "multi_mesh");
    if (!multi) throw new Error("no multi_mesh parity case");
    const { el, model } = renderTree(multi.tree);
    const leaf = multi.leaves.findIndex((l) => l !== null && "kernel" in l);
    const answer = multi.leaves[leaf] as { kernel: string; payload: Payload };
    query(el, `[data-leaf="${leaf}"]`).click();
    expect(model.sent).toEqual([{ kind: "leaf_layout", leaf }]);
    expect(query(el, '[data-role="leaf-detail"]').textContent).toContain("Asking the kernel");
    model.message({ kind: "leaf_layout", leaf: leaf + 1, payload: answer.payload }); // not the one asked for
    expect(el.querySelector('[data-role="leaf-detail"] [data-role="type"]')).toBeNull();
    model.message({ kind: "leaf_layout", leaf, payload: answer.payload });
    expect(query(el, '[data-role="leaf-detail"] [data-role="type"]').textContent).toBe(answer.payload.type_str);
    expect(answer.payload.type_str).toBe(truth.tree_multi_mesh.types[leaf]);
    // Another leaf on a mesh: laid out here, nothing sent.
    query(el, '[data-leaf="2"]').click();
    expect(model.sent).toHaveLength(1);
    query(el, `[data-leaf="${leaf}"]`).click();
    model.message({ kind: "leaf_layout", leaf, error: "leaf 'outside' is gone" });
    const alert = query(el, '[data-role="leaf-detail"] [role="alert"]');
    expect(alert.getAttribute("data-source")).toBe("leaf");
    expect(alert.textContent).toBe("leaf 'outside' is gone");
  });

  it("keeps hostile keys as text", () => {
    const { el } = renderTree(loadTreeFixture("tree_multi_mesh"));
    expect(el.querySelector("img, b, script")).toBeNull();
    expect(el.textContent).toContain("<img src=x onerror=alert(1)>.</script><b>x</b>");
  });

  it("swaps views when the payload's kind changes", () => {
    const { el, fromPython } = renderTree({});
    expect(el.textContent).toContain("Nothing to show yet");
    fromPython({ payload: loadTreeFixture("tree_concrete_plain") });
    expect(el.querySelector('[data-view="tree"]')).not.toBeNull();
    fromPython({ payload: loadFixture("mesh2x4_xy") as unknown as TreePayload });
    expect(el.querySelector('[data-view="tree"]')).toBeNull();
    expect(query(el, '[data-role="type"]').textContent).toBe("float32[4@x,8@y]");
  });

  it("draws an empty tree as an empty table", () => {
    const { el } = renderTree(loadTreeFixture("tree_empty"));
    expect(rows(el)).toHaveLength(0);
    expect(el.textContent).toContain("This tree has no leaves.");
    expect(el.querySelector('[role="alert"]')).toBeNull();
  });
});

describe("editing rules", () => {
  const error = loadJson<RulesErrorFixture>("tree_rules_error");
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("commits on Ctrl+Enter, Cmd+Enter or the button, never while typing", () => {
    const { el, saved } = renderTree(loadTreeFixture("tree_concrete_plain"));
    const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
    const type = (text: string) => {
      input.value = text;
      input.dispatchEvent(new Event("input"));
    };
    type("params.embed = None, model");
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(saved()).toEqual([]);
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    type("params.embed = model");
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", metaKey: true }));
    type("params.embed = data");
    query(el, '[data-role="rules-apply"]').click();
    query(el, '[data-role="rules-apply"]').click(); // the rules just applied: nothing to send
    expect(saved()).toEqual([
      { rules_text: "params.embed = None, model" },
      { rules_text: "params.embed = model" },
      { rules_text: "params.embed = data" },
    ]);
  });

  it("redraws the whole picture for the rules Python applied, keeping the selection and the filter", () => {
    const plain = loadTreeFixture("tree_concrete_plain");
    const ruled = loadTreeFixture("tree_concrete");
    const { el, fromPython } = renderTree(plain);
    typeIn(el, "embed");
    rowOf(el, "params.embed").click();
    const type = () => query(el, '[data-role="leaf-detail"] [data-role="type"]').textContent;
    const embed = truth.tree_concrete_plain.paths.indexOf("params.embed");
    expect(type()).toBe(truth.tree_concrete_plain.types[embed]);
    fromPython({ rules_text: ruled.rules_text, payload: ruled, notice: "4 leaves re-sharded by 2 rules." });
    expect(type()).toBe(truth.tree_concrete.types[embed]);
    expect(type()).not.toBe(truth.tree_concrete_plain.types[embed]);
    expect(rowOf(el, "params.embed").getAttribute("aria-selected")).toBe("true");
    expect(query<HTMLInputElement>(el, '[data-role="leaf-filter"]').value).toBe("embed");
    expect(cellText(rowOf(el, "params.embed"), 1)).toBe(truth.tree_concrete.types[embed]);
    expect(query(el, '[data-role="notice"]').textContent).toBe("4 leaves re-sharded by 2 rules.");
    expect(query(el, '[data-role="audit"]').textContent).not.toContain("`params.embed` is replicated over `model`");
  });

  it("leaves a selected leaf's pictures alone when the rules did not touch it", () => {
    const { el, fromPython } = renderTree(loadTreeFixture("tree_concrete_plain"));
    typeIn(el, "params.layers.0.mlp.b");
    rowOf(el, "params.layers.0.mlp.b").click();
    const before = query(el, '[data-role="leaf-detail"] [data-role="type"]');
    performance.clearMeasures();
    fromPython({ payload: loadTreeFixture("tree_concrete") });
    expect(query(el, '[data-role="leaf-detail"] [data-role="type"]')).toBe(before);
    const b = truth.tree_concrete.paths.indexOf("params.layers.0.mlp.b");
    expect(before.textContent).toBe(truth.tree_concrete.types[b]);
  });

  it("shows a bad rule's error beside the editor, naming its line, and keeps the last picture and the user's text", () => {
    const ruled = loadTreeFixture("tree_concrete");
    const { el, model, fromPython } = renderTree(ruled);
    const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
    const before = el.querySelector('[data-role="audit"]')?.textContent;
    input.value = error.rules_text;
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    // Python answers one trait a message: the rules in force (when it writes them back), the error, its source.
    fromPython({ rules_text: error.kept });
    expect(input.value).toBe(error.rules_text);
    fromPython({ error: error.error });
    expect(input.value).toBe(error.rules_text);
    fromPython({ error_source: error.error_source });
    const alert = query(el, '[role="alert"]');
    expect(alert.getAttribute("data-source")).toBe("rules");
    expect(alert.textContent).toBe(error.error);
    expect(alert.textContent).toMatch(/^line 3: /);
    expect(alert.getAttribute("data-line")).toBe("3");
    expect(input.closest(".sv-rules")?.contains(alert)).toBe(true);
    expect(input.getAttribute("aria-invalid")).toBe("true");
    expect(input.value).toBe(error.rules_text);
    expect(el.querySelector('[data-role="audit"]')?.textContent).toBe(before);
    // Back to the rules in force: the trait holds them already; the edit goes numbered, as every edit does.
    input.value = error.kept;
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    expect(model.sent).toEqual([]);
    expect(model.editSeqs.length).toBeGreaterThan(0);
    // The user fixes it; Python applies it.
    input.value = error.kept;
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    fromPython({ rules_text: error.kept, error: "", error_source: "" });
    expect(el.querySelector('[role="alert"]')).toBeNull();
    expect(input.hasAttribute("aria-invalid")).toBe(false);
  });

  it("keeps the refused text when the error comes before the rules Python puts back", () => {
    const { el, fromPython } = renderTree(loadTreeFixture("tree_concrete"));
    const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
    input.value = error.rules_text;
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    fromPython({ error: error.error, error_source: error.error_source });
    fromPython({ rules_text: error.kept });
    expect(input.value).toBe(error.rules_text);
    expect(query(el, '[role="alert"]').textContent).toBe(error.error);
    // Rules set from Python later clear the error and replace the text.
    fromPython({ rules_text: "params.embed = data" });
    fromPython({ error: "", error_source: "" });
    expect(input.value).toBe("params.embed = data");
  });

  it("sends nothing for the rules in force, and takes rules set from Python after", () => {
    const ruled = loadTreeFixture("tree_concrete");
    const { el, model, fromPython } = renderTree(ruled);
    const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
    expect([model.saved, model.sent]).toEqual([[], []]);
    fromPython({ rules_text: "params.embed = data" });
    expect(input.value).toBe("params.embed = data");
  });

  it("takes rules set from Python, unless the user is typing", () => {
    const { el, fromPython } = renderTree(loadTreeFixture("tree_concrete_plain"));
    const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
    fromPython({ rules_text: "params.embed = data" });
    expect(input.value).toBe("params.embed = data");
    input.value = "params.emb";
    input.dispatchEvent(new Event("input"));
    fromPython({ rules_text: "params.embed = model" });
    expect(input.value).toBe("params.emb");
  });

  it("never saves from inside a change handler", () => {
    const { model, fromPython } = renderTree(loadTreeFixture("tree_concrete_plain"));
    fromPython({
      payload: loadTreeFixture("tree_concrete"),
      rules_text: "x = y",
      error: "line 1: no",
      error_source: "rules",
    });
    expect(model.savesInsideChangeHandlers).toBe(0);
    expect(model.saved).toEqual([]);
  });

  it("cleans up every listener it added", () => {
    expectCleansUp(renderTree(loadTreeFixture("tree_concrete_plain")));
  });
});

describe("a saved page of a tree", () => {
  afterEach(() => {
    document.body.textContent = "";
  });

  async function savedPage(payload: TreePayload): Promise<HTMLElement> {
    const { renderAllExports } = await import("../host/exportPage");
    const root = document.createElement("div");
    root.setAttribute("data-shardviz-root", "");
    const script = document.createElement("script");
    script.type = "application/json";
    script.setAttribute("data-shardviz-payload", "");
    script.textContent = JSON.stringify(payload);
    document.body.append(root, script);
    expect(renderAllExports(document)).toHaveLength(1);
    return root;
  }

  function commitRules(root: HTMLElement, text: string): void {
    const input = query<HTMLTextAreaElement>(root, '[data-role="rules-input"]');
    input.value = text;
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
  }

  it("applies rules in the page, as Python does, and refuses what needs a kernel beside the editor", async () => {
    const { cases } = loadJson<{
      cases: {
        name: string;
        original: TreePayload;
        edits: { rules_text: string; status: string; notice?: string }[];
      }[];
    }>("tree_rules_parity");
    const { original, edits } = cases.find((c) => c.name === "multi_mesh") as (typeof cases)[number];
    const root = await savedPage(original);
    const input = query<HTMLTextAreaElement>(root, '[data-role="rules-input"]');
    expect(input.disabled).toBe(false);
    expect(root.querySelector(".sv-rules")?.textContent).toContain("Computed in this page, no kernel");
    const edit = edits.find((e) => e.rules_text === "first = y, x" && e.status === "applied");
    commitRules(root, "first = y, x");
    expect(query(root, '[data-role="notice"]').textContent).toBe(edit?.notice);
    expect(root.querySelector('[role="alert"]')).toBeNull();
    const notice = query(root, '[data-role="notice"]').textContent;
    // The counter on one device would take the tree's mesh: JAX's call, refused here; the picture stays.
    commitRules(root, "outside = None");
    expect(query(root, '[role="alert"]').textContent).toContain("needs a live kernel");
    expect(query(root, '[data-role="notice"]').textContent).not.toBe(notice);
    expect(input.value).toBe("outside = None");
  });

  it("keeps a page saved with rules in force read-only: the tree as given is not in it", async () => {
    const root = await savedPage(loadTreeFixture("tree_concrete"));
    expect(query<HTMLTextAreaElement>(root, '[data-role="rules-input"]').disabled).toBe(true);
  });

  it("shows the table, the heat map and the audit, and says what needs a kernel", async () => {
    const payload = loadTreeFixture("tree_multi_mesh");
    const root = await savedPage(payload);
    expect(root.querySelectorAll('[data-role="leaf"]')).toHaveLength(payload.leaves.count);
    expect(root.querySelectorAll('[data-role="heat-map"] [data-device-id]')).toHaveLength(12);
    expect(root.querySelector('[data-role="audit"]')).not.toBeNull();
    // A leaf on a mesh is laid out in the page; one off every mesh needs a kernel.
    root.querySelector<HTMLElement>('[data-leaf="2"]')?.click();
    expect(root.querySelector('[data-role="leaf-detail"] [data-role="type"]')?.textContent).toBe(
      truth.tree_multi_mesh.types[2],
    );
    const outside = truth.tree_multi_mesh.paths.indexOf("outside");
    root.querySelector<HTMLElement>(`[data-leaf="${outside}"]`)?.click();
    expect(root.querySelector('[data-role="leaf-unavailable"]')?.textContent).toContain("not available offline");
  });

  it("shows Flax's logical axis names beside the mesh axes JAX laid them on", () => {
    const expected = loadJson<Record<string, string>>("tree_logical_truth");
    const { el } = renderTree(loadTreeFixture("tree_flax_logical"));
    for (const [path, text] of Object.entries(expected)) {
      const logical = rowOf(el, path).querySelector('[data-role="logical"]') as HTMLElement;
      expect(logical.textContent?.trim()).toBe(text);
    }
    expect(Object.keys(expected).sort()).toEqual(["params.W1.value", "params.W2.value"]);
  });
});
