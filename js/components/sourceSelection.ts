/**
 * Marks a source listing's selection: the chips of the selected value or
 * collective, or the selected line's row. Everything marked before is cleared.
 */

import type { SourcePlan, SourceRow } from "../payload/programSource";

export type SourceSelection =
  | { kind: "value"; index: number }
  | { kind: "collective"; index: number }
  | { kind: "line"; index: number }
  | null;

export function markSelection(
  scroller: HTMLElement,
  selection: SourceSelection,
  plan: SourcePlan | null,
  rowElements: Map<SourceRow, HTMLElement>,
): void {
  for (const chip of Array.from(scroller.querySelectorAll(".sv-chip-selected"))) {
    chip.classList.remove("sv-chip-selected");
    chip.setAttribute("aria-pressed", "false");
  }
  for (const row of Array.from(scroller.querySelectorAll(".sv-line-selected"))) {
    row.classList.remove("sv-line-selected");
    row.removeAttribute("aria-current");
  }
  if (!selection || !plan) return;
  if (selection.kind === "line") {
    const row = plan.rowOfEntry[selection.index];
    const element = row ? rowElements.get(row) : undefined;
    element?.classList.add("sv-line-selected");
    element?.setAttribute("aria-current", "true");
    return;
  }
  const own = selection.kind === "value" ? "value" : "line-collective";
  const attribute = selection.kind === "value" ? "data-value" : "data-collective";
  for (const chip of Array.from(scroller.querySelectorAll(`[data-role="${own}"][${attribute}="${selection.index}"]`))) {
    chip.classList.add("sv-chip-selected");
    chip.setAttribute("aria-pressed", "true");
  }
}
