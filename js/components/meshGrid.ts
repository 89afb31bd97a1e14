/**
 * The mesh grid: one cell per device, placed by mesh coordinates, coloured
 * by the tile it holds. Small meshes are DOM (focusable cells); past
 * CANVAS_THRESHOLD devices the grid is drawn on one canvas with hit-testing.
 */

import type { Layout } from "../payload/array";
import type { PictureEvents, PictureView } from "./interaction";
import { CANVAS_THRESHOLD } from "./interaction";
import { renderMeshCanvas } from "./meshGridCanvas";
import { renderMeshDom } from "./meshGridDom";
import type { MeshGridStyle } from "./meshGridParts";

export type { CellLabel, DevicePaint, MeshGridStyle } from "./meshGridParts";

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
