/**
 * What the mesh grid's DOM and canvas drawings share: the style a caller
 * gives, the text and accessible names of cells and of the grid, the
 * arrow-key moves between devices, and which edits keep the same devices.
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { physicalCoordsText } from "./describe";
import type { PictureStyle } from "./interaction";
import { type Direction, neighbour } from "./meshLayout";

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

/** The text a cell shows for the device at mesh position k. */
export function cellText(layout: Layout, k: number, label: CellLabel): string {
  const physical = label === "physical" ? physicalCoordsText(layout, k) : "";
  if (!physical) return String(layout.ids[k]);
  const slice = layout.physical.sliceIndex;
  return slice ? `s${slice[k]}:${physical}` : physical;
}

/** The grid's accessible name: the mesh's axes and sizes. */
export function meshLabel(layout: Layout): string {
  const mesh = layout.payload.mesh;
  const summary = mesh ? mesh.names.map((name, i) => `${name}=${mesh.sizes[i]}`).join(", ") : "single device";
  return `Device mesh ${summary}${mesh?.abstract ? " (abstract)" : ""}`;
}

export function gridRoot(layout: Layout, mode: "dom" | "canvas"): HTMLElement {
  return h("div", {
    class: `sv-mesh sv-mesh-${mode}`,
    role: "group",
    "aria-label": meshLabel(layout),
    "data-device-count": layout.deviceCount,
    "data-render": mode,
  });
}

/** The same devices (ids, owners) in any order, on a mesh of the same rank or not. */
export function sameDeviceSet(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount || a.physical.coords || b.physical.coords) return false;
  const owner = new Map<number, string>();
  for (let k = 0; k < a.deviceCount; k++) owner.set(a.ids[k], `${a.addressable[k]}:${a.process[k]}`);
  for (let k = 0; k < b.deviceCount; k++) {
    if (owner.get(b.ids[k]) !== `${b.addressable[k]}:${b.process[k]}`) return false;
  }
  return true;
}

/** The same mesh: axis names, sizes, types and abstractness. */
export function sameMesh(a: Layout, b: Layout): boolean {
  return JSON.stringify(a.payload.mesh) === JSON.stringify(b.payload.mesh);
}

/** The same device ids in the same mesh order (whatever the mesh's shape). */
export function sameIds(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  for (let k = 0; k < a.deviceCount; k++) if (a.ids[k] !== b.ids[k]) return false;
  return true;
}

export function sameDevices(a: Layout, b: Layout): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  if (!sameMesh(a, b)) return false;
  for (let k = 0; k < a.deviceCount; k++) {
    if (a.ids[k] !== b.ids[k] || a.addressable[k] !== b.addressable[k] || a.process[k] !== b.process[k]) return false;
  }
  return true;
}

/** Arrow keys step through the mesh (see `neighbour`); Home and End jump to the first and last device. */
export function meshMove(from: number, key: string, sizes: readonly number[]): number | null {
  const direction = ARROWS[key];
  if (direction) return neighbour(from, sizes, direction);
  if (key === "Home") return 0;
  if (key === "End") return sizes.reduce((a, b) => a * b, 1) - 1;
  return null;
}
