import { describe, expect, it, vi } from "vitest";
import { renderArrayMap } from "./arrayMap";
import { decodePayload, type Payload } from "./payload";
import { chooseDim, defaultSlice, type SliceChoice, visibleTiles } from "./slicing";
import { loadFixture } from "./test/fixtures";
import { makePayload } from "./test/payloads";

function draw(payload: Payload, choice: SliceChoice = defaultSlice(payload), onChoice = vi.fn()) {
  const layout = decodePayload(payload);
  const events = { onHover: vi.fn(), onFocus: vi.fn(), onActivate: vi.fn() };
  const view = renderArrayMap(layout, events, new AbortController().signal, { choice, onChoice });
  document.body.append(view.element);
  return { root: view.element, view, events, onChoice, layout };
}

const tiles = (root: Element) => Array.from(root.querySelectorAll<HTMLElement>("[data-tile]"));

describe("array map", () => {
  it("draws the 8 tiles of float32[4,8] in proportion, labelled", () => {
    const { root } = draw(loadFixture("mesh2x4_xy"));
    expect(root.getAttribute("data-tile-count")).toBe("8");
    expect(tiles(root).map((t) => t.getAttribute("data-tile"))).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    const t5 = tiles(root)[5];
    expect(t5.style.left).toBe("25%");
    expect(t5.style.width).toBe("25%");
    expect(t5.style.top).toBe("50%");
    expect(t5.style.height).toBe("50%");
    expect(t5.querySelector(".sv-tile-index")?.textContent).toBe("2:4, 2:4");
    expect(t5.querySelector(".sv-tile-devices")?.textContent).toBe("CPU 5");
    expect(t5.getAttribute("aria-label")).toBe("Tile 5 [2:4, 2:4] on devices 5");
    expect(root.querySelector(".sv-badge")).toBeNull();
  });

  it("badges replicated tiles and lists their devices compressed", () => {
    const { root } = draw(loadFixture("replicated_sum"));
    expect(tiles(root)).toHaveLength(4);
    const first = tiles(root)[0];
    expect(first.querySelector(".sv-badge")?.textContent).toBe("\u00d72");
    expect(first.querySelector(".sv-tile-devices")?.textContent).toBe("CPU 0,4");
    expect(first.querySelector(".sv-tile-index")?.textContent).toBe("0:2");
  });

  it("shows rank 0 and rank 1 arrays", () => {
    const scalar = draw(loadFixture("scalar")).root;
    expect(tiles(scalar)).toHaveLength(1);
    expect(scalar.querySelector(".sv-badge")?.textContent).toBe("\u00d78");
    expect(scalar.querySelector(".sv-tile-devices")?.textContent).toBe("CPU 0-7");
    const single = draw(loadFixture("single_device")).root;
    expect(tiles(single)).toHaveLength(1);
    expect(single.querySelector(".sv-tile-index")?.textContent).toBe("0:8");
  });

  it("shows the partitioned dims of a rank-4 array first and steps the others", () => {
    const payload = loadFixture("rank4");
    const choice = defaultSlice(payload);
    expect([choice.rowDim, choice.colDim]).toEqual([1, 3]);
    const { root } = draw(payload, choice);
    expect(tiles(root)).toHaveLength(8);
    expect(Array.from(root.querySelectorAll('[data-role="step"]')).map((s) => s.getAttribute("data-dim"))).toEqual([
      "0",
      "2",
    ]);
    expect((root.querySelector('[data-role="row-dim"]') as HTMLSelectElement).value).toBe("1");
    expect((root.querySelector('[data-role="col-dim"]') as HTMLSelectElement).value).toBe("3");
  });

  it("lets the user pick which two dims are drawn", () => {
    const payload = loadFixture("rank4");
    const { root, onChoice } = draw(payload);
    const across = root.querySelector('[data-role="col-dim"]') as HTMLSelectElement;
    across.value = "2";
    across.dispatchEvent(new Event("change"));
    const next = onChoice.mock.calls[0][0] as SliceChoice;
    expect([next.rowDim, next.colDim]).toEqual([1, 2]);
    const redrawn = draw(payload, next).root;
    expect(tiles(redrawn)).toHaveLength(2); // dim 1 cut in 2, dim 2 whole
    expect(redrawn.querySelector(".sv-tile-index")?.textContent).toBe("0:2, 0:6");
  });

  it("steps through a cut dimension that is not drawn", () => {
    const payload = loadFixture("mesh3axis");
    const layout = decodePayload(payload);
    const choice = chooseDim(defaultSlice(payload), "col", 2); // show dims 0 and 2; dim 1 (cut in 4) is stepped
    expect([choice.rowDim, choice.colDim]).toEqual([0, 2]);
    expect(visibleTiles(layout, choice).map((v) => v.tile)).toEqual([0, 4]);
    const stepped = { ...choice, steps: [0, 3, 0] };
    expect(visibleTiles(layout, stepped).map((v) => v.tile)).toEqual([3, 7]);
    const { root, onChoice } = draw(payload, choice);
    const slider = root.querySelector('[data-role="step"][data-dim="1"]') as HTMLInputElement;
    expect(slider.max).toBe("3");
    slider.value = "3";
    slider.dispatchEvent(new Event("change"));
    expect((onChoice.mock.calls[0][0] as SliceChoice).steps).toEqual([0, 3, 0]);
  });

  it("keeps 256 visible tiles in the DOM and draws more on a canvas", () => {
    const at = (n: number) =>
      draw(makePayload({ names: ["x", "y"], sizes: [n, 16], shape: [n * 2, 32], spec: [["x"], ["y"]] })).root;
    const dom = at(16);
    expect(dom.getAttribute("data-render")).toBe("dom");
    expect(tiles(dom)).toHaveLength(256);
    const canvas = at(17);
    expect(canvas.getAttribute("data-render")).toBe("canvas");
    expect(canvas.getAttribute("data-tile-count")).toBe("272");
  });

  it("draws 4096 visible tiles on a canvas and reports the count", () => {
    const { root } = draw(loadFixture("abstract_4096"));
    expect(root.getAttribute("data-render")).toBe("canvas");
    expect(root.getAttribute("data-tile-count")).toBe("4096");
    expect(tiles(root)).toHaveLength(0);
    expect(root.querySelector("canvas")).not.toBeNull();
  });

  it("lights up the tile a device holds", () => {
    const { root, view } = draw(loadFixture("mesh2x4_xy"));
    view.setHighlight({ tile: 6, position: 6 });
    expect(root.querySelectorAll(".sv-partner")).toHaveLength(1);
    expect(root.querySelector(".sv-partner")?.getAttribute("data-tile")).toBe("6");
  });

  it("reports hover on a tile", () => {
    const { root, events } = draw(loadFixture("mesh2x4_xy"));
    tiles(root)[3].dispatchEvent(new Event("pointerover", { bubbles: true }));
    expect(events.onHover).toHaveBeenLastCalledWith({ kind: "tile", tile: 3 });
  });
});
