/**
 * A DOM map tile's label lines: which of them fit the tile whole (labelFit.ts
 * decides from their sizes), measured from the texts' widths and widget.css's
 * line boxes, and fitted again when the map is resized.
 */

import { cssVar } from "../util/dom";
import { MAP_GROWTH_FOR_LABELS, MAP_MAX_HEIGHT, type MapRoom, MIN_TILE_ROW } from "./arrayMapFrame";
import type { CanvasSize } from "./canvasPaint";
import { type FittedLabels, fitTileLabels, fitTileLabelsInline, type Size, type TileLabelSizes } from "./labelFit";
import { textWidth } from "./textWidth";

/** What a tile's label lines say. */
export interface TileTexts {
  name: string;
  /** Null when the tile is not replicated. */
  badge: string | null;
  index: string;
  /** The devices line's prefix (`CPU `), dropped first when the line does not fit. */
  platform: string;
  ids: string;
}

/** Tile padding (CSS px, each side, border included) in the normal and the tight label layouts. */
const PAD = { normal: { x: 5, y: 4 }, tight: { x: 3, y: 1 } } as const;

/** Tight tiles set 9px lines at line-height 1, the normal ones 10px at 1.25, and 6px apart side by side (widget.css). */
const TIGHT_LINE = 9 / (10 * 1.25);

const TIGHT_GAP = 6;

/** A tile of the DOM map: its element, what its lines say, and its share of the map's width and height. */
export interface TileBox {
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
export function fitLabels(
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
    const fitted = boxes.map((box, i) =>
      chooseLabels({ width: box.width * width, height: box.height * height }, of[i]),
    );
    sameDevicesLine(fitted);
    for (const [i, box] of boxes.entries()) applyLabels(box.element, fitted[i]);
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

/** Keeps the fonts a canvas map was just painted in, for the next DOM map's first fit. */
export function rememberTileFonts(element: Element): void {
  lastTileFonts = tileFonts(element);
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

/**
 * Every tile says its devices the same way: where one tile has no room for its devices line,
 * no tile shows one (the inspector names them), and where one shows the ids alone, all do.
 */
export function sameDevicesLine(fitted: { labels: FittedLabels }[]): void {
  const lines = new Set(fitted.map((f) => f.labels.devices));
  const common: FittedLabels["devices"] = lines.has(null) ? null : lines.has("ids") ? "ids" : "full";
  for (const f of fitted) f.labels = { ...f.labels, devices: common };
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
