/**
 * The fills of a large DOM mesh grid, drawn on one canvas under its cells.
 *
 * A spec edit recolours every cell: as inline backgrounds that would restyle
 * and repaint each cell, on a canvas it is one drawing and the cells are left
 * alone (docs/performance.md has the figures). The cells keep everything
 * else: their text, border, stripes, marks, focus and events.
 */

import { beginPaint } from "./canvasPaint";

/** How one device's fill is drawn. */
export interface CellFill {
  colour: string;
  /** The cell's opacity, which its CSS gives its text and border (1, or dimmed). */
  alpha: number;
  /** Greyed, as the CSS filter greys the cell (devices outside the shown slice). */
  grey: boolean;
}

// What widget.css gives a cell, mirrored: its rounded corners (`.sv-cell`), its opacity when a
// highlight leaves it out (`.sv-highlighting .sv-cell:not(.sv-partner)`, which wins over the next),
// and its opacity and greying outside the shown slice (`.sv-cell.sv-outside`).
const CELL_RADIUS = 3;
const DIMMED_ALPHA = 0.35;
const OUTSIDE_ALPHA = 0.3;
const GREY_FILTER = "grayscale(0.8)";

/** A cell's fill as its CSS would show it: dimmed by a highlight it is not part of, greyed outside the shown slice. */
export function cellFill(colour: string, marks: { dimmed: boolean; outside: boolean }): CellFill {
  return { colour, alpha: marks.dimmed ? DIMMED_ALPHA : marks.outside ? OUTSIDE_ALPHA : 1, grey: marks.outside };
}

/**
 * Draws each cell's fill at its origin (x, y pairs in CSS pixels from the
 * canvas's corner, as `domCellOrigins` gives them), `size` pixels square.
 * Sizes the canvas to the cells' extent at device resolution.
 */
export function drawCellFills(
  canvas: HTMLCanvasElement,
  origins: Float32Array,
  size: number,
  fillOf: (k: number) => CellFill,
): void {
  const count = origins.length / 2;
  let width = 0;
  let height = 0;
  for (let k = 0; k < count; k++) {
    width = Math.max(width, origins[2 * k] + size);
    height = Math.max(height, origins[2 * k + 1] + size);
  }
  const extent = { width: Math.ceil(width), height: Math.ceil(height) };
  const ratio = globalThis.devicePixelRatio || 1;
  // A new backing store only when the extent or resolution changed: resizing reallocates it.
  const [w, h] = [Math.round(extent.width * ratio), Math.round(extent.height * ratio)];
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    canvas.style.width = `${extent.width}px`;
    canvas.style.height = `${extent.height}px`;
  }
  const ctx = beginPaint(canvas, extent, ratio);
  if (!ctx) return; // no canvas support (tests without a canvas backend): the cells' data-fill still says
  // One path per distinct fill: setting a colour parses it, and a few dozen tiles share 512 cells.
  const groups = new Map<string, { fill: CellFill; cells: number[] }>();
  for (let k = 0; k < count; k++) {
    const fill = fillOf(k);
    const key = `${fill.colour}|${fill.alpha}|${fill.grey}`;
    const group = groups.get(key);
    if (group) group.cells.push(k);
    else groups.set(key, { fill, cells: [k] });
  }
  const rounded = typeof ctx.roundRect === "function";
  for (const { fill, cells } of groups.values()) {
    // Setting a filter resolves it against the page's styles (a forced style pass): only when it changes.
    const filter = fill.grey ? GREY_FILTER : "none";
    if (ctx.filter !== filter) ctx.filter = filter;
    ctx.globalAlpha = fill.alpha;
    ctx.fillStyle = fill.colour;
    ctx.beginPath();
    for (const k of cells) {
      if (rounded) ctx.roundRect(origins[2 * k], origins[2 * k + 1], size, size, CELL_RADIUS);
      else ctx.rect(origins[2 * k], origins[2 * k + 1], size, size);
    }
    ctx.fill();
  }
  ctx.globalAlpha = 1;
}
