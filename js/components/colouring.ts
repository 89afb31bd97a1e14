/**
 * How the pictures colour their tiles. With few tiles every tile gets its
 * own colour. Past the colours people can tell apart, one colour per tile
 * is noise, so the pictures colour by structure instead: every tile by its
 * block along one chosen dimension, on an ordered ramp. Devices and tiles
 * that share a colour then share that block, and the ramp's direction shows
 * which mesh axes split the dimension, major first (big steps) to minor.
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { axisColor, rampColor, structureColor, tileColor } from "../util/palette";

/** Past this many tiles the pictures colour by structure unless the user picks tiles. */
export const DISTINGUISHABLE_TILES = 16;

export type ColourMode = { kind: "tile" } | { kind: "dim"; dim: number };

export interface Colouring {
  mode: ColourMode;
  /** Fill of tile t. */
  fill: (tile: number) => string;
}

/** The dimensions worth colouring by: those cut into more than one block. */
export function splitDims(layout: Layout): number[] {
  return layout.tileCounts.map((count, d) => (count > 1 ? d : -1)).filter((d) => d >= 0);
}

/** The most split dimension (ties go to the later one, as the terminal picture's columns). */
function mostSplitDim(layout: Layout): number | null {
  let best: number | null = null;
  layout.tileCounts.forEach((count, d) => {
    if (count > 1 && (best === null || count >= layout.tileCounts[best])) best = d;
  });
  return best;
}

/** Tiles while they can be told apart by colour, else the most split dimension. */
export function defaultColourMode(layout: Layout): ColourMode {
  const dim = mostSplitDim(layout);
  return layout.tileCount <= DISTINGUISHABLE_TILES || dim === null ? { kind: "tile" } : { kind: "dim", dim };
}

/** Keeps a mode the user chose while it still applies to the layout; else the default. */
export function reconcileColourMode(chosen: ColourMode | null, layout: Layout): ColourMode {
  if (chosen?.kind === "tile") return chosen;
  if (chosen?.kind === "dim" && splitDims(layout).includes(chosen.dim)) return chosen;
  return defaultColourMode(layout);
}

export function colouring(layout: Layout, mode: ColourMode): Colouring {
  if (mode.kind === "tile") return { mode, fill: tileColor };
  const { dim } = mode;
  const counts = layout.tileCounts;
  const fills = structureColors(counts[dim]);
  // Tile t's block along dim: the row-major digit of dim (what unravel gives, without an array per call).
  const inner = counts.slice(dim + 1).reduce((a, b) => a * b, 1);
  return { mode, fill: (tile) => fills[Math.floor(tile / inner) % counts[dim]] };
}

/** The legend's ramp of `count` blocks as a CSS gradient of at most 32 stops, worked out once per count. */
const gradientsByCount = new Map<number, string>();

function rampGradient(count: number): string {
  let gradient = gradientsByCount.get(count);
  if (gradient === undefined) {
    const stops = Math.min(count, 32);
    gradient = `linear-gradient(to right, ${Array.from({ length: stops }, (_, i) =>
      rampColor(Math.round((i * (count - 1)) / Math.max(stops - 1, 1)), count),
    ).join(", ")})`;
    gradientsByCount.set(count, gradient);
  }
  return gradient;
}

/** The ramp of `count` blocks, worked out once per count (each colour is a small search). */
const rampsByCount = new Map<number, readonly string[]>();

function structureColors(count: number): readonly string[] {
  let fills = rampsByCount.get(count);
  if (!fills) {
    fills = Array.from({ length: count }, (_, i) => structureColor(i, count));
    rampsByCount.set(count, fills);
  }
  return fills;
}

function modeValue(mode: ColourMode): string {
  return mode.kind === "tile" ? "tile" : `dim:${mode.dim}`;
}

/** `dim 1 (b, c)`: a dimension and the mesh axes that split it. */
export function dimWithAxes(layout: Layout, dim: number): string {
  const axes = layout.payload.spec[dim] ?? [];
  return `dim ${dim}${axes.length ? ` (${axes.join(", ")})` : ""}`;
}

/** The "colour by" select of a picture panel (`data-role="colour-by"`). */
export function renderColourPicker(
  layout: Layout,
  mode: ColourMode,
  onChange: (mode: ColourMode) => void,
  signal: AbortSignal,
): HTMLElement {
  const select = h("select", { "data-role": "colour-by", "aria-label": "colour the pictures by" });
  select.append(h("option", { value: "tile" }, ["tile"]));
  for (const d of splitDims(layout))
    select.append(h("option", { value: `dim:${d}` }, [`block of ${dimWithAxes(layout, d)}`]));
  select.value = modeValue(mode);
  select.addEventListener(
    "change",
    () => onChange(select.value === "tile" ? { kind: "tile" } : { kind: "dim", dim: Number(select.value.slice(4)) }),
    { signal },
  );
  return h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, ["colour"]), select]);
}

/**
 * The legend of a structural colouring: the ramp, its ends, and which axes
 * split the dimension, major first. Nothing for per-tile colours (tiles
 * carry their own labels).
 */
export function renderColourLegend(layout: Layout, mode: ColourMode): HTMLElement | null {
  if (mode.kind === "tile") return null;
  const { dim } = mode;
  const count = layout.tileCounts[dim];
  const mesh = layout.payload.mesh;
  const axes = layout.payload.spec[dim] ?? [];
  const ramp = h("span", { class: "sv-ramp", "aria-hidden": "true" });
  ramp.style.background = rampGradient(count);
  const legend = h("div", { class: "sv-legend", "data-role": "colour-legend", "data-dim": dim }, [
    `colour = block of dim ${dim}: 0 `,
    ramp,
    ` ${count - 1}`,
  ]);
  if (axes.length) {
    legend.append(`, split by `);
    axes.forEach((axis, i) => {
      const size = mesh ? mesh.sizes[mesh.names.indexOf(axis)] : undefined;
      const mark = h("span", { class: "sv-axis-ref" }, [axis]);
      mark.style.setProperty("--sv-axis", axisColor(mesh ? mesh.names.indexOf(axis) : -1));
      legend.append(i === 0 ? "" : i === axes.length - 1 ? " then " : ", ", mark, size ? `\u00a0(${size})` : "");
    });
    if (axes.length > 1) legend.append(" (major first: it changes the colour most)");
  }
  return legend;
}
