import { afterEach, describe, expect, it, vi } from "vitest";
import { decodePayload, type Payload } from "../payload/array";
import { type FixtureName, loadFixture } from "../test/fixtures";
import { makePayload } from "../test/payloads";
import { tileColor } from "../util/palette";
import type { PictureEvents } from "./interaction";
import { renderMeshGrid } from "./meshGrid";
import { canvasGeometry, domCellOrigins, hitTest, neighbour } from "./meshLayout";

function draw(payload: Payload, events: Partial<PictureEvents> = {}) {
  const controller = new AbortController();
  const view = renderMeshGrid(
    decodePayload(payload),
    { onHover: () => {}, onFocus: () => {}, onActivate: () => {}, ...events },
    controller.signal,
    { fill: tileColor, label: "id" },
  );
  document.body.append(view.element);
  return { view, root: view.element, controller };
}

const cells = (root: Element) => Array.from(root.querySelectorAll<HTMLElement>("[data-device-id]"));

/** The cells a block's leaf grid owns (the cells are one layer over the frames; aria-owns groups them). */
const owned = (block: Element) =>
  (block.querySelector("[aria-owns]")?.getAttribute("aria-owns") ?? "")
    .split(" ")
    .map((id) => document.getElementById(id) as HTMLElement);

describe("mesh grid (DOM path)", () => {
  it("draws one labelled cell per device of a 2x4 mesh", () => {
    const { root } = draw(loadFixture("mesh2x4_xy"));
    expect(root.getAttribute("data-device-count")).toBe("8");
    expect(cells(root).map((c) => c.getAttribute("data-device-id"))).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    for (const cell of cells(root)) {
      expect(cell.querySelector(".sv-cell-id")?.textContent).toBe(cell.getAttribute("data-device-id"));
      expect(cell.getAttribute("tabindex")).not.toBeNull();
      expect(cell.getAttribute("aria-label")).toMatch(/^Device \d, x=\d y=\d, tile \d/);
    }
    // axis names and sizes along the edges
    const titles = Array.from(root.querySelectorAll(".sv-axis-title")).map((t) => t.textContent);
    expect(titles).toEqual(["y (4) \u2192", "x (2) \u2192"]);
  });

  it("colours a cell by the tile it holds, shared by replicas", () => {
    const { root } = draw(loadFixture("replicated_sum"));
    const colour = (id: number) =>
      (root.querySelector(`[data-device-id="${id}"]`) as HTMLElement).style.backgroundColor;
    expect(colour(0)).toBe(colour(4));
    expect(colour(1)).toBe(colour(5));
    expect(colour(0)).not.toBe(colour(1));
    expect(cells(root)[0].querySelector(".sv-cell-tile")?.textContent).toBe("t0");
  });

  it("keeps tile colours across a memory-kind change", () => {
    const before = draw(loadFixture("mesh2x4_xy")).root;
    const after = draw(loadFixture("pinned_host")).root;
    expect(cells(after).map((c) => c.style.backgroundColor)).toEqual(cells(before).map((c) => c.style.backgroundColor));
    const probe = document.createElement("div");
    probe.style.backgroundColor = tileColor(5);
    expect(cells(after)[5].style.backgroundColor).toBe(probe.style.backgroundColor);
  });

  it("nests a 3-axis mesh into labelled blocks", () => {
    const { root } = draw(loadFixture("mesh3axis"));
    const blocks = Array.from(root.querySelectorAll(".sv-block"));
    expect(blocks.map((b) => b.querySelector(".sv-block-caption")?.textContent)).toEqual(["a = 0", "a = 1"]);
    for (const [i, block] of blocks.entries()) {
      expect(block.getAttribute("data-axis")).toBe("a");
      const inside = owned(block).map((c) => Number(c.getAttribute("data-device-id")));
      expect(inside).toEqual([0, 1, 2, 3].map((j) => i * 4 + j));
      // every level labelled: the inner axes run along each block's edges
      expect(Array.from(block.querySelectorAll(".sv-axis-title")).map((t) => t.textContent)).toEqual([
        "c (2) \u2192",
        "b (2) \u2192",
      ]);
    }
  });

  it("labels four levels of a 4-axis mesh", () => {
    const payload = makePayload({
      names: ["p", "q", "r", "s"],
      sizes: [2, 3, 2, 2],
      shape: [4, 6],
      spec: [["p"], ["q"]],
    });
    const { root } = draw(payload);
    expect(cells(root)).toHaveLength(24);
    expect(root.querySelectorAll('.sv-block[data-axis="p"]')).toHaveLength(2);
    expect(root.querySelectorAll('.sv-block[data-axis="q"]')).toHaveLength(6);
  });

  it("hatches devices another process owns and says so", () => {
    const { root } = draw(loadFixture("multiprocess"));
    const remote = cells(root).filter((c) => c.classList.contains("sv-remote"));
    expect(remote.map((c) => c.getAttribute("data-device-id"))).toEqual(["2048", "2049", "2050", "2051"]);
    expect(remote[0].getAttribute("aria-label")).toContain("not addressable");
    expect(cells(root)[0].classList.contains("sv-remote")).toBe(false);
  });

  it("draws a single device without a mesh", () => {
    const { root } = draw(loadFixture("single_device"));
    expect(cells(root)).toHaveLength(1);
    expect(root.getAttribute("aria-label")).toContain("single device");
  });

  it("highlights the partners of a tile", () => {
    const { root, view } = draw(loadFixture("replicated_sum"));
    view.setHighlight({ tile: 1, position: 1 });
    const lit = cells(root).filter((c) => c.classList.contains("sv-partner"));
    expect(lit.map((c) => c.getAttribute("data-device-id"))).toEqual(["1", "5"]);
    expect(root.classList.contains("sv-highlighting")).toBe(true);
    view.setHighlight(null);
    expect(root.querySelectorAll(".sv-partner")).toHaveLength(0);
  });

  it("moves between devices with the arrow keys (roving tabindex)", () => {
    const onFocus = vi.fn();
    const { root } = draw(loadFixture("mesh2x4_xy"), { onFocus });
    const at = (id: number) => root.querySelector(`[data-device-id="${id}"]`) as HTMLElement;
    at(0).focus();
    at(0).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    expect(document.activeElement).toBe(at(1));
    at(1).dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
    expect(document.activeElement).toBe(at(5));
    expect(at(5).tabIndex).toBe(0);
    expect(at(0).tabIndex).toBe(-1);
    expect(onFocus).toHaveBeenLastCalledWith({ kind: "device", position: 5 });
  });

  it("reports hover and activation", () => {
    const onHover = vi.fn();
    const onActivate = vi.fn();
    const { root } = draw(loadFixture("mesh2x4_xy"), { onHover, onActivate });
    const cell = root.querySelector('[data-device-id="6"] .sv-cell-id') as HTMLElement;
    cell.dispatchEvent(new Event("pointerover", { bubbles: true }));
    expect(onHover).toHaveBeenLastCalledWith({ kind: "device", position: 6 });
    cell.click();
    expect(onActivate).toHaveBeenLastCalledWith({ kind: "device", position: 6 });
  });

  it("keeps the DOM path up to 256 devices", () => {
    const { root } = draw(
      makePayload({ names: ["a", "b", "c"], sizes: [4, 8, 8], shape: [64, 64], spec: [["a"], ["b", "c"]] }),
    );
    expect(root.getAttribute("data-render")).toBe("dom");
    expect(cells(root)).toHaveLength(256);
  });

  it("past 64 devices fills the cells from one canvas under them, each cell saying its colour", () => {
    const payload = makePayload({ names: ["a", "b", "c"], sizes: [4, 8, 8], shape: [64, 64], spec: [["a"], ["c"]] });
    const layout = decodePayload(payload);
    const { root, view } = draw(payload);
    const canvas = root.querySelector("canvas.sv-cell-fills");
    expect(canvas?.getAttribute("aria-hidden")).toBe("true");
    // Before the cells' layer: the cells are drawn over their fills.
    expect(canvas?.nextElementSibling?.classList.contains("sv-cells")).toBe(true);
    const all = cells(root);
    for (const [k, cell] of all.entries()) {
      expect(cell.style.backgroundColor).toBe("");
      expect(cell.getAttribute("data-fill")).toBe(tileColor(layout.tileOf[k]));
    }
    // A spec edit over the same devices repaints what the cells say (the canvas with them).
    const next = decodePayload(
      makePayload({ names: ["a", "b", "c"], sizes: [4, 8, 8], shape: [64, 64], spec: [["b"], []] }),
    );
    expect(view.update?.(next, { fill: tileColor })).toBe(true);
    expect(cells(root)).toEqual(all);
    for (const [k, cell] of all.entries()) expect(cell.getAttribute("data-fill")).toBe(tileColor(next.tileOf[k]));
    // Up to 64 devices each cell keeps its own background (and its fade when dimmed).
    const small = draw(loadFixture("mesh3axis")).root;
    expect(small.querySelector("canvas")).toBeNull();
    expect(cells(small).every((c) => c.style.backgroundColor !== "" && !c.hasAttribute("data-fill"))).toBe(true);
  });
});

/** A 2D context that records the texts drawn (with where and in which ink), the images copied (with the
 * clip of cells they were copied through) and counts what else is drawn. */
function recordingContext() {
  const texts: { text: string; x: number; y: number; ink: string; align: string; baseline: string; font: string }[] =
    [];
  let fills = 0;
  const images: unknown[] = [];
  const copies: { alpha: number; clip: number[][] | null }[] = [];
  let path: number[][] = [];
  let clip: number[][] | null = null;
  const saved: (number[][] | null)[] = [];
  const ctx = {
    font: "",
    fillStyle: "",
    strokeStyle: "",
    lineWidth: 1,
    globalAlpha: 1,
    textAlign: "start",
    textBaseline: "alphabetic",
    setTransform: () => {},
    clearRect: () => {},
    save: () => {
      saved.push(clip);
    },
    restore: () => {
      clip = saved.pop() ?? null;
    },
    beginPath: () => {
      path = [];
    },
    rect: (x: number, y: number, w: number, h: number) => path.push([x, y, w, h]),
    clip: () => {
      clip = path;
    },
    translate: () => {},
    rotate: () => {},
    setLineDash: () => {},
    strokeRect: () => {},
    createPattern: () => null,
    fillRect: () => {
      fills += 1;
    },
    // 6px a character: a device id of up to three digits fits a 23px square, four do not fit 9px.
    measureText: (text: string) => ({ width: 6 * text.length }),
    fillText: (text: string, x: number, y: number) =>
      texts.push({ text, x, y, ink: ctx.fillStyle, align: ctx.textAlign, baseline: ctx.textBaseline, font: ctx.font }),
    drawImage: (image: unknown) => {
      images.push(image);
      copies.push({ alpha: ctx.globalAlpha, clip });
    },
  };
  return { ctx, texts, fills: () => fills, images, copies };
}

describe("mesh grid (canvas path)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  /** Draws `payload` on a recording context; `paint()` runs the frame the grid waits for and returns what it drew. */
  function drawRecorded(payload: Payload) {
    vi.useFakeTimers({ toFake: ["requestAnimationFrame", "cancelAnimationFrame", "setTimeout", "clearTimeout"] });
    let recording = recordingContext();
    vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockImplementation(
      () => recording.ctx as unknown as CanvasRenderingContext2D,
    );
    const drawn = draw(payload);
    /** The next frame's paint (and not the idle work after it). */
    const paint = () => {
      recording = recordingContext();
      vi.advanceTimersByTime(20);
      return recording;
    };
    const idle = () => vi.advanceTimersByTime(100);
    return { ...drawn, paint, idle };
  }

  it("past 256 devices draws one canvas with each device's id inside its own square", () => {
    const payload = loadFixture("abstract_512");
    const layout = decodePayload(payload);
    const { root, paint } = drawRecorded(payload);
    expect(root.getAttribute("data-render")).toBe("canvas");
    expect(cells(root)).toHaveLength(0);
    // The ids' ink and type are the theme's (widget.css sets them on the widget's root).
    root.style.setProperty("--sv-tile-ink", "#0a0b0c");
    root.style.setProperty("--sv-font", "Tiny Sans");
    const { texts } = paint();
    const geometry = canvasGeometry(layout.meshSizes, layout.payload.mesh?.names ?? []);
    const ids = texts.filter((t) => /^\d+$/.test(t.text));
    expect(ids.map((t) => t.text).sort()).toEqual(Array.from(layout.ids, String).sort());
    for (const { text, x, y } of ids) expect(String(layout.ids[hitTest(geometry, x, y)])).toBe(text);
    expect(new Set(ids.map((t) => `${t.ink} ${t.font}`))).toEqual(new Set(["#0a0b0c 600 10px Tiny Sans"]));
  });

  it("draws no ids where a device's square is too small for them (4096 devices)", () => {
    const { paint } = drawRecorded(loadFixture("abstract_4096"));
    const { texts, fills } = paint();
    expect(fills()).toBeGreaterThanOrEqual(4096);
    expect(texts.filter((t) => /^\d+$/.test(t.text))).toEqual([]);
  });

  it("keeps its canvas through spec and mesh edits, and hands a grid of 256 devices back", () => {
    const sizes = [8, 8, 8];
    const start = makePayload({ names: ["a", "b", "c"], sizes, shape: [64, 64], spec: [["a"], ["b"]] });
    const { root, view, paint, idle } = drawRecorded(start);
    const canvas = root.querySelector("canvas");
    // A mesh's first paint draws its ids itself; its ids' layer is drawn once the page is idle.
    expect(paint().texts.filter((t) => /^\d+$/.test(t.text))).toHaveLength(512);
    idle();
    const spec = decodePayload(makePayload({ names: ["a", "b", "c"], sizes, shape: [64, 64], spec: [["c"], []] }));
    expect(view.update?.(spec, { fill: tileColor })).toBe(true);
    expect(root.querySelector("canvas")).toBe(canvas);
    const specPaint = paint();
    expect(specPaint.fills()).toBeGreaterThanOrEqual(512);
    // The same mesh: its ids are copied from that layer, none shaped again.
    expect(specPaint.texts.filter((t) => /^\d+$/.test(t.text))).toEqual([]);
    expect(specPaint.images).toHaveLength(1);
    const mesh = decodePayload(makePayload({ names: ["a", "b"], sizes: [8, 64], shape: [64, 64], spec: [["a"], []] }));
    expect(view.update?.(mesh, { fill: tileColor })).toBe(true);
    expect(root.querySelector("canvas")).toBe(canvas);
    expect(root.getAttribute("aria-label")).toBe("Device mesh a=8, b=64");
    const geometry = canvasGeometry(mesh.meshSizes, ["a", "b"]);
    for (const { text, x, y } of paint().texts.filter((t) => /^\d+$/.test(t.text))) {
      expect(String(mesh.ids[hitTest(geometry, x, y)])).toBe(text);
    }
    idle();
    // Back to the first mesh: its layer was kept (the last two meshes' are), so no id is shaped.
    expect(view.update?.(spec, { fill: tileColor })).toBe(true);
    const back = paint();
    expect(back.texts.filter((t) => /^\d+$/.test(t.text))).toEqual([]);
    expect(back.images).toHaveLength(1);
    const small = decodePayload(makePayload({ names: ["a", "b"], sizes: [4, 64], shape: [64, 64], spec: [["a"], []] }));
    expect(view.update?.(small, { fill: tileColor })).toBe(false);
  });

  /** A grid painted as the memory heat map paints it (`inkOf` may change between paints), on a recording context. */
  function paintedGrid(fixture: FixtureName, inkOf: () => (k: number) => string) {
    const layout = decodePayload(loadFixture(fixture));
    const paint = {
      fill: (k: number) => (inkOf()(k) === "#ffffff" ? "#202020" : "#f0f0f0"),
      ink: (k: number) => inkOf()(k),
      tag: () => "",
      label: (k: number) => `Device ${k}`,
    };
    vi.useFakeTimers({ toFake: ["requestAnimationFrame", "cancelAnimationFrame", "setTimeout", "clearTimeout"] });
    let recording = recordingContext();
    vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockImplementation(
      () => recording.ctx as unknown as CanvasRenderingContext2D,
    );
    const view = renderMeshGrid(
      layout,
      { onHover: () => {}, onFocus: () => {}, onActivate: () => {} },
      new AbortController().signal,
      { fill: () => "", label: "id", paint },
    );
    document.body.append(view.element);
    /** The next frame's paint. */
    const next = () => {
      recording = recordingContext();
      vi.advanceTimersByTime(20);
      return recording;
    };
    /** The idle work after it: what the text layers drew. */
    const idle = () => {
      recording = recordingContext();
      vi.advanceTimersByTime(100);
      return recording;
    };
    const ids = (drawn: ReturnType<typeof recordingContext>) => drawn.texts.filter((t) => /^\d+$/.test(t.text));
    return { layout, view, next, idle, ids };
  }

  it("draws each id of a painted grid in its own ink until its ink's layer is drawn, and with too many inks", () => {
    let inkOf: (k: number) => string = (k) => (k % 3 === 0 ? "#ffffff" : "#000000");
    const grid = paintedGrid("abstract_512", () => inkOf);
    expect(grid.ids(grid.next())).toHaveLength(512);
    const drawn = grid.idle();
    // Two layers, one per ink, each every id, centred in its cell.
    expect(grid.ids(drawn)).toHaveLength(1024);
    expect(new Set(grid.ids(drawn).map((t) => t.ink))).toEqual(new Set(["#ffffff", "#000000"]));
    expect(grid.ids(drawn).every((t) => t.align === "center" && t.baseline === "middle")).toBe(true);
    // A third ink has no layer yet: every id is drawn again, none copied, until it is drawn.
    inkOf = (k: number) => (k % 3 === 0 ? "#ffffff" : k % 3 === 1 ? "#000000" : "#ff0000");
    grid.view.repaint?.();
    const third = grid.next();
    expect(grid.ids(third)).toHaveLength(512);
    expect(third.copies).toEqual([]);
    expect(new Set(grid.ids(grid.idle()).map((t) => t.ink))).toEqual(new Set(["#ff0000"]));
    grid.view.repaint?.();
    expect(grid.next().copies).toHaveLength(3);
    // Five inks are past MAX_TEXT_LAYERS: each id is drawn on its own, every paint.
    inkOf = (k: number) => ["#000000", "#111111", "#222222", "#333333", "#444444"][k % 5];
    grid.view.repaint?.();
    const many = grid.next();
    expect(grid.ids(many)).toHaveLength(512);
    expect(many.copies).toEqual([]);
    expect(grid.idle().texts).toEqual([]); // and no layer is drawn for them
    grid.view.repaint?.();
    expect(grid.ids(grid.next())).toHaveLength(512);
  });

  it("keeps the four last text layers: a fifth ink's layer sends the oldest away", () => {
    let ink = "#000000";
    const grid = paintedGrid("abstract_512", () => () => ink);
    for (const next of ["#000000", "#111111", "#222222", "#333333", "#444444"]) {
      ink = next;
      grid.view.repaint?.();
      grid.next();
      grid.idle();
    }
    // #111111 to #444444 are kept: copied, no id drawn.
    grid.view.repaint?.();
    expect(grid.next().copies).toHaveLength(1);
    ink = "#000000";
    grid.view.repaint?.();
    const oldest = grid.next();
    expect(grid.ids(oldest)).toHaveLength(512);
    expect(oldest.copies).toEqual([]);
  });

  it("copies no layer and draws none where no id fits a device's square (4096 devices)", () => {
    const grid = paintedGrid("abstract_4096", () => (k: number) => (k % 2 ? "#ffffff" : "#000000"));
    const first = grid.next();
    expect(grid.ids(first)).toEqual([]);
    expect(first.copies).toEqual([]);
    expect(grid.idle().texts).toEqual([]);
    grid.view.repaint?.();
    expect(grid.next().copies).toEqual([]);
  });

  it("copies a heat map's ids from one layer per ink, each through a clip of the cells in that ink", () => {
    // Black ids on pale cells and white on dark ones, as the memory heat map paints them.
    let dark = (k: number) => k % 3 === 0;
    const grid = paintedGrid("abstract_512", () => (k) => (dark(k) ? "#ffffff" : "#000000"));
    const { layout } = grid;
    // The first paint draws each id in its own cell's ink; the layers are drawn once the page is idle.
    const ids = grid.ids(grid.next());
    expect(ids).toHaveLength(512);
    const geometry = canvasGeometry(layout.meshSizes, layout.payload.mesh?.names ?? []);
    for (const t of ids) expect(t.ink).toBe(dark(hitTest(geometry, t.x, t.y)) ? "#ffffff" : "#000000");
    grid.idle();
    // New values darken other cells: no id is shaped again, each ink's layer is copied once through its cells.
    dark = (k: number) => k % 5 === 0;
    grid.view.repaint?.();
    const again = grid.next();
    expect(grid.ids(again)).toEqual([]);
    expect(again.copies).toHaveLength(2);
    const clipped = again.copies.map((c) =>
      (c.clip ?? []).map(([x, y]) => hitTest(geometry, x + 1, y + 1)).sort((a, b) => a - b),
    );
    const darkCells = Array.from({ length: 512 }, (_, k) => k).filter(dark);
    const paleCells = Array.from({ length: 512 }, (_, k) => k).filter((k) => !dark(k));
    expect(clipped.sort((a, b) => a.length - b.length)).toEqual([darkCells, paleCells]);
    // Each ink's own layer: two canvases, not one copied twice.
    expect(new Set(again.images).size).toBe(2);
    expect(again.copies.every((c) => c.alpha === 1)).toBe(true);
    // One ink for every cell: the layer is copied whole, with no clip.
    dark = () => false;
    grid.view.repaint?.();
    expect(grid.next().copies).toEqual([{ alpha: 1, clip: null }]);
  });

  it("draws an id whose ink is a CSS variable in that variable's colour, not in the last fill", () => {
    const grid = paintedGrid("abstract_512", () => () => "var(--sv-tile-ink)");
    grid.view.element.style.setProperty("--sv-tile-ink", "#abcdef");
    const ids = grid.ids(grid.next());
    expect(ids).toHaveLength(512);
    expect(new Set(ids.map((t) => t.ink))).toEqual(new Set(["#abcdef"]));
  });

  it("draws an id whose ink is an unset CSS variable in the default ink", () => {
    const grid = paintedGrid("abstract_512", () => () => "var(--sv-unset-ink)");
    expect(new Set(grid.ids(grid.next()).map((t) => t.ink))).toEqual(new Set(["#1f2328"]));
  });

  it("draws 4096 devices on one canvas and still reports the count", () => {
    const { root } = draw(loadFixture("abstract_4096"));
    expect(root.getAttribute("data-render")).toBe("canvas");
    expect(root.getAttribute("data-device-count")).toBe("4096");
    expect(root.querySelectorAll("canvas")).toHaveLength(1);
    expect(cells(root)).toHaveLength(0);
  });

  it("moves a keyboard cursor over the canvas and announces the device", () => {
    const onFocus = vi.fn();
    const { root } = draw(loadFixture("abstract_4096"), { onFocus });
    const canvas = root.querySelector("canvas") as HTMLCanvasElement;
    canvas.focus();
    expect(onFocus).toHaveBeenLastCalledWith({ kind: "device", position: 0 });
    canvas.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    canvas.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
    expect(onFocus).toHaveBeenLastCalledWith({ kind: "device", position: 17 });
    expect(root.querySelector("[aria-live]")?.textContent).toContain("Device 17, a=0 b=1 c=1");
  });
});

describe("DOM cell placement", () => {
  it("puts each cell at its leaf's slot, a pitch per row and column", () => {
    // 2x2x3: two leaf grids of 2 rows x 3 columns, their slots at (10, 20) and (200, 20).
    const at = domCellOrigins([2, 2, 3], [10, 20, 200, 20], 24);
    const xy = (k: number) => [at[2 * k], at[2 * k + 1]];
    expect(xy(0)).toEqual([10, 20]);
    expect(xy(2)).toEqual([58, 20]); // a=0 b=0 c=2
    expect(xy(3)).toEqual([10, 44]); // a=0 b=1 c=0
    expect(xy(6)).toEqual([200, 20]); // a=1 b=0 c=0
    expect(xy(11)).toEqual([248, 44]); // a=1 b=1 c=2
  });

  it("lays a one-axis mesh in one row and a single device at its slot", () => {
    expect(Array.from(domCellOrigins([4], [5, 6], 10))).toEqual([5, 6, 15, 6, 25, 6, 35, 6]);
    expect(Array.from(domCellOrigins([], [5, 6], 10))).toEqual([5, 6]);
  });

  it("gives every leaf grid the cells of its outer coordinates, in mesh order", () => {
    const { root } = draw(
      makePayload({ names: ["p", "q", "r", "s"], sizes: [2, 3, 2, 2], shape: [4, 6], spec: [["p"], ["q"]] }),
    );
    const grids = Array.from(root.querySelectorAll(".sv-leaf"));
    expect(grids).toHaveLength(6);
    for (const [leaf, grid] of grids.entries()) {
      const ids = owned(grid.parentElement as Element).map((c) => Number(c.getAttribute("data-device-id")));
      expect(ids).toEqual([0, 1, 2, 3].map((j) => leaf * 4 + j));
      // and the blocks around it name the same outer coordinates
      const captions = [];
      for (let at = grid.closest(".sv-block"); at; at = at.parentElement?.closest(".sv-block") ?? null) {
        captions.unshift(at.getAttribute("aria-label"));
      }
      expect(captions).toEqual([`p = ${Math.floor(leaf / 3)}`, `q = ${leaf % 3}`]);
    }
  });
});

describe("arrow-key neighbours", () => {
  it("carries from an inner block into the next", () => {
    expect(neighbour(1, [2, 2, 2], "right")).toBe(4); // a=0,b=0,c=1 -> a=1,b=0,c=0
    expect(neighbour(0, [2, 2, 2], "down")).toBe(2);
    expect(neighbour(7, [2, 2, 2], "right")).toBe(7); // the edge stays put
    expect(neighbour(0, [], "left")).toBe(0);
  });
});
