/**
 * The mesh grid on one canvas (past CANVAS_THRESHOLD devices): every device
 * a square, with hit-testing, a keyboard cursor and a live line for screen
 * readers.
 */

import type { Layout } from "../payload/array";
import { cssVar, h } from "../util/dom";
import { axisColor } from "../util/palette";
import { beginPaint, framePainter, sizeCanvas, strokeMark, strokePin, wireCanvas } from "./canvasPaint";
import { deviceAriaLabel, isRemote } from "./describe";
import type { Highlight, PictureEvents, PictureStyle, PictureView, Target } from "./interaction";
import { CANVAS_THRESHOLD } from "./interaction";
import { cellText, gridRoot, type MeshGridStyle, meshLabel, meshMove, sameIds, sameMesh } from "./meshGridParts";
import { type CanvasGeometry, canvasGeometry, hitTest } from "./meshLayout";
import { textWidth } from "./textWidth";

export function renderMeshCanvas(
  layout: Layout,
  events: PictureEvents,
  signal: AbortSignal,
  style: MeshGridStyle,
): PictureView {
  return new CanvasMeshGrid(layout, events, signal, style);
}

/**
 * The canvas grid: every device a square on one canvas, with hit-testing,
 * a keyboard cursor and a live line for screen readers. An edit keeps the
 * canvas (its context, its backing store while the size holds, the fonts it
 * has shaped) and paints it again, so an edit pays for no new context,
 * backing store or first text shaping.
 */
class CanvasMeshGrid implements PictureView {
  readonly element: HTMLElement;
  private layout: Layout;
  private style: MeshGridStyle;
  private geometry: CanvasGeometry;
  /** The drawing's size in CSS pixels; the keyboard and pointer wiring reads it as it changes. */
  private readonly size: { width: number; height: number };
  private ratio: number;
  private readonly canvas: HTMLCanvasElement;
  private readonly live: HTMLElement;
  private readonly keyboard: { cursor: number };
  private readonly draw: () => void;
  private highlight: Highlight | null = null;
  private pinned: number | null = null;
  private shown: ReadonlySet<number> | null = null;
  /** The cells' texts of the last two meshes (see textLayer), each under the mesh and labelling it was drawn for. */
  private texts: { key: string; canvas: HTMLCanvasElement }[] = [];
  /** Runs work once the page is idle (after the frame that needed this paint). */
  private readonly whenIdle: (work: () => void) => void;

  constructor(layout: Layout, events: PictureEvents, signal: AbortSignal, style: MeshGridStyle) {
    this.layout = layout;
    this.style = style;
    this.element = gridRoot(layout, "canvas");
    this.geometry = canvasGeometry(layout.meshSizes, layout.payload.mesh?.names ?? []);
    this.size = { width: this.geometry.width, height: this.geometry.height };
    const { canvas, live } = meshCanvas(layout.deviceCount);
    this.canvas = canvas;
    this.live = live;
    this.ratio = sizeCanvas(canvas, this.size);
    this.element.append(canvas, live);
    this.keyboard = wireCanvas(
      canvas,
      this.size,
      {
        hit: (x, y) => hitTest(this.geometry, x, y),
        target: (k) => ({ kind: "device", position: k }),
        move: (from, key) => meshMove(from, key, this.layout.meshSizes),
        onCursor: (k) => {
          this.live.textContent = this.style.paint?.label(k) ?? deviceAriaLabel(this.layout, k);
        },
      },
      events,
      signal,
    );
    this.draw = framePainter(() => this.paint(), signal);
    this.whenIdle = idleRunner(signal);
    this.draw();
  }

  private paint(): void {
    const { canvas, element: root, layout, style, geometry, highlight, keyboard, pinned } = this;
    const ctx = beginPaint(canvas, this.size, this.ratio);
    if (!ctx) return; // no canvas support (tests without a canvas backend)
    const ink = cssVar(root, "--sv-fg", "#1f2328");
    const lit = highlight ? new Set(layout.holders[highlight.tile]) : null;
    const hatch = hasRemote(layout) ? makeHatch(ctx, cssVar(root, "--sv-muted", "#6e7781")) : null;
    const marks = { lit, shown: this.shown, hatch };
    paintDevices(ctx, layout, style, geometry, marks);
    const font = cssVar(root, "--sv-font", "sans-serif");
    const text = { font: `600 ${CELL_TEXT_PX}px ${font}`, ink: cssVar(root, "--sv-tile-ink", "#1f2328") };
    const layer = lit === null && this.shown === null && !style.paint ? this.textLayer(text) : null;
    if (layer) ctx.drawImage(layer, 0, 0, this.size.width, this.size.height);
    else paintCellTexts(ctx, layout, style, geometry, marks, text);
    const { origins, cell } = geometry;
    if (lit) {
      ctx.strokeStyle = ink;
      ctx.lineWidth = 1;
      for (const k of lit) ctx.strokeRect(origins[2 * k] + 0.5, origins[2 * k + 1] + 0.5, cell - 1, cell - 1);
    }
    for (const k of [highlight?.position ?? -1, keyboard.cursor]) {
      if (k >= 0) strokeMark(ctx, ink, origins[2 * k] - 1, origins[2 * k + 1] - 1, cell + 2, cell + 2);
    }
    if (pinned !== null) {
      const [x, y] = [origins[2 * pinned] - 3, origins[2 * pinned + 1] - 3];
      strokePin(ctx, cssVar(root, "--sv-accent", "#0969da"), x, y, cell + 6, cell + 6);
    }
    paintAxisLabels(ctx, geometry, ink, `11px ${font}`);
  }

  /**
   * The cells' texts, undimmed, drawn on a canvas of their own for a mesh,
   * labelling, font and ink, which a paint copies in one call: a spec edit then
   * shapes no text, which was most of its paint. A layer is drawn after the
   * first paint of its mesh, in an idle moment (a new canvas and its texts
   * would otherwise delay that paint), and the layers of the last two meshes
   * are kept, so edits back and forth between two meshes reuse theirs.
   */
  private textLayer(text: { font: string; ink: string }): HTMLCanvasElement | null {
    const mesh = this.layout.payload.mesh;
    const key = JSON.stringify([mesh?.sizes, mesh?.names, this.style.label, text, this.ratio, this.size]);
    const found = this.texts.find((t) => t.key === key);
    if (found) return found.canvas;
    this.whenIdle(() => this.drawTextLayer(key, text));
    return null;
  }

  private drawTextLayer(key: string, text: { font: string; ink: string }): void {
    if (typeof document === "undefined" || this.texts.some((t) => t.key === key)) return;
    const canvas = document.createElement("canvas");
    sizeCanvas(canvas, this.size);
    const ctx = beginPaint(canvas, this.size, this.ratio);
    if (!ctx) return;
    paintCellTexts(ctx, this.layout, this.style, this.geometry, { lit: null, shown: null, hatch: null }, text);
    this.texts = [{ key, canvas }, ...this.texts].slice(0, 2);
  }

  readonly setHighlight = (next: Highlight | null): void => {
    this.highlight = next;
    this.draw();
  };

  readonly setPinned = (target: Target | null): void => {
    this.pinned = target?.kind === "device" ? target.position : null;
    this.draw();
  };

  readonly setShown = (tiles: ReadonlySet<number> | null): void => {
    this.shown = tiles;
    this.draw();
  };

  readonly repaint = (): void => this.draw();

  /**
   * Any layout the canvas draws (past CANVAS_THRESHOLD devices): a spec edit
   * repaints; a mesh edit lays the squares out anew, and the canvas is sized
   * again only if the drawing's size changed.
   */
  readonly update = (next: Layout, nextStyle: PictureStyle): boolean => {
    if (next.deviceCount <= CANVAS_THRESHOLD) return false;
    const meshKept = sameMesh(next, this.layout);
    if (!sameIds(next, this.layout)) this.texts = []; // other ids in the same places
    this.layout = next;
    this.style = { ...this.style, fill: nextStyle.fill };
    this.highlight = null;
    this.pinned = null;
    this.shown = null;
    if (this.keyboard.cursor >= next.deviceCount) this.keyboard.cursor = -1;
    if (!meshKept) {
      this.geometry = canvasGeometry(next.meshSizes, next.payload.mesh?.names ?? []);
      this.element.setAttribute("aria-label", meshLabel(next));
      this.element.setAttribute("data-device-count", String(next.deviceCount));
      this.canvas.setAttribute("aria-label", meshCanvasLabel(next.deviceCount));
      const { width, height } = this.geometry;
      if (width !== this.size.width || height !== this.size.height) {
        this.size.width = width;
        this.size.height = height;
        this.ratio = sizeCanvas(this.canvas, this.size);
      }
    }
    this.draw();
    return true;
  };
}

/**
 * Runs the latest work given once the page is idle (at most a second later),
 * then nothing until given more; nothing after `signal` aborts.
 */
function idleRunner(signal: AbortSignal): (work: () => void) => void {
  let next: (() => void) | null = null;
  return (work) => {
    const waiting = next !== null;
    next = work;
    if (waiting) return;
    const run = (): void => {
      const now = next;
      next = null;
      if (now && !signal.aborted) now();
    };
    if (typeof requestIdleCallback === "function") requestIdleCallback(run, { timeout: 1000 });
    else setTimeout(run, 50);
  };
}

/** The canvas, focusable, and the live line through which screen readers hear the focused device. */
function meshCanvas(deviceCount: number): { canvas: HTMLCanvasElement; live: HTMLElement } {
  const canvas = h("canvas", {
    class: "sv-canvas",
    tabindex: 0,
    role: "img",
    "aria-label": meshCanvasLabel(deviceCount),
  });
  return { canvas, live: h("div", { class: "sv-visually-hidden", "aria-live": "polite" }) };
}

/** What dims a canvas cell: a highlight (devices outside it) or a slice (tiles not shown). */
interface CanvasMarks {
  lit: ReadonlySet<number> | null;
  shown: ReadonlySet<number> | null;
  hatch: CanvasPattern | null;
}

/** The opacity of device k's cell: dimmed outside the lit devices or the shown tiles. */
function cellAlpha(layout: Layout, k: number, { lit, shown }: CanvasMarks): number {
  const outside = shown !== null && !shown.has(layout.tileOf[k]);
  return (lit && !lit.has(k)) || outside ? 0.25 : 1;
}

function hasRemote(layout: Layout): boolean {
  for (let k = 0; k < layout.deviceCount; k++) if (isRemote(layout, k)) return true;
  return false;
}

function meshCanvasLabel(deviceCount: number): string {
  return `${deviceCount} devices; use the arrow keys to move between them`;
}

/** Each device's square in its tile's colour (or the caller's paint), dimmed outside the lit or shown tiles. */
function paintDevices(
  ctx: CanvasRenderingContext2D,
  layout: Layout,
  style: MeshGridStyle,
  geometry: CanvasGeometry,
  marks: CanvasMarks,
): void {
  const { origins, cell } = geometry;
  const { hatch } = marks;
  for (let k = 0; k < layout.deviceCount; k++) {
    const x = origins[2 * k];
    const y = origins[2 * k + 1];
    ctx.globalAlpha = cellAlpha(layout, k, marks);
    ctx.fillStyle = style.paint ? style.paint.fill(k) : style.fill(layout.tileOf[k]);
    ctx.fillRect(x, y, cell, cell);
    if (hatch && isRemote(layout, k)) {
      ctx.fillStyle = hatch;
      ctx.fillRect(x, y, cell, cell);
    }
  }
  ctx.globalAlpha = 1;
}

/** The text size of a canvas cell's id: a compact DOM cell's (widget.css, `.sv-compact .sv-cell`). */
const CELL_TEXT_PX = 10;

/**
 * Each cell's text (its device id, or its physical coordinates) centred in
 * it, as a compact DOM cell shows it, where the cell is wide enough for the
 * whole text; a text that would not fit is left out (the cell's
 * announcement and the inspector say it), as at 4096 devices, where none fits.
 */
function paintCellTexts(
  ctx: CanvasRenderingContext2D,
  layout: Layout,
  style: MeshGridStyle,
  geometry: CanvasGeometry,
  marks: CanvasMarks,
  text: { font: string; ink: string },
): void {
  const { origins, cell } = geometry;
  if (cell < CELL_TEXT_PX + 4) return;
  ctx.save();
  ctx.font = text.font;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let k = 0; k < layout.deviceCount; k++) {
    const label = cellText(layout, k, style.label);
    if ((textWidth(text.font, label) ?? ctx.measureText(label).width) > cell - 2) continue;
    ctx.globalAlpha = cellAlpha(layout, k, marks);
    ctx.fillStyle = style.paint ? style.paint.ink(k) : text.ink;
    ctx.fillText(label, origins[2 * k] + cell / 2, origins[2 * k + 1] + cell / 2 + 0.5);
  }
  ctx.restore();
}

/** The axes' coordinates and titles (rotated down the side) and their coloured bars. */
function paintAxisLabels(ctx: CanvasRenderingContext2D, geometry: CanvasGeometry, ink: string, font: string): void {
  ctx.font = font;
  ctx.fillStyle = ink;
  for (const label of geometry.labels) {
    if (label.vertical) {
      ctx.save();
      ctx.translate(label.x, label.y);
      ctx.rotate(Math.PI / 2);
      ctx.fillText(label.text, 0, 0);
      ctx.restore();
    } else {
      ctx.fillText(label.text, label.x, label.y);
    }
  }
  for (const bar of geometry.bars) {
    ctx.fillStyle = axisColor(bar.axisIndex);
    ctx.fillRect(bar.x, bar.y, bar.w, bar.h);
  }
}

/** Diagonal stripes marking devices another process owns. */
function makeHatch(ctx: CanvasRenderingContext2D, ink: string): CanvasPattern | null {
  if (typeof document === "undefined") return null;
  const tile = document.createElement("canvas");
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext("2d");
  if (!t) return null;
  t.strokeStyle = ink;
  t.lineWidth = 1.5;
  t.beginPath();
  t.moveTo(0, 6);
  t.lineTo(6, 0);
  t.stroke();
  return ctx.createPattern(tile, "repeat");
}
