/**
 * The array map painted on a canvas (many tiles): tiles, their marks and the
 * mesh axes' boundaries, with the same events as the DOM drawing.
 */

import type { Layout } from "../payload/array";
import { cssVar, h } from "../util/dom";
import { fraction, frame, type MapParts } from "./arrayMapFrame";
import { rememberTileFonts } from "./arrayMapLabels";
import { beginPaint, framePainter, sizeCanvas, strokeMark, strokePin, wireCanvas } from "./canvasPaint";
import type { Highlight, PictureView } from "./interaction";
import { gridMoves } from "./interaction";
import { rulerBands } from "./mapRulers";
import type { SliceChoice, VisibleTile } from "./slicing";

export function renderMapCanvas({ layout, tiles, choice, events, signal, size, fill, room }: MapParts): PictureView {
  const { width, height } = size;
  const attributes = {
    class: "sv-canvas sv-map-area",
    tabindex: "0",
    role: "img",
    "aria-label": `${tiles.length} tiles; hover or use the arrow keys to inspect them`,
  };
  // The last map's canvas, taken over (its listeners went with its map's lifetime).
  const canvas = room.canvas ?? h("canvas");
  room.canvas = canvas;
  for (const [name, value] of Object.entries(attributes)) {
    if (canvas.getAttribute(name) !== value) canvas.setAttribute(name, value);
  }
  const ratio = sizeCanvas(canvas, size);
  // The frame's map column sets the width (see frame); the proportions follow.
  canvas.style.width = "100%";
  canvas.style.aspectRatio = `${width} / ${height}`;
  const cols = choice.colDim === null ? 1 : layout.tileCounts[choice.colDim];
  const rows = choice.rowDim === null ? 1 : layout.tileCounts[choice.rowDim];
  const xs = Array.from({ length: cols + 1 }, (_, i) => fraction(layout, choice.colDim, i) * width);
  const ys = Array.from({ length: rows + 1 }, (_, i) => fraction(layout, choice.rowDim, i) * height);
  let highlight: Highlight | null = null;
  let pinned: number | null = null;
  const keyboard = wireCanvas(
    canvas,
    size,
    {
      hit: (x, y) => {
        const col = lastAtOrBelow(xs, x, cols);
        const row = lastAtOrBelow(ys, y, rows);
        return col < 0 || row < 0 ? -1 : row * cols + col;
      },
      target: (i) => ({ kind: "tile", tile: tiles[i].tile }),
      move: gridMoves(cols, tiles.length),
    },
    events,
    signal,
  );

  const paint = (): void => {
    const ctx = beginPaint(canvas, size, ratio);
    if (!ctx) return; // no canvas support (tests without a canvas backend)
    const ink = cssVar(canvas, "--sv-fg", "#1f2328");
    // Styles are computed for this paint: the next DOM map may fit its labels with these fonts.
    rememberTileFonts(canvas);
    paintTiles(ctx, tiles, xs, ys, fill, highlight, `10px ${cssVar(canvas, "--sv-font", "sans-serif")}`);
    drawAxisBoundaries(ctx, ink, layout, choice, xs, ys, width, height);
    const mark = (t: number) => tileMarkBox(tiles, xs, ys, t);
    if (pinned !== null) {
      const box = mark(pinned);
      if (box) strokePin(ctx, cssVar(canvas, "--sv-accent", "#0969da"), box.x - 2, box.y - 2, box.w + 4, box.h + 4);
    }
    for (const t of [highlight?.tile ?? -1, keyboard.cursor >= 0 ? tiles[keyboard.cursor].tile : -1]) {
      const box = mark(t);
      if (box) strokeMark(ctx, ink, box.x + 1, box.y + 1, box.w - 2, box.h - 2);
    }
  };

  const draw = framePainter(paint, signal);
  draw();
  return {
    element: frame(layout, choice, canvas, size),
    setHighlight: (next) => {
      highlight = next;
      draw();
    },
    setPinned: (target) => {
      pinned = target?.kind === "tile" ? target.tile : null;
      draw();
    },
  };
}

/** Each tile's rectangle in its colour (dimmed unless it is the one lit), named where there is room. */
function paintTiles(
  ctx: CanvasRenderingContext2D,
  tiles: readonly VisibleTile[],
  xs: readonly number[],
  ys: readonly number[],
  fill: (tile: number) => string,
  highlight: Highlight | null,
  font: string,
): void {
  ctx.font = font;
  for (const { tile, row, col } of tiles) {
    const x = xs[col];
    const y = ys[row];
    const w = xs[col + 1] - x;
    const hh = ys[row + 1] - y;
    ctx.globalAlpha = highlight && highlight.tile !== tile ? 0.3 : 1;
    ctx.fillStyle = fill(tile);
    ctx.fillRect(x, y, w, hh);
    if (w > 28 && hh > 14) {
      ctx.fillStyle = "#1b1b1b";
      ctx.fillText(`t${tile}`, x + 3, y + 11);
    }
  }
  ctx.globalAlpha = 1;
}

/** The box a mark is drawn around for tile ``t``: slivers grown to 8px about their centre to stay visible. */
function tileMarkBox(
  tiles: readonly VisibleTile[],
  xs: readonly number[],
  ys: readonly number[],
  t: number,
): { x: number; y: number; w: number; h: number } | null {
  const v = tiles.find((candidate) => candidate.tile === t);
  if (!v) return null;
  const w = Math.max(xs[v.col + 1] - xs[v.col], 8);
  const hh = Math.max(ys[v.row + 1] - ys[v.row], 8);
  const cx = (xs[v.col] + xs[v.col + 1]) / 2;
  const cy = (ys[v.row] + ys[v.row + 1]) / 2;
  return { x: cx - w / 2, y: cy - hh / 2, w, h: hh };
}

/**
 * Lines where a major mesh axis changes its coordinate along a drawn
 * dimension split by several axes (every 16 tiles for (b, c) with c=16):
 * the boundaries the rulers name.
 */
function drawAxisBoundaries(
  ctx: CanvasRenderingContext2D,
  ink: string,
  layout: Layout,
  choice: SliceChoice,
  xs: readonly number[],
  ys: readonly number[],
  width: number,
  height: number,
): void {
  ctx.save();
  ctx.strokeStyle = ink;
  ctx.globalAlpha = 0.55;
  ctx.lineWidth = 1;
  for (const [dim, edges, across] of [
    [choice.colDim, xs, true],
    [choice.rowDim, ys, false],
  ] as const) {
    if (dim === null) continue;
    const rulers = rulerBands(layout, dim, 1);
    // The finest ruler's bands are the tiles themselves; the coarser ones mark boundaries.
    for (const ruler of rulers.slice(0, -1)) {
      const step = (edges.length - 1) / ruler.bands;
      for (let i = 1; i < ruler.bands; i++) {
        const at = Math.round(edges[Math.round(i * step)]) + 0.5;
        ctx.beginPath();
        if (across) {
          ctx.moveTo(at, 0);
          ctx.lineTo(at, height);
        } else {
          ctx.moveTo(0, at);
          ctx.lineTo(width, at);
        }
        ctx.stroke();
      }
    }
  }
  ctx.restore();
}

/** Index i of the interval [edges[i], edges[i+1]) holding v, or -1. */
function lastAtOrBelow(edges: readonly number[], v: number, count: number): number {
  if (v < edges[0] || v >= edges[count]) return -1;
  let lo = 0;
  let hi = count - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (edges[mid] <= v) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
