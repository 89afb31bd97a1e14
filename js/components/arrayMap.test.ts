import { describe, expect, it, vi } from "vitest";
import { decodePayload, type Payload } from "../payload/array";
import { FIXTURE_NAMES, loadFixture, loadPythonAnswers } from "../test/fixtures";
import { makePayload } from "../test/payloads";
import { tileColor } from "../util/palette";
import { renderArrayMap } from "./arrayMap";
import { MAP_GROWTH_FOR_LABELS, MAP_MAX_HEIGHT, MAP_MAX_WIDTH, mapSize } from "./arrayMapFrame";
import { chooseLabels } from "./arrayMapLabels";
import { fitTileLabels, NO_LABELS, type TileLabelSizes } from "./labelFit";
import { rulerBands } from "./mapRulers";
import {
  chooseDim,
  defaultPictureDims,
  defaultSlice as defaultSliceOf,
  type SliceChoice,
  visibleTiles,
} from "./slicing";

const defaultSlice = (payload: Payload): SliceChoice => defaultSliceOf(payload, decodePayload(payload).tileCounts);

function draw(payload: Payload, choice: SliceChoice = defaultSlice(payload), onChoice = vi.fn()) {
  const layout = decodePayload(payload);
  const events = { onHover: vi.fn(), onFocus: vi.fn(), onActivate: vi.fn() };
  const view = renderArrayMap(layout, events, new AbortController().signal, { choice, onChoice, fill: tileColor });
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
    expect(t5.querySelector(".sv-tile-index")?.textContent).toBe("[2:4, 2:4]");
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
    expect(first.querySelector(".sv-tile-index")?.textContent).toBe("[0:2]");
  });

  it("shows rank 0 and rank 1 arrays", () => {
    const scalar = draw(loadFixture("scalar")).root;
    expect(tiles(scalar)).toHaveLength(1);
    expect(scalar.querySelector(".sv-badge")?.textContent).toBe("\u00d78");
    expect(scalar.querySelector(".sv-tile-devices")?.textContent).toBe("CPU 0-7");
    const single = draw(loadFixture("single_device")).root;
    expect(tiles(single)).toHaveLength(1);
    expect(single.querySelector(".sv-tile-index")?.textContent).toBe("[0:8]");
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
    expect(redrawn.querySelector(".sv-tile-index")?.textContent).toBe("[0:2, 0:6]");
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

  it("moves focus between tiles with the arrow keys and pins with Enter", () => {
    const { root, events } = draw(loadFixture("mesh2x4_xy"));
    const at = (i: number) => tiles(root)[i];
    at(0).focus();
    expect(events.onFocus).toHaveBeenLastCalledWith({ kind: "tile", tile: 0 });
    at(0).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    at(1).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
    expect(document.activeElement).toBe(at(5));
    expect(tiles(root).filter((t) => t.tabIndex === 0)).toEqual([at(5)]); // one tab stop, where the focus is
    at(5).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    at(6).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    at(7).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    expect(document.activeElement).toBe(at(7)); // the right edge holds
    at(7).dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(events.onActivate).toHaveBeenLastCalledWith({ kind: "tile", tile: 7 });
  });

  it("moves a keyboard cursor and reports hover over the canvas map", () => {
    const { root, events } = draw(loadFixture("abstract_4096")); // 16 rows of 256 tiles
    const canvas = root.querySelector("canvas") as HTMLCanvasElement;
    canvas.focus();
    expect(events.onFocus).toHaveBeenLastCalledWith({ kind: "tile", tile: 0 });
    canvas.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
    canvas.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    expect(events.onFocus).toHaveBeenLastCalledWith({ kind: "tile", tile: 257 });
    canvas.dispatchEvent(new KeyboardEvent("keydown", { key: " ", bubbles: true }));
    expect(events.onActivate).toHaveBeenLastCalledWith({ kind: "tile", tile: 257 });
    // jsdom lays nothing out, so client coordinates are drawing coordinates.
    const { width } = mapSize(decodePayload(loadFixture("abstract_4096")), defaultSlice(loadFixture("abstract_4096")));
    canvas.dispatchEvent(new MouseEvent("pointermove", { clientX: width - 0.5, clientY: 0.5 }));
    expect(events.onHover).toHaveBeenLastCalledWith({ kind: "tile", tile: 255 });
    canvas.dispatchEvent(new MouseEvent("pointermove", { clientX: width + 5, clientY: 0.5 }));
    expect(events.onHover).toHaveBeenLastCalledWith(null);
  });
});

describe("array map size", () => {
  const sizeOf = (payload: Payload, choice: SliceChoice = defaultSlice(payload)) =>
    mapSize(decodePayload(payload), choice);
  const made = (shape: number[], spec: string[][], sizes = [2, 4]) =>
    makePayload({ names: ["x", "y"], sizes, shape, spec });

  it("draws a small array compactly, in proportion", () => {
    const small = sizeOf(made([4, 2], [["x"], []])); // int32[4,2]-like: 2 tiles of 2x2 elements
    expect(small.width).toBeLessThanOrEqual(120);
    expect(small.height).toBeLessThanOrEqual(200);
    expect(small.height / small.width).toBeCloseTo(2); // 4 rows, 2 columns
    const square = sizeOf(made([2, 2], [[], []]));
    expect(square.width).toBe(square.height);
    expect(square.width).toBeLessThanOrEqual(100);
    const scalar = sizeOf(loadFixture("scalar"));
    expect(scalar.width).toBeLessThanOrEqual(100);
  });

  it("leaves each tile room for its labels", () => {
    const fourByEight = sizeOf(loadFixture("mesh2x4_xy")); // 4 x 2 tiles
    expect(fourByEight.width / 4).toBeGreaterThanOrEqual(72);
    expect(fourByEight.height / 2).toBeGreaterThanOrEqual(56);
    expect(fourByEight.width / fourByEight.height).toBeCloseTo(2);
    const row = sizeOf(made([8], [["x", "y"]])); // float32[8] in 8 tiles
    expect(row.width).toBe(MAP_MAX_WIDTH);
  });

  it("grows past the maximum, within limits, rather than crush the labels", () => {
    // float32[8,2] with its rows in 8 tiles: 320 px would leave 40 px a tile.
    const column = sizeOf(made([8, 2], [["x", "y"], []]));
    expect(column.height / 8).toBeGreaterThanOrEqual(56);
    expect(column.height).toBeGreaterThan(MAP_MAX_HEIGHT);
    expect(column.height / column.width).toBeCloseTo(2); // the same proportions (clamped to 1:2) as before growing
    // 32 rows of tiles cannot all get 56 px: the growth stops at its limit.
    const many = sizeOf(made([32, 2], [["x", "y"], []], [4, 8]));
    expect(many.height).toBe(MAP_MAX_HEIGHT * MAP_GROWTH_FOR_LABELS);
  });

  it("fills the width for big arrays and caps the height of tall ones", () => {
    const wide = sizeOf(loadFixture("abstract_4096")); // float32[256,4096]
    expect(wide.width).toBe(MAP_MAX_WIDTH);
    const big = sizeOf(made([1024, 4096], [["x"], ["y"]]));
    expect(big).toEqual({ width: MAP_MAX_WIDTH, height: MAP_MAX_WIDTH / 4 });
    const tall = sizeOf(made([4096, 16], [["x"], []]));
    expect(tall.height).toBe(MAP_MAX_HEIGHT);
    expect(tall.width).toBe(MAP_MAX_HEIGHT / 2); // proportions kept within 1:2
  });

  it("hands the size to the frame and keeps the titles in the map's columns", () => {
    const payload = loadFixture("mesh2x4_xy");
    const { root } = draw(payload);
    const { width, height } = sizeOf(payload);
    const frame = root.querySelector(".sv-map-frame") as HTMLElement;
    expect(frame.style.getPropertyValue("--sv-map-width")).toBe(`${width}px`);
    const area = frame.querySelector(".sv-map-area") as HTMLElement;
    expect(area.style.aspectRatio.replace(/\s/g, "")).toBe(`${width}/${height}`);
    // titles, rulers and map are the frame's own grid items (no wrapper that could outgrow the map)
    expect(Array.from(frame.children).map((c) => c.className)).toEqual([
      "sv-dim-title",
      "sv-ruler sv-ruler-across",
      "sv-ruler-name sv-ruler-name-across",
      "sv-dim-title sv-vertical",
      "sv-ruler sv-ruler-down",
      "sv-ruler-name sv-ruler-name-down",
      "sv-map-area",
    ]);
    // the map, the across title and the across ruler share one column
    const column = (selector: string) => (frame.querySelector(selector) as HTMLElement).style.gridColumn;
    expect(column(".sv-map-area")).toBe("3");
    expect(column(".sv-dim-title:not(.sv-vertical)")).toBe("3");
    expect(column(".sv-ruler-across")).toBe("3");
  });
});

describe("the map's default dimensions", () => {
  const answers = loadPythonAnswers().picture_dims;
  it.each(FIXTURE_NAMES)("%s: the terminal picture's rows and columns", (name) => {
    const payload = loadFixture(name);
    const { rowDim, colDim } = defaultSlice(payload);
    expect([rowDim, colDim]).toEqual(answers[name]);
  });
  it("draws the split dims of float32[4,6,8,2,3] with P('a', None, ('b','c')), not the last two", () => {
    expect(defaultPictureDims([2, 1, 4, 1, 1])).toEqual({ rowDim: 0, colDim: 2 });
    expect(defaultPictureDims([1, 1, 1])).toEqual({ rowDim: 1, colDim: 2 });
    expect(defaultPictureDims([4, 4, 1])).toEqual({ rowDim: 0, colDim: 1 });
  });
});

describe("rulers", () => {
  const rulers = (root: Element) =>
    Array.from(root.querySelectorAll<HTMLElement>('[data-role="ruler"]')).map((r) => ({
      axis: r.getAttribute("data-axis"),
      side: r.classList.contains("sv-ruler-across") ? "across" : "down",
      labels: Array.from(r.querySelectorAll(".sv-ruler-label")).map((l) => l.textContent),
    }));

  it("name the axes that split each drawn dim, major first, with their coordinates", () => {
    const { root } = draw(loadFixture("mesh2x4_xy"));
    expect(rulers(root)).toEqual([
      { axis: "y", side: "across", labels: ["0", "1", "2", "3"] },
      { axis: "x", side: "down", labels: ["0", "1"] },
    ]);
  });

  it("read 'dim 1 is split by (b, c)' at 4096 devices: b labelled, c banded", () => {
    const { root } = draw(loadFixture("abstract_4096"));
    const drawn = rulers(root);
    expect(drawn.map((r) => [r.axis, r.side])).toEqual([
      ["b", "across"],
      ["c", "across"],
      ["a", "down"],
    ]);
    expect(drawn[0].labels).toEqual(Array.from({ length: 16 }, (_, i) => String(i)));
    expect(drawn[1].labels).toEqual([]); // 256 bands of under 2 px: too thin to label
    const c = root.querySelector<HTMLElement>('[data-role="ruler"][data-axis="c"]');
    expect(c?.style.background).toContain("repeating-linear-gradient");
    expect(drawn[2].labels.length).toBeGreaterThan(0);
  });

  it("label every other coordinate where every one does not fit", () => {
    const layout = decodePayload(loadFixture("abstract_4096"));
    const [a] = rulerBands(layout, 0, 110); // 16 bands of under 7 px
    expect(a).toMatchObject({ axis: "a", size: 16, bands: 16, every: 2 });
    const [b, c] = rulerBands(layout, 1, 440);
    expect([b.every, c.every, c.bands]).toEqual([1, 0, 256]);
  });

  it("thin two-digit labels along the top to what their width allows (issue 19.4: no '1011121314')", () => {
    const layout = decodePayload(loadFixture("abstract_4096"));
    // 16 bands of 12.5 px: a line of type fits down the side, but "10" and "11" side by side touch.
    const [down] = rulerBands(layout, 1, 200, "down");
    const [across] = rulerBands(layout, 1, 200, "across");
    expect(down.every).toBe(1);
    expect(across.every).toBe(2);
  });
});

describe("block steppers", () => {
  it("step with the arrow keys, and stop at the ends", () => {
    const payload = loadFixture("mesh3axis"); // float32[8,8,4] over a, (b, c): dim 1 has 4 blocks
    const choice = chooseDim(defaultSlice(payload), "col", 2); // dims 0 and 2 drawn; dim 1 (4 blocks) stepped
    const { root, onChoice } = draw(payload, choice);
    const slider = root.querySelector('[data-role="step"][data-dim="1"]') as HTMLInputElement;
    const press = (key: string) => {
      const event = new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true });
      slider.dispatchEvent(event);
      return event;
    };
    const lastSteps = () => (onChoice.mock.lastCall as [SliceChoice])[0].steps;
    expect(press("ArrowRight").defaultPrevented).toBe(true);
    expect(lastSteps()).toEqual([0, 1, 0]);
    press("End");
    expect(lastSteps()).toEqual([0, 3, 0]);
    const calls = onChoice.mock.calls.length;
    press("ArrowLeft"); // at block 0: nothing to step to
    expect(onChoice.mock.calls.length).toBe(calls);
  });
});

describe("label fitting", () => {
  const sizes: TileLabelSizes = {
    name: { width: 16, height: 14 },
    badge: { width: 20, height: 14 },
    index: { width: 60, height: 13 },
    devices: { width: 64, height: 13 },
    ids: { width: 40, height: 13 },
    gap: 4,
  };
  it("keeps every line in a roomy tile", () => {
    expect(fitTileLabels({ width: 100, height: 60 }, sizes)).toEqual({
      name: true,
      badge: true,
      index: true,
      devices: "full",
    });
  });
  it("drops the range first, then the name, then the badge, as height runs out", () => {
    expect(fitTileLabels({ width: 100, height: 30 }, sizes)).toEqual({
      name: true,
      badge: true,
      index: false,
      devices: "full",
    });
    expect(fitTileLabels({ width: 100, height: 13 }, sizes)).toEqual({
      name: false,
      badge: false,
      index: false,
      devices: "full",
    });
    expect(fitTileLabels({ width: 100, height: 8 }, sizes)).toEqual(NO_LABELS);
  });
  it("drops the platform, then the devices, as width runs out", () => {
    expect(fitTileLabels({ width: 50, height: 60 }, sizes).devices).toBe("ids");
    expect(fitTileLabels({ width: 30, height: 60 }, sizes)).toEqual({
      name: false, // the name and the badge share a line: the badge goes first
      badge: true,
      index: false,
      devices: null,
    });
    expect(fitTileLabels({ width: 18, height: 60 }, sizes)).toEqual({
      name: true, // the badge no longer fits; the name alone does
      badge: false,
      index: false,
      devices: null,
    });
  });
  it("uses a tight padding for a strip of one line rather than show nothing", () => {
    // ShardingWidget(shape=(64, 256)) with spec x: 8 strips of about 14 px.
    const strip = chooseLabels({ width: 440, height: 13.75 }, sizes);
    expect(strip).toEqual({ tight: true, labels: { name: true, badge: true, index: true, devices: "full" } });
    // A narrower strip keeps what fits side by side, most important first.
    expect(chooseLabels({ width: 100, height: 13.75 }, sizes).labels).toEqual({
      name: false,
      badge: true,
      index: false,
      devices: "full",
    });
    expect(chooseLabels({ width: 100, height: 60 }, sizes).tight).toBe(false);
  });
});
