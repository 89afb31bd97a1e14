/**
 * The array map: the array's tiles drawn in proportion to their extents on
 * two chosen dimensions, each labelled with its index range, its devices
 * and a replication badge (lines that do not fit a tile are dropped whole,
 * see labelFit.ts), with rulers along the edges naming the mesh axes that
 * split each drawn dimension. Other dimensions are stepped through.
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { renderMapCanvas } from "./arrayMapCanvas";
import { renderMapDom } from "./arrayMapDom";
import { type MapRoom, mapSize } from "./arrayMapFrame";
import type { PictureEvents, PictureStyle, PictureView } from "./interaction";
import { MAP_CANVAS_THRESHOLD } from "./interaction";
import { type SliceChoice, visibleTiles } from "./slicing";

export type { MapRoom } from "./arrayMapFrame";

import { renderSliceControls } from "./sliceControls";

/** Up to this many tiles drawn, dimming fades (the mesh grid's cells fade up to 64 devices too). */
const FADE_MAX_TILES = 64;

export interface ArrayMapOptions extends PictureStyle {
  choice: SliceChoice;
  onChoice: (choice: SliceChoice) => void;
  /** The room the caller's last map had (the caller keeps it from map to map; see MapRoom). */
  room?: MapRoom;
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
