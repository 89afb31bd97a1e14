/**
 * The array map's slice controls: which two dimensions are drawn, and a
 * stepper for each other dimension's index.
 */

import type { Layout } from "../payload/array";
import { h } from "../util/dom";
import { formatInterval } from "../util/ranges";
import { chooseDim, type SliceChoice, steppedDims } from "./slicing";

const STEP_KEYS: Record<string, number | "first" | "last"> = {
  ArrowLeft: -1,
  ArrowDown: -1,
  ArrowRight: 1,
  ArrowUp: 1,
  PageDown: -1,
  PageUp: 1,
  Home: "first",
  End: "last",
};

export function renderSliceControls(
  layout: Layout,
  choice: SliceChoice,
  onChoice: (choice: SliceChoice) => void,
  signal: AbortSignal,
): HTMLElement | null {
  const { shape } = layout.payload;
  const rank = shape.length;
  if (rank <= 2) return null;
  const controls = h("div", { class: "sv-slice-controls" });
  const dimSelect = (side: "row" | "col", current: number | null): HTMLElement => {
    const select = h("select", {
      "data-role": `${side}-dim`,
      "aria-label": side === "row" ? "dimension down" : "dimension across",
    });
    for (let d = 0; d < rank; d++) {
      select.append(h("option", { value: d, selected: d === current }, [`dim ${d} (${shape[d]})`]));
    }
    select.addEventListener("change", () => onChoice(chooseDim(choice, side, Number(select.value))), { signal });
    return h("label", { class: "sv-field" }, [side === "row" ? "down " : "across ", select]);
  };
  controls.append(dimSelect("row", choice.rowDim), dimSelect("col", choice.colDim));
  for (const d of steppedDims(rank, choice)) {
    const count = layout.tileCounts[d];
    const at = choice.steps[d];
    const interval: [number, number] = [layout.bounds[d][at], layout.bounds[d][at + 1]];
    const slider = h("input", {
      type: "range",
      min: 0,
      max: count - 1,
      step: 1,
      value: at,
      disabled: count <= 1,
      "data-role": "step",
      "data-dim": d,
      "aria-label": `dim ${d}: which block`,
    });
    const stepTo = (block: number): void => {
      const steps = choice.steps.slice();
      steps[d] = Math.min(count - 1, Math.max(0, block));
      if (steps[d] !== at) onChoice({ ...choice, steps });
    };
    // "change" (release), not "input": a redraw mid-drag would drop the thumb.
    slider.addEventListener("change", () => stepTo(Number(slider.value)), { signal });
    // Arrow keys step one block. Handled here rather than left to the range input: the
    // notebook around the widget must not take them, and each press is one redraw.
    slider.addEventListener(
      "keydown",
      (event) => {
        const delta = STEP_KEYS[event.key];
        if (delta === undefined) return;
        event.preventDefault();
        event.stopPropagation();
        stepTo(delta === "first" ? 0 : delta === "last" ? count - 1 : at + delta);
      },
      { signal },
    );
    const text =
      count > 1 ? `${formatInterval(interval)} (block ${at + 1} of ${count})` : `${formatInterval(interval)} (whole)`;
    controls.append(h("label", { class: "sv-field sv-stepper" }, [`dim ${d} `, slider, h("output", {}, [text])]));
  }
  return controls;
}
