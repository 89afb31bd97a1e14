/**
 * The DOM of the inputs-and-outputs table: its two sections, one row per
 * input (name, type, spec editor) and per output (name, type, a layout
 * change), the "show all" fold of long lists, an editor's box and status
 * line. Pure builders: InputSpecs keeps the editors' state.
 */

import type { Program } from "../payload/program";
import { specText } from "../payload/program";
import { h } from "../util/dom";
import { renderAxisText, renderSpec } from "./axisText";
import { typeHidesAxes } from "./programChips";

export type IoSelection = { kind: "input" | "output"; index: number } | null;

/** Rows of inputs, and of outputs, shown before a "show all" button (a training step has hundreds). */
export const IO_ROWS_SHOWN = 12;

/** The table: a heading and body for the inputs, then for the outputs. */
export function ioTable(inputsBody: HTMLElement, outputsBody: HTMLElement): HTMLElement {
  return h("table", { class: "sv-io-table" }, [
    h("thead", {}, [
      h("tr", {}, [
        h("th", { scope: "col" }, ["input"]),
        h("th", { scope: "col" }, ["type"]),
        h("th", { scope: "col" }, ["spec"]),
      ]),
    ]),
    inputsBody,
    h("thead", {}, [
      h("tr", {}, [
        h("th", { scope: "col" }, ["output"]),
        h("th", { scope: "col" }, ["type"]),
        h("th", { scope: "col" }, [""]),
      ]),
    ]),
    outputsBody,
  ]);
}

/** The type of row `t` of the payload's types, with its spec where the type text hides the axes. */
export function typeCell(program: Program, t: number): HTMLElement {
  const names = program.payload.mesh?.names ?? [];
  const row = program.payload.types[t];
  const cell = h("td", { class: "sv-io-type" }, [renderAxisText(row.type_str, names)]);
  if (row.spec !== null && typeHidesAxes(program)) cell.append(" ", renderSpec(row.spec, names));
  return cell;
}

export function inputRow(
  k: number,
  path: string,
  type: HTMLElement,
  editor: { input: HTMLElement; status: HTMLElement },
): HTMLElement {
  return h("tr", { "data-input-row": k }, [
    h("td", {}, [ioButton("input", k, path)]),
    type,
    h("td", { class: "sv-io-spec" }, [editor.input, editor.status]),
  ]);
}

/** Output k's row; an output laid out unlike the input it stands for is marked, saying how. */
export function outputRow(program: Program, k: number, path: string, type: HTMLElement): HTMLElement {
  const change = (program.payload.layout_changes ?? []).find((c) => c.output === path);
  return h("tr", { "data-output-row": k, "data-layout-changed": change ? "true" : null }, [
    h("td", {}, [ioButton("output", k, path)]),
    type,
    change
      ? h("td", { class: "sv-io-changed", "data-role": "layout-changed" }, [
          h("span", { class: "sv-warn-mark", "aria-hidden": "true" }, ["\u26a0 "]),
          `laid out unlike ${change.input}: it went in ${changeSpec(change.before, change.before_memory_kind, change.after_memory_kind)}, comes back ${changeSpec(change.after, change.after_memory_kind, change.before_memory_kind)}; the next call moves it back`,
        ])
      : null,
  ]);
}

/** Hides a body's rows past the first few behind a "show all" row when `fold` and there are enough. */
export function foldRows(body: HTMLElement, kind: "input" | "output", fold: boolean): void {
  body.querySelector("[data-role='more-rows']")?.closest("tr")?.remove();
  const rows = Array.from(body.children) as HTMLElement[];
  const folded = fold && rows.length > IO_ROWS_SHOWN + 2;
  rows.forEach((row, k) => {
    row.hidden = folded && k >= IO_ROWS_SHOWN;
  });
  if (!folded) return;
  body.append(
    h("tr", {}, [
      h("td", { colspan: 3 }, [
        h("button", { type: "button", class: "sv-button sv-more", "data-role": "more-rows", "data-rows": kind }, [
          `Show all ${rows.length} ${kind}s`,
        ]),
      ]),
    ]),
  );
}

/** Presses the name button of the selected input or output, and only that one. */
export function markSelectedRow(element: HTMLElement, selection: IoSelection): void {
  for (const button of Array.from(element.querySelectorAll<HTMLElement>("[data-io]"))) {
    const on =
      selection !== null &&
      button.getAttribute("data-io") === selection.kind &&
      Number(button.getAttribute("data-index")) === selection.index;
    button.classList.toggle("sv-chip-selected", on);
    button.setAttribute("aria-pressed", String(on));
  }
}

/** Input k's spec box (its text is set by the editor). */
export function specInput(path: string, k: number, disabled: boolean): HTMLInputElement {
  return h("input", {
    type: "text",
    class: "sv-input",
    "data-role": "input-spec",
    "data-input": k,
    "aria-label": `spec of ${path}`,
    placeholder: "spec, e.g. x, None",
    spellcheck: "false",
    autocomplete: "off",
    disabled,
  });
}

/** What input k's status line says: tracing again, Python's refusal, or how to commit a draft; null for nothing. */
export function statusContent(k: number, pending: boolean, error: string, dirty: boolean): HTMLElement | null {
  if (pending) {
    return h("div", { class: "sv-hint-line", "data-role": "retracing" }, [
      "Tracing and compiling again with this spec\u2026",
    ]);
  }
  if (error) return h("div", { class: "sv-error", role: "alert", "data-source": `input:${k}` }, [error]);
  if (dirty) {
    return h("div", { class: "sv-hint-line", "data-role": "draft-hint" }, [
      "Enter traces and compiles again; Esc reverts",
    ]);
  }
  return null;
}

function ioButton(kind: "input" | "output", k: number, path: string): HTMLElement {
  return h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-io-name",
      "data-io": kind,
      "data-index": k,
      "data-role": kind === "input" ? "input-name" : "output-name",
      "aria-pressed": "false",
      title: `show the layout of ${path}`,
    },
    [path],
  );
}

/** `P(x)`, with its memory kind where the two sides' kinds differ. */
function changeSpec(spec: string[][], kind: string | null, other: string | null): string {
  return kind !== other && kind ? `${specText(spec)} in ${kind}` : specText(spec);
}
