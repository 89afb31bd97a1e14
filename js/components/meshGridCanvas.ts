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
  /** The cells' texts of the last meshes and inks (see textLayer), each under the mesh, labelling and ink it was drawn in. */
  private texts: { key: string; canvas: HTMLCanvasElement }[] = [];
  /** Runs work once the page is idle (after the frame that needed this paint). */
  private readonly whenIdle: (work: () => void) => void;
  /** The text layers a paint asked for that are not drawn yet, by key. */
  private readonly missingLayers = new Map<string, { font: string; ink: string }>();

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
    const inkOf = this.inks(text.ink);
    if (!this.paintTextsFromLayers(ctx, text.font, inkOf, marks)) {
      paintCellTexts(ctx, layout, style.label, geometry, marks, text.font, inkOf);
    }
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
   * Copies the cells' texts from layers (see textLayer): all at once where
   * every cell has the same ink and opacity, else each group of cells that
   * shares them through a clip of its cells. False (nothing drawn) while a
   * layer is still to be drawn, or where the cells' inks are too many.
   */
  private paintTextsFromLayers(
    ctx: CanvasRenderingContext2D,
    font: string,
    inkOf: (k: number) => string,
    marks: CanvasMarks,
  ): boolean {
    const { layout } = this;
    const { origins, cell } = this.geometry;
    if (!textFits(cell)) return true; // no cell has room for a text: nothing to copy
    const groups = new Map<string, { ink: string; alpha: number; cells: number[] }>();
    for (let k = 0; k < layout.deviceCount; k++) {
      const ink = inkOf(k);
      const alpha = cellAlpha(layout, k, marks);
      const key = `${alpha} ${ink}`;
      const group = groups.get(key);
      if (group) group.cells.push(k);
      else if (groups.size === MAX_TEXT_LAYERS) return false;
      else groups.set(key, { ink, alpha, cells: [k] });
    }
    const layers = [...groups.values()].map((group) => ({ ...group, canvas: this.textLayer(font, group.ink) }));
    if (layers.some((layer) => layer.canvas === null)) return false;
    for (const { alpha, cells, canvas } of layers) {
      ctx.save();
      ctx.globalAlpha = alpha;
      if (cells.length < layout.deviceCount) {
        ctx.beginPath();
        for (const k of cells) ctx.rect(origins[2 * k], origins[2 * k + 1], cell, cell);
        ctx.clip();
      }
      ctx.drawImage(canvas as HTMLCanvasElement, 0, 0, this.size.width, this.size.height);
      ctx.restore();
    }
    return true;
  }

  /**
   * The cells' texts in one ink, undimmed, drawn on a canvas of their own for a
   * mesh, labelling and font, which a paint copies in one call: a spec edit or a
   * heat map's new values then shape no text, which was most of their paint. A
   * layer is drawn after the first paint that needs it, in an idle moment (a new
   * canvas and its texts would otherwise delay that paint); the last few are kept,
   * so edits back and forth between two meshes reuse theirs.
   */
  private textLayer(font: string, ink: string): HTMLCanvasElement | null {
    const mesh = this.layout.payload.mesh;
    const key = JSON.stringify([mesh?.sizes, mesh?.names, this.style.label, font, ink, this.ratio, this.size]);
    const found = this.texts.find((t) => t.key === key);
    if (found) return found.canvas;
    this.missingLayers.set(key, { font, ink });
    this.whenIdle(() => this.drawMissingLayers());
    return null;
  }

  /** Draws the layers paints asked for (a key is asked for only while no layer has it). */
  private drawMissingLayers(): void {
    const missing = [...this.missingLayers];
    this.missingLayers.clear();
    for (const [key, { font, ink }] of missing) {
      const canvas = document.createElement("canvas");
      sizeCanvas(canvas, this.size);
      const ctx = beginPaint(canvas, this.size, this.ratio);
      if (!ctx) return; // no canvas support (tests without a canvas backend)
      const undimmed = { lit: null, shown: null, hatch: null };
      paintCellTexts(ctx, this.layout, this.style.label, this.geometry, undimmed, font, () => ink);
      this.texts = [{ key, canvas }, ...this.texts].slice(0, KEPT_TEXT_LAYERS);
    }
  }

  /** Each cell's text ink in this paint: the painter's (its CSS variables read once), else `ink`. */
  private inks(ink: string): (k: number) => string {
    const paint = this.style.paint;
    if (!paint) return () => ink;
    const read = new Map<string, string>();
    return (k) => {
      const wanted = paint.ink(k);
      let colour = read.get(wanted);
      if (colour === undefined) {
        colour = canvasInk(this.element, wanted);
        read.set(wanted, colour);
      }
      return colour;
    };
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

/** The most inks and opacities a paint copies from text layers; past them each text is drawn on its own. */
const MAX_TEXT_LAYERS = 4;

/** Text layers kept: two meshes' (edits back and forth) in a dark and a light ink. */
const KEPT_TEXT_LAYERS = 4;

/** The ink of a cell whose painter names a CSS variable that is not set. */
const DEFAULT_INK = "#1f2328";

/**
 * A cell ink as a canvas takes it: a `var(--name)` ink read off the grid's element (a canvas
 * ignores a colour it cannot parse, and would draw the text in the last fill).
 */
function canvasInk(element: Element, ink: string): string {
  const variable = /^var\((--[\w-]+)\)$/.exec(ink.trim());
  return variable ? cssVar(element, variable[1], DEFAULT_INK) : ink;
}

/** Whether a cell this wide has room for a text at all (at 4096 devices none has). */
function textFits(cell: number): boolean {
  return cell >= CELL_TEXT_PX + 4;
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
  label: MeshGridStyle["label"],
  geometry: CanvasGeometry,
  marks: CanvasMarks,
  font: string,
  inkOf: (k: number) => string,
): void {
  const { origins, cell } = geometry;
  if (!textFits(cell)) return;
  ctx.save();
  ctx.font = font;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let k = 0; k < layout.deviceCount; k++) {
    const text = cellText(layout, k, label);
    if ((textWidth(font, text) ?? ctx.measureText(text).width) > cell - 2) continue;
    ctx.globalAlpha = cellAlpha(layout, k, marks);
    ctx.fillStyle = inkOf(k);
    ctx.fillText(text, origins[2 * k] + cell / 2, origins[2 * k + 1] + cell / 2 + 0.5);
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
