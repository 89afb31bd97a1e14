/**
 * The mesh grid: one cell per device, placed by mesh coordinates, coloured
 * by the tile it holds. Small meshes are DOM (focusable cells); past
 * CANVAS_THRESHOLD devices the grid is drawn on one canvas with hit-testing.
 */

import type { Layout } from "../payload/array";
import { cssVar, h } from "../util/dom";
import { axisColor } from "../util/palette";
import { beginPaint, framePainter, sizeCanvas, strokeMark, strokePin, wireCanvas } from "./canvasPaint";
import { cellFill, drawCellFills } from "./cellFills";
import { deviceAriaLabel, isRemote, physicalCoordsText } from "./describe";
import type { Highlight, PictureEvents, PictureStyle, PictureView, Target } from "./interaction";
import { CANVAS_THRESHOLD, delegateTargets, itemNumber, navigateByKeys, rovingFocus } from "./interaction";
import {
  axisRoles,
  type CanvasGeometry,
  canvasGeometry,
  type Direction,
  domCellOrigins,
  hitTest,
  leafShape,
  neighbour,
} from "./meshLayout";
import { textWidth } from "./textWidth";

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

/** The grid's accessible name: the mesh's axes and sizes. */
function meshLabel(layout: Layout): string {
  const mesh = layout.payload.mesh;
  const summary = mesh ? mesh.names.map((name, i) => `${name}=${mesh.sizes[i]}`).join(", ") : "single device";
  return `Device mesh ${summary}${mesh?.abstract ? " (abstract)" : ""}`;
}

function gridRoot(layout: Layout, mode: "dom" | "canvas"): HTMLElement {
  return h("div", {
    class: `sv-mesh sv-mesh-${mode}`,
    role: "group",
    "aria-label": meshLabel(layout),
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

/** The space between neighbouring cells, in CSS pixels. */
const CELL_GAP = 2;

function axisTitle(axis: number, text: string, vertical = false): HTMLElement {
  const title = h("div", { class: vertical ? "sv-axis-title sv-vertical" : "sv-axis-title" }, [text]);
  title.style.setProperty("--sv-axis", axisColor(axis));
  return title;
}

/** A grid item at CSS grid row `row` and column `column` (1-based lines). */
function placed(element: HTMLElement, row: number, column: number): HTMLElement {
  element.style.gridArea = `${row} / ${column}`;
  return element;
}

/**
 * The frame of the two innermost axes: a CSS grid of coordinate headers
 * around an empty slot the size of its rows x columns of cells, pushed to
 * `leafGrids` with it (the cells are placed over the slot, see DomMeshGrid).
 */
function leafFrame(layout: Layout, leafGrids: HTMLElement[]): HTMLElement {
  const sizes = layout.meshSizes;
  const names = layout.payload.mesh?.names ?? [];
  const rank = sizes.length;
  const colAxis = rank - 1;
  const rowAxis = rank - 2;
  const { rows, cols } = leafShape(sizes);
  const grid = h("div", { class: "sv-leaf" });
  // Headers take the first row (any axis) and the first column (two axes or more).
  const top = rank >= 1 ? 2 : 1;
  const left = rank >= 2 ? 2 : 1;
  grid.style.gridTemplateColumns = `${rank >= 2 ? "auto " : ""}repeat(${cols}, var(--sv-cell-size))`;
  grid.style.gridTemplateRows = `${rank >= 1 ? "auto " : ""}repeat(${rows}, var(--sv-cell-size))`;
  const coord = (axis: number, i: number) => h("span", { class: "sv-coord", "data-axis": names[axis] }, [String(i)]);
  for (let c = 0; rank >= 1 && c < cols; c++) grid.append(placed(coord(colAxis, c), 1, left + c));
  for (let r = 0; rank >= 2 && r < rows; r++) grid.append(placed(coord(rowAxis, r), top + r, 1));
  const slot = h("div", { class: "sv-slot" });
  slot.style.gridArea = `${top} / ${left} / span ${rows} / span ${cols}`;
  grid.append(slot);
  leafGrids.push(grid);
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

/** Outer axes nest leaf frames into captioned blocks, alternately across and down. */
function meshFrames(layout: Layout, axis: number, leafGrids: HTMLElement[]): HTMLElement {
  const sizes = layout.meshSizes;
  const names = layout.payload.mesh?.names ?? [];
  if (axis >= sizes.length - 2) return leafFrame(layout, leafGrids);
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
    group.append(h("div", attributes, [caption, meshFrames(layout, axis + 1, leafGrids)]));
  }
  return group;
}

/**
 * Tells DOM grids apart on one page, so cell ids are unique: a counter, and a
 * random part for hosts that load this module more than once per page.
 */
const gridIds = { page: Math.random().toString(36).slice(2, 8), count: 0 };

/**
 * The DOM grid: a focusable cell per device. The frames (blocks, captions,
 * coordinates) are laid out by CSS; the cells are one layer over them, each
 * placed at its slot by a transform. A spec edit repaints the cells; a mesh
 * edit over the same devices rebuilds only the frames and moves the very
 * same cells (found by device id): none is re-inserted or laid out in a grid
 * again, each takes its new paint and place in one style pass (at 512
 * devices, re-inserting them was most of the edit).
 */
class DomMeshGrid implements PictureView {
  readonly element: HTMLElement;
  private layout: Layout;
  private style: MeshGridStyle;
  /** Cells below 30px show no tag: one element with the id as its text (a third of the elements to style). */
  private readonly compact: boolean;
  private readonly pitch: number;
  private readonly idPrefix = `sv-${gridIds.page}-${++gridIds.count}-d`;
  private frames: HTMLElement;
  /** The leaf grids, in mesh order of their outer coordinates: each ends with its slot. */
  private leafGrids: HTMLElement[] = [];
  private readonly layer = h("div", { class: "sv-cells" });
  /** Compact grids draw their cells' fills on this canvas under them (see cellFills.ts); null: inline backgrounds. */
  private readonly fills: HTMLCanvasElement | null;
  /** Where the cells were last placed (null until the grid is in the page). */
  private origins: Float32Array | null = null;
  /** The highlighted tile's holders, while a highlight is shown. */
  private partners: ReadonlySet<number> | null = null;
  private shown: ReadonlySet<number> | null = null;
  /** Asks for the fills to be painted in the next frame, as the other canvases are (one paint however many asks). */
  private readonly drawFills: () => void;
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
    this.pitch = cellSize + CELL_GAP;
    this.element.style.setProperty("--sv-cell-size", `${cellSize}px`);
    this.element.style.setProperty("--sv-cell-gap", `${CELL_GAP}px`);
    this.compact = cellSize < 30;
    if (this.compact) this.element.classList.add("sv-compact");
    if (style.label === "physical") this.element.classList.add("sv-physical-labels");
    this.frames = h("div");
    this.fills = this.compact ? h("canvas", { class: "sv-cell-fills", "aria-hidden": "true" }) : null;
    this.element.append(...[this.frames, this.fills, this.layer].filter((e): e is HTMLElement => e !== null));
    this.drawFills = framePainter(() => this.paintFills(), signal);
    this.build();
    onResize(this.element, this.place, signal);
    this.listen(events, signal);
  }

  /** Frames for the current layout and its cells, reusing the cells of the last build by device id. */
  private build(): void {
    const { layout } = this;
    this.leafGrids = [];
    const frames = meshFrames(layout, 0, this.leafGrids);
    // The screen reader's grouping: each leaf grid owns its cells (a contiguous run of mesh positions).
    const inner = layout.deviceCount / this.leafGrids.length;
    for (const [leaf, grid] of this.leafGrids.entries()) {
      const ids = Array.from({ length: inner }, (_, i) => this.cellId(layout.ids[leaf * inner + i]));
      grid.setAttribute("aria-owns", ids.join(" "));
    }
    this.frames.replaceWith(frames);
    this.frames = frames;
    // Where the slots are is read before any cell changes: the layout this forces is the new
    // frames' (the cells are out of flow), and each cell then takes its paint and its place in
    // one style pass (a second pass over 512 cells cost 8 ms in JupyterLab).
    const at = this.cellOrigins();
    this.cells = new Array(layout.deviceCount);
    this.written = new Array(layout.deviceCount);
    for (let k = 0; k < layout.deviceCount; k++) {
      this.cellAt(k);
      if (at) this.moveCell(k, at);
    }
    this.origins = at;
    this.drawFills();
    this.byId = new Map(this.cells.map((cell, k) => [layout.ids[k], { cell, written: this.written[k] }]));
    // Document order is mesh order (reading and tab order); a mesh edit seldom changes it.
    const inOrder =
      this.layer.children.length === this.cells.length && this.cells.every((c, k) => this.layer.children[k] === c);
    if (!inOrder) this.layer.replaceChildren(...this.cells);
    this.roving = rovingFocus(this.cells);
  }

  /** Where each cell goes (see domCellOrigins); null while the grid is not in the page. */
  private cellOrigins(): Float32Array | null {
    if (!this.element.isConnected) return null;
    const origins = new Float32Array(2 * this.leafGrids.length);
    for (const [leaf, grid] of this.leafGrids.entries()) {
      const slot = grid.lastElementChild as HTMLElement;
      [origins[2 * leaf], origins[2 * leaf + 1]] = offsetWithin(slot, this.element);
    }
    return domCellOrigins(this.layout.meshSizes, origins, this.pitch);
  }

  private moveCell(k: number, at: Float32Array): void {
    const cell = this.cells[k];
    write(this.written[k], "at", `translate(${at[2 * k]}px, ${at[2 * k + 1]}px)`, (v) => {
      cell.style.transform = v;
    });
  }

  /** Places the cells again where the frames moved: the grid first shown, or its blocks wrapped anew. */
  private readonly place = (): void => {
    const at = this.cellOrigins();
    // The observer also fires after an edit that placed the cells already: nothing moved, nothing to do.
    if (at === null || (this.origins !== null && sameOrigins(at, this.origins))) return;
    for (let k = 0; k < this.cells.length; k++) this.moveCell(k, at);
    this.origins = at;
    this.drawFills();
  };

  /** The fills canvas, as the cells' CSS would paint their backgrounds. */
  private paintFills(): void {
    if (!this.fills || !this.origins) return;
    const { layout, partners, shown } = this;
    const { paint, fill } = this.style;
    drawCellFills(this.fills, this.origins, this.pitch - CELL_GAP, (k) =>
      cellFill(paint ? paint.fill(k) : fill(layout.tileOf[k]), {
        dimmed: partners !== null && !partners.has(k),
        outside: shown !== null && !shown.has(layout.tileOf[k]),
      }),
    );
  }

  private cellId(deviceId: number): string {
    return `${this.idPrefix}${deviceId}`;
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
    const attributes = { class: "sv-cell", id: this.cellId(id), "data-device-id": id, role: "button" };
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
      // Under a fills canvas the colour is only said (an attribute no rule reads costs no restyle).
      if (this.fills) cell.setAttribute("data-fill", v);
      else cell.style.backgroundColor = v;
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
    const had = this.partners;
    this.partners = highlight ? new Set(this.layout.holders[highlight.tile] ?? []) : null;
    if (highlight) {
      for (const k of this.partners ?? []) {
        cells[k].classList.add("sv-partner");
        this.lit.push(k);
      }
      if (highlight.position !== null && cells[highlight.position]) {
        cells[highlight.position].classList.add("sv-active");
        this.lit.push(highlight.position);
      }
    }
    if (had !== null || this.partners !== null) this.drawFills();
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
    const had = this.shown;
    this.shown = tiles;
    if (had !== null || tiles !== null) this.drawFills();
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
      this.element.setAttribute("aria-label", meshLabel(next));
      this.build();
    }
    this.setShown(null);
    return true;
  };

  readonly repaint = (): void => {
    for (let k = 0; k < this.cells.length; k++) this.paintCell(k);
    this.drawFills();
  };
}

/** Calls `then` whenever `element` changes size, first shown included (not at all without ResizeObserver). */
function onResize(element: HTMLElement, then: () => void, signal: AbortSignal): void {
  if (typeof ResizeObserver === "undefined") return;
  const observer = new ResizeObserver(then);
  observer.observe(element);
  signal.addEventListener("abort", () => observer.disconnect(), { once: true });
}

/**
 * Where `element` sits inside `root` (a positioned ancestor), in layout
 * pixels: the offsets up the chain of positioned ancestors, which ignore
 * scrolling and transforms above, as absolutely placed children do.
 */
function offsetWithin(element: HTMLElement, root: HTMLElement): [number, number] {
  let x = 0;
  let y = 0;
  for (let at: HTMLElement | null = element; at && at !== root; at = at.offsetParent as HTMLElement | null) {
    x += at.offsetLeft;
    y += at.offsetTop;
  }
  return [x, y];
}

function sameOrigins(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
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

/** The same mesh: axis names, sizes, types and abstractness. */
function sameMesh(a: Layout, b: Layout): boolean {
  return JSON.stringify(a.payload.mesh) === JSON.stringify(b.payload.mesh);
}

/** The same device ids in the same mesh order (whatever the mesh's shape). */
function sameIds(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  for (let k = 0; k < a.deviceCount; k++) if (a.ids[k] !== b.ids[k]) return false;
  return true;
}

function sameDevices(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  if (!sameMesh(a, b)) return false;
  for (let k = 0; k < a.deviceCount; k++) {
    if (a.ids[k] !== b.ids[k] || a.addressable[k] !== b.addressable[k] || a.process[k] !== b.process[k]) return false;
  }
  return true;
}

/** What a DOM cell was last given (null: never): a write that would change nothing is skipped. */
type CellWrites = Record<"text" | "label" | "fill" | "ink" | "tile" | "tag" | "at", string | null>;

function blankWrites(): CellWrites {
  return { text: null, label: null, fill: null, ink: null, tile: null, tag: null, at: null };
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
  return new CanvasMeshGrid(layout, events, signal, style);
}

/**
 * The canvas grid: every device a square on one canvas, with hit-testing,
 * a keyboard cursor and a live line for screen readers. An edit keeps the
 * canvas (its context, its backing store while the size holds, the fonts it
 * has shaped) and paints it again: a new canvas per edit cost JupyterLab
 * about 3 ms of context and store set-up and first text shaping at 512 devices.
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
   * shapes no text (512 ids were most of its paint). A layer is drawn after the
   * first paint of its mesh, in an idle moment (a new canvas's store and 512
   * texts would otherwise delay that paint), and the layers of the last two
   * meshes are kept, so edits back and forth between two meshes reuse theirs.
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
