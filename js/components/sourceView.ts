/**
 * The source view of a traced program, modelled on a profiler's: the call
 * tree, then each function the program runs as a block of its own lines,
 * each line annotated in place. Beside a line: the bytes it sends per call
 * and the bytes it holds at the memory peak; under it: the functions it
 * calls (links to their blocks), then what it makes in the forward pass and
 * in the backward pass, side by side, as chips (collectives: kind, axes,
 * bytes; values: name, operation, type). A loop's passes or a layer's scopes
 * on one line are one chip that opens into one each. Lines in no block follow
 * apart. Selecting a chip or a line number reports it; the view decides what
 * selection shows.
 */

import type { Program } from "../payload/program";
import { lineLabel, plural } from "../payload/program";
import {
  foldLabel,
  type PassNotes,
  rowsOfCollective,
  type SourceBlock,
  type SourcePlan,
  type SourceRow,
} from "../payload/programSource";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { revealWithin } from "../util/scroll";
import { CallTree } from "./callTree";
import { familyElement, familyMembers, moreFamilies, passElement } from "./sourceNotes";

export { FAMILIES_SHOWN } from "./sourceNotes";

export type SourceSelection =
  | { kind: "value"; index: number }
  | { kind: "collective"; index: number }
  | { kind: "line"; index: number }
  | null;

export interface SourceViewOptions {
  onSelectValue: (i: number) => void;
  onSelectCollective: (c: number) => void;
  /** A line was chosen: `entry` indexes the payload's `lines`. */
  onSelectLine: (entry: number) => void;
  signal: AbortSignal;
}

let nextId = 0;

export class SourceView {
  readonly element: HTMLElement;
  private readonly tree: CallTree;
  private readonly treeBox: HTMLElement;
  private readonly scroller = h("div", { class: "sv-source-scroll" });
  private program: Program | null = null;
  private plan: SourcePlan | null = null;
  private selection: SourceSelection = null;
  private rowElements = new Map<SourceRow, HTMLElement>();
  private blockElements: HTMLElement[] = [];
  private readonly prefix = `sv-src-${nextId++}`;

  constructor(options: SourceViewOptions) {
    const { signal } = options;
    this.tree = new CallTree({ onOpen: (b) => this.revealBlock(b, true), signal });
    this.treeBox = h("div", { class: "sv-tree-box" }, [
      h("div", { class: "sv-muted sv-small", id: `${this.prefix}-tree` }, ["Calls (choose one to see its lines)"]),
      this.tree.element,
    ]);
    this.tree.element.setAttribute("aria-labelledby", `${this.prefix}-tree`);
    this.element = h("div", { class: "sv-listing", "data-role": "source-listing" }, [this.treeBox, this.scroller]);
    this.element.addEventListener("click", (event) => this.onClick(event, options), { signal });
  }

  private onClick(event: Event, options: SourceViewOptions): void {
    const target = (event.target as Element | null)?.closest?.("[data-role]") as HTMLElement | null;
    if (!target || !this.scroller.contains(target)) return;
    switch (target.getAttribute("data-role")) {
      case "value":
        options.onSelectValue(Number(target.getAttribute("data-value")));
        break;
      case "line-collective":
        options.onSelectCollective(Number(target.getAttribute("data-collective")));
        break;
      case "value-family":
      case "collective-family":
        this.toggleFamily(target);
        break;
      case "more-notes":
        this.showMore(target);
        break;
      case "line-number": {
        const entry = Number((target.closest("[data-entries]")?.getAttribute("data-entries") ?? "").split(",")[0]);
        if (Number.isInteger(entry)) options.onSelectLine(entry);
        break;
      }
      case "call-link":
      case "nested-link":
        this.revealBlock(Number(target.getAttribute("data-block")), true);
        break;
      case "caller-link":
        this.revealLine(Number(target.getAttribute("data-block")), Number(target.getAttribute("data-line")));
        break;
      case "block-toggle":
        this.toggleBlock(target);
        break;
      default:
    }
  }

  setProgram(program: Program, plan: SourcePlan): void {
    this.program = program;
    this.plan = plan;
    this.rowElements = new Map();
    const hasSent = program.payload.collectives.length > 0;
    const hasPeak = Boolean(program.payload.memory_timeline);
    this.element.classList.toggle("sv-no-sent", !hasSent);
    this.element.classList.toggle("sv-no-peak", !hasPeak);
    this.tree.setPlan(program, plan);
    this.treeBox.hidden = plan.blocks.length < 2;
    this.blockElements = plan.blocks.map((block, b) => this.blockElement(block, b));
    const parts: HTMLElement[] = [...this.blockElements];
    if (plan.blocks.length === 0) {
      parts.push(
        h("p", { class: "sv-note", "data-role": "no-source" }, [
          "Python could not read this program's source (a builtin, the REPL or exec'd code); values and collectives are listed by the lines JAX recorded.",
        ]),
      );
    }
    if (plan.elsewhere.length > 0) {
      const rows = h(
        "div",
        { class: "sv-block-body" },
        plan.elsewhere.map((row) => this.rowElement(row)),
      );
      parts.push(
        h(
          "section",
          { class: "sv-block sv-listing-elsewhere", "data-role": "elsewhere", "aria-label": "Other lines" },
          [
            h("div", { class: "sv-block-head" }, [
              h("span", { class: "sv-block-title" }, [
                plan.blocks.length > 0 ? "Lines of no function above" : "By source line",
              ]),
              h("span", { class: "sv-muted sv-small" }, [
                " JAX recorded these lines outside your functions' blocks, or none at all",
              ]),
            ]),
            rows,
          ],
        ),
      );
    }
    replaceChildren(this.scroller, parts);
    this.paintSelection();
  }

  /** Marks the selection; with `reveal`, opens what hides it and scrolls it into the box. */
  setSelected(selection: SourceSelection, reveal = false): void {
    this.selection = selection;
    let target: HTMLElement | null = null;
    if (reveal && selection) target = this.reveal(selection);
    this.paintSelection();
    if (target) revealWithin(this.scroller, target);
  }

  /** Shows block `b` (opening it) at the top of the box; with `focus`, moves focus to its heading. */
  revealBlock(b: number, focus = false): void {
    const element = this.blockElements[b];
    if (!element) return;
    this.openBlock(element);
    this.scroller.scrollTop += element.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    if (focus) element.querySelector<HTMLElement>("[data-role='block-toggle']")?.focus();
  }

  private revealLine(block: number, line: number): void {
    const row = this.plan?.blocks[block]?.rows.find((r) => r.lineNo === line);
    const element = row ? this.rowElements.get(row) : undefined;
    if (!element || !row) return;
    this.openBlock(this.blockElements[block]);
    revealWithin(this.scroller, element);
    const number = element.querySelector<HTMLElement>("[data-role='line-number']");
    if (number) number.focus();
    else {
      element.tabIndex = -1;
      element.focus();
    }
  }

  private blockElement(block: SourceBlock, b: number): HTMLElement {
    const program = this.program as Program;
    const { payload } = program;
    const plan = this.plan as SourcePlan;
    const bodyId = `${this.prefix}-b${b}`;
    const facts: string[] = [];
    if (block.sentBytes > 0) facts.push(`sends ${formatBytes(block.sentBytes)} per call`);
    if (block.peakBytes > 0) facts.push(`holds ${formatBytes(block.peakBytes)} at the peak`);
    if (block.valueCount > 0) facts.push(plural(block.valueCount, "value"));
    for (const body of block.bodies) facts.push(`in a ${foldLabel(program, body)} body`);
    const callers: (HTMLElement | string)[] = [];
    block.callers.forEach(([caller, line], k) => {
      if (k > 0) callers.push(", ");
      callers.push(
        h(
          "button",
          { type: "button", class: "sv-link", "data-role": "caller-link", "data-block": caller, "data-line": line },
          [`${plan.blocks[caller].name}:${line}`],
        ),
      );
    });
    const body = h(
      "div",
      { class: "sv-block-body", id: bodyId },
      block.rows.map((row) => this.rowElement(row)),
    );
    const lastLine = block.lastLine > block.firstLine ? `\u2013${block.lastLine}` : "";
    return h(
      "section",
      {
        class: "sv-block",
        "data-role": "source-block",
        "data-block": b,
        "data-function": block.name,
        "aria-label": `${block.name}, ${lineLabel(payload, block.file, block.firstLine)}`,
      },
      [
        h("div", { class: "sv-block-head" }, [
          h(
            "button",
            {
              type: "button",
              class: "sv-block-toggle",
              "data-role": "block-toggle",
              "aria-expanded": "true",
              "aria-controls": bodyId,
            },
            [
              h("span", { class: "sv-fold-mark", "aria-hidden": "true" }, ["\u25be"]),
              h("code", { class: "sv-block-name" }, [block.name]),
            ],
          ),
          h("span", { class: "sv-muted", title: payload.files[block.file] ?? "" }, [
            `${lineLabel(payload, block.file, block.firstLine)}${lastLine}`,
          ]),
          facts.length > 0 ? h("span", { class: "sv-block-facts sv-muted" }, [facts.join(" \u00b7 ")]) : null,
          callers.length > 0 ? h("span", { class: "sv-block-callers sv-muted" }, ["called from ", ...callers]) : null,
        ]),
        h("div", { class: "sv-src-columns sv-muted", "aria-hidden": "true" }, [
          h("span", {}, ["line"]),
          h("span", { class: "sv-src-sent" }, ["sends"]),
          h("span", { class: "sv-src-peak" }, ["at peak"]),
          h("span", {}, [""]),
        ]),
        body,
      ],
    );
  }

  private rowElement(row: SourceRow): HTMLElement {
    const program = this.program as Program;
    const plan = this.plan as SourcePlan;
    const { payload } = program;
    const annotated = row.entries.length > 0 && hasNotes(row);
    const lineText = row.block < 0 ? lineLabel(payload, row.file, row.lineNo) || "no line" : String(row.lineNo);
    const number = annotated
      ? h(
          "button",
          {
            type: "button",
            class: "sv-src-no",
            "data-role": "line-number",
            "aria-label": `line ${lineLabel(payload, row.file, row.lineNo) || "(none)"}: show what it holds and sends`,
          },
          [lineText],
        )
      : h("span", { class: "sv-src-no" }, [lineText]);
    const bytesCell = (bytes: number, role: string, what: string): HTMLElement => {
      const cell = h("span", { class: `sv-src-${role}`, "data-role": `line-${role}`, "data-bytes": bytes }, [
        bytes > 0 ? formatBytes(bytes) : "",
      ]);
      if (bytes > 0) cell.setAttribute("aria-label", `${what} ${formatBytes(bytes)}`);
      return cell;
    };
    const code = h("pre", { class: "sv-src-code" }, [row.text || " "]);
    code.style.setProperty("--sv-indent", String(row.indent));
    const links: HTMLElement[] = [];
    for (const callee of row.calls) {
      links.push(
        h("button", { type: "button", class: "sv-link", "data-role": "call-link", "data-block": callee }, [
          `\u2192 ${plan.blocks[callee].name}`,
        ]),
      );
    }
    if (row.nested >= 0) {
      const nested = plan.blocks[row.nested];
      links.push(
        h("button", { type: "button", class: "sv-link", "data-role": "nested-link", "data-block": row.nested }, [
          `\u2192 ${nested.name}, lines ${nested.firstLine}\u2013${nested.lastLine}: its own block`,
        ]),
      );
    }
    const notes = annotated
      ? h("div", { class: "sv-src-notes" }, [
          passElement(program, row.forward, "forward", row.backward.valueCount + row.backward.collectives.length > 0),
          passElement(program, row.backward, "backward", true),
        ])
      : null;
    const element = h(
      "div",
      {
        class: annotated ? "sv-src-row sv-src-annotated" : "sv-src-row",
        "data-role": "source-line",
        "data-line": row.lineNo,
        "data-block": row.block,
        "data-entries": row.entries.length > 0 ? row.entries.join(",") : null,
      },
      [
        number,
        bytesCell(row.sentBytes, "sent", "sends per call"),
        bytesCell(row.peakBytes, "peak", "holds at the peak"),
        h("div", { class: "sv-src-main" }, [
          code,
          links.length > 0 ? h("div", { class: "sv-src-calls" }, links) : null,
          notes,
        ]),
      ],
    );
    this.rowElements.set(row, element);
    return element;
  }

  private toggleFamily(chip: HTMLElement): void {
    const open = chip.getAttribute("aria-expanded") !== "true";
    this.setFamilyOpen(chip, open);
  }

  private setFamilyOpen(chip: HTMLElement, open: boolean): void {
    chip.setAttribute("aria-expanded", String(open));
    let members = chip.nextElementSibling as HTMLElement | null;
    if (!members?.classList.contains("sv-members")) {
      if (!open) return;
      const make = familyMembers.get(chip);
      const id = `${this.prefix}-m${nextId++}`;
      members = h("div", { class: "sv-members", id, role: "group", "aria-label": chip.title }, make ? make() : []);
      chip.setAttribute("aria-controls", id);
      chip.after(members);
      this.paintSelection();
    }
    members.hidden = !open;
  }

  private showMore(more: HTMLElement): void {
    const families = moreFamilies.get(more) ?? [];
    more.replaceWith(...families.map((f) => familyElement(this.program as Program, f)));
    this.paintSelection();
  }

  private toggleBlock(toggle: HTMLElement): void {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    const block = toggle.closest<HTMLElement>("[data-role='source-block']");
    if (block) this.setBlockOpen(block, open);
  }

  private openBlock(block: HTMLElement | undefined): void {
    if (block) this.setBlockOpen(block, true);
  }

  private setBlockOpen(block: HTMLElement, open: boolean): void {
    const toggle = block.querySelector<HTMLElement>("[data-role='block-toggle']");
    toggle?.setAttribute("aria-expanded", String(open));
    const mark = toggle?.querySelector(".sv-fold-mark");
    if (mark) mark.textContent = open ? "\u25be" : "\u25b8";
    for (const part of Array.from(
      block.querySelectorAll<HTMLElement>(":scope > .sv-block-body, :scope > .sv-src-columns"),
    )) {
      part.hidden = !open;
    }
  }

  /** Opens what hides a selection (its block, its row's "more", its family); returns what to scroll to. */
  private reveal(selection: NonNullable<SourceSelection>): HTMLElement | null {
    const program = this.program;
    const plan = this.plan;
    if (!program || !plan) return null;
    if (selection.kind === "line") {
      const row = plan.rowOfEntry[selection.index];
      const element = row ? this.rowElements.get(row) : undefined;
      if (!row || !element) return null;
      if (row.block >= 0) this.openBlock(this.blockElements[row.block]);
      return element;
    }
    const rows =
      selection.kind === "value"
        ? [plan.rowOfEntry[program.payload.values.line[selection.index]]].filter((r): r is SourceRow => Boolean(r))
        : rowsOfCollective(plan, program, selection.index);
    let first: HTMLElement | null = null;
    for (const row of rows) {
      const element = this.rowElements.get(row);
      if (!element) continue;
      if (row.block >= 0) this.openBlock(this.blockElements[row.block]);
      const chip = this.openChip(element, selection);
      first ??= chip ?? element;
    }
    return first;
  }

  /** The chip of a selection in a row, opening the "more" button or the family that hides it. */
  private openChip(row: HTMLElement, selection: { kind: "value" | "collective"; index: number }): HTMLElement | null {
    const own = selection.kind === "value" ? "value" : "line-collective";
    const attribute = selection.kind === "value" ? "data-value" : "data-collective";
    const find = () => row.querySelector<HTMLElement>(`[data-role="${own}"][${attribute}="${selection.index}"]`);
    const holds = (list: string | null) => (list ?? "").split(",").map(Number).includes(selection.index);
    const familyAttribute = selection.kind === "value" ? "data-values" : "data-collectives";
    const familyRole = selection.kind === "value" ? "value-family" : "collective-family";
    for (let attempt = 0; attempt < 2; attempt++) {
      const shown = find();
      if (shown && !shown.closest(".sv-members[hidden]")) return shown;
      const family = Array.from(row.querySelectorAll<HTMLElement>(`[data-role="${familyRole}"]`)).find((f) =>
        holds(f.getAttribute(familyAttribute)),
      );
      if (family) {
        this.setFamilyOpen(family, true);
        return find();
      }
      const more = row.querySelector<HTMLElement>("[data-role='more-notes']");
      if (!more) break;
      this.showMore(more);
    }
    return find();
  }

  private paintSelection(): void {
    for (const chip of Array.from(this.scroller.querySelectorAll(".sv-chip-selected"))) {
      chip.classList.remove("sv-chip-selected");
      chip.setAttribute("aria-pressed", "false");
    }
    for (const row of Array.from(this.scroller.querySelectorAll(".sv-line-selected"))) {
      row.classList.remove("sv-line-selected");
      row.removeAttribute("aria-current");
    }
    const selection = this.selection;
    if (!selection || !this.plan) return;
    if (selection.kind === "line") {
      const row = this.plan.rowOfEntry[selection.index];
      const element = row ? this.rowElements.get(row) : undefined;
      element?.classList.add("sv-line-selected");
      element?.setAttribute("aria-current", "true");
      return;
    }
    const own = selection.kind === "value" ? "value" : "line-collective";
    const attribute = selection.kind === "value" ? "data-value" : "data-collective";
    for (const chip of Array.from(
      this.scroller.querySelectorAll(`[data-role="${own}"][${attribute}="${selection.index}"]`),
    )) {
      chip.classList.add("sv-chip-selected");
      chip.setAttribute("aria-pressed", "true");
    }
  }
}

function hasNotes(row: SourceRow): boolean {
  const count = (n: PassNotes) => n.valueCount + n.collectives.length;
  return count(row.forward) + count(row.backward) > 0 || row.peakBytes > 0 || row.calls.length > 0;
}
