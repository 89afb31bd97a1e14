/**
 * The call tree of a program's source view: the traced function, the
 * functions it calls on which lines, and theirs, each foldable; choosing a
 * function (click, Enter or Space) opens its source block. A tree in the
 * WAI-ARIA sense: one item in the tab order, arrow keys move (Right opens or
 * goes to the first child, Left closes or goes to the parent), Home and End.
 * A function reached again lists its calls only where it was first reached.
 */

import type { Program } from "../payload/program";
import { lineLabel } from "../payload/program";
import type { CallNode, SourcePlan } from "../payload/programSource";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";

export interface CallTreeOptions {
  /** A function was chosen: show its block. */
  /** Opens a function's block; `focus`: move the keyboard focus to its heading (Enter does, a click keeps it in the tree). */
  onOpen: (block: number, focus: boolean) => void;
  signal: AbortSignal;
}

export class CallTree {
  readonly element: HTMLElement;

  constructor(options: CallTreeOptions) {
    const { signal } = options;
    this.element = h("ul", {
      class: "sv-call-tree",
      role: "tree",
      "data-role": "call-tree",
      "aria-label": "Call tree",
      // JupyterLab's notebook takes ArrowUp/ArrowDown in command mode to move between cells; the tree's keys are its own.
      "data-lm-suppress-shortcuts": "true",
    });
    const itemOf = (event: Event): HTMLElement | null =>
      ((event.target as Element | null)?.closest?.("[role='treeitem']") as HTMLElement | null) ?? null;
    this.element.addEventListener(
      "click",
      (event) => {
        const item = itemOf(event);
        if (!item) return;
        event.stopPropagation();
        this.focus(item);
        if ((event.target as Element).closest(".sv-tree-toggle")) this.toggle(item);
        else options.onOpen(Number(item.getAttribute("data-block")), false);
      },
      { signal },
    );
    this.element.addEventListener(
      "keydown",
      (event) => {
        const item = itemOf(event);
        if (!item) return;
        const visible = this.visibleItems();
        const at = visible.indexOf(item);
        const expanded = item.getAttribute("aria-expanded");
        let next: HTMLElement | null = null;
        switch (event.key) {
          case "ArrowDown":
            next = visible[at + 1] ?? null;
            break;
          case "ArrowUp":
            next = visible[at - 1] ?? null;
            break;
          case "Home":
            next = visible[0] ?? null;
            break;
          case "End":
            next = visible[visible.length - 1] ?? null;
            break;
          case "ArrowRight":
            if (expanded === "false") this.toggle(item);
            else if (expanded === "true") next = item.querySelector<HTMLElement>("[role='treeitem']");
            break;
          case "ArrowLeft":
            if (expanded === "true") this.toggle(item);
            else next = item.parentElement?.closest<HTMLElement>("[role='treeitem']") ?? null;
            break;
          case "Enter":
          case " ":
            options.onOpen(Number(item.getAttribute("data-block")), true);
            break;
          default:
            return;
        }
        event.preventDefault();
        event.stopPropagation();
        if (next) this.focus(next);
      },
      { signal },
    );
  }

  setPlan(program: Program, plan: SourcePlan): void {
    const node = (n: CallNode, level: number): HTMLElement => {
      const block = plan.blocks[n.block];
      const open = n.children.length > 0 && !n.repeat;
      // A function reached again is named with its call line only: its figures are at its first place.
      const facts: string[] = [];
      if (!n.repeat && block.sentBytes > 0) facts.push(`sends ${formatBytes(block.sentBytes)}`);
      if (!n.repeat && block.peakBytes > 0) facts.push(`${formatBytes(block.peakBytes)} at peak`);
      const callsAbove = n.repeat && plan.tree.length > 0 && block.rows.some((r) => r.calls.length > 0);
      const item = h(
        "li",
        {
          role: "treeitem",
          "data-role": "call-node",
          "data-block": n.block,
          "aria-level": level,
          "aria-expanded": open ? "true" : null,
          tabindex: -1,
        },
        [
          h("div", { class: "sv-tree-row" }, [
            h("span", { class: "sv-tree-toggle", "aria-hidden": "true" }, [open ? "\u25be" : "\u00a0"]),
            h("code", { class: "sv-tree-name" }, [block.name]),
            h("span", { class: "sv-muted sv-tree-where" }, [
              n.line === null ? lineLabel(program.payload, block.file, block.firstLine) : `line ${n.line}`,
              callsAbove ? ", its calls listed above" : "",
            ]),
            facts.length > 0 ? h("span", { class: "sv-muted sv-tree-facts" }, [facts.join(" \u00b7 ")]) : null,
          ]),
          open
            ? h(
                "ul",
                { role: "group" },
                n.children.map((child) => node(child, level + 1)),
              )
            : null,
        ],
      );
      return item;
    };
    replaceChildren(
      this.element,
      plan.tree.map((n) => node(n, 1)),
    );
    const first = this.element.querySelector<HTMLElement>("[role='treeitem']");
    if (first) first.tabIndex = 0;
  }

  private visibleItems(): HTMLElement[] {
    return Array.from(this.element.querySelectorAll<HTMLElement>("[role='treeitem']")).filter(
      (item) => !item.parentElement?.closest("[role='treeitem'][aria-expanded='false']"),
    );
  }

  private toggle(item: HTMLElement): void {
    const expanded = item.getAttribute("aria-expanded");
    if (expanded === null) return;
    const open = expanded !== "true";
    item.setAttribute("aria-expanded", String(open));
    const group = item.querySelector<HTMLElement>(":scope > [role='group']");
    if (group) group.hidden = !open;
    const toggle = item.querySelector(":scope > .sv-tree-row > .sv-tree-toggle");
    if (toggle) toggle.textContent = open ? "\u25be" : "\u25b8";
  }

  private focus(item: HTMLElement): void {
    for (const other of Array.from(this.element.querySelectorAll<HTMLElement>("[role='treeitem'][tabindex='0']"))) {
      other.tabIndex = -1;
    }
    item.tabIndex = 0;
    item.focus();
  }
}
