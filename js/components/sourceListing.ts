/**
 * The source listing of a traced function, each line annotated with the
 * values it makes (their types, axes coloured) and the collectives it
 * causes (kind, axes, bytes), grouped by the line that really made them;
 * loop and branch bodies are folded and drawn only when opened. Values and
 * collectives no listing line leads to follow under their own lines.
 * Selecting a chip reports it; the view decides what selection shows.
 */

import type { Program, ProgramPayload } from "../payload/program";
import { lineLabel, lineText, plural, valueLabel } from "../payload/program";
import { foldLabel, type ListingPlan, type SourceGroup } from "../payload/programListing";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { revealWithin } from "../util/scroll";
import { renderAxisText, renderSpec } from "./axisText";
import { axesText, bytesText, originText } from "./programText";

/** Value chips shown per group before a "more" button. */
export const CHIPS_SHOWN = 12;

export type ListingSelection = { kind: "value"; index: number } | { kind: "collective"; index: number } | null;

export interface SourceListingOptions {
  onSelectValue: (i: number) => void;
  onSelectCollective: (c: number) => void;
  signal: AbortSignal;
}

export class SourceListing {
  readonly element: HTMLElement;
  private program: Program | null = null;
  private selection: ListingSelection = null;

  constructor(options: SourceListingOptions) {
    this.element = h("div", { class: "sv-listing", "data-role": "source-listing" });
    const { signal } = options;
    this.element.addEventListener(
      "click",
      (event) => {
        const target = event.target as Element | null;
        const chip = target?.closest?.("[data-value],[data-collective],[data-role='more-values']");
        if (!chip || !this.element.contains(chip)) return;
        if (chip.getAttribute("data-role") === "more-values") {
          this.expandGroup(chip as HTMLElement);
        } else if (chip.hasAttribute("data-value")) {
          options.onSelectValue(Number(chip.getAttribute("data-value")));
        } else {
          options.onSelectCollective(Number(chip.getAttribute("data-collective")));
        }
      },
      { signal },
    );
    // A fold draws its values the first time it opens.
    this.element.addEventListener(
      "toggle",
      (event) => {
        const fold = event.target as HTMLDetailsElement;
        if (fold.open && fold.getAttribute("data-drawn") !== "true") this.drawFold(fold);
      },
      { signal, capture: true },
    );
  }

  setProgram(program: Program, plan: ListingPlan): void {
    this.program = program;
    const parts: HTMLElement[] = [];
    if (plan.rows.length > 0) {
      const file = program.payload.source ? program.payload.files[program.payload.source.file] : "";
      parts.push(
        h("div", { class: "sv-listing-file sv-muted", title: file }, [
          `${program.payload.source?.name ?? program.payload.name} \u2014 ${lineLabel(program.payload, program.payload.source?.file ?? null, program.payload.source?.first_line ?? null)}`,
        ]),
      );
      const code = h("div", { class: "sv-listing-rows" });
      for (const row of plan.rows) {
        const notes = row.groups.length > 0 ? this.notes(row.groups, row.lineNo) : null;
        const summary =
          row.valueCount + row.collectiveCount > 0
            ? h("span", { class: "sv-src-summary sv-muted" }, [
                lineSummary(row.valueCount, row.collectiveCount, row.operandCount, row.combinedCount, row.wireBytes),
              ])
            : null;
        code.append(
          h(
            "div",
            {
              class: notes ? "sv-src-row sv-src-annotated" : "sv-src-row",
              "data-role": "source-line",
              "data-line": row.lineNo,
            },
            [
              h("span", { class: "sv-src-no", "aria-hidden": "true" }, [String(row.lineNo)]),
              h("pre", { class: "sv-src-code" }, [row.text || " "]),
              summary,
              notes,
            ],
          ),
        );
      }
      parts.push(code);
    } else {
      parts.push(
        h("p", { class: "sv-note", "data-role": "no-source" }, [
          "Python could not read this function's source (a builtin, the REPL or exec'd code); values and collectives are listed by the lines JAX recorded.",
        ]),
      );
    }
    if (plan.elsewhere.length > 0) {
      const rest = h("div", { class: "sv-listing-elsewhere", "data-role": "elsewhere" }, [
        h("div", { class: "sv-listing-file sv-muted" }, [
          plan.rows.length > 0 ? "Not reached from a line above" : "By source line",
        ]),
      ]);
      for (const group of plan.elsewhere) rest.append(this.notes([group], null));
      parts.push(rest);
    }
    replaceChildren(this.element, parts);
    this.paintSelection();
  }

  /** Marks the selected chip; a value in a closed fold opens it, a value past the shown chips shows them all. */
  setSelected(selection: ListingSelection, reveal = false): void {
    this.selection = selection;
    if (reveal && selection?.kind === "value") this.reveal(selection.index);
    this.paintSelection();
    const chip = reveal && selection ? this.chipOf(selection) : null;
    if (chip) revealWithin(this.element, chip);
  }

  private chipOf(selection: NonNullable<ListingSelection>): HTMLElement | null {
    const attribute = selection.kind === "value" ? "data-value" : "data-collective";
    return this.element.querySelector<HTMLElement>(`[${attribute}="${selection.index}"]`);
  }

  private paintSelection(): void {
    for (const chip of Array.from(this.element.querySelectorAll(".sv-chip-selected"))) {
      chip.classList.remove("sv-chip-selected");
      chip.setAttribute("aria-pressed", "false");
    }
    const selection = this.selection;
    if (!selection) return;
    const attribute = selection.kind === "value" ? "data-value" : "data-collective";
    for (const chip of Array.from(this.element.querySelectorAll(`[${attribute}="${selection.index}"]`))) {
      chip.classList.add("sv-chip-selected");
      chip.setAttribute("aria-pressed", "true");
    }
  }

  private reveal(value: number): void {
    if (this.element.querySelector(`[data-value="${value}"]`)) return;
    const program = this.program;
    if (!program) return;
    const body = program.payload.values.body[value];
    for (const fold of Array.from(this.element.querySelectorAll<HTMLDetailsElement>("details[data-body]"))) {
      const values = (fold.getAttribute("data-values") ?? "").split(",").map(Number);
      if (Number(fold.getAttribute("data-body")) === body && values.includes(value)) {
        if (fold.getAttribute("data-drawn") !== "true") this.drawFold(fold);
        fold.open = true;
      }
    }
    for (const more of Array.from(this.element.querySelectorAll<HTMLElement>("[data-role='more-values']"))) {
      if ((more.getAttribute("data-values") ?? "").split(",").map(Number).includes(value)) this.expandGroup(more);
    }
  }

  /** The notes under a line: one block per source line that made something there. */
  private notes(groups: SourceGroup[], lineNo: number | null): HTMLElement {
    const program = this.program as Program;
    const { payload } = program;
    const box = h("div", { class: "sv-src-notes" });
    for (const group of groups) {
      const entry = payload.lines[group.line];
      const own = lineNo !== null && entry.file === payload.source?.file && entry.line === lineNo;
      const block = h("div", { class: "sv-src-group", "data-source-line": group.line });
      if (!own) {
        const where = lineLabel(payload, entry.file, entry.line);
        const inputs =
          group.values.length > 0 && group.values.every((i) => payload.roles[payload.values.role[i]] === "input");
        if (where) {
          block.append(sourceLine(payload, entry.file, entry.line, "via"));
          for (const [file, line] of group.callers) {
            block.append(sourceLine(payload, file, line, "called from"));
          }
        } else {
          const label = inputs ? "the inputs" : "no line of yours (JAX recorded none, or only a library's)";
          block.append(h("div", { class: "sv-src-from sv-muted" }, [label]));
        }
      }
      const parts = group.parts ?? [];
      if (group.collectives.length + parts.length > 0) {
        block.append(
          h("div", { class: "sv-chip-row" }, [
            ...group.collectives
              .filter((c) => !(payload.collectives[c].parts?.length ?? 0))
              .map((c) => collectiveChip(program, c)),
            ...parts.map(([c, k]) => collectiveChip(program, c, k)),
          ]),
        );
      }
      if (group.values.length > 0) block.append(this.valueChips(group.values));
      for (const fold of group.folds) {
        block.append(
          h(
            "details",
            {
              class: "sv-fold",
              "data-role": "fold",
              "data-body": fold.body,
              "data-values": fold.values.join(","),
            },
            [
              h("summary", {}, [
                `${foldLabel(program, fold.body)} body: ${fold.values.length} value${fold.values.length === 1 ? "" : "s"}`,
              ]),
            ],
          ),
        );
      }
      box.append(block);
    }
    return box;
  }

  private valueChips(values: number[]): HTMLElement {
    const program = this.program as Program;
    const row = h("div", { class: "sv-chip-row" });
    for (const i of values.slice(0, CHIPS_SHOWN)) row.append(valueChip(program, i));
    if (values.length > CHIPS_SHOWN) {
      const rest = values.slice(CHIPS_SHOWN);
      row.append(
        h(
          "button",
          { type: "button", class: "sv-button sv-more", "data-role": "more-values", "data-values": rest.join(",") },
          [`+${rest.length} more`],
        ),
      );
    }
    return row;
  }

  private expandGroup(more: HTMLElement): void {
    const program = this.program;
    if (!program) return;
    const values = (more.getAttribute("data-values") ?? "").split(",").filter(Boolean).map(Number);
    more.replaceWith(...values.map((i) => valueChip(program, i)));
    this.paintSelection();
  }

  private drawFold(fold: HTMLDetailsElement): void {
    const values = (fold.getAttribute("data-values") ?? "").split(",").filter(Boolean).map(Number);
    fold.append(this.valueChips(values));
    fold.setAttribute("data-drawn", "true");
    this.paintSelection();
  }
}

/** `22 values · 2 collectives (3 operands of a combined one), 2.3 KiB`: a combined collective counts once. */
export function lineSummary(
  values: number,
  collectives: number,
  operands: number,
  combined: number,
  bytes: number,
): string {
  const parts = [];
  if (values > 0) parts.push(plural(values, "value"));
  const ones = combined === 1 ? "a combined one" : `${combined} combined ones`;
  const carried = operands > 0 ? ` (${plural(operands, "operand")} of ${ones})` : "";
  if (collectives > 0) parts.push(`${plural(collectives, "collective")}${carried}, ${formatBytes(bytes)}`);
  return parts.join(" \u00b7 ");
}

/** `via In [3]:5  h = relu(x @ w)`: a line of the user's, named as they know it, with its text. */
function sourceLine(payload: ProgramPayload, file: number | null, line: number | null, how: string): HTMLElement {
  const text = lineText(payload, file, line);
  return h("div", { class: "sv-src-from sv-muted", "data-role": "chain-line" }, [
    `${how} ${lineLabel(payload, file, line)}`,
    text ? h("code", { class: "sv-src-text" }, [text]) : null,
  ]);
}

/** A value as a chip: name, what made it, its type (axes coloured) and, where the type hides it, its spec. */
export function valueChip(program: Program, i: number): HTMLElement {
  const { values, types, primitives, roles, mesh } = program.payload;
  const row = types[values.type[i]];
  const names = mesh?.names ?? [];
  const made = values.primitive[i] >= 0 ? primitives[values.primitive[i]] : roles[values.role[i]];
  const chip = h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-value-chip",
      "data-role": "value",
      "data-value": i,
      "aria-pressed": "false",
      title: `${valueLabel(program.payload, i)} (${values.name[i]} in the jaxpr): sharding from ${originText(program, i)}`,
    },
    [
      h("span", { class: "sv-value-name" }, [valueLabel(program.payload, i)]),
      h("span", { class: "sv-prim sv-muted" }, [made]),
    ],
  );
  chip.append(renderAxisText(row.type_str, names));
  if (row.spec === null) {
    const origin = program.payload.origins[values.from[i]];
    const unknown = h("span", { class: "sv-unknown sv-muted" }, [
      origin === "manual" ? "per device" : origin === "dead" ? "unused" : "layout not known",
    ]);
    unknown.title = unknownText(program.payload.notes[values.note[i]] ?? "");
    chip.append(unknown);
  } else if (typeHidesAxes(program)) {
    chip.append(renderSpec(row.spec, names));
  }
  return chip;
}

/** True when types leave some mesh axes out (Auto axes): the spec is shown beside them. */
export function typeHidesAxes(program: Program): boolean {
  return program.payload.mesh?.types.some((t) => t !== "Explicit") ?? false;
}

/** Why a value's layout is not known, in a user's words (Python's note says the details). */
export function unknownText(note: string): string {
  const why = note ? ` (${note})` : "";
  return `shardviz could not tell how this value is laid out over the devices${why}; it shows nothing rather than guess`;
}

/**
 * A collective as a chip: kind, axes, bytes per device per call. With `part`, one operand of a
 * combined collective: its own bytes, and which collective it travels in.
 */
export function collectiveChip(program: Program, c: number, part?: number): HTMLElement {
  const collective = program.payload.collectives[c];
  const operands = collective.parts?.length ?? 0;
  const together =
    part === undefined
      ? null
      : h("span", { class: "sv-muted", "data-role": "combined" }, [`${part + 1} of ${operands} in ${collective.name}`]);
  const chip = h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-coll-chip",
      "data-role": "line-collective",
      "data-collective": c,
      "data-kind": collective.kind,
      "aria-pressed": "false",
      title:
        part === undefined
          ? collective.op_name
          : `one of ${operands} operands XLA combined into ${collective.name}: they travel together`,
    },
    [
      h("span", { class: "sv-coll-kind" }, [collective.kind]),
      h("span", {}, [axesText(collective)]),
      h("span", { class: "sv-coll-bytes" }, [bytesText(collective, part)]),
      together,
    ],
  );
  if (part !== undefined) chip.setAttribute("data-part", String(part));
  return chip;
}
