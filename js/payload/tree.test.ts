import { describe, expect, it } from "vitest";
import { loadJson, loadTreeFixture, type TreeFixtureName } from "../test/treeFixtures";
import { PayloadError } from "./array";
import { decodePaths, decodeTreePayload, deviceHoldings, leafShardShape, leafType, type TreePayload } from "./tree";

/** What JAX says about each fixture tree (tests/tree_js_fixtures.py `jax_truth`). */
interface Truth {
  paths: string[];
  types: string[];
  device_bytes: Record<string, Record<string, number>>;
  holdings: Record<string, [string, number][]>;
}

const truth = loadJson<Record<string, Truth>>("tree_truth");
const NAMES: TreeFixtureName[] = ["tree_concrete_plain", "tree_multi_mesh", "tree_whatif_4096_plain", "tree_empty"];

describe("decoding the tree payload", () => {
  for (const name of NAMES) {
    it(`reads back what JAX says about ${name}`, () => {
      const expected = truth[name];
      const tree = decodeTreePayload(loadTreeFixture(name));
      expect(tree.paths).toEqual(expected.paths);
      expect(Array.from({ length: tree.leafCount }, (_, i) => leafType(tree, i))).toEqual(expected.types);
      // Bytes per device and memory kind; the payload lists devices that hold nothing of a kind too.
      const decoded: Record<string, Record<string, number>> = {};
      for (let p = 0; p < tree.deviceCount; p++) {
        for (const kind of tree.memoryKinds) {
          const bytes = tree.deviceBytes.get(kind)?.[p] ?? 0;
          if (bytes === 0) continue;
          decoded[String(tree.ids[p])] ??= {};
          decoded[String(tree.ids[p])][kind] = bytes;
        }
      }
      expect(decoded).toEqual(expected.device_bytes);
      for (const [id, held] of Object.entries(expected.holdings)) {
        const position = tree.positionOfId.get(Number(id));
        expect(position).toBeDefined();
        const mine = deviceHoldings(tree, position as number).map((h) => [tree.paths[h.leaf], h.bytes]);
        const sorted = (list: (string | number)[][]) => [...list].sort((a, b) => String(a).localeCompare(String(b)));
        expect(sorted(mine)).toEqual(sorted(held));
        expect(mine.reduce((sum, [, b]) => sum + (b as number), 0)).toBe(tree.deviceTotals[position as number]);
      }
    });
  }

  it("keeps the path strings of the tree before when the paths did not change", () => {
    const before = decodeTreePayload(loadTreeFixture("tree_concrete_plain"));
    const after = decodeTreePayload(loadTreeFixture("tree_concrete"), before);
    expect(after.paths).toBe(before.paths);
    const other = decodeTreePayload(loadTreeFixture("tree_multi_mesh"), before);
    expect(other.paths).toEqual(truth.tree_multi_mesh.paths);
  });

  it("keeps a key with a dot in it as one segment and shares prefixes", () => {
    expect(decodePaths([[0, "a", "b.c"], [1, "d"], [0, "e"], [0]])).toEqual(["a.b.c", "a.d", "e", ""]);
    expect(() => decodePaths([[2, "x"]])).toThrow(PayloadError);
  });

  it("gives each leaf's shard shape from its group's block counts", () => {
    const tree = decodeTreePayload(loadTreeFixture("tree_concrete_plain"));
    const w = tree.paths.indexOf("params.layers.0.mlp.w");
    expect(leafType(tree, w)).toBe("float32[64@data,256@model]");
    expect(leafShardShape(tree, w)).toEqual([32, 64]);
    expect(tree.bytes[w]).toBe(32 * 64 * 4);
  });

  it("refuses a payload of another version or with columns of the wrong length", () => {
    const good = loadTreeFixture("tree_concrete_plain");
    const bad = (change: (p: TreePayload) => void): (() => void) => {
      const copy = structuredClone(good);
      change(copy);
      return () => decodeTreePayload(copy);
    };
    expect(bad((p) => ((p as { version: number }).version = 2))).toThrow(/version 1, got 2/);
    expect(bad((p) => p.leaves.bytes.pop())).toThrow(/bytes column holds/);
    expect(bad((p) => (p.leaves.group[0] = 99))).toThrow(/group 99, out of range/);
    expect(bad((p) => (p.device_bytes.device = [[0, 0, 3]]))).toThrow(/device bytes column holds 3/);
    expect(bad((p) => (p.meshes[0].devices = [[0, 1, 7]]))).toThrow(PayloadError);
  });
});
