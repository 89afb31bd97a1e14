/** Short human descriptions of devices and tiles, shared by labels and the inspector. */

import type { Layout } from "../payload/array";
import { meshCoords, tileIntervals } from "../payload/array";
import { compressIds, formatIndex } from "../util/ranges";

/** `x=0 y=3` for the device at mesh position k (empty without a mesh). */
export function coordText(layout: Layout, k: number): string {
  const mesh = layout.payload.mesh;
  if (!mesh) return "";
  return meshCoords(k, mesh)
    .map((c, axis) => `${mesh.names[axis]}=${c}`)
    .join(" ");
}

/** Device ids holding tile t, compressed: `0-3,8-11`. */
export function holderIdsText(layout: Layout, t: number): string {
  return compressIds(layout.holders[t].map((k) => layout.ids[k]));
}

/** `[0:2, 0:4]` for tile t. */
export function tileIndexText(layout: Layout, t: number): string {
  return formatIndex(tileIntervals(t, layout.bounds));
}

/** The platform prefix for device labels (`CPU`, `TPU`); virtual devices with no platform are `device`. */
export function platformLabel(layout: Layout): string {
  const kind = layout.payload.kinds[0];
  return kind?.platform ? kind.platform.toUpperCase() : "device";
}

/** True for the numbered, not real, devices of a what-if AbstractMesh. */
export function isVirtual(layout: Layout): boolean {
  return layout.payload.devices.virtual === true;
}

/**
 * `cpu`, `tpu · TPU v5`: the platform, and the device kind where it says
 * more than the platform. Empty for a virtual device whose platform was not named.
 */
export function deviceKindText(layout: Layout, k: number): string {
  const kind = layout.payload.kinds[layout.kind[k]];
  if (!kind?.platform) return "";
  const platform = isVirtual(layout) ? `${kind.platform} (named for this what-if)` : kind.platform;
  const extra = kind.device_kind && kind.device_kind.toLowerCase() !== kind.platform.toLowerCase();
  return extra ? `${platform} \u00b7 ${kind.device_kind}` : platform;
}

/** The physical coordinates of the device at mesh position k, `0,1,0`; empty where devices carry none. */
export function physicalCoordsText(layout: Layout, k: number): string {
  const coords = layout.physical.coords;
  return coords ? coords.map((column) => column[k]).join(",") : "";
}

/** The physical attributes of the device at mesh position k, as inspector rows (none on CPUs). */
export function physicalFacts(layout: Layout, k: number): [string, string][] {
  const { coords, coreOnChip, sliceIndex } = layout.physical;
  const facts: [string, string][] = [];
  if (coords) facts.push(["physical coords", `(${physicalCoordsText(layout, k).replaceAll(",", ", ")})`]);
  if (coreOnChip) facts.push(["core on chip", String(coreOnChip[k])]);
  if (sliceIndex) facts.push(["slice", String(sliceIndex[k])]);
  return facts;
}

/**
 * True for a real device this process cannot read (another process owns it).
 * An AbstractMesh's devices are virtual: none is addressable, none is remote.
 */
export function isRemote(layout: Layout, k: number): boolean {
  return layout.addressable[k] === 0 && !isVirtual(layout) && !layout.payload.mesh?.abstract;
}

export function deviceAriaLabel(layout: Layout, k: number): string {
  const t = layout.tileOf[k];
  const copies = layout.holders[t].length;
  const parts = [`Device ${layout.ids[k]}`];
  const coords = coordText(layout, k);
  if (coords) parts.push(coords);
  const physical = physicalFacts(layout, k);
  if (physical.length) parts.push(physical.map(([term, value]) => `${term} ${value}`).join(" "));
  parts.push(`tile ${t} ${tileIndexText(layout, t)}`);
  if (copies > 1) parts.push(`replica ${layout.replica[k] + 1} of ${copies}`);
  if (isRemote(layout, k)) parts.push(`process ${layout.process[k]}, not addressable here`);
  return parts.join(", ");
}

export function tileAriaLabel(layout: Layout, t: number): string {
  const copies = layout.holders[t].length;
  return `Tile ${t} ${tileIndexText(layout, t)} on devices ${holderIdsText(layout, t)}${copies > 1 ? `, ${copies} copies` : ""}`;
}
