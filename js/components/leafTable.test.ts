import { describe, expect, it } from "vitest";
import { decodeTreePayload, leafSpec, type Tree } from "../payload/tree";
import { loadTreeFixture } from "../test/treeFixtures";
import { LeafTable, leafOrder } from "./leafTable";

function table(name: "tree_concrete_plain" | "tree_whatif_4096_plain") {
  const tree = decodeTreePayload(loadTreeFixture(name));
  const picked: number[] = [];
  const t = new LeafTable({ onSelect: (leaf) => picked.push(leaf), signal: new AbortController().signal });
  document.body.append(t.element);
  t.setTree(tree);
  return { tree, t, picked };
}

/** The spec column's texts of the rows drawn for the concrete tree. */
function t0Specs(): string[] {
  const { t } = table("tree_concrete_plain");
  return Array.from(t.element.querySelectorAll('[data-role="leaf"] [data-role="leaf-spec"]')).map(
    (c) => c.textContent ?? "",
  );
}

const key = (el: Element, k: string) => el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));

describe("the leaf table", () => {
  it("writes every row's copies in one notation (×1 beside ×4)", () => {
    const { t } = table("tree_concrete_plain");
    const copies = Array.from(t.element.querySelectorAll('[data-role="leaf"] .sv-cell-copies')).map(
      (c) => c.textContent,
    );
    expect(copies.length).toBeGreaterThan(1);
    for (const text of copies) expect(text).toMatch(/^(\u00d7\d+|\u2013)$/);
  });

  it("writes each leaf's spec as Python's str() of JAX's PartitionSpec does", () => {
    const { tree } = table("tree_concrete_plain");
    const withSpec = (spec: string[][], mesh: number | null = 0, sharding = "NamedSharding"): Tree => {
      const group = { ...tree.payload.groups[0], spec, mesh, sharding };
      return { ...tree, group: Int32Array.from([0]), payload: { ...tree.payload, groups: [group] } };
    };
    // Each expected text is what `str(P(...))` prints in Python (JAX 0.10).
    expect(leafSpec(withSpec([["data"], []]), 0)).toBe("P('data',)");
    expect(leafSpec(withSpec([[], ["model"]]), 0)).toBe("P(None, 'model')");
    expect(leafSpec(withSpec([["data", "model"], []]), 0)).toBe("P(('data', 'model'),)");
    expect(leafSpec(withSpec([[], []]), 0)).toBe("P()");
    expect(leafSpec(withSpec([]), 0)).toBe("P()");
    expect(leafSpec(withSpec([["it's"]]), 0)).toBe(`P("it's",)`);
    // Names holding a backslash or quotes: each expected text is Python's own output of print(str(P(...))).
    expect(leafSpec(withSpec([["a\\b"]]), 0)).toBe(String.raw`P('a\\b',)`);
    expect(leafSpec(withSpec([[], ["a\\b"]]), 0)).toBe(String.raw`P(None, 'a\\b')`);
    expect(leafSpec(withSpec([["a\\b's"]]), 0)).toBe(String.raw`P("a\\b's",)`);
    expect(leafSpec(withSpec([["x", "it's"]]), 0)).toBe(`P(('x', "it's"),)`);
    expect(leafSpec(withSpec([['say "hi"']]), 0)).toBe(`P('say "hi"',)`);
    expect(leafSpec(withSpec([[`it's "x"`]]), 0)).toBe(String.raw`P('it\'s "x"',)`);
    expect(leafSpec(withSpec([["data"]], null, "SingleDeviceSharding"), 0)).toBe("");
    const rows = t0Specs();
    expect(rows.length).toBeGreaterThan(1);
    for (const text of rows) expect(text).toMatch(/^(P\(.*\))?$/);
  });

  it("orders leaves stably: equal bytes keep flatten order", () => {
    const tree = decodeTreePayload(loadTreeFixture("tree_whatif_4096_plain"));
    const order = Array.from(leafOrder(tree, "", "bytes-desc"));
    for (let n = 1; n < order.length; n++) {
      const [a, b] = [order[n - 1], order[n]];
      expect(tree.bytes[a] > tree.bytes[b] || (tree.bytes[a] === tree.bytes[b] && a < b)).toBe(true);
    }
  });

  it("moves with the arrow keys, Home and End, keeping the row in view, and selects with Enter", () => {
    const { tree, t, picked } = table("tree_whatif_4096_plain");
    const body = t.element.querySelector(".sv-grid-body") as HTMLElement;
    const first = t.element.querySelector<HTMLElement>('[data-role="leaf"]') as HTMLElement;
    first.focus();
    key(first, "ArrowDown");
    expect(document.activeElement?.getAttribute("data-leaf")).toBe("1");
    key(document.activeElement as Element, "End");
    expect(document.activeElement?.getAttribute("data-leaf")).toBe(String(tree.leafCount - 1));
    expect(body.scrollTop).toBeGreaterThan(0);
    key(document.activeElement as Element, "Enter");
    expect(picked).toEqual([tree.leafCount - 1]);
    key(document.activeElement as Element, "Home");
    key(document.activeElement as Element, " ");
    expect(picked).toEqual([tree.leafCount - 1, 0]);
    expect(document.activeElement?.getAttribute("tabindex")).toBe("0");
  });

  it("keeps the filter and the sort across a new tree with the same leaves", () => {
    const { tree, t } = table("tree_concrete_plain");
    const filter = t.element.querySelector<HTMLInputElement>('[data-role="leaf-filter"]') as HTMLInputElement;
    filter.value = "mu.";
    filter.dispatchEvent(new Event("input"));
    t.setSort("bytes-desc");
    const before = Array.from(t.shown);
    t.setTree(decodeTreePayload(loadTreeFixture("tree_concrete")));
    expect(
      Array.from(t.shown)
        .map((i) => tree.paths[i])
        .every((p) => p.includes("mu.")),
    ).toBe(true);
    expect(new Set(t.shown)).toEqual(new Set(before));
  });
});
