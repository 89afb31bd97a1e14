/**
 * The editors of an array layout: the mesh and the spec as text (each with
 * structured controls that compose the same text) and the memory kind.
 *
 * Every edit commits on Enter (or a click, for buttons and selects) and
 * nothing commits while the user types. After every answer from Python,
 * `sync` shows Python's state: the structured rows are rebuilt from the
 * payload, and each text box shows Python's text (see TextEditor for the
 * draft it may keep). Typing not yet committed in the focused field is never
 * overwritten: an answer to an earlier edit may arrive while the user types.
 * Each control has a reserved line under it for its error, so an error never
 * moves the controls around it.
 */

import { estimateEdit, needsConfirmation } from "../engine/array/estimate";
import type { Payload } from "../payload/array";
import type { ErrorSource, ViewHost } from "../traits/array";
import { h, replaceChildren } from "../util/dom";
import { shownSpecText } from "./compose";
import { isBeingTyped, keepTyping, meshAxisRows, specDimRows } from "./layoutRows";
import { TextEditor } from "./textEditor";

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
   * The structured rows always show the payload, except in the field the
   * user is typing in; focus stays on the control it was on. Rows that would
   * be built the same (the mesh's rows after a spec edit) are kept, their
   * fields put back to the payload's values: a rebuild restyles and lays out
   * every field again, dear in a busy notebook page.
   */
  private rebuildRows(payload: Payload): void {
    const readOnly = this.host.readOnly;
    const from = {
      mesh: JSON.stringify([payload.mesh, readOnly]),
      spec: JSON.stringify([payload.shape, payload.spec, payload.mesh?.names ?? [], readOnly]),
    };
    const build = {
      mesh: () =>
        meshAxisRows(payload, { disabled: readOnly, signal: this.signal, submit: (text) => this.submitMesh(text) }),
      spec: () =>
        specDimRows(payload, {
          disabled: readOnly,
          signal: this.signal,
          submit: (text) => this.spec.submit(text, "composed"),
        }),
    };
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
}

/**
 * Puts every field under `container` back to the value it was built with (what
 * the payload says), except the one the user is typing in.
 */
function showDefaults(container: HTMLElement): void {
  for (const input of container.querySelectorAll("input")) {
    if (input.value !== input.defaultValue && !isBeingTyped(input)) input.value = input.defaultValue;
  }
  for (const select of container.querySelectorAll("select")) {
    const built = Math.max(
      0,
      Array.from(select.options).findIndex((option) => option.defaultSelected),
    );
    if (select.selectedIndex !== built) select.selectedIndex = built;
  }
}

/**
 * A function that focuses, inside a rebuilt container, the control that had
 * focus in it before, with the user's typing if it held some; null if none.
 */
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
  const typing = active instanceof HTMLInputElement && isBeingTyped(active) ? active.value : null;
  return (rebuilt) => {
    const control = rebuilt.querySelector<HTMLElement>(selector);
    if (typing !== null && control instanceof HTMLInputElement) keepTyping(control, typing);
    control?.focus();
  };
}
