import { describe, expect, it } from "vitest";
import { cellFill, drawCellFills } from "./cellFills";

/** A 2D context that records what is filled: each fill's colour, opacity, filter and the rectangles in its path. */
function recordingCanvas() {
  const fills: { colour: string; alpha: number; filter: string; rects: number[][] }[] = [];
  let path: number[][] = [];
  let filter = "none";
  let filterWrites = 0;
  const ctx = {
    fillStyle: "",
    globalAlpha: 1,
    get filter() {
      return filter;
    },
    set filter(value: string) {
      filterWrites += 1;
      filter = value;
    },
    setTransform: () => {},
    clearRect: () => {},
    beginPath: () => {
      path = [];
    },
    roundRect: (x: number, y: number, w: number, h: number) => path.push([x, y, w, h]),
    rect: (x: number, y: number, w: number, h: number) => path.push([x, y, w, h]),
    fill: () => fills.push({ colour: ctx.fillStyle, alpha: ctx.globalAlpha, filter, rects: path }),
  };
  let resized = 0;
  let [width, height] = [0, 0];
  const canvas = {
    style: {} as Record<string, string>,
    getContext: () => ctx,
    get width() {
      return width;
    },
    set width(value: number) {
      resized += 1;
      width = value;
    },
    get height() {
      return height;
    },
    set height(value: number) {
      height = value;
    },
  };
  return {
    canvas: canvas as unknown as HTMLCanvasElement,
    fills,
    filterWrites: () => filterWrites,
    resized: () => resized,
  };
}

const origins = new Float32Array([0, 0, 24, 0, 0, 24, 24, 24]); // a 2x2 grid, 22px cells 2px apart

describe("cell fills canvas", () => {
  it("fills each cell at its origin in its colour, one path per distinct fill", () => {
    const { canvas, fills } = recordingCanvas();
    const colours = ["red", "blue", "red", "blue"];
    drawCellFills(canvas, origins, 22, (k) => cellFill(colours[k], { dimmed: false, outside: false }));
    expect(fills).toEqual([
      {
        colour: "red",
        alpha: 1,
        filter: "none",
        rects: [
          [0, 0, 22, 22],
          [0, 24, 22, 22],
        ],
      },
      {
        colour: "blue",
        alpha: 1,
        filter: "none",
        rects: [
          [24, 0, 22, 22],
          [24, 24, 22, 22],
        ],
      },
    ]);
    expect([canvas.width, canvas.height, canvas.style.width, canvas.style.height]).toEqual([46, 46, "46px", "46px"]);
  });

  it("dims and greys as the cells' CSS does, and sets a filter only when one is needed", () => {
    const { canvas, fills, filterWrites } = recordingCanvas();
    drawCellFills(canvas, origins, 22, (k) => cellFill("red", { dimmed: k === 1, outside: false }));
    // Setting a filter makes the browser resolve it against the page's styles (a forced style pass).
    expect(filterWrites()).toBe(0);
    expect(fills.map((f) => [f.alpha, f.rects.length])).toEqual([
      [1, 3],
      [0.35, 1],
    ]);
    fills.length = 0;
    drawCellFills(canvas, origins, 22, (k) => cellFill("red", { dimmed: k === 0, outside: k < 2 }));
    expect(fills.map((f) => [f.alpha, f.filter, f.rects.length])).toEqual([
      [0.35, "grayscale(0.8)", 1], // a highlight's dimming wins over the slice's, the grey stays
      [0.3, "grayscale(0.8)", 1],
      [1, "none", 2],
    ]);
    expect(filterWrites()).toBe(2);
  });

  it("keeps its backing store while the cells' extent is the same", () => {
    const { canvas, resized } = recordingCanvas();
    const fill = () => cellFill("red", { dimmed: false, outside: false });
    drawCellFills(canvas, origins, 22, fill);
    drawCellFills(canvas, origins, 22, fill);
    expect(resized()).toBe(1);
    drawCellFills(canvas, new Float32Array([0, 0, 48, 0]), 22, fill);
    expect([resized(), canvas.width, canvas.height]).toEqual([2, 70, 22]);
  });
});
