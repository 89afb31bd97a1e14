/**
 * The array map: the array's tiles drawn in proportion to their extents on
 * two chosen dimensions, each labelled with its index range, its devices
 * and a replication badge (lines that do not fit a tile are dropped whole,
 * see labelFit.ts), with rulers along the edges naming the mesh axes that
 * split each drawn dimension. Other dimensions are stepped through.
 */

import type { Layout } from "../payload/array";
import { tileIntervals } from "../payload/array";
import { cssVar, h } from "../util/dom";
import { axisColor } from "../util/palette";
import { formatIndex, formatInterval } from "../util/ranges";
import {
  beginPaint,
  type CanvasSize,
  framePainter,
  sizeCanvas,
  strokeMark,
  strokePin,
  wireCanvas,
} from "./canvasPaint";
import { holderIdsText, isRemote, platformLabel, tileAriaLabel } from "./describe";
import type { Highlight, PictureEvents, PictureStyle, PictureView, Target } from "./interaction";
import {
  delegateTargets,
  gridMoves,
  itemNumber,
  MAP_CANVAS_THRESHOLD,
  navigateByKeys,
  rovingFocus,
} from "./interaction";
import { type FittedLabels, fitTileLabels, fitTileLabelsInline, type Size, type TileLabelSizes } from "./labelFit";
import { type RulerSpec, renderRuler, renderRulerName, rulerBands } from "./mapRulers";
import { chooseDim, type SliceChoice, steppedDims, type VisibleTile, visibleTiles } from "./slicing";
import { textWidth } from "./textWidth";

/** Up to this many tiles drawn, dimming fades (the mesh grid's cells fade up to 64 devices too). */
const FADE_MAX_TILES = 64;

export interface ArrayMapOptions extends PictureStyle {
  choice: SliceChoice;
  onChoice: (choice: SliceChoice) => void;
  /** The room the caller's last map had (the caller keeps it from map to map; see MapRoom). */
  room?: MapRoom;
}

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

/** The map with its dimension pickers and steppers above it. */
export function renderArrayMap(
  layout: Layout,
  events: PictureEvents,
  signal: AbortSignal,
  options: ArrayMapOptions,
): PictureView {
  const { choice } = options;
  const tiles = visibleTiles(layout, choice);
  const root = h("div", {
    // Past FADE_MAX_TILES tiles the dimming does not fade (widget.css: a transition makes restyles dearer).
    class: tiles.length > FADE_MAX_TILES ? "sv-map sv-map-many" : "sv-map",
    role: "group",
    "aria-label": `Array map of ${layout.payload.dtype}[${layout.payload.shape.join(",")}]`,
    "data-tile-count": tiles.length,
    "data-total-tiles": layout.tileCount,
  });
  const controls = renderSliceControls(layout, choice, options.onChoice, signal);
  if (controls) root.append(controls);
  const draw = tiles.length > MAP_CANVAS_THRESHOLD ? renderMapCanvas : renderMapDom;
  const room = options.room ?? { width: Number.POSITIVE_INFINITY };
  const size = mapSize(layout, choice);
  const picture = draw({ layout, tiles, choice, events, signal, size, fill: options.fill, room });
  root.setAttribute("data-render", tiles.length > MAP_CANVAS_THRESHOLD ? "canvas" : "dom");
  root.append(picture.element);
  return { ...picture, element: root };
}

/** Fraction of dimension `dim` before `at` (0 for an absent dim). */
function fraction(layout: Layout, dim: number | null, at: number): number {
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
function frame(layout: Layout, choice: SliceChoice, area: HTMLElement, size: CanvasSize): HTMLElement {
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
interface MapParts extends PictureStyle {
  room: MapRoom;
  layout: Layout;
  tiles: VisibleTile[];
  choice: SliceChoice;
  events: PictureEvents;
  signal: AbortSignal;
  size: CanvasSize;
}

// ---------------------------------------------------------------- DOM path

/**
 * Rows of tiles keep at least this height (CSS px) however narrow the output
 * makes the map: room for one tight label line. A map of very wide tiles is
 * then drawn a little taller than its proportions.
 */
export const MIN_TILE_ROW = 14;

function renderMapDom({ layout, tiles, choice, events, signal, size, fill, room }: MapParts): PictureView {
  const area = h("div", { class: "sv-map-area" });
  area.style.aspectRatio = `${size.width} / ${size.height}`;
  const rows = choice.rowDim === null ? 1 : layout.tileCounts[choice.rowDim];
  area.style.minHeight = `${Math.min(rows * MIN_TILE_ROW, MAP_MAX_HEIGHT * MAP_GROWTH_FOR_LABELS)}px`;
  const byTile = new Map<number, HTMLElement>();
  const elements: HTMLElement[] = [];
  const platform = platformLabel(layout);
  const shown = [choice.rowDim, choice.colDim].filter((d): d is number => d !== null);
  const boxes: TileBox[] = [];
  for (const [i, { tile, row, col }] of tiles.entries()) {
    const texts = tileTexts(layout, tile, platform, shown);
    const element = tileElement(layout, tile, i === 0, texts);
    const box = placeTile(element, layout, choice, row, col);
    element.style.backgroundColor = fill(tile);
    if (layout.holders[tile].every((k) => isRemote(layout, k))) element.classList.add("sv-remote");
    byTile.set(tile, element);
    elements.push(element);
    boxes.push({ element, texts, ...box });
    area.append(element);
  }
  fitLabels(area, boxes, size, rows, room, signal);
  delegateTargets(area, events, signal);
  const roving = rovingFocus(elements);
  navigateByKeys(area, signal, {
    from: (event) => {
      const t = itemNumber(event, "data-tile");
      return tiles.findIndex((v) => v.tile === t);
    },
    move: gridMoves(choice.colDim === null ? 1 : layout.tileCounts[choice.colDim], tiles.length),
    go: roving.go,
    activate: (i) => events.onActivate({ kind: "tile", tile: tiles[i].tile }),
  });
  return { element: frame(layout, choice, area, size), ...tileMarks(area, byTile) };
}

/** What a tile's label lines say. */
interface TileTexts {
  name: string;
  /** Null when the tile is not replicated. */
  badge: string | null;
  index: string;
  /** The devices line's prefix (`CPU `), dropped first when the line does not fit. */
  platform: string;
  ids: string;
}

function tileTexts(layout: Layout, tile: number, platform: string, shown: number[]): TileTexts {
  const copies = layout.holders[tile].length;
  const intervals = tileIntervals(tile, layout.bounds);
  return {
    name: `t${tile}`,
    badge: copies > 1 ? `\u00d7${copies}` : null,
    index: shown.length ? formatIndex(shown.map((d) => intervals[d])) : "scalar",
    platform: `${platform} `,
    ids: holderIdsText(layout, tile),
  };
}

/** One tile's box: its name and copies, its index ranges along the shown dimensions, its devices. */
function tileElement(layout: Layout, tile: number, first: boolean, texts: TileTexts): HTMLElement {
  const copies = layout.holders[tile].length;
  const attributes = {
    class: "sv-tile",
    "data-tile": tile,
    role: "button",
    tabindex: first ? 0 : -1,
    "aria-label": tileAriaLabel(layout, tile),
  };
  return h("div", attributes, [
    h("span", { class: "sv-tile-head" }, [
      h("span", { class: "sv-tile-name" }, [texts.name]),
      texts.badge ? h("span", { class: "sv-badge", title: `${copies} copies` }, [texts.badge]) : null,
    ]),
    h("span", { class: "sv-tile-index" }, [texts.index]),
    h("span", { class: "sv-tile-devices" }, [
      h("span", { class: "sv-tile-platform" }, [texts.platform]),
      h("span", { class: "sv-tile-ids" }, [texts.ids]),
    ]),
  ]);
}

/** Places a tile's box by its share of the array along each shown dimension; returns its size (fractions). */
function placeTile(
  element: HTMLElement,
  layout: Layout,
  choice: MapParts["choice"],
  row: number,
  col: number,
): { width: number; height: number } {
  const left = fraction(layout, choice.colDim, col);
  const right = fraction(layout, choice.colDim, col + 1);
  const top = fraction(layout, choice.rowDim, row);
  const bottom = fraction(layout, choice.rowDim, row + 1);
  element.style.left = `${left * 100}%`;
  element.style.width = `${(right - left) * 100}%`;
  element.style.top = `${top * 100}%`;
  element.style.height = `${(bottom - top) * 100}%`;
  return { width: right - left, height: bottom - top };
}

/** The highlight (a tile and its partners lit) and the pin on the map's tile boxes. */
function tileMarks(
  area: HTMLElement,
  byTile: ReadonlyMap<number, HTMLElement>,
): Pick<PictureView, "setHighlight" | "setPinned"> {
  let lit: HTMLElement | null = null;
  let pinned: HTMLElement | null = null;
  return {
    setHighlight: (highlight: Highlight | null): void => {
      lit?.classList.remove("sv-partner");
      lit = highlight ? (byTile.get(highlight.tile) ?? null) : null;
      lit?.classList.add("sv-partner");
      area.classList.toggle("sv-highlighting", highlight !== null);
    },
    setPinned: (target: Target | null): void => {
      pinned?.classList.remove("sv-pinned");
      pinned = target?.kind === "tile" ? (byTile.get(target.tile) ?? null) : null;
      pinned?.classList.add("sv-pinned");
    },
  };
}

/** Tile padding (CSS px, each side, border included) in the normal and the tight label layouts. */
const PAD = { normal: { x: 5, y: 4 }, tight: { x: 3, y: 1 } } as const;
/** Tight tiles set 9px lines at line-height 1, the normal ones 10px at 1.25, and 6px apart side by side (widget.css). */
const TIGHT_LINE = 9 / (10 * 1.25);
const TIGHT_GAP = 6;

/** A tile of the DOM map: its element, what its lines say, and its share of the map's width and height. */
interface TileBox {
  element: HTMLElement;
  texts: TileTexts;
  width: number;
  height: number;
}

/**
 * The map area's inner size once laid out (see `frame` and widget.css
 * `.sv-map-area`): the map's width or the room there is, the height in the
 * map's proportions or the rows' minimum height, less the area's 1px border.
 */
function expectedArea(size: CanvasSize, rows: number, room: MapRoom): Size {
  const minHeight = Math.min(rows * MIN_TILE_ROW, MAP_MAX_HEIGHT * MAP_GROWTH_FOR_LABELS);
  const width = Math.min(size.width, room.width);
  return { width: width - 2, height: Math.max((width * size.height) / size.width, minHeight) - 2 };
}

/**
 * Shows in each tile only the label lines that fit it whole: first before
 * the tiles are laid out, for the area's expected size and with the fonts
 * the last map was drawn in (so a new map costs one style and layout pass,
 * not two), then whenever the area is resized (its first layout included),
 * which changes nothing where the first fit was right. The lines' sizes
 * follow from their texts' widths (textWidth.ts) and widget.css's line
 * boxes; without canvas text measuring they are measured as laid out.
 * Without ResizeObserver (tests without layout) every line stays.
 */
function fitLabels(
  area: HTMLElement,
  boxes: readonly TileBox[],
  size: CanvasSize,
  rows: number,
  room: MapRoom,
  signal: AbortSignal,
): void {
  if (typeof ResizeObserver === "undefined") return;
  const expected = expectedArea(size, rows, room);
  let fonts = lastTileFonts;
  let sizes = fonts && measuredByText(boxes, fonts);
  const fitAll = (width: number, height: number, of: readonly TileLabelSizes[]): void => {
    boxes.forEach((box, i) => {
      const tile: Size = { width: box.width * width, height: box.height * height };
      applyLabels(box.element, chooseLabels(tile, of[i]));
    });
  };
  if (sizes) fitAll(expected.width, expected.height, sizes);
  const observer = new ResizeObserver(() => {
    const width = area.clientWidth;
    const height = area.clientHeight;
    if (width === 0 || height === 0) return;
    room.width = width + 2 < size.width ? width + 2 : Number.POSITIVE_INFINITY;
    // Styles are computed here: the fonts read now are the ones the tiles were drawn in.
    const now = tileFonts(area);
    lastTileFonts = now;
    if (!sizes || !fonts || !sameFonts(fonts, now)) {
      fonts = now;
      sizes = measuredByText(boxes, now) ?? boxes.map(({ element }) => measureLabels(element));
    }
    fitAll(width, height, sizes);
  });
  observer.observe(area);
  signal.addEventListener("abort", () => observer.disconnect());
}

/** The fonts of a tile's lines (widget.css: `.sv-tile` and its lines), in CSS font shorthand. */
interface TileFonts {
  name: string;
  badge: string;
  index: string;
  devices: string;
}

/** The fonts the last map (DOM or canvas) was drawn in (the page's font variables rarely change). */
let lastTileFonts: TileFonts | null = null;

function tileFonts(element: Element): TileFonts {
  const font = cssVar(element, "--sv-font", "sans-serif");
  const mono = cssVar(element, "--sv-mono", "monospace");
  return { name: `700 11px ${font}`, badge: `700 10px ${font}`, index: `10px ${mono}`, devices: `10px ${font}` };
}

function sameFonts(a: TileFonts, b: TileFonts): boolean {
  return a.name === b.name && a.badge === b.badge && a.index === b.index && a.devices === b.devices;
}

/**
 * The line boxes of widget.css: tile text 11px at line-height 1.25, index
 * and devices 10px at the same 1.25; the badge 10px at 1.2 within a 1px
 * border, 4px padding across; name and badge 4px apart on one centred line.
 */
const LINE_HEIGHT = 10 * 1.25;
const HEAD_HEIGHT = Math.max(11 * 1.25, 10 * 1.2 + 2);
const BADGE_EDGES = 2 * (4 + 1);
const HEAD_GAP = 4;

/** Each tile's line sizes from its texts' widths; null without canvas text measuring. */
function measuredByText(boxes: readonly TileBox[], fonts: TileFonts): TileLabelSizes[] | null {
  const out: TileLabelSizes[] = [];
  for (const { texts } of boxes) {
    const name = textWidth(fonts.name, texts.name);
    const badge = texts.badge === null ? 0 : textWidth(fonts.badge, texts.badge);
    const index = textWidth(fonts.index, texts.index);
    const devices = textWidth(fonts.devices, texts.platform + texts.ids);
    const ids = textWidth(fonts.devices, texts.ids);
    if (name === null || badge === null || index === null || devices === null || ids === null) return null;
    out.push({
      name: { width: name, height: HEAD_HEIGHT },
      badge: texts.badge === null ? null : { width: badge + BADGE_EDGES, height: HEAD_HEIGHT },
      index: { width: index, height: LINE_HEIGHT },
      devices: { width: devices, height: LINE_HEIGHT },
      ids: { width: ids, height: LINE_HEIGHT },
      gap: texts.badge === null ? 0 : HEAD_GAP,
    });
  }
  return out;
}

/** The fitted lines of a tile of `tile` px, and whether it needs the tight padding. */
export function chooseLabels(tile: Size, sizes: TileLabelSizes): { labels: FittedLabels; tight: boolean } {
  const inner = (pad: { x: number; y: number }): Size => ({
    width: Math.max(0, tile.width - 2 * pad.x),
    height: Math.max(0, tile.height - 2 * pad.y),
  });
  const normal = fitTileLabels(inner(PAD.normal), sizes);
  if (normal.devices) return { labels: normal, tight: false };
  // Tight tiles set their lines side by side, smaller (widths measured at the normal size are an upper bound).
  const shorter = (size: Size): Size => ({ width: size.width, height: size.height * TIGHT_LINE });
  const tight = fitTileLabelsInline(
    inner(PAD.tight),
    {
      ...sizes,
      name: shorter(sizes.name),
      badge: sizes.badge && shorter(sizes.badge),
      index: shorter(sizes.index),
      devices: shorter(sizes.devices),
      ids: shorter(sizes.ids),
    },
    TIGHT_GAP,
  );
  return tight.devices || tight.badge ? { labels: tight, tight: true } : { labels: normal, tight: false };
}

function measureLabels(tile: HTMLElement): TileLabelSizes {
  const size = (selector: string): Size => {
    const element = tile.querySelector<HTMLElement>(selector);
    return element ? { width: element.offsetWidth, height: element.offsetHeight } : { width: 0, height: 0 };
  };
  const badge = tile.querySelector(".sv-badge") ? size(".sv-badge") : null;
  const name = size(".sv-tile-name");
  const head = size(".sv-tile-head");
  return {
    name: { width: name.width, height: head.height },
    badge: badge ? { width: badge.width, height: head.height } : null,
    index: size(".sv-tile-index"),
    devices: size(".sv-tile-devices"),
    ids: { width: size(".sv-tile-ids").width, height: size(".sv-tile-devices").height },
    gap: badge ? Math.max(0, head.width - name.width - badge.width) : 0,
  };
}

function applyLabels(tile: HTMLElement, { labels, tight }: { labels: FittedLabels; tight: boolean }): void {
  tile.classList.toggle("sv-tight", tight);
  tile.classList.toggle("sv-no-name", !labels.name);
  tile.classList.toggle("sv-no-badge", !labels.badge);
  tile.classList.toggle("sv-no-index", !labels.index);
  tile.classList.toggle("sv-no-devices", labels.devices === null);
  tile.classList.toggle("sv-no-platform", labels.devices === "ids");
}

// ------------------------------------------------------------- canvas path

function renderMapCanvas({ layout, tiles, choice, events, signal, size, fill, room }: MapParts): PictureView {
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
    lastTileFonts = tileFonts(canvas);
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

// ---------------------------------------------------------- N-D controls

const STEP_KEYS: Record<string, number | "first" | "last"> = {
  ArrowLeft: -1,
  ArrowDown: -1,
  ArrowRight: 1,
  ArrowUp: 1,
  PageDown: -1,
  PageUp: 1,
  Home: "first",
  End: "last",
};

function renderSliceControls(
  layout: Layout,
  choice: SliceChoice,
  onChoice: (choice: SliceChoice) => void,
  signal: AbortSignal,
): HTMLElement | null {
  const { shape } = layout.payload;
  const rank = shape.length;
  if (rank <= 2) return null;
  const controls = h("div", { class: "sv-slice-controls" });
  const dimSelect = (side: "row" | "col", current: number | null): HTMLElement => {
    const select = h("select", {
      "data-role": `${side}-dim`,
      "aria-label": side === "row" ? "dimension down" : "dimension across",
    });
    for (let d = 0; d < rank; d++) {
      select.append(h("option", { value: d, selected: d === current }, [`dim ${d} (${shape[d]})`]));
    }
    select.addEventListener("change", () => onChoice(chooseDim(choice, side, Number(select.value))), { signal });
    return h("label", { class: "sv-field" }, [side === "row" ? "down " : "across ", select]);
  };
  controls.append(dimSelect("row", choice.rowDim), dimSelect("col", choice.colDim));
  for (const d of steppedDims(rank, choice)) {
    const count = layout.tileCounts[d];
    const at = choice.steps[d];
    const interval: [number, number] = [layout.bounds[d][at], layout.bounds[d][at + 1]];
    const slider = h("input", {
      type: "range",
      min: 0,
      max: count - 1,
      step: 1,
      value: at,
      disabled: count <= 1,
      "data-role": "step",
      "data-dim": d,
      "aria-label": `dim ${d}: which block`,
    });
    const stepTo = (block: number): void => {
      const steps = choice.steps.slice();
      steps[d] = Math.min(count - 1, Math.max(0, block));
      if (steps[d] !== at) onChoice({ ...choice, steps });
    };
    // "change" (release), not "input": a redraw mid-drag would drop the thumb.
    slider.addEventListener("change", () => stepTo(Number(slider.value)), { signal });
    // Arrow keys step one block. Handled here rather than left to the range input: the
    // notebook around the widget must not take them, and each press is one redraw.
    slider.addEventListener(
      "keydown",
      (event) => {
        const delta = STEP_KEYS[event.key];
        if (delta === undefined) return;
        event.preventDefault();
        event.stopPropagation();
        stepTo(delta === "first" ? 0 : delta === "last" ? count - 1 : at + delta);
      },
      { signal },
    );
    const text =
      count > 1 ? `${formatInterval(interval)} (block ${at + 1} of ${count})` : `${formatInterval(interval)} (whole)`;
    controls.append(h("label", { class: "sv-field sv-stepper" }, [`dim ${d} `, slider, h("output", {}, [text])]));
  }
  return controls;
}
