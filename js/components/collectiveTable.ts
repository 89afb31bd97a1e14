/**
 * The table of a program's collectives: one row per collective of the
 * compiled module (an async pair is one), sortable by the bytes each device
 * sends per call. Rows carry `data-role="collective"`, `data-kind` and
 * `data-collective` (its index in the payload); a row is selected by click,
 * Enter or Space, and arrow keys move between rows. Bytes count in the
 * program's dtypes (the `dtype` column); where XLA:CPU's module moves other
 * bytes (bf16 widened to f32), its figure sits under the row's total.
 */

import type { Program, ProgramCollective } from "../payload/program";
import { lineLabel, plural } from "../payload/program";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { revealWithin } from "../util/scroll";
import { axisMark } from "./axisText";
import { renderAxes } from "./programChips";
import { collectiveLine, runsText } from "./programText";

const SHORT_DTYPES: Record<string, string> = {
  bfloat16: "bf16",
  float16: "f16",
  float32: "f32",
  float64: "f64",
  int8: "s8",
  int16: "s16",
  int32: "s32",
  int64: "s64",
  uint8: "u8",
  uint32: "u32",
  bool: "pred",
};

/** `bf16`, `f32`, `bf16+f32` (a combined collective of both): XLA's short names. */
export function shortDtype(dtype: string | undefined): string {
  const names = (dtype ?? "")
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d);
  return names.map((d) => SHORT_DTYPES[d] ?? d).join("+");
}

/**
 * Where the shown bytes differ from the other count: `f32 in XLA:CPU: 10 MiB`
 * (the default count is the program's dtypes), or `bf16 on the device: 5 MiB`.
 */
export function otherCountText(program: Program, c: ProgramCollective): string {
  if (!c.other) return "";
  const where = program.payload.bytes_from === "cpu" ? "on the device" : "in XLA:CPU";
  return `${shortDtype(c.other.dtype)} ${where}: ${formatBytes(c.other.total_wire_bytes)}`;
}

/** What the table's bytes count in, where XLA:CPU's module moves other bytes ("" where they agree). */
export function countingNote(program: Program): string {
  if (!program.payload.collectives.some((c) => c.other)) return "";
  return program.payload.bytes_from === "cpu"
    ? "Bytes as XLA:CPU's module moves them (bf16 and f16 widened to f32); under each, what a TPU or GPU moves in the program's dtypes."
    : "Bytes in the program's dtypes, as a TPU or GPU moves them; under each, XLA:CPU's module's own figure (it widens bf16 and f16 to f32; Program.with_bytes('cpu') counts that way).";
}

/** Bytes per call, most first; fewest first; or the module's own order. */
export type CollectiveOrder = "bytes-desc" | "bytes-asc" | "program";

const NEXT_ORDER: Record<CollectiveOrder, CollectiveOrder> = {
  "bytes-desc": "bytes-asc",
  "bytes-asc": "program",
  program: "bytes-desc",
};

/** Row order for a sort: stable, so equal bytes keep the module's order. */
export function collectiveOrder(program: Program, order: CollectiveOrder): number[] {
  const rows = program.payload.collectives.map((_, i) => i);
  if (order === "program") return rows;
  const bytes = program.payload.collectives.map((c) => c.total_wire_bytes);
  const sign = order === "bytes-desc" ? -1 : 1;
  return rows.sort((a, b) => sign * (bytes[a] - bytes[b]) || a - b);
}

export interface CollectiveTableOptions {
  onSelect: (c: number) => void;
  signal: AbortSignal;
}

export class CollectiveTable {
  readonly element: HTMLElement;
  private readonly body = h("tbody");
  private readonly sortButton: HTMLButtonElement;
  private readonly bytesHeader: HTMLTableCellElement;
  private readonly table: HTMLTableElement;
  private readonly empty = h("p", { class: "sv-muted", "data-role": "no-collectives" });
  private readonly counting = h("p", { class: "sv-muted sv-small", "data-role": "bytes-counting" });
  private program: Program | null = null;
  private order: CollectiveOrder = "bytes-desc";
  private selected: number | null = null;

  constructor(options: CollectiveTableOptions) {
    const { signal } = options;
    this.sortButton = h("button", { type: "button", class: "sv-sort", "data-role": "sort-bytes" }, []);
    this.sortButton.addEventListener(
      "click",
      () => {
        this.order = NEXT_ORDER[this.order];
        this.renderRows();
      },
      { signal },
    );
    this.bytesHeader = h("th", { scope: "col", class: "sv-num" }, [this.sortButton]);
    this.table = h("table", { class: "sv-coll-table" }, [
      h("thead", {}, [
        h("tr", {}, [
          h("th", { scope: "col", class: "sv-num" }, ["#"]),
          h("th", { scope: "col" }, ["kind"]),
          h("th", { scope: "col" }, ["axes"]),
          h("th", { scope: "col", class: "sv-num", title: "devices per group" }, ["group"]),
          h("th", { scope: "col", title: "the element type the bytes count in" }, ["dtype"]),
          h("th", { scope: "col", class: "sv-num", title: "bytes each device sends per run (ring estimate)" }, [
            "per run",
          ]),
          h("th", { scope: "col", class: "sv-num", title: "runs per call of the program" }, ["runs"]),
          this.bytesHeader,
          h("th", { scope: "col", title: "its line; under it, its name scope, loop pass, or the array it lays out" }, [
            "line",
          ]),
        ]),
      ]),
      this.body,
    ]);
    this.element = h("div", { class: "sv-coll-wrap", "data-role": "collectives" }, [
      this.table,
      this.counting,
      this.empty,
    ]);
    const rowOf = (event: Event): HTMLElement | null =>
      ((event.target as Element | null)?.closest?.("tr[data-collective]") as HTMLElement | null) ?? null;
    this.body.addEventListener(
      "click",
      (event) => {
        const row = rowOf(event);
        if (row) options.onSelect(Number(row.getAttribute("data-collective")));
      },
      { signal },
    );
    this.body.addEventListener(
      "keydown",
      (event) => {
        const row = rowOf(event);
        if (!row) return;
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          options.onSelect(Number(row.getAttribute("data-collective")));
        } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
          event.preventDefault();
          const next = (event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling) as HTMLElement;
          next?.focus();
        }
      },
      { signal },
    );
  }

  setProgram(program: Program): void {
    this.program = program;
    if (this.selected !== null && this.selected >= program.payload.collectives.length) this.selected = null;
    this.renderRows();
  }

  setSelected(c: number | null, reveal = false): void {
    this.selected = c;
    for (const row of Array.from(this.body.children) as HTMLElement[]) {
      const on = Number(row.getAttribute("data-collective")) === c;
      row.classList.toggle("sv-selected", on);
      row.setAttribute("aria-selected", String(on));
      if (on && reveal) revealWithin(this.element, row);
    }
  }

  private renderRows(): void {
    const program = this.program;
    if (!program) return;
    const { collectives, mesh } = program.payload;
    const names = mesh?.names ?? [];
    const arrow = this.order === "bytes-desc" ? " \u25bc" : this.order === "bytes-asc" ? " \u25b2" : "";
    this.sortButton.textContent = `bytes per call${arrow}`;
    this.sortButton.title =
      this.order === "bytes-desc"
        ? "Sorted by bytes, most first; click for fewest first"
        : this.order === "bytes-asc"
          ? "Sorted by bytes, fewest first; click for the program's order"
          : "In the program's order; click to sort by bytes, most first";
    this.bytesHeader.setAttribute(
      "aria-sort",
      this.order === "bytes-desc" ? "descending" : this.order === "bytes-asc" ? "ascending" : "none",
    );
    const rows = collectiveOrder(program, this.order).map((i) => {
      const c = collectives[i];
      const axes = h("td", {}, []);
      if (c.axes === null && c.axes_label && c.axes_label !== "?") {
        // Pieces of axes, each whole on one line: `y[sub 2 of 4, stride 2]` never reads as `y[sub 2 of 4,`.
        const pieces = renderAxes(c, names, "");
        pieces.title = "pieces of mesh axes: size devices a stride apart along the axis";
        axes.append(pieces);
      } else if (c.axes === null)
        axes.append(h("span", { class: "sv-muted", title: "the groups are no mesh axes or pieces of them" }, ["?"]));
      else if (c.axes.length === 0) axes.append(h("span", { class: "sv-muted" }, ["none"]));
      else {
        c.axes.forEach((a, j) => {
          axes.append(...(j > 0 ? [", "] : []), axisMark(a, names.indexOf(a)));
        });
      }
      return h(
        "tr",
        {
          "data-role": "collective",
          "data-kind": c.kind,
          "data-collective": i,
          "data-bytes": c.total_wire_bytes,
          tabindex: 0,
          "aria-selected": String(i === this.selected),
          class: i === this.selected ? "sv-selected" : null,
        },
        [
          h("td", { class: "sv-num sv-muted" }, [String(i)]),
          h("td", { class: "sv-coll-kind" }, [c.kind]),
          axes,
          h("td", { class: "sv-num" }, [String(c.group_size)]),
          h("td", { "data-role": "collective-dtype", title: c.dtype ?? "" }, [shortDtype(c.dtype) || "?"]),
          h("td", { class: "sv-num" }, [formatBytes(c.wire_bytes)]),
          h("td", { class: "sv-num" }, [runsText(c)]),
          h("td", { class: "sv-num" }, [
            h("span", { class: "sv-strong" }, [formatBytes(c.total_wire_bytes)]),
            ...(c.other
              ? [h("div", { class: "sv-muted sv-small", "data-role": "other-count" }, [otherCountText(program, c)])]
              : []),
          ]),
          h(
            "td",
            { class: "sv-muted", "data-role": "collective-line", title: program.payload.files[c.file ?? -1] ?? "" },
            [
              (c.parts?.length ?? 0) > 0 ? operandLines(program, c) : collectiveLine(program.payload, c) || "\u2014",
              tableWhere(c),
            ],
          ),
        ],
      );
    });
    replaceChildren(this.body, rows);
    this.table.hidden = rows.length === 0;
    this.counting.textContent = countingNote(program);
    this.counting.hidden = this.counting.textContent === "";
    this.empty.textContent =
      rows.length === 0 ? "No collectives: the devices never exchange data in this program." : "";
    this.empty.hidden = rows.length > 0;
  }
}

/** `12 operands, 8 lines`, or `2 operands on model.py:7` when every operand is on one line. */
function operandLines(program: Program, c: ProgramCollective): string {
  const parts = c.parts ?? [];
  const lines = new Set(parts.map((p) => `${p.file}:${p.line}`));
  const operands = plural(parts.length, "operand");
  if (lines.size === 1) {
    const where = lineLabel(program.payload, parts[0].file, parts[0].line);
    return where ? `${operands} on ${where}` : operands;
  }
  return `${operands}, ${plural(lines.size, "line")}`;
}

/** Under a collective's line: its scope, loop pass or the array it lays out, and `backward`; null for none. */
function tableWhere(c: ProgramCollective): HTMLElement | null {
  const parts = c.parts ?? [];
  const labels = parts.length > 0 ? parts.map((p) => p.where_label ?? "") : [c.where_label ?? ""];
  const distinct = Array.from(new Set(labels.filter((l) => l !== "")));
  const where =
    distinct.length <= 2
      ? distinct.join("; ")
      : `${distinct[0]} \u2026 ${distinct[distinct.length - 1]} (${distinct.length})`;
  const text = [where, c.backward ? "backward" : ""].filter(Boolean).join(", ");
  return text ? h("span", { class: "sv-coll-where", "data-role": "collective-where" }, [text]) : null;
}
