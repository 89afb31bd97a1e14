/**
 * The mesh grid as DOM (small meshes): a focusable cell per device over
 * frames that CSS lays out (blocks, captions, coordinates).
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { framePainter } from "./canvasPaint";
import { cellFill, drawCellFills } from "./cellFills";
import { isRemote } from "./describe";
import type { Highlight, PictureEvents, PictureStyle, PictureView, Target } from "./interaction";
import { delegateTargets, itemNumber, navigateByKeys, rovingFocus } from "./interaction";
import { blankWrites, type CellWrites, newCell, paintCell, write } from "./meshCells";
import {
  cellText,
  gridRoot,
  type MeshGridStyle,
  meshLabel,
  meshMove,
  sameDeviceSet,
  sameDevices,
} from "./meshGridParts";
import { axisRoles, domCellOrigins, leafShape } from "./meshLayout";

export function renderMeshDom(
  layout: Layout,
  events: PictureEvents,
  signal: AbortSignal,
  style: MeshGridStyle,
): PictureView {
  return new DomMeshGrid(layout, events, signal, style);
}

/** Cells shrink as the mesh grows; below 30px the tile tag is dropped (the aria-label keeps it). */
function cellSizeFor(deviceCount: number): number {
  return deviceCount <= 16 ? 44 : deviceCount <= 64 ? 34 : deviceCount <= 256 ? 26 : 22;
}

/** The space between neighbouring cells, in CSS pixels. */
const CELL_GAP = 2;

/** widget.css's padding of `.sv-mesh`, each side. */
const GRID_PADDING = 4;

/** Cells below this size are compact (no tile tag); a grid of larger cells shrinks no further. */
const COMPACT_BELOW = 30;

/** The smallest a compact cell shrinks to, to fit the output's width. */
const MIN_COMPACT_CELL = 12;

/** A compact cell's id font (widget.css's default) and the smallest that is shown at all. */
const COMPACT_FONT = 10;

const MIN_ID_FONT = 6;

/** A bold digit's width as a share of the font size (an upper bound for the UI fonts). */
const ID_CHAR_WIDTH = 0.65;

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
 * again, each takes its new paint and place in one style pass, since
 * re-inserting hundreds of cells would cost more than the edit itself.
 */
class DomMeshGrid implements PictureView {
  readonly element: HTMLElement;
  private layout: Layout;
  private style: MeshGridStyle;
  /** Cells below 30px show no tag: one element with the id as its text (a third of the elements to style). */
  private readonly compact: boolean;
  private pitch: number;
  /** The cell size for this many devices; the grid shrinks below it to fit a narrower output. */
  private readonly baseCell: number;
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
    this.baseCell = cellSize;
    this.pitch = cellSize + CELL_GAP;
    this.element.style.setProperty("--sv-cell-gap", `${CELL_GAP}px`);
    this.compact = cellSize < COMPACT_BELOW;
    this.setCellSize(cellSize);
    if (this.compact) this.element.classList.add("sv-compact");
    if (style.label === "physical") this.element.classList.add("sv-physical-labels");
    this.frames = h("div");
    this.fills = this.compact ? h("canvas", { class: "sv-cell-fills", "aria-hidden": "true" }) : null;
    this.element.append(...[this.frames, this.fills, this.layer].filter((e): e is HTMLElement => e !== null));
    this.drawFills = framePainter(() => this.paintFills(), signal);
    this.build();
    onResize(this.element, this.fitAndPlace, signal);
    this.listen(events, signal);
  }

  /**
   * Cells of `size` px, and the id's font size that fits the widest id in every cell alike: every
   * cell shows its id, or (below a readable size) none does and the inspector says it.
   */
  private setCellSize(size: number): void {
    this.pitch = size + CELL_GAP;
    this.element.style.setProperty("--sv-cell-size", `${size}px`);
    if (!this.compact) return;
    const digits = String(Math.max(0, ...this.layout.ids)).length;
    const font = Math.min(COMPACT_FONT, Math.floor((size - 4) / (ID_CHAR_WIDTH * digits)));
    this.element.style.setProperty("--sv-cell-font", `${font}px`);
    this.element.classList.toggle("sv-no-ids", font < MIN_ID_FONT);
  }

  /** Shrinks the cells until the frames fit the grid's width (or grows them back, up to the base size), then places them. */
  private readonly fitAndPlace = (): void => {
    const room = this.element.clientWidth - 2 * GRID_PADDING;
    const wide = this.frames.scrollWidth;
    const size = this.pitch - CELL_GAP;
    if (room > 0 && wide > 0) {
      const minimum = this.compact ? MIN_COMPACT_CELL : COMPACT_BELOW;
      const fitting = Math.max(
        minimum,
        Math.min(this.baseCell, Math.floor(((size + CELL_GAP) * room) / wide) - CELL_GAP),
      );
      if (fitting !== size && (wide > room || fitting > size)) this.setCellSize(fitting);
    }
    this.place();
  };

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
    // one style pass rather than two.
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
    const cell = reused?.cell ?? newCell(id, this.cellId(id), this.compact);
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
    paintCell(cell, written, layout, k, this.style, { compact: this.compact, fillsCanvas: this.fills !== null });
    return cell;
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
    const form = { compact: this.compact, fillsCanvas: this.fills !== null };
    for (let k = 0; k < this.cells.length; k++)
      paintCell(this.cells[k], this.written[k], this.layout, k, this.style, form);
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
