/**
 * A what-if program's input editors stay editable: an edit traces the program
 * again in a child process with the mesh's simulated devices, and the view says
 * so (shardviz.trace(f, *args, mesh=AbstractMesh((4, 4), ...)) wrote the fixture).
 */

import { afterEach, describe, expect, it } from "vitest";
import type { ProgramPayload } from "../payload/program";
import { loadProgram, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import { loadJson } from "../test/treeFixtures";

let shown: RenderedProgram | null = null;
afterEach(() => {
  shown?.cleanup();
  shown = null;
});

describe("the input editors of a what-if program", () => {
  it("are editable and say that an edit traces again in a child with the mesh's devices", () => {
    const payload = loadJson<ProgramPayload>("program_whatif_mlp");
    const devices = (payload.mesh?.sizes ?? []).reduce((a, b) => a * b, 1);
    expect(devices).toBe(16);
    expect(payload.whatif?.devices).toBe(devices);
    shown = renderProgram(payload);
    const editors = Array.from(shown.el.querySelectorAll<HTMLInputElement>('[data-role="input-spec"]'));
    expect(editors).toHaveLength(3);
    for (const editor of editors) expect(editor.disabled).toBe(false);
    const note = query(shown.el, '[data-role="whatif-note"]');
    expect(note.hidden).toBe(false);
    expect(note.textContent).toContain(`a child Python with ${devices} simulated CPU devices`);
    expect(note.textContent).toContain(`took ${payload.whatif?.child_seconds.toFixed(1)} s`);
  });

  it("say nothing of a child for an ordinary trace", () => {
    shown = renderProgram(loadProgram("mlp"));
    expect(query(shown.el, '[data-role="whatif-note"]').hidden).toBe(true);
  });
});
