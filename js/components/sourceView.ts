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
 * selection shows. A line's "sends" figure is its marker: a click opens the
 * reason of the line's first collective.
 */

import type { Program } from "../payload/program";
import { rowsOfCollective, type SourcePlan, type SourceRow } from "../payload/programSource";
import { h, replaceChildren } from "../util/dom";
import { revealWithin } from "../util/scroll";
import { CallTree } from "./callTree";
import { blockElement, elsewhereSection, rowElement, setBlockOpen } from "./sourceBlocks";
import { familyElement, familyMembers, moreFamilies } from "./sourceNotes";
import { markSelection, type SourceSelection } from "./sourceSelection";

export { FAMILIES_SHOWN } from "./sourceNotes";

export type { SourceSelection } from "./sourceSelection";

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
    this.tree = new CallTree({ onOpen: (b, focus) => this.revealBlock(b, focus), signal });
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
      case "line-sent":
        if (target.hasAttribute("data-why-collective")) {
          options.onSelectCollective(Number(target.getAttribute("data-why-collective")));
        }
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
    this.blockElements = plan.blocks.map((block, b) =>
      blockElement(
        program,
        plan,
        block,
        b,
        `${this.prefix}-b${b}`,
        block.rows.map((row) => this.rowElement(row)),
      ),
    );
    const parts: HTMLElement[] = [...this.blockElements];
    if (plan.blocks.length === 0) {
      parts.push(
        h("p", { class: "sv-note", "data-role": "no-source" }, [
          "Python could not read this program's source (a builtin, the REPL or exec'd code); values and collectives are listed by the lines JAX recorded.",
        ]),
      );
    }
    if (plan.elsewhere.length > 0) {
      parts.push(
        elsewhereSection(
          plan,
          plan.elsewhere.map((row) => this.rowElement(row)),
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

  private rowElement(row: SourceRow): HTMLElement {
    const element = rowElement(this.program as Program, this.plan as SourcePlan, row);
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
    if (block) setBlockOpen(block, open);
  }

  private openBlock(block: HTMLElement | undefined): void {
    if (block) setBlockOpen(block, true);
  }

  private paintSelection(): void {
    markSelection(this.scroller, this.selection, this.plan, this.rowElements);
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
}
