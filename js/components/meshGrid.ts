/**
 * The mesh grid: one cell per device, placed by mesh coordinates, coloured
 * by the tile it holds. Small meshes are DOM (focusable cells); past
 * CANVAS_THRESHOLD devices the grid is drawn on one canvas with hit-testing.
 */

import type { Layout } from "../payload/array";
import { ravel } from "../payload/array";
import { cssVar, h } from "../util/dom";
import { axisColor } from "../util/palette";
import { beginPaint, framePainter, sizeCanvas, strokeMark, strokePin, wireCanvas } from "./canvasPaint";
import { deviceAriaLabel, isRemote, physicalCoordsText } from "./describe";
import type { Highlight, PictureEvents, PictureStyle, PictureView, Target } from "./interaction";
import { CANVAS_THRESHOLD, delegateTargets, itemNumber, navigateByKeys, rovingFocus } from "./interaction";
import { axisRoles, type CanvasGeometry, canvasGeometry, type Direction, hitTest, neighbour } from "./meshLayout";

const ARROWS: Record<string, Direction> = {
  ArrowLeft: "left",
  ArrowRight: "right",
  ArrowUp: "up",
  ArrowDown: "down",
};

/** What the cells say: the device id, or the device's physical coordinates (where devices have them). */
export type CellLabel = "id" | "physical";

/**
 * Paints each device by a value of the caller's (the tree view's memory heat
 * map) instead of by the tile it holds. Functions of the mesh-order
 * position; they are read again on every repaint.
 */
export interface DevicePaint {
  fill: (k: number) => string;
  /** Text colour on that fill. */
  ink: (k: number) => string;
  /** The short text under the id (the tile tag otherwise). */
  tag: (k: number) => string;
  /** The cell's accessible name. */
  label: (k: number) => string;
}

export interface MeshGridStyle extends PictureStyle {
  label: CellLabel;
  /** Per-device paint, in place of the tile fills, tags and labels. */
  paint?: DevicePaint;
}

export function renderMeshGrid(
  layout: Layout,
  events: PictureEvents,
  signal: AbortSignal,
  style: MeshGridStyle,
): PictureView {
  return layout.deviceCount > CANVAS_THRESHOLD
    ? renderMeshCanvas(layout, events, signal, style)
    : renderMeshDom(layout, events, signal, style);
}

/** The text a cell shows for the device at mesh position k. */
function cellText(layout: Layout, k: number, label: CellLabel): string {
  const physical = label === "physical" ? physicalCoordsText(layout, k) : "";
  if (!physical) return String(layout.ids[k]);
  const slice = layout.physical.sliceIndex;
  return slice ? `s${slice[k]}:${physical}` : physical;
}

function gridRoot(layout: Layout, mode: "dom" | "canvas"): HTMLElement {
  const mesh = layout.payload.mesh;
  const summary = mesh ? mesh.names.map((name, i) => `${name}=${mesh.sizes[i]}`).join(", ") : "single device";
  return h("div", {
    class: `sv-mesh sv-mesh-${mode}`,
    role: "group",
    "aria-label": `Device mesh ${summary}${mesh?.abstract ? " (abstract)" : ""}`,
    "data-device-count": layout.deviceCount,
    "data-render": mode,
  });
}

// ---------------------------------------------------------------- DOM path

function renderMeshDom(layout: Layout, events: PictureEvents, signal: AbortSignal, style: MeshGridStyle): PictureView {
  return new DomMeshGrid(layout, events, signal, style);
}

/** Cells shrink as the mesh grows; below 30px the tile tag is dropped (the aria-label keeps it). */
function cellSizeFor(deviceCount: number): number {
  return deviceCount <= 16 ? 44 : deviceCount <= 64 ? 34 : deviceCount <= 256 ? 26 : 22;
}

function axisTitle(axis: number, text: string, vertical = false): HTMLElement {
  const title = h("div", { class: vertical ? "sv-axis-title sv-vertical" : "sv-axis-title" }, [text]);
  title.style.setProperty("--sv-axis", axisColor(axis));
  return title;
}

/** The two innermost axes as a CSS grid with coordinate headers; ``cellAt(k)`` gives mesh position k's cell. */
function leafGrid(layout: Layout, prefix: number[], cellAt: (k: number) => HTMLElement): HTMLElement {
  const sizes = layout.meshSizes;
  const names = layout.payload.mesh?.names ?? [];
  const rank = sizes.length;
  const colAxis = rank - 1;
  const rowAxis = rank - 2;
  const cols = rank >= 1 ? sizes[colAxis] : 1;
  const rows = rank >= 2 ? sizes[rowAxis] : 1;
  const grid = h("div", { class: "sv-leaf" });
  grid.style.gridTemplateColumns = `${rank >= 2 ? "auto " : ""}repeat(${cols}, var(--sv-cell-size))`;
  if (rank >= 1) {
    if (rank >= 2) grid.append(h("span", { class: "sv-corner" }));
    for (let c = 0; c < cols; c++) grid.append(h("span", { class: "sv-coord" }, [String(c)]));
  }
  for (let r = 0; r < rows; r++) {
    if (rank >= 2) grid.append(h("span", { class: "sv-coord" }, [String(r)]));
    for (let c = 0; c < cols; c++) {
      const coords = rank === 0 ? [] : rank === 1 ? [c] : [...prefix, r, c];
      grid.append(cellAt(ravel(coords, sizes)));
    }
  }
  if (rank === 0) return grid;
  const framed = h("div", { class: "sv-leaf-frame" }, [axisTitle(colAxis, `${names[colAxis]} (${cols}) \u2192`)]);
  if (rank >= 2) {
    framed.append(
      h("div", { class: "sv-leaf-body" }, [axisTitle(rowAxis, `${names[rowAxis]} (${rows}) \u2192`, true), grid]),
    );
  } else {
    framed.append(grid);
  }
  return framed;
}

/** Outer axes nest leaf grids into captioned blocks, alternately across and down. */
function meshBlocks(layout: Layout, axis: number, prefix: number[], cellAt: (k: number) => HTMLElement): HTMLElement {
  const sizes = layout.meshSizes;
  const names = layout.payload.mesh?.names ?? [];
  if (axis >= sizes.length - 2) return leafGrid(layout, prefix, cellAt);
  const across = axisRoles(sizes.length).columns.includes(axis);
  const group = h("div", { class: across ? "sv-blocks sv-across" : "sv-blocks sv-down", "data-axis": names[axis] });
  for (let i = 0; i < sizes[axis]; i++) {
    const caption = h("div", { class: "sv-block-caption" }, [`${names[axis]} = ${i}`]);
    caption.style.setProperty("--sv-axis", axisColor(axis));
    const attributes = {
      class: "sv-block",
      "data-axis": names[axis],
      "data-axis-index": i,
      role: "group",
      "aria-label": `${names[axis]} = ${i}`,
    };
    group.append(h("div", attributes, [caption, meshBlocks(layout, axis + 1, [...prefix, i], cellAt)]));
  }
  return group;
}

/**
 * The DOM grid: a focusable cell per device. A spec edit repaints the cells;
 * a mesh edit over the same devices moves the very same cells (found by
 * device id) into the new blocks.
 */
class DomMeshGrid implements PictureView {
  readonly element: HTMLElement;
  private layout: Layout;
  private style: MeshGridStyle;
  /** Cells below 30px show no tag: one element with the id as its text (a third of the elements to style). */
  private readonly compact: boolean;
  private cells: HTMLElement[] = [];
  /** What each cell was last given, by mesh position: an edit writes only what changed. */
  private written: CellWrites[] = [];
  /** The cells of the last build by device id, with what they were last given. */
  private byId = new Map<number, { cell: HTMLElement; written: CellWrites }>();
  private roving: ReturnType<typeof rovingFocus> = rovingFocus([]);
  private lit: number[] = [];
  private pinnedCell: HTMLElement | null = null;

  constructor(layout: Layout, events: PictureEvents, signal: AbortSignal, style: MeshGridStyle) {
    this.layout = layout;
    this.style = style;
    this.element = gridRoot(layout, "dom");
    const cellSize = cellSizeFor(layout.deviceCount);
    this.element.style.setProperty("--sv-cell-size", `${cellSize}px`);
    this.compact = cellSize < 30;
    if (this.compact) this.element.classList.add("sv-compact");
    if (style.label === "physical") this.element.classList.add("sv-physical-labels");
    this.build();
    this.listen(events, signal);
  }

  /** Lays the cells out for the current layout, reusing the cells of the last build by device id. */
  private build(): void {
    this.cells = new Array(this.layout.deviceCount);
    this.written = new Array(this.layout.deviceCount);
    this.element.replaceChildren(meshBlocks(this.layout, 0, [], (k) => this.cellAt(k)));
    this.byId = new Map(this.cells.map((cell, k) => [this.layout.ids[k], { cell, written: this.written[k] }]));
    this.roving = rovingFocus(this.cells);
  }

  private cellAt(k: number): HTMLElement {
    const { layout } = this;
    const id = layout.ids[k];
    const reused = this.byId.get(id);
    const cell = reused?.cell ?? this.newCell(id);
    const written = reused?.written ?? blankWrites();
    this.cells[k] = cell;
    this.written[k] = written;
    // Read back, not remembered: highlights and roving focus change these between builds.
    const className = isRemote(layout, k) ? "sv-cell sv-remote" : "sv-cell";
    if (cell.className !== className) cell.className = className;
    if (cell.getAttribute("data-position") !== String(k)) cell.setAttribute("data-position", String(k));
    const tabIndex = k === 0 ? "0" : "-1";
    if (cell.getAttribute("tabindex") !== tabIndex) cell.setAttribute("tabindex", tabIndex);
    write(written, "text", cellText(layout, k, this.style.label), (v) => {
      (this.compact ? cell : (cell.firstChild as HTMLElement)).textContent = v;
    });
    this.paintCell(k);
    return cell;
  }

  private newCell(id: number): HTMLElement {
    const attributes = { class: "sv-cell", "data-device-id": id, role: "button" };
    if (this.compact) return h("div", attributes);
    return h("div", attributes, [h("span", { class: "sv-cell-id" }), h("span", { class: "sv-cell-tile" })]);
  }

  /** Everything about a cell that depends on the tile it holds (or on the caller's paint). */
  private paintCell(k: number): void {
    const cell = this.cells[k];
    const written = this.written[k];
    const { paint } = this.style;
    const t = this.layout.tileOf[k];
    write(written, "label", paint ? paint.label(k) : deviceAriaLabel(this.layout, k), (v) =>
      cell.setAttribute("aria-label", v),
    );
    write(written, "fill", paint ? paint.fill(k) : this.style.fill(t), (v) => {
      cell.style.backgroundColor = v;
    });
    if (paint) {
      write(written, "ink", paint.ink(k), (v) => {
        cell.style.color = v;
      });
    } else {
      write(written, "tile", String(t), (v) => cell.setAttribute("data-tile-of", v));
    }
    // A compact cell shows no tag (its accessible name says it).
    if (!this.compact) {
      write(written, "tag", paint ? paint.tag(k) : `t${t}`, (v) => {
        (cell.lastChild as HTMLElement).textContent = v;
      });
    }
  }

  private listen(events: PictureEvents, signal: AbortSignal): void {
    const root = this.element;
    const positionOf = (event: Event): number => itemNumber(event, "data-position");
    // Clicks focus a cell too: keep that cell the one in the tab order.
    root.addEventListener(
      "focusin",
      (event) => {
        const k = positionOf(event);
        if (k >= 0) this.roving.track(k);
      },
      { signal },
    );
    delegateTargets(root, events, signal);
    navigateByKeys(root, signal, {
      from: positionOf,
      move: (from, key) => meshMove(from, key, this.layout.meshSizes),
      go: (k) => this.roving.go(k),
      activate: (k) => events.onActivate({ kind: "device", position: k }),
    });
  }

  readonly setHighlight = (highlight: Highlight | null): void => {
    const { cells } = this;
    for (const k of this.lit) cells[k].classList.remove("sv-partner", "sv-active");
    this.lit = [];
    this.element.classList.toggle("sv-highlighting", highlight !== null);
    if (!highlight) return;
    for (const k of this.layout.holders[highlight.tile] ?? []) {
      cells[k].classList.add("sv-partner");
      this.lit.push(k);
    }
    if (highlight.position !== null && cells[highlight.position]) {
      cells[highlight.position].classList.add("sv-active");
      this.lit.push(highlight.position);
    }
  };

  readonly setPinned = (target: Target | null): void => {
    this.pinnedCell?.classList.remove("sv-pinned");
    this.pinnedCell = target?.kind === "device" ? (this.cells[target.position] ?? null) : null;
    this.pinnedCell?.classList.add("sv-pinned");
  };

  readonly setShown = (tiles: ReadonlySet<number> | null): void => {
    for (let k = 0; k < this.cells.length; k++) {
      this.cells[k].classList.toggle("sv-outside", tiles !== null && !tiles.has(this.layout.tileOf[k]));
    }
  };

  readonly update = (next: Layout, nextStyle: PictureStyle): boolean => {
    const same = sameDevices(this.layout, next);
    // Another mesh over the very same devices (a mesh edit): the cells move into the new blocks.
    if (!same && !sameDeviceSet(this.layout, next)) return false;
    this.setHighlight(null);
    this.setPinned(null);
    this.layout = next;
    this.style = { ...this.style, fill: nextStyle.fill };
    if (same) {
      // Same devices in the same places (a spec or memory-kind edit): repaint the cells, keep the DOM.
      this.repaint();
    } else {
      this.element.setAttribute("aria-label", gridRoot(next, "dom").getAttribute("aria-label") ?? "");
      this.build();
    }
    this.setShown(null);
    return true;
  };

  readonly repaint = (): void => {
    for (let k = 0; k < this.cells.length; k++) this.paintCell(k);
  };
}

/** The same devices (ids, owners) in any order, on a mesh of the same rank or not. */
function sameDeviceSet(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount || a.physical.coords || b.physical.coords) return false;
  const owner = new Map<number, string>();
  for (let k = 0; k < a.deviceCount; k++) owner.set(a.ids[k], `${a.addressable[k]}:${a.process[k]}`);
  for (let k = 0; k < b.deviceCount; k++) {
    if (owner.get(b.ids[k]) !== `${b.addressable[k]}:${b.process[k]}`) return false;
  }
  return true;
}

function sameDevices(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  if (JSON.stringify(a.payload.mesh) !== JSON.stringify(b.payload.mesh)) return false;
  for (let k = 0; k < a.deviceCount; k++) {
    if (a.ids[k] !== b.ids[k] || a.addressable[k] !== b.addressable[k] || a.process[k] !== b.process[k]) return false;
  }
  return true;
}

/** What a DOM cell was last given (null: never): a write that would change nothing is skipped. */
type CellWrites = Record<"text" | "label" | "fill" | "ink" | "tile" | "tag", string | null>;

function blankWrites(): CellWrites {
  return { text: null, label: null, fill: null, ink: null, tile: null, tag: null };
}

/** Applies `value` through `apply` unless the cell has it already (an unchanged write still costs a restyle). */
function write(written: CellWrites, key: keyof CellWrites, value: string, apply: (value: string) => void): void {
  if (written[key] === value) return;
  written[key] = value;
  apply(value);
}

// ------------------------------------------------------------- canvas path

function renderMeshCanvas(
  layout: Layout,
  events: PictureEvents,
  signal: AbortSignal,
  style: MeshGridStyle,
): PictureView {
  const root = gridRoot(layout, "canvas");
  const geometry: CanvasGeometry = canvasGeometry(layout.meshSizes, layout.payload.mesh?.names ?? []);
  const { canvas, live } = meshCanvas(layout.deviceCount);
  const ratio = sizeCanvas(canvas, geometry);
  root.append(canvas, live);

  let highlight: Highlight | null = null;
  let pinned: number | null = null;
  let shown: ReadonlySet<number> | null = null;
  const keyboard = wireCanvas(
    canvas,
    geometry,
    {
      hit: (x, y) => hitTest(geometry, x, y),
      target: (k) => ({ kind: "device", position: k }),
      move: (from, key) => meshMove(from, key, layout.meshSizes),
      onCursor: (k) => {
        live.textContent = style.paint?.label(k) ?? deviceAriaLabel(layout, k);
      },
    },
    events,
    signal,
  );

  const paint = (): void => {
    const ctx = beginPaint(canvas, geometry, ratio);
    if (!ctx) return; // no canvas support (tests without a canvas backend)
    const ink = cssVar(root, "--sv-fg", "#1f2328");
    const lit = highlight ? new Set(layout.holders[highlight.tile]) : null;
    paintDevices(ctx, layout, style, geometry, {
      lit,
      shown,
      hatch: makeHatch(ctx, cssVar(root, "--sv-muted", "#6e7781")),
    });
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
    paintAxisLabels(ctx, geometry, ink, `11px ${cssVar(root, "--sv-font", "sans-serif")}`);
  };

  const draw = framePainter(paint, signal);
  draw();
  return {
    element: root,
    setHighlight: (next) => {
      highlight = next;
      draw();
    },
    setPinned: (target) => {
      pinned = target?.kind === "device" ? target.position : null;
      draw();
    },
    setShown: (tiles) => {
      shown = tiles;
      draw();
    },
    repaint: draw,
  };
}

/** The canvas, focusable, and the live line through which screen readers hear the focused device. */
function meshCanvas(deviceCount: number): { canvas: HTMLCanvasElement; live: HTMLElement } {
  const canvas = h("canvas", {
    class: "sv-canvas",
    tabindex: 0,
    role: "img",
    "aria-label": `${deviceCount} devices; use the arrow keys to move between them`,
  });
  return { canvas, live: h("div", { class: "sv-visually-hidden", "aria-live": "polite" }) };
}

/** Each device's square in its tile's colour (or the caller's paint), dimmed outside the lit or shown tiles. */
function paintDevices(
  ctx: CanvasRenderingContext2D,
  layout: Layout,
  style: MeshGridStyle,
  geometry: CanvasGeometry,
  marks: { lit: ReadonlySet<number> | null; shown: ReadonlySet<number> | null; hatch: CanvasPattern | null },
): void {
  const { origins, cell } = geometry;
  const { lit, shown, hatch } = marks;
  for (let k = 0; k < layout.deviceCount; k++) {
    const x = origins[2 * k];
    const y = origins[2 * k + 1];
    const outside = shown !== null && !shown.has(layout.tileOf[k]);
    ctx.globalAlpha = (lit && !lit.has(k)) || outside ? 0.25 : 1;
    ctx.fillStyle = style.paint ? style.paint.fill(k) : style.fill(layout.tileOf[k]);
    ctx.fillRect(x, y, cell, cell);
    if (hatch && isRemote(layout, k)) {
      ctx.fillStyle = hatch;
      ctx.fillRect(x, y, cell, cell);
    }
  }
  ctx.globalAlpha = 1;
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

/** Arrow keys step through the mesh (see `neighbour`); Home and End jump to the first and last device. */
function meshMove(from: number, key: string, sizes: readonly number[]): number | null {
  const direction = ARROWS[key];
  if (direction) return neighbour(from, sizes, direction);
  if (key === "Home") return 0;
  if (key === "End") return sizes.reduce((a, b) => a * b, 1) - 1;
  return null;
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
