/**
 * No import circles in the front end, between files or between folders.
 * Every `.ts` file under js/ (tests and test helpers included) is read as
 * text and each relative `import ... from "./x"`, `export ... from "./x"`,
 * `import("./x")` and `import type` counts: a type-only circle still ties
 * two files together. The folder graph folds files into their folder
 * (engine/array, engine/tree, engine/program, payload, traits, components,
 * host, views, util, test, and the js/ root), so `host -> views -> host` fails even when no two files import each
 * other.
 * The last tests plant circles in a small set of files to show the check fails.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

type Graph = Map<string, Set<string>>;

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;

/** Relative import specifiers of one file's text (comments removed first). */
function importSpecifiers(text: string): string[] {
  // Only comments that open a line: a string such as "a/*" must not hide the code after it.
  const code = text.replace(/^\s*\/\*[\s\S]*?\*\//gm, "").replace(/^\s*\/\/.*$/gm, "");
  return Array.from(code.matchAll(SPECIFIER), (m) => m[1]).filter((s) => s.startsWith("."));
}

/** The file an import names, among `files` (paths relative to the root, with `.ts`). */
function resolve(from: string, specifier: string, files: Set<string>): string | undefined {
  const base = normalize(join(dirname(from), specifier)).replace(/\.js$/, "");
  return [`${base}.ts`, join(base, "index.ts"), base].find((candidate) => files.has(candidate));
}

/** File -> files it imports, for `sources` (path relative to the root -> text). */
function fileGraph(sources: Map<string, string>): Graph {
  const files = new Set(sources.keys());
  const graph: Graph = new Map();
  for (const [file, text] of sources) {
    const targets = new Set<string>();
    for (const specifier of importSpecifiers(text)) {
      const target = resolve(file, specifier, files);
      if (target !== undefined && target !== file) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/**
 * Folder -> folders its files import (a file at the root is in folder ".").
 * Test files are left out: one sits beside what it tests and imports the
 * shared test helpers, but nothing imports it, so it ties no folder to another.
 */
function folderGraph(files: Graph): Graph {
  const graph: Graph = new Map();
  for (const [file, targets] of files) {
    if (file.endsWith(".test.ts")) continue;
    const folder = dirname(file);
    const edges = graph.get(folder) ?? new Set<string>();
    graph.set(folder, edges);
    for (const target of targets) if (dirname(target) !== folder) edges.add(dirname(target));
  }
  return graph;
}

/** One circle of `graph` as [a, b, ..., a], or undefined. */
function findCycle(graph: Graph): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, "open");
    path.push(node);
    for (const next of Array.from(graph.get(node) ?? []).sort()) {
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of Array.from(graph.keys()).sort()) {
    if (!state.has(node)) {
      const found = visit(node);
      if (found) return found;
    }
  }
  return undefined;
}

function readSources(root: string): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) sources.set(relative(root, path), readFileSync(path, "utf8"));
    }
  };
  walk(root);
  return sources;
}

/** Tests run from the repository root (npm test, vitest.config.ts). */
const JS = join(process.cwd(), "js");

describe("import structure of js/", () => {
  const files = fileGraph(readSources(JS));

  it("reads every file and its imports", () => {
    expect(files.get("widget.ts")?.size).toBeGreaterThan(2);
    expect(files.get("engine/array/index.ts")?.size).toBeGreaterThan(0);
  });

  it("has no circle between files", () => {
    expect(findCycle(files)?.join(" -> ")).toBeUndefined();
  });

  it("has no circle between folders", () => {
    const folders = folderGraph(files);
    for (const folder of [
      "engine/array",
      "engine/tree",
      "engine/program",
      "payload",
      "components",
      "host",
      "views",
      "util",
    ])
      expect(folders.has(folder)).toBe(true);
    expect(findCycle(folders)?.join(" -> ")).toBeUndefined();
  });

  it("keeps each view's engine its own: the array engine is the base the others build on", () => {
    const folders = folderGraph(files);
    const imported = (folder: string) => Array.from(folders.get(folder) ?? []).sort();
    expect(imported("engine/array")).toEqual(["payload"]);
    expect(imported("engine/tree")).toEqual(["engine/array", "payload", "util"]);
    expect(imported("engine/program")).toEqual(["engine/array", "payload"]);
  });
});

describe("the circle check on planted circles", () => {
  it("finds a circle between two files, a type-only import included", () => {
    const sources = new Map([
      ["a/one.ts", 'import { two } from "./two";\nexport const one = 1;'],
      ["a/two.ts", 'import type { One } from "./one";\nexport const two = 2;'],
      ["a/three.ts", "// import { one } from './one';\nexport const three = 3;"],
    ]);
    const graph = fileGraph(sources);
    expect(graph.get("a/three.ts")?.size).toBe(0);
    expect(findCycle(graph)).toEqual(["a/one.ts", "a/two.ts", "a/one.ts"]);
  });

  it("finds a circle between folders where no two files form one", () => {
    const sources = new Map([
      ["low/base.ts", 'export { top } from "../high/top";'],
      ["low/leaf.ts", "export const leaf = 1;"],
      ["high/top.ts", 'import { leaf } from "../low/leaf";\nexport const top = leaf;'],
    ]);
    const files = fileGraph(sources);
    expect(findCycle(files)).toBeUndefined();
    expect(findCycle(folderGraph(files))).toEqual(["high", "low", "high"]);
  });
});
