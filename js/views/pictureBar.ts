/** The array view's bar over its pictures: how they are coloured and labelled, and the colour legend. */

import { type ColourMode, renderColourLegend, renderColourPicker, splitDims } from "../components/colouring";
import type { CellLabel } from "../components/meshGrid";
import type { Layout } from "../payload/array";
import { h } from "../util/dom";

/** Tiles that get one of the palette's hand-picked colours each. */
const TILE_BASE_COLOURS = 8;

export interface PictureChoices {
  colour: ColourMode;
  /** The colouring the user picked (null: the default for each layout). */
  chosenColour: ColourMode | null;
  cellLabel: CellLabel;
}

export interface PictureBarEvents {
  onColour(mode: ColourMode): void;
  onLabel(label: CellLabel): void;
}

export function renderPictureBar(
  layout: Layout,
  choices: PictureChoices,
  events: PictureBarEvents,
  signal: AbortSignal,
): (HTMLElement | null)[] {
  const parts: (HTMLElement | null)[] = [];
  // Per-tile colours need no choice while the eight base colours suffice.
  if (splitDims(layout).length > 0 && (layout.tileCount > TILE_BASE_COLOURS || choices.chosenColour?.kind === "dim")) {
    parts.push(renderColourPicker(layout, choices.colour, events.onColour, signal));
  }
  if (layout.physical.coords) parts.push(renderLabelPicker(choices.cellLabel, events.onLabel, signal));
  parts.push(renderColourLegend(layout, choices.colour));
  return parts;
}

/** Cell labels: device ids, or the physical coordinates the devices report (TPUs). */
function renderLabelPicker(label: CellLabel, onLabel: (label: CellLabel) => void, signal: AbortSignal): HTMLElement {
  const select = h("select", { "data-role": "cell-label", "aria-label": "label the devices by" }, [
    h("option", { value: "id" }, ["device id"]),
    h("option", { value: "physical" }, ["physical coords"]),
  ]);
  select.value = label;
  select.addEventListener("change", () => onLabel(select.value === "physical" ? "physical" : "id"), { signal });
  return h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, ["label"]), select]);
}
