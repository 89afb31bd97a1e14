/**
 * The registry of kinds is one list in two languages: js/host/kinds.ts here,
 * src/shardviz/kinds.py in Python (tests/make_js_fixtures.py writes its names
 * and versions to js/fixtures/kinds.json). A kind added, renamed or bumped on
 * one side only fails here.
 */

import { describe, expect, it } from "vitest";
import { loadFixture } from "../test/fixtures";
import { loadJson, loadTreeFixture } from "../test/treeFixtures";
import { ANSWERED, type Answer, type Host } from "../traits/host";
import {
  KINDS,
  kindOf,
  mountLive,
  SAVED_COMPARE_NOTE,
  SAVED_PROGRAM_NOTE,
  SAVED_TREE_NOTE,
  TREE_PAGE_NOTE,
  type ViewKind,
} from "./kinds";
import type { KernelLink } from "./live";

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

/** A trait of a host, read as a view reads it. */
function read(host: Host<object>, key: string): unknown {
  return (host as unknown as { get(key: string): unknown }).get(key);
}

describe("each kind's host", () => {
  const named = (name: string): ViewKind => KINDS.find((kind) => kind.name === name) as ViewKind;

  it("shows a saved program as traced, its inputs' specs as their texts, and edits nothing", () => {
    const payload = { kind: "program", inputs: [{ spec_text: "x, None" }, { spec_text: "" }] };
    const host = named("program").savedHost(payload);
    expect(host.readOnly).toBe(true);
    expect(host.note).toBe(SAVED_PROGRAM_NOTE);
    expect(["payload", "error", "error_source", "notice", "input_specs"].map((key) => read(host, key))).toEqual([
      payload,
      "",
      "",
      "",
      ["x, None", ""],
    ]);
  });

  it("re-shards a saved tree in the page when no rules were in force, and only shows one saved with rules", () => {
    const plain = loadTreeFixture("tree_concrete_plain");
    const page = named("tree").savedHost(plain);
    expect([page.readOnly, page.note]).toEqual([false, TREE_PAGE_NOTE]);
    expect(["error", "error_source", "notice", "rules_text"].map((key) => read(page, key))).toEqual(["", "", "", ""]);
    const ruled = loadTreeFixture("tree_concrete");
    const shown = named("tree").savedHost(ruled);
    expect([shown.readOnly, shown.note, read(shown, "rules_text")]).toEqual([true, SAVED_TREE_NOTE, ruled.rules_text]);
    const { rules_text: _, ...unruled } = plain;
    expect(read(named("tree").savedHost(unruled), "rules_text")).toBe("");
    expect(named("tree").savedHost({ ...plain, version: 99 }).readOnly).toBe(true);
  });

  it("shows a saved comparison with no rules edit and edits nothing", () => {
    const payload = { kind: "compare" };
    const host = named("compare").savedHost(payload);
    expect([host.readOnly, host.note]).toEqual([true, SAVED_COMPARE_NOTE]);
    expect(["payload", "error", "error_source", "notice", "rules_edit"].map((key) => read(host, key))).toEqual([
      payload,
      "",
      "",
      "",
      "",
    ]);
  });

  it("mounts a live view over the kernel's answer, with or without a local engine, and passes its calls on", () => {
    const calls: string[] = [];
    let answer: Partial<Answer> = { seq: 0, payload: { n: 1 }, texts: {} };
    const link: KernelLink = { answer: () => answer, send: () => {}, nextSeq: () => 1 };
    class FakeView {
      constructor(
        _el: HTMLElement,
        readonly host: { get(key: string): unknown },
      ) {
        calls.push(`drawn ${JSON.stringify(host.get("payload"))}`);
      }
      update(keys: Iterable<string>): void {
        calls.push(`update ${[...keys].join(",")}`);
      }
      receive(message: unknown): void {
        calls.push(`receive ${JSON.stringify(message)}`);
      }
      destroy(): void {
        calls.push("destroy");
      }
    }
    const kind: ViewKind = { ...named("program"), View: FakeView };
    const mounted = mountLive(kind, document.createElement("div"), link);
    answer = { seq: 0, payload: { n: 2 }, texts: {} };
    mounted.update(["answer"]);
    mounted.receive({ type: "reply" });
    mounted.destroy();
    expect(calls).toEqual(['drawn {"n":1}', "update payload", 'receive {"type":"reply"}', "destroy"]);
    calls.length = 0;
    let asked = 0;
    const predicting: ViewKind = {
      ...kind,
      liveEngine: () => ({
        compared: [],
        answer: () => null,
        heard: () => {
          asked += 1;
        },
      }),
    };
    mountLive(predicting, document.createElement("div"), link).update([ANSWERED]);
    expect(asked).toBe(2); // the kernel's first answer, then its next
  });
});
