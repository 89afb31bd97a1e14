/**
 * Rulers along the array map's edges: one per mesh axis that splits a drawn
 * dimension, major axis first (outermost), each banded by that axis's
 * coordinate and labelled with it where the labels fit. They say "dim 1 is
 * split by b, then c" in the picture itself, at 8 devices as at 4096.
 *
 * Pure arithmetic (`rulerBands`) is kept apart from drawing (`renderRuler`).
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";

/** One ruler: an axis, its size, and how many bands it has along the whole dimension. */
export interface RulerSpec {
  axis: string;
  axisIndex: number;
  size: number;
  /** Bands along the dimension: the product of this axis's size and the sizes of the axes before it. */
  bands: number;
  /** Label every `every`-th coordinate (0 when no label fits). */
  every: number;
}

/** A label down the side needs about this many CSS pixels (one line of the ruler's type). */
const LINE_PX = 12;
/** Along the top a label needs its digits' width (10px type) and a gap, so numbers never run together. */
const DIGIT_PX = 6.5;
const GAP_PX = 6;

/** CSS pixels one coordinate label of an axis of `size` needs along a ruler on `side`. */
export function labelPitch(size: number, side: "across" | "down"): number {
  return side === "down" ? LINE_PX : String(Math.max(size - 1, 0)).length * DIGIT_PX + GAP_PX;
}

/**
 * The rulers of dimension `dim` drawn `lengthPx` long: for each axis that
 * splits it (major first), its bands, and which coordinates can be labelled
 * (every coordinate, or every 2nd, 4th... so that labels are a label's
 * width apart along the top, a line apart down the side; none when that
 * leaves fewer than four labels per cycle of the axis).
 */
export function rulerBands(
  layout: Layout,
  dim: number,
  lengthPx: number,
  side: "across" | "down" = "down",
): RulerSpec[] {
  const mesh = layout.payload.mesh;
  if (!mesh) return [];
  let bands = 1;
  return (layout.payload.spec[dim] ?? []).map((axis) => {
    const axisIndex = mesh.names.indexOf(axis);
    const size = mesh.sizes[axisIndex] ?? 1;
    bands *= size;
    const bandPx = lengthPx / bands;
    const pitch = labelPitch(size, side);
    let every = 1;
    while (every * bandPx < pitch && every < size) every *= 2;
    // Fewer than four labels per cycle of the axis would read as noise, not as its coordinates.
    const readable = every * bandPx >= pitch && (every === 1 || size / every >= 4);
    return { axis, axisIndex, size, bands, every: readable ? every : 0 };
  });
}

/** A ruler along the top (`across`) or the left (`down`) of the map, positioned in percent so it scales with it. */
export function renderRuler(spec: RulerSpec, side: "across" | "down"): HTMLElement {
  const colour = axisColor(spec.axisIndex);
  const ruler = h("div", {
    class: `sv-ruler sv-ruler-${side}`,
    "data-role": "ruler",
    "data-axis": spec.axis,
    "aria-hidden": "true",
    title: `mesh axis ${spec.axis} (${spec.size}): ${spec.bands} bands`,
  });
  ruler.style.setProperty("--sv-axis", colour);
  // Alternate bands by coordinate parity; a band thinner than a pixel would only alias, so a plain tint instead.
  const band = 100 / spec.bands;
  const direction = side === "across" ? "90deg" : "180deg";
  ruler.style.background =
    spec.bands <= 1024
      ? `repeating-linear-gradient(${direction}, var(--sv-band-a) 0 ${band}%, var(--sv-band-b) ${band}% ${2 * band}%)`
      : "var(--sv-band-a)";
  if (spec.every > 0) {
    for (let i = 0; i < spec.bands; i++) {
      const coordinate = i % spec.size;
      if (coordinate % spec.every !== 0) continue;
      const label = h("span", { class: "sv-ruler-label" }, [String(coordinate)]);
      const at = `${((i + 0.5) * 100) / spec.bands}%`;
      if (side === "across") label.style.left = at;
      else label.style.top = at;
      ruler.append(label);
    }
  }
  return ruler;
}

/** The axis name a ruler stands for, marked in the axis colour. */
export function renderRulerName(spec: RulerSpec, side: "across" | "down"): HTMLElement {
  const name = h("span", { class: `sv-ruler-name sv-ruler-name-${side}`, "aria-hidden": "true" }, [spec.axis]);
  name.style.setProperty("--sv-axis", axisColor(spec.axisIndex));
  return name;
}
