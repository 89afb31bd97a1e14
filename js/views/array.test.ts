/**
 * The array view's browser-only state against new payloads: what is pinned,
 * hovered or previewed is re-derived for each layout or dropped, never shown
 * stale; pinned and hovered look different; the inspector keeps one size.
 */

import { describe, expect, it } from "vitest";
import { loadFixture } from "../test/fixtures";
import { query, renderWidget } from "../test/render";

const inspector = (el: HTMLElement) => query(el, '[data-role="inspector"]');
const facts = (el: HTMLElement): Record<string, string> =>
  Object.fromEntries(
    Array.from(inspector(el).querySelectorAll("dt")).map((dt) => [
      dt.textContent ?? "",
      dt.nextElementSibling?.textContent ?? "",
    ]),
  );
const hover = (element: Element) => element.dispatchEvent(new Event("pointerover", { bubbles: true }));
const leave = (element: Element) => element.dispatchEvent(new Event("pointerleave"));

describe("the inspector after a new payload", () => {
  it("re-derives a pinned device for the new layout (issue 10: device 5 under x, None)", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-device-id="5"]').click();
    expect(facts(el).tile).toBe("t5 [2:4, 2:4]");
    expect(facts(el).replica).toBe("only copy");
    model.fromPython({ payload: loadFixture("x_none"), spec_text: "x" });
    // Device 5 now holds the second row block, replicated on the four devices of x=1.
    expect(inspector(el).querySelector("h3")?.textContent).toContain("Device 5");
    expect(facts(el).tile).toBe("t1 [2:4, 0:8]");
    expect(facts(el).replica).toBe("2 of 4 copies"); // JAX's replica id 1 (y=1): the second copy
    expect(facts(el)["shard shape"]).toBe("(2, 8)");
    expect(query(el, '[data-role="pin-bar"]').textContent).toContain("Device 5");
    expect(el.querySelector('[data-device-id="5"]')?.classList.contains("sv-pinned")).toBe(true);
  });

  it("re-derives the mesh coordinates and memory kind of a pinned device", () => {
    const { el, model } = renderWidget(loadFixture("mesh3axis"));
    query(el, '[data-device-id="5"]').click();
    expect(facts(el)["mesh coords"]).toBe("a=1 b=0 c=1");
    model.fromPython({ payload: loadFixture("pinned_host") });
    expect(facts(el)["mesh coords"]).toBe("x=1 y=1");
    expect(facts(el)["memory kind"]).toBe("pinned_host");
    model.fromPython({ payload: loadFixture("mesh2x4_xy") });
    expect(facts(el)["memory kind"]).toBe("device");
  });

  it("keeps a pinned tile by its index block, and drops it when the block is gone", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-tile="4"]').click(); // [2:4, 0:2]
    expect(inspector(el).querySelector("h3")?.textContent).toContain("Tile t4");
    model.fromPython({ payload: loadFixture("pinned_host") }); // the same blocks on host memory
    expect(facts(el).index).toBe("[2:4, 0:2]");
    model.fromPython({ payload: loadFixture("x_none") }); // [2:4, 0:2] is no block of x, None
    expect(inspector(el).getAttribute("data-showing")).toBe("none");
    expect(el.querySelector(".sv-pinned")).toBeNull();
    expect(query(el, '[data-role="pin-bar"]').textContent).not.toContain("Tile");
  });

  it("never names a tile the layout does not have", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-tile="6"]').click();
    model.fromPython({ payload: loadFixture("scalar") });
    expect(inspector(el).textContent).not.toContain("t6");
    expect(inspector(el).getAttribute("data-showing")).toBe("none");
  });

  it("drops a device the new mesh does not have", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-device-id="5"]').click();
    model.fromPython({ payload: loadFixture("single_device") }); // device 0 only
    expect(inspector(el).getAttribute("data-showing")).toBe("none");
  });

  it("drops a preview table of the old layout", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-device-id="5"]').click();
    query(el, '[data-role="preview"]').click();
    model.message({
      kind: "preview",
      device: 5,
      values: [[10]],
      row_start: 2,
      col_start: 2,
      rows: 1,
      cols: 1,
      index: [
        [2, 4],
        [2, 4],
      ],
    });
    expect(el.querySelector('[data-role="preview-table"]')).not.toBeNull();
    model.fromPython({ payload: loadFixture("x_none") });
    expect(el.querySelector('[data-role="preview-table"]')).toBeNull();
    expect(el.querySelector('[data-role="preview"]')).not.toBeNull(); // still pinned, ready to preview again
  });
});

describe("pinned, hovered and left", () => {
  it("marks the pinned device apart from the hovered one", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    const cell = (id: number) => query(el, `[data-device-id="${id}"]`);
    cell(2).click();
    hover(cell(6));
    expect(cell(2).classList.contains("sv-pinned")).toBe(true);
    expect(cell(6).classList.contains("sv-pinned")).toBe(false);
    expect(cell(6).classList.contains("sv-active")).toBe(true);
    expect(inspector(el).querySelector("h3")?.textContent).toBe("Device 6");
    expect(query(el, '[data-role="pin-bar"]').textContent).toContain("Device 2");
  });

  it("after the pointer leaves, the inspector and the highlight both show the pin, or both nothing", () => {
    const { el } = renderWidget(loadFixture("replicated_sum"));
    const mesh = query(el, ".sv-mesh");
    hover(query(el, '[data-device-id="4"]'));
    leave(mesh);
    expect(inspector(el).getAttribute("data-showing")).toBe("none");
    expect(el.querySelectorAll(".sv-partner")).toHaveLength(0);
    query(el, '[data-device-id="1"]').click();
    hover(query(el, '[data-device-id="4"]'));
    leave(mesh);
    expect(inspector(el).querySelector("h3")?.textContent).toContain("Device 1");
    const lit = Array.from(el.querySelectorAll(".sv-mesh .sv-partner")).map((c) => c.getAttribute("data-device-id"));
    expect(lit).toEqual(["1", "5"]);
    expect(el.querySelector(".sv-map .sv-partner")?.getAttribute("data-tile")).toBe("1");
  });

  it("unpins with Escape or the Unpin button", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    query(el, '[data-device-id="2"]').click();
    query(el, '[data-device-id="2"]').dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(el.querySelector(".sv-pinned")).toBeNull();
    query(el, '[data-tile="3"]').click();
    expect(el.querySelector('[data-tile="3"]')?.classList.contains("sv-pinned")).toBe(true);
    query(el, '[data-role="unpin"]').click();
    expect(el.querySelector(".sv-pinned")).toBeNull();
  });

  it("sizes the inspector for the longest target, whatever it shows", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    const rows = () => inspector(el).style.getPropertyValue("--sv-inspector-rows");
    const empty = rows();
    hover(query(el, '[data-device-id="1"]'));
    const device = rows();
    expect(inspector(el).querySelectorAll("dt").length).toBe(Number(device));
    hover(query(el, '[data-tile="1"]'));
    expect([empty, rows()]).toEqual([device, device]);
    expect(inspector(el).querySelectorAll("dt").length).toBeLessThan(Number(device));
  });
});

describe("what the inspector says about devices", () => {
  it("names a CPU's platform once", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    hover(query(el, '[data-device-id="0"]'));
    expect(facts(el).platform).toBe("cpu");
  });

  it("gives virtual devices neither a platform nor a process, and marks the layout a what-if", () => {
    const { el } = renderWidget(loadFixture("abstract_256"));
    hover(query(el, '[data-device-id="9"]'));
    expect(inspector(el).querySelector("h3")?.textContent).toBe("Device 9 (virtual)");
    expect(Object.keys(facts(el))).not.toContain("platform");
    expect(Object.keys(facts(el))).not.toContain("process");
    expect(query(el, '[data-role="what-if"]').textContent).toContain("virtual devices");
  });

  it("marks a what-if on real devices as one, and keeps their platform", () => {
    const { el } = renderWidget(loadFixture("what_if_thin"));
    expect(query(el, '[data-role="what-if"]').textContent).toContain("no array");
    hover(query(el, '[data-device-id="3"]'));
    expect(facts(el).platform).toBe("cpu");
    expect(renderWidget(loadFixture("mesh2x4_xy")).el.querySelector('[data-role="what-if"]')).toBeNull();
  });

  it("shows the physical attributes devices carry, and offers them as cell labels", () => {
    const { el } = renderWidget(loadFixture("physical"));
    hover(query(el, '[data-device-id="5"]')); // chip (1, 0), core 1
    expect(facts(el)["physical coords"]).toBe("(1, 0, 0)");
    expect(facts(el)["core on chip"]).toBe("1");
    expect(facts(el).platform).toBe("tpu \u00b7 TPU v5");
    const label = query<HTMLSelectElement>(el, '[data-role="cell-label"]');
    label.value = "physical";
    label.dispatchEvent(new Event("change"));
    expect(query(el, '[data-device-id="5"] .sv-cell-id').textContent).toBe("1,0,0");
    expect(query(el, '[data-device-id="2"] .sv-cell-id').textContent).toBe("0,1,0");
  });

  it("offers no physical labelling where devices carry none", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    expect(el.querySelector('[data-role="cell-label"]')).toBeNull();
    hover(query(el, '[data-device-id="5"]'));
    expect(Object.keys(facts(el))).not.toContain("physical coords");
  });
});

describe("single device", () => {
  it("says a mesh can be typed, and offers no empty axis pickers", () => {
    const { el } = renderWidget(loadFixture("single_device"));
    expect(query(el, '[data-role="no-mesh-note"]').textContent).toContain("Type a mesh above");
    expect(el.textContent).not.toContain("no mesh to edit");
    expect(el.querySelector('[data-role="spec-axis"]')).toBeNull();
    expect(query<HTMLInputElement>(el, '[data-role="mesh-input"]').disabled).toBe(false);
  });

  it("offers no picker on a dimension once every axis is used", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy")); // x and y both used
    expect(el.querySelector('[data-role="spec-axis"]')).toBeNull();
    const open = renderWidget(loadFixture("x_none")).el; // y is free
    expect(open.querySelectorAll('[data-role="spec-axis"]')).toHaveLength(2);
  });
});

describe("the code block", () => {
  it("shows each payload's code in place, stays open, and copies what it shows", async () => {
    const copied: string[] = [];
    Object.defineProperty(globalThis.navigator, "clipboard", {
      value: { writeText: async (text: string) => void copied.push(text) },
      configurable: true,
    });
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    const block = query<HTMLDetailsElement>(el, "details.sv-code-block");
    block.open = true;
    model.fromPython({ payload: loadFixture("x_none") });
    expect(query<HTMLDetailsElement>(el, "details.sv-code-block")).toBe(block);
    expect(block.open).toBe(true);
    const code = query(el, '[data-role="code"]').textContent;
    expect(code).toBe(loadFixture("x_none").code);
    query(el, '[data-role="copy-code"]').click();
    await Promise.resolve();
    expect(copied).toEqual([code]);
  });
});

describe("stepping through the blocks of an undrawn dimension", () => {
  it("dims the devices that hold nothing of the slice shown, and follows the stepper's arrow keys", () => {
    const { el } = renderWidget(loadFixture("mesh3axis")); // float32[8@a, 8@(b,c), 4] on a=2, b=2, c=2
    const across = query<HTMLSelectElement>(el, '[data-role="col-dim"]');
    across.value = "2"; // draw dims 0 and 2; dim 1 (4 blocks, by b then c) is stepped
    across.dispatchEvent(new Event("change"));
    const outside = () =>
      Array.from(el.querySelectorAll(".sv-cell.sv-outside"))
        .map((c) => Number(c.getAttribute("data-device-id")))
        .sort((a, b) => a - b);
    // Block 0 of dim 1 is b=0, c=0: devices 0 and 4 (a=0 and a=1) hold it.
    expect(outside()).toEqual([1, 2, 3, 5, 6, 7]);
    const slider = query(el, '[data-role="step"][data-dim="1"]');
    slider.focus();
    slider.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true, cancelable: true }));
    // Block 1 is b=0, c=1: devices 1 and 5; the stepper keeps the focus for the next press.
    expect(outside()).toEqual([0, 2, 3, 4, 6, 7]);
    expect(document.activeElement?.getAttribute("data-role")).toBe("step");
    expect(query(el, '[data-role="step"][data-dim="1"]').closest("label")?.textContent).toContain("block 2 of 4");
  });
});
