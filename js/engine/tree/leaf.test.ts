/**
 * Parity with Python, byte for byte: for every array leaf of the trees in
 * js/fixtures/tree_leaf_parity.json (real trees on real and virtual meshes,
 * written by tests/tree_js_fixtures.py), the browser's leaf layout equals
 * `TreeLayout.leaf_layout(i).to_json()`; leaves Python lays out with no mesh
 * are left to the kernel.
 */

import { describe, expect, it } from "vitest";
import type { Payload } from "../../payload/array";
import { decodeTreePayload, type TreePayload } from "../../payload/tree";
import { loadJson } from "../../test/treeFixtures";
import { leafLayout } from "./leaf";

interface ParityFile {
  seed: number;
  cases: { name: string; tree: TreePayload; leaves: (Payload | { kernel: string } | null)[] }[];
}

const data = loadJson<ParityFile>("tree_leaf_parity");

describe("a leaf's layout from the tree payload", () => {
  it("covers real and virtual meshes, several meshes per tree, and leaves left to the kernel", () => {
    const leaves = data.cases.flatMap((c) => c.leaves);
    const local = leaves.filter((l): l is Payload => l !== null && "kind" in l);
    expect(local.length).toBeGreaterThan(500);
    expect(local.some((p) => p.mesh?.abstract)).toBe(true);
    expect(local.some((p) => p.mesh && !p.mesh.abstract)).toBe(true);
    expect(local.some((p) => p.devices.count >= 4096)).toBe(true);
    expect(local.some((p) => p.memory_kind === "pinned_host")).toBe(true);
    expect(local.some((p) => !p.devices.machine_order && !p.devices.virtual)).toBe(true);
    expect(leaves.some((l) => l !== null && "kernel" in l)).toBe(true);
    expect(data.cases.some((c) => c.tree.meshes.length > 1)).toBe(true);
  });

  for (const { name, tree, leaves } of data.cases) {
    it(`equals Python's for every leaf of ${name}`, () => {
      const decoded = decodeTreePayload(tree);
      leaves.forEach((expected, i) => {
        const outcome = leafLayout(decoded, i);
        if (expected === null) {
          expect([i, outcome.status]).toEqual([i, "not-array"]);
        } else if ("kernel" in expected) {
          expect([i, outcome.status]).toEqual([i, "no-mesh"]);
        } else {
          expect(outcome.status).toBe("local");
          if (outcome.status === "local")
            expect([i, JSON.stringify(outcome.payload)]).toEqual([i, JSON.stringify(expected)]);
        }
      });
    });
  }

  it("leaves a payload without its meshes' memory kinds to the kernel", () => {
    const tree = structuredClone(data.cases[0].tree);
    delete tree.meshes[0].memory_kinds;
    const decoded = decodeTreePayload(tree);
    const i = data.cases[0].leaves.findIndex((l) => l !== null && "kind" in l);
    expect(leafLayout(decoded, i).status).toBe("old-payload");
  });
});

describe("physical device attributes", () => {
  it("go from the leaf's mesh into its layout, in that mesh's order", () => {
    const tree = structuredClone(data.cases[0].tree);
    const mesh = tree.meshes[0];
    const count = mesh.sizes.reduce((a, b) => a * b, 1);
    mesh.coords = [[[0, 1, count]], [[5, 0, count]]];
    mesh.core_on_chip = [[0, 0, count]];
    mesh.slice_index = [[1, 0, count]];
    const leaf = data.cases[0].leaves.findIndex(
      (l, i) => l !== null && "kind" in l && tree.groups[tree.leaves.group[i]].mesh === 0,
    );
    const outcome = leafLayout(decodeTreePayload(tree), leaf);
    if (outcome.status !== "local") throw new Error(outcome.status);
    expect(outcome.payload.devices.coords).toEqual(mesh.coords);
    expect(outcome.payload.devices.core_on_chip).toEqual(mesh.core_on_chip);
    expect(outcome.payload.devices.slice_index).toEqual(mesh.slice_index);
  });
});
