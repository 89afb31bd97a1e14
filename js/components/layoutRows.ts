/**
 * The structured controls under the mesh and spec text boxes: one row per mesh
 * axis (name, size, type, remove) and one row per array dimension (its axes as
 * chips, a menu to add a free axis). Each control composes the whole text and
 * hands it to `submit`, as if the user had typed it.
 */

import type { AxisType, Payload } from "../payload/array";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { composeMeshText, composeSpecText, type MeshAxis, meshAxes, unusedAxisName } from "./compose";

const AXIS_TYPES: readonly AxisType[] = ["Explicit", "Auto", "Manual"];

/** What a set of rows needs from its editor. */
export interface RowControls {
  disabled: boolean;
  signal: AbortSignal;
  /** Commits a composed text through the editor's text box. */
  submit: (text: string) => void;
}

export function meshAxisRows(payload: Payload, { disabled, signal, submit }: RowControls): HTMLElement[] {
  const axes = meshAxes(payload.mesh);
  if (axes.length === 0) {
    return [
      h("p", { class: "sv-muted", "data-role": "no-mesh-note" }, [
        "One device, no mesh. Type a mesh above (e.g. x=8) to spread the array over devices.",
      ]),
    ];
  }
  const commit = (next: MeshAxis[]): void => submit(composeMeshText(next));
  const rows = axes.map((axis, i) => {
    const replace = (patch: Partial<MeshAxis>): void => commit(axes.map((a, j) => (j === i ? { ...a, ...patch } : a)));
    const name = h("input", {
      type: "text",
      class: "sv-input sv-narrow",
      value: axis.name,
      "aria-label": `axis ${i + 1} name`,
      "data-role": "axis-name",
      disabled,
    });
    onEnterOrEscape(name, signal, {
      enter: () => replace({ name: name.value.trim() }),
      escape: () => {
        name.value = axis.name;
      },
    });
    const size = h("input", {
      type: "number",
      class: "sv-input sv-size",
      min: 1,
      step: 1,
      value: axis.size,
      "aria-label": `axis ${axis.name} size`,
      "data-role": "axis-size",
      disabled,
    });
    onEnterOrEscape(size, signal, {
      enter: () => replace({ size: Math.max(1, Math.floor(Number(size.value)) || 1) }),
      escape: () => {
        size.value = String(axis.size);
      },
    });
    const type = h("select", { "aria-label": `axis ${axis.name} type`, "data-role": "axis-type", disabled });
    for (const t of AXIS_TYPES) type.append(h("option", { value: t, selected: t === axis.type }, [t]));
    type.addEventListener("change", () => replace({ type: type.value as AxisType }), { signal });
    const remove = h(
      "button",
      {
        type: "button",
        class: "sv-button sv-icon",
        "aria-label": `remove axis ${axis.name}`,
        title: "remove axis",
        "data-role": "axis-remove",
        disabled: disabled || axes.length === 1,
      },
      ["\u00d7"],
    );
    remove.addEventListener("click", () => commit(axes.filter((_, j) => j !== i)), { signal });
    const swatch = h("span", { class: "sv-swatch", "aria-hidden": "true" });
    swatch.style.backgroundColor = axisColor(i);
    return h("div", { class: "sv-axis-row", "data-axis-row": i }, [swatch, name, "=", size, type, remove]);
  });
  const add = h("button", { type: "button", class: "sv-button", "data-role": "axis-add", disabled }, ["+ axis"]);
  add.title = "Add an axis of size 1 (keeps the device count)";
  add.addEventListener(
    "click",
    () => commit([...axes, { name: unusedAxisName(axes.map((a) => a.name)), size: 1, type: "Explicit" }]),
    { signal },
  );
  return [...rows, add];
}

export function specDimRows(payload: Payload, { disabled, signal, submit }: RowControls): HTMLElement[] {
  const rank = payload.shape.length;
  if (rank === 0) return [h("p", { class: "sv-muted" }, ["A scalar has no dimensions to partition."])];
  const names = payload.mesh?.names ?? [];
  if (names.length === 0) {
    return [h("p", { class: "sv-muted" }, ["With no mesh there are no axes to split dimensions over."])];
  }
  const spec = Array.from({ length: rank }, (_, d) => payload.spec[d]?.slice() ?? []);
  const used = new Set(spec.flat());
  const free = names.filter((n) => !used.has(n));
  const commit = (next: string[][]): void => submit(composeSpecText(next));
  return spec.map((axes, d) => {
    // A dimension's new axes, the other dimensions as they are.
    const setAxes = (next: string[]): void => commit(spec.map((a, j) => (j === d ? next : a)));
    const row = h("div", { class: "sv-dim-row", "data-dim-row": d }, [
      h("span", { class: "sv-label" }, [`dim ${d} (${payload.shape[d]})`]),
    ]);
    if (axes.length === 0) row.append(h("span", { class: "sv-muted" }, ["not partitioned"]));
    axes.forEach((axis, i) => {
      row.append(axisChip({ axes, i, d, colour: axisColor(names.indexOf(axis)), disabled, signal, setAxes }));
    });
    // Only axes no dimension uses yet can be added; with none left, there is nothing to offer.
    if (free.length > 0) row.append(axisPicker({ axes, d, free, disabled, signal, setAxes }));
    return row;
  });
}

interface DimControls {
  /** The axes of dimension ``d`` now. */
  axes: string[];
  d: number;
  disabled: boolean;
  signal: AbortSignal;
  setAxes: (next: string[]) => void;
}

function iconButton(
  text: string,
  attributes: { "aria-label": string; title: string; "data-role": string; disabled: boolean },
  onClick: () => void,
  signal: AbortSignal,
): HTMLButtonElement {
  const button = h("button", { type: "button", class: "sv-button sv-icon", ...attributes }, [text]);
  button.addEventListener("click", onClick, { signal });
  return button;
}

/** Axis ``axes[i]`` of dimension ``d`` as a chip: move it earlier (more major) or remove it. */
function axisChip({
  axes,
  i,
  d,
  colour,
  disabled,
  signal,
  setAxes,
}: DimControls & { i: number; colour: string }): HTMLElement {
  const axis = axes[i];
  const chip = h("span", { class: "sv-axis-chip" }, [h("span", { class: "sv-axis-ref" }, [axis])]);
  chip.style.setProperty("--sv-axis", colour);
  if (i > 0) {
    const earlier = () => {
      const next = axes.slice();
      [next[i - 1], next[i]] = [next[i], next[i - 1]];
      setAxes(next);
    };
    const about = `move ${axis} earlier in dim ${d}`;
    chip.append(
      iconButton(
        "\u2039",
        { "aria-label": about, title: "move earlier (more major)", "data-role": "spec-axis-earlier", disabled },
        earlier,
        signal,
      ),
    );
  }
  const remove = () => setAxes(axes.filter((a) => a !== axis));
  const about = `remove ${axis} from dim ${d}`;
  chip.append(
    iconButton(
      "\u00d7",
      { "aria-label": about, title: "stop partitioning by this axis", "data-role": "spec-axis-remove", disabled },
      remove,
      signal,
    ),
  );
  return chip;
}

/** A menu of the axes no dimension uses yet, to add one to dimension ``d``. */
function axisPicker({ axes, d, free, disabled, signal, setAxes }: DimControls & { free: string[] }): HTMLSelectElement {
  const picker = h(
    "select",
    { "aria-label": `add a mesh axis to dim ${d}`, "data-role": "spec-axis", "data-dim": d, disabled },
    [h("option", { value: "" }, ["+ axis"]), ...free.map((n) => h("option", { value: n }, [n]))],
  );
  picker.addEventListener(
    "change",
    () => {
      if (picker.value) setAxes([...axes, picker.value]);
    },
    { signal },
  );
  return picker;
}

/** Row fields the user has typed in since they were built or last committed (Enter) or reverted (Escape). */
const typedFields = new WeakSet<HTMLInputElement>();

/**
 * True while the user is typing in a row field: it has focus and holds typing
 * not yet committed. An answer from Python about something else must leave it be,
 * as the text boxes do.
 */
export function isBeingTyped(input: HTMLInputElement): boolean {
  return typedFields.has(input) && input.ownerDocument.activeElement === input;
}

/** Marks a rebuilt row field as holding the user's typing (carried over from the field it replaces). */
export function keepTyping(input: HTMLInputElement, value: string): void {
  input.value = value;
  typedFields.add(input);
}

/** Enter commits a row field, Escape puts the payload's value back; neither reaches the notebook. */
function onEnterOrEscape(
  input: HTMLInputElement,
  signal: AbortSignal,
  actions: { enter: () => void; escape: () => void },
): void {
  input.addEventListener("input", () => typedFields.add(input), { signal });
  input.addEventListener(
    "keydown",
    (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        typedFields.delete(input);
        actions.enter();
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        typedFields.delete(input);
        actions.escape();
      }
    },
    { signal },
  );
}
