import { describe, expect, it } from "vitest";
import type { Payload } from "../payload/array";
import { loadFixture } from "../test/fixtures";
import { findCase, loadParity } from "../test/parity";
import { query } from "../test/render";
import { type EditableTrait, payloadTraits, type SyncedTraits } from "../traits/array";
import { ShardvizView } from "../views/array";
import { arrayEngine } from "./engines";
import { LOCAL_NOTE } from "./kinds";
import { PageHost } from "./page";

function page(payload: Payload): { el: HTMLElement; host: PageHost<SyncedTraits, EditableTrait> } {
  const el = document.createElement("div");
  document.body.append(el);
  const host = new PageHost<SyncedTraits, EditableTrait>(payloadTraits(payload), arrayEngine(false), LOCAL_NOTE);
  const view = new ShardvizView(el, host);
  host.onChange((keys) => view.update(keys));
  return { el, host };
}

function commit(el: HTMLElement, role: string, text: string): void {
  const input = query<HTMLInputElement>(el, `[data-role="${role}"]`);
  input.value = text;
  input.dispatchEvent(new Event("input"));
  input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
}

const typeLine = (el: HTMLElement): string | null => query(el, '[data-role="type"]').textContent;

/** A case that starts from a what-if on an AbstractMesh. */
function startsAbstract(c: { start: number }): boolean {
  return loadParity().payloads[c.start].mesh?.abstract === true;
}

describe("a saved page edits in the page", () => {
  it("re-meshes a real array's own devices and copies code for the edited layout", () => {
    const { el } = page(loadFixture("mesh2x4_xy"));
    commit(el, "mesh-input", "x=4, y=2");
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
    expect(query(el, ".sv-mesh").getAttribute("data-device-count")).toBe("8");
    expect(query(el, '[data-role="code"]').textContent).toContain(
      "jax.make_mesh((4, 2), ('x', 'y'), axis_types=(AxisType.Explicit, AxisType.Explicit), devices=jax.devices()[:8])",
    );
    expect(el.querySelector('[role="alert"]')).toBeNull();
  });

  it("refuses other devices of the machine beside the mesh editor, naming its limit", () => {
    const { el } = page(loadFixture("mesh2x4_xy"));
    commit(el, "mesh-input", "x=2, y=2");
    const alert = query(el, '[role="alert"]');
    expect(alert.getAttribute("data-source")).toBe("mesh");
    expect(alert.textContent).toContain("this page can re-mesh only its own 8 devices");
    expect(query(el, '[data-role="mesh-input"]').closest(".sv-editor")?.contains(alert)).toBe(true);
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
    // Beyond the machine, a real array is refused as the kernel refuses it.
    commit(el, "mesh-input", "x=4, y=4");
    expect(query(el, '[role="alert"]').textContent).toBe(
      "the mesh x=4, y=4 needs 16 devices but the machine this page was saved on has 12; use at most 12, " +
        "or lay out a shape without an array for a what-if",
    );
  });

  it("takes any mesh on an AbstractMesh what-if, as Python does", () => {
    const { case: c, start } = findCase(
      (c) =>
        c.kernel_only === null &&
        startsAbstract(c) &&
        Object.keys(c.edit).join() === "mesh_text" &&
        "payload" in c.python &&
        loadParity().payloads[(c.python as { payload: number }).payload].devices.count !==
          loadParity().payloads[c.start].devices.count,
    );
    const { el, host } = page(start);
    commit(el, "mesh-input", c.edit.mesh_text as string);
    const python = loadParity().payloads[(c.python as { payload: number }).payload];
    expect(JSON.stringify(host.get("payload"))).toBe(JSON.stringify(python));
    expect(typeLine(el)).toBe(python.type_str);
  });

  it("re-meshes the 4096-device what-if", () => {
    const { el } = page(loadFixture("abstract_4096"));
    commit(el, "mesh-input", "a=64, b=64");
    expect(query(el, ".sv-mesh").getAttribute("data-device-count")).toBe("4096");
    expect(query(el, '[data-role="notice"]').textContent).toBe(
      "The spec changed with the mesh: dimension 1: dropped axis 'c', which the new mesh lacks.",
    );
    expect(query<HTMLInputElement>(el, '[data-role="spec-input"]').value).toBe("a, b");
    commit(el, "mesh-input", "x=8");
    expect(query(el, ".sv-mesh").getAttribute("data-device-count")).toBe("8");
    expect(query(el, '[data-role="code"]').textContent).toContain("AbstractMesh((8,), ('x',)");
  });
});
