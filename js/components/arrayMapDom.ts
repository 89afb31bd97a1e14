/**
 * The array map drawn as DOM elements, one per tile (small maps): each tile
 * placed in proportion to its extents, with its labels and marks.
 */

import type { Layout } from "../payload/array";
import { tileIntervals } from "../payload/array";
import { h } from "../util/dom";
import { formatIndex } from "../util/ranges";
import { fraction, frame, MAP_GROWTH_FOR_LABELS, MAP_MAX_HEIGHT, type MapParts, MIN_TILE_ROW } from "./arrayMapFrame";
import { fitLabels, type TileBox, type TileTexts } from "./arrayMapLabels";
import { holderIdsText, isRemote, platformLabel, tileAriaLabel } from "./describe";
import type { Highlight, PictureView, Target } from "./interaction";
import { delegateTargets, gridMoves, itemNumber, navigateByKeys, rovingFocus } from "./interaction";

export function renderMapDom({ layout, tiles, choice, events, signal, size, fill, room }: MapParts): PictureView {
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
