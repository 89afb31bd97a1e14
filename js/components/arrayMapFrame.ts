/**
 * The array map's frame and size, shared by its DOM and canvas drawings: the
 * map's size in proportion to the tiles' extents, and the dimension titles and
 * rulers around the drawing area.
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import type { CanvasSize } from "./canvasPaint";
import type { PictureEvents, PictureStyle } from "./interaction";
import { type RulerSpec, renderRuler, renderRulerName, rulerBands } from "./mapRulers";
import type { SliceChoice, VisibleTile } from "./slicing";

/**
 * How wide a map area its place had room for, as last laid out (CSS px;
 * Infinity while no map was narrowed): a new map fits its tiles' labels to
 * that width before it is laid out.
 */
export interface MapRoom {
  width: number;
  /**
   * The last canvas map's canvas, which the next canvas map takes over: a new
   * canvas per edit would set up a context and a backing store again.
   */
  canvas?: HTMLCanvasElement;
}

/** Fraction of dimension `dim` before `at` (0 for an absent dim). */
export function fraction(layout: Layout, dim: number | null, at: number): number {
  if (dim === null) return at === 0 ? 0 : 1;
  const extent = layout.payload.shape[dim];
  return extent > 0 ? layout.bounds[dim][at] / extent : at === 0 ? 0 : 1;
}

function dimTitle(layout: Layout, dim: number, arrow: string, vertical = false): HTMLElement {
  const axes = layout.payload.spec[dim] ?? [];
  const names = layout.payload.mesh?.names ?? [];
  const title = h("div", { class: vertical ? "sv-dim-title sv-vertical" : "sv-dim-title" }, [
    `dim ${dim} (${layout.payload.shape[dim]})`,
  ]);
  for (const axis of axes) {
    const mark = h("span", { class: "sv-axis-ref" }, [axis]);
    mark.style.setProperty("--sv-axis", axisColor(names.indexOf(axis)));
    title.append(" ", mark);
  }
  title.append(` ${arrow}`);
  return title;
}

/** Proportions of the drawing area: the array's own, kept within readable limits. */
function aspectRatio(layout: Layout, choice: SliceChoice): number {
  const { shape } = layout.payload;
  if (choice.colDim === null) return 1;
  const across = Math.max(shape[choice.colDim], 1);
  const down = choice.rowDim === null ? across / 8 : Math.max(shape[choice.rowDim], 1);
  return Math.min(4, Math.max(0.5, across / down));
}

/** The largest map, in CSS pixels; a narrower output shrinks it in proportion. */
export const MAP_MAX_WIDTH = 440;

export const MAP_MAX_HEIGHT = 320;

/** Small arrays get at most this many pixels per element along a drawn dimension... */
const ELEMENT_MAX = 40;

/** ...but each tile keeps room for its three label lines... */
const TILE_MIN_WIDTH = 72;

const TILE_MIN_HEIGHT = 56;

/** ...growing the map past the maximum by up to this factor to make that room. */
export const MAP_GROWTH_FOR_LABELS = 2;

/**
 * The drawing area's size: the slice's proportions (see aspectRatio) at the
 * largest size within MAP_MAX_WIDTH x MAP_MAX_HEIGHT, scaled down for small
 * arrays to ELEMENT_MAX pixels per element, though never below the size at
 * which the tiles' labels fit (growing past the maximum for that, up to
 * MAP_GROWTH_FOR_LABELS; tiles smaller still drop label lines in CSS). One
 * scale for both sides keeps the tiles in proportion to their extents.
 */
export function mapSize(layout: Layout, choice: SliceChoice): CanvasSize {
  const { shape } = layout.payload;
  const aspect = aspectRatio(layout, choice);
  const width = Math.min(MAP_MAX_WIDTH, MAP_MAX_HEIGHT * aspect);
  const height = width / aspect;
  const extent = (dim: number | null): number => (dim === null ? 1 : Math.max(shape[dim], 1));
  const cuts = (dim: number | null): number => (dim === null ? 1 : layout.tileCounts[dim]);
  const elementFit = Math.min(
    (extent(choice.colDim) * ELEMENT_MAX) / width,
    (extent(choice.rowDim) * ELEMENT_MAX) / height,
  );
  const labelFitAcross = (cuts(choice.colDim) * TILE_MIN_WIDTH) / width;
  const labelFitDown = (cuts(choice.rowDim) * TILE_MIN_HEIGHT) / height;
  const fit = Math.min(1, Math.max(elementFit, labelFitAcross, labelFitDown));
  // Rows of tiles too short for their labels grow the map (in proportion)
  // past the maximum height, within a limit and never past the maximum width.
  const growth = Math.min(MAP_GROWTH_FOR_LABELS, MAP_MAX_WIDTH / width, labelFitDown);
  const scale = Math.max(fit, growth);
  return { width: Math.round(width * scale), height: Math.round(height * scale) };
}

/**
 * The drawing area with its dimension titles and rulers, on a grid whose map
 * column is at most the map's width: each title's rule and every ruler then
 * end where the map ends. Columns: the down title, the down rulers, the map,
 * the names of the across rulers; rows: the across title, the across rulers
 * (the down rulers' names beside them), the map.
 */
export function frame(layout: Layout, choice: SliceChoice, area: HTMLElement, size: CanvasSize): HTMLElement {
  const wrapper = h("div", { class: "sv-map-frame" });
  wrapper.style.setProperty("--sv-map-width", `${size.width}px`);
  const across = choice.colDim === null ? [] : rulerBands(layout, choice.colDim, size.width, "across");
  const down = choice.rowDim === null ? [] : rulerBands(layout, choice.rowDim, size.height);
  const mapColumn = 2 + down.length;
  const mapRow = 2 + across.length;
  wrapper.style.gridTemplateColumns = `auto${" auto".repeat(down.length)} minmax(0, ${size.width}px) auto`;
  const place = (element: HTMLElement, row: number, column: number): HTMLElement => {
    element.style.gridRow = String(row);
    element.style.gridColumn = String(column);
    return element;
  };
  if (choice.colDim !== null) wrapper.append(place(dimTitle(layout, choice.colDim, "\u2192"), 1, mapColumn));
  across.forEach((spec: RulerSpec, j) => {
    wrapper.append(place(renderRuler(spec, "across"), 2 + j, mapColumn));
    wrapper.append(place(renderRulerName(spec, "across"), 2 + j, mapColumn + 1));
  });
  if (choice.rowDim !== null) wrapper.append(place(dimTitle(layout, choice.rowDim, "\u2192", true), mapRow, 1));
  down.forEach((spec: RulerSpec, j) => {
    wrapper.append(place(renderRuler(spec, "down"), mapRow, 2 + j));
    wrapper.append(place(renderRulerName(spec, "down"), mapRow - 1, 2 + j));
  });
  wrapper.append(place(area, mapRow, mapColumn));
  return wrapper;
}

/** What either drawing of the map works from. */
export interface MapParts extends PictureStyle {
  room: MapRoom;
  layout: Layout;
  tiles: VisibleTile[];
  choice: SliceChoice;
  events: PictureEvents;
  signal: AbortSignal;
  size: CanvasSize;
}

/**
 * Rows of tiles keep at least this height (CSS px) however narrow the output
 * makes the map: room for one tight label line. A map of very wide tiles is
 * then drawn a little taller than its proportions.
 */
export const MIN_TILE_ROW = 14;
