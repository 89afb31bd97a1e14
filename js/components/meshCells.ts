/**
 * One DOM cell of the mesh grid: made once per device, then written only
 * where a value changed (an unchanged write still costs a restyle).
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { deviceAriaLabel } from "./describe";
import type { MeshGridStyle } from "./meshGridParts";

/** What a DOM cell was last given (null: never): a write that would change nothing is skipped. */
export type CellWrites = Record<"text" | "label" | "fill" | "ink" | "tile" | "tag" | "at", string | null>;

export function blankWrites(): CellWrites {
  return { text: null, label: null, fill: null, ink: null, tile: null, tag: null, at: null };
}

/** Applies `value` through `apply` unless the cell has it already (an unchanged write still costs a restyle). */
export function write(written: CellWrites, key: keyof CellWrites, value: string, apply: (value: string) => void): void {
  if (written[key] === value) return;
  written[key] = value;
  apply(value);
}

/** How a grid draws its cells: compact cells show no tag; under a fills canvas a cell's colour is only said. */
export interface CellForm {
  compact: boolean;
  fillsCanvas: boolean;
}

export function newCell(deviceId: number, elementId: string, compact: boolean): HTMLElement {
  const attributes = { class: "sv-cell", id: elementId, "data-device-id": deviceId, role: "button" };
  if (compact) return h("div", attributes);
  return h("div", attributes, [h("span", { class: "sv-cell-id" }), h("span", { class: "sv-cell-tile" })]);
}

/** Everything about the cell at mesh position k that depends on the tile it holds (or on the caller's paint). */
export function paintCell(
  cell: HTMLElement,
  written: CellWrites,
  layout: Layout,
  k: number,
  style: MeshGridStyle,
  form: CellForm,
): void {
  const { paint } = style;
  const t = layout.tileOf[k];
  write(written, "label", paint ? paint.label(k) : deviceAriaLabel(layout, k), (v) =>
    cell.setAttribute("aria-label", v),
  );
  write(written, "fill", paint ? paint.fill(k) : style.fill(t), (v) => {
    // Under a fills canvas the colour is only said (an attribute no rule reads costs no restyle).
    if (form.fillsCanvas) cell.setAttribute("data-fill", v);
    else cell.style.backgroundColor = v;
  });
  if (paint) {
    write(written, "ink", paint.ink(k), (v) => {
      cell.style.color = v;
    });
  } else {
    write(written, "tile", String(t), (v) => cell.setAttribute("data-tile-of", v));
  }
  // A compact cell shows no tag (its accessible name says it).
  if (!form.compact) {
    write(written, "tag", paint ? paint.tag(k) : `t${t}`, (v) => {
      (cell.lastChild as HTMLElement).textContent = v;
    });
  }
}
