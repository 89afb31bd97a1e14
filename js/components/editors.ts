/**
 * The editors of an array layout: the mesh and the spec as text (each with
 * structured controls that compose the same text) and the memory kind.
 *
 * Every edit commits on Enter (or a click, for buttons and selects) and
 * nothing commits while the user types. After every answer from Python,
 * `sync` shows Python's state: the structured rows are rebuilt from the
 * payload, and each text box shows Python's text (see TextEditor for the
 * draft it may keep). Each control has a reserved line under it for its
 * error, so an error never moves the controls around it.
 */

import { estimateEdit, needsConfirmation } from "../engine/array/estimate";
import type { AxisType, Payload } from "../payload/array";
import type { ErrorSource, ViewHost } from "../traits/array";
import { h, replaceChildren } from "../util/dom";
import { axisColor } from "../util/palette";
import { composeMeshText, composeSpecText, type MeshAxis, meshAxes, shownSpecText, unusedAxisName } from "./compose";
import { TextEditor } from "./textEditor";

const AXIS_TYPES: readonly AxisType[] = ["Explicit", "Auto", "Manual"];

/** Python's state after an answer, as the editors need it. */
export interface EditorsState {
  /** The payload now shown (the last good one), or null before there is one. */
  payload: Payload | null;
  error: string;
  errorSource: ErrorSource;
  notice: string;
}

export class EditorsPanel {
  readonly element: HTMLElement;
  private readonly host: ViewHost;
  private readonly signal: AbortSignal;
  private readonly mesh: TextEditor;
  private readonly spec: TextEditor;
  private readonly memoryKind: HTMLSelectElement;
  private readonly memoryStatus = h("div", { class: "sv-status-line", "data-status-for": "memory-kind" });
  private readonly meshControls = h("div", { class: "sv-axis-rows" });
  private readonly specControls = h("div", { class: "sv-dim-rows" });
  private readonly generalAlert = h("div", { class: "sv-alert-slot" });
  private payload: Payload | null = null;
  /** What the structured rows and the memory-kind options were last built from: what would come out the same is kept. */
  private readonly builtFrom = { mesh: "", spec: "", kinds: "" };

  constructor(host: ViewHost, signal: AbortSignal) {
    this.host = host;
    this.signal = signal;
    const disabled = host.readOnly;
    const withPayload =
      <T>(f: (payload: Payload, text: string) => T) =>
      (text: string): T | null =>
        this.payload ? f(this.payload, text) : null;
    const inFlight = (): boolean => host.editsInFlight?.() ?? false;
    const confirm = (estimate: Parameters<typeof needsConfirmation>[1]): boolean =>
      this.payload !== null && needsConfirmation(this.payload, estimate);
    this.mesh = new TextEditor({
      role: "mesh-input",
      source: "mesh",
      label: "mesh",
      placeholder: "mesh, e.g. x=2, y=4",
      disabled,
      current: () => this.pythonText("mesh_text"),
      send: (text) => host.edit("mesh_text", text),
      inFlight,
      estimate: withPayload((payload, text) => estimateEdit(payload, { mesh_text: text })),
      needsConfirmation: confirm,
      signal,
    });
    this.spec = new TextEditor({
      role: "spec-input",
      source: "spec",
      label: "spec",
      placeholder: "spec, e.g. x, None",
      disabled,
      current: () => this.pythonText("spec_text"),
      shown: shownSpecText,
      send: (text) => host.edit("spec_text", text),
      inFlight,
      estimate: withPayload((payload, text) => estimateEdit(payload, { spec_text: text })),
      needsConfirmation: confirm,
      signal,
    });
    this.memoryKind = h("select", { "data-role": "memory-kind", "aria-label": "memory kind", disabled });
    this.memoryKind.addEventListener(
      "change",
      () => {
        if (this.memoryKind.value !== this.pythonText("memory_kind") || inFlight())
          host.edit("memory_kind", this.memoryKind.value);
      },
      { signal },
    );
    this.element = h(
      "section",
      { class: host.readOnly ? "sv-editors sv-read-only" : "sv-editors", "aria-label": "Edit the layout" },
      [
        host.readOnly
          ? h("p", { class: "sv-note", "data-role": "read-only-note" }, ["Editing needs a live kernel."])
          : host.note
            ? h("p", { class: "sv-note", "data-role": "local-note" }, [host.note])
            : null,
        h("div", { class: "sv-editor" }, [this.mesh.field, this.mesh.status, this.meshControls]),
        h("div", { class: "sv-editor" }, [this.spec.field, this.spec.status, this.specControls]),
        h("div", { class: "sv-editor" }, [
          h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, ["memory kind"]), this.memoryKind]),
          this.memoryStatus,
        ]),
        this.generalAlert,
      ],
    );
  }

  /**
   * Python's text for an editable trait: the payload's copy. The trait itself
   * holds whatever the front end last wrote until Python changes it, and Python
   * does not write back a text it refused (its own value never changed), so
   * after a refusal only the Python-owned payload says what Python holds.
   */
  private pythonText(trait: "mesh_text" | "spec_text" | "memory_kind"): string {
    return this.payload ? this.payload[trait] : this.host.get(trait);
  }

  /** Sends a mesh text as if typed and committed (e.g. the type line's "make Explicit" button). */
  submitMesh(text: string): void {
    this.mesh.submit(text, "composed");
  }

  /** Shows Python's state: called after every change Python makes to a trait. */
  sync(state: EditorsState): void {
    const { error, errorSource, notice } = state;
    const errorFor = (source: ErrorSource): string => (error && errorSource === source ? error : "");
    if (state.payload && state.payload !== this.payload) {
      this.payload = state.payload;
      this.fillMemoryKinds(state.payload);
    }
    this.mesh.sync({ error: errorFor("mesh"), notice });
    this.spec.sync({ error: errorFor("spec"), notice: "" });
    if (this.memoryKind.value !== this.pythonText("memory_kind"))
      this.memoryKind.value = this.pythonText("memory_kind");
    const kindError = errorFor("memory_kind");
    if (kindError) this.memoryKind.setAttribute("aria-invalid", "true");
    else this.memoryKind.removeAttribute("aria-invalid");
    replaceChildren(this.memoryStatus, [
      kindError ? h("div", { class: "sv-error", role: "alert", "data-source": "memory_kind" }, [kindError]) : null,
    ]);
    // Errors no control owns (an edit Python could not read, a failure inside shardviz) go below all editors.
    const owned = errorSource === "mesh" || errorSource === "spec" || errorSource === "memory_kind";
    replaceChildren(this.generalAlert, [
      error && !owned
        ? h("div", { class: "sv-error", role: "alert", "data-source": errorSource || "general" }, [error])
        : null,
    ]);
    if (this.payload) this.rebuildRows(this.payload);
  }

  private fillMemoryKinds(payload: Payload): void {
    const kinds = payload.memory_kinds.includes(payload.memory_kind)
      ? payload.memory_kinds
      : [payload.memory_kind, ...payload.memory_kinds];
    const key = JSON.stringify(kinds);
    if (key === this.builtFrom.kinds) return;
    this.builtFrom.kinds = key;
    replaceChildren(
      this.memoryKind,
      kinds.map((kind) => h("option", { value: kind }, [kind])),
    );
  }

  /**
   * The structured rows always show the payload; focus stays on the control
   * it was on. Rows that would be built the same (the mesh's rows after a spec
   * edit) are kept, their fields put back to the payload's values: a rebuild
   * restyles and lays out every field again, dear in a busy notebook page.
   */
  private rebuildRows(payload: Payload): void {
    const readOnly = this.host.readOnly;
    const from = {
      mesh: JSON.stringify([payload.mesh, readOnly]),
      spec: JSON.stringify([payload.shape, payload.spec, payload.mesh?.names ?? [], readOnly]),
    };
    const build = { mesh: () => this.axisRows(payload), spec: () => this.dimRows(payload) };
    const controls = { mesh: this.meshControls, spec: this.specControls };
    for (const part of ["mesh", "spec"] as const) {
      const container = controls[part];
      if (from[part] === this.builtFrom[part]) {
        showDefaults(container);
        continue;
      }
      this.builtFrom[part] = from[part];
      const refocus = focusedControl(container);
      replaceChildren(container, build[part]());
      refocus?.(container);
    }
  }

  // -------------------------------------------------------- mesh axes

  private axisRows(payload: Payload): HTMLElement[] {
    const axes = meshAxes(payload.mesh);
    if (axes.length === 0) {
      return [
        h("p", { class: "sv-muted", "data-role": "no-mesh-note" }, [
          "One device, no mesh. Type a mesh above (e.g. x=8) to spread the array over devices.",
        ]),
      ];
    }
    const disabled = this.host.readOnly;
    const { signal } = this;
    const commit = (next: MeshAxis[]): void => this.mesh.submit(composeMeshText(next), "composed");
    const rows = axes.map((axis, i) => {
      const replace = (patch: Partial<MeshAxis>): void =>
        commit(axes.map((a, j) => (j === i ? { ...a, ...patch } : a)));
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

  // ------------------------------------------------------- spec picker

  private dimRows(payload: Payload): HTMLElement[] {
    const rank = payload.shape.length;
    if (rank === 0) return [h("p", { class: "sv-muted" }, ["A scalar has no dimensions to partition."])];
    const names = payload.mesh?.names ?? [];
    if (names.length === 0) {
      return [h("p", { class: "sv-muted" }, ["With no mesh there are no axes to split dimensions over."])];
    }
    const spec = Array.from({ length: rank }, (_, d) => payload.spec[d]?.slice() ?? []);
    const used = new Set(spec.flat());
    const free = names.filter((n) => !used.has(n));
    const disabled = this.host.readOnly;
    const { signal } = this;
    const commit = (next: string[][]): void => this.spec.submit(composeSpecText(next), "composed");
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

/** Puts every field under `container` back to the value it was built with (what the payload says). */
function showDefaults(container: HTMLElement): void {
  for (const input of container.querySelectorAll("input")) {
    if (input.value !== input.defaultValue) input.value = input.defaultValue;
  }
  for (const select of container.querySelectorAll("select")) {
    const built = Math.max(
      0,
      Array.from(select.options).findIndex((option) => option.defaultSelected),
    );
    if (select.selectedIndex !== built) select.selectedIndex = built;
  }
}

/** Enter commits a row field, Escape puts the payload's value back; neither reaches the notebook. */
function onEnterOrEscape(
  input: HTMLInputElement,
  signal: AbortSignal,
  actions: { enter: () => void; escape: () => void },
): void {
  input.addEventListener(
    "keydown",
    (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        actions.enter();
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        actions.escape();
      }
    },
    { signal },
  );
}

/** A function that focuses, inside a rebuilt container, the control that had focus in it before; null if none. */
function focusedControl(container: HTMLElement): ((rebuilt: HTMLElement) => void) | null {
  const active = container.ownerDocument.activeElement;
  if (!(active instanceof HTMLElement) || !container.contains(active)) return null;
  const role = active.getAttribute("data-role");
  if (!role) return null;
  const row = active.closest("[data-axis-row], [data-dim-row]");
  const rowSelector = row?.hasAttribute("data-axis-row")
    ? `[data-axis-row="${row.getAttribute("data-axis-row")}"] `
    : row
      ? `[data-dim-row="${row.getAttribute("data-dim-row")}"] `
      : "";
  const selector = `${rowSelector}[data-role="${role}"]`;
  return (rebuilt) => rebuilt.querySelector<HTMLElement>(selector)?.focus();
}
