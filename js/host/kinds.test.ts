/**
 * The registry of kinds is one list in two languages: js/host/kinds.ts here,
 * src/shardviz/kinds.py in Python (tests/make_js_fixtures.py writes its names
 * and versions to js/fixtures/kinds.json). A kind added, renamed or bumped on
 * one side only fails here.
 */

import { describe, expect, it } from "vitest";
import { loadFixture } from "../test/fixtures";
import { loadJson } from "../test/treeFixtures";
import { KINDS, kindOf } from "./kinds";

interface PythonKind {
  name: string;
  version: number;
}

describe("the registry of kinds", () => {
  const python = loadJson<PythonKind[]>("kinds");

  it("lists the kinds Python lists, in its order, with the same payload versions", () => {
    expect(python.length).toBeGreaterThanOrEqual(3);
    expect(KINDS.map((kind) => ({ name: kind.name, version: kind.version }))).toEqual(python);
  });

  it("picks each kind by the payload's own kind, and the array view for anything else", () => {
    for (const { name } of python) expect(kindOf({ kind: name }).name).toBe(name);
    expect(kindOf(loadFixture("mesh2x4_xy")).name).toBe("array");
    for (const other of [null, {}, { kind: "nonsense" }, { kind: 3 }, "tree"]) expect(kindOf(other).name).toBe("array");
  });
});
