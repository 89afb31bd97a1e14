/**
 * The leaf table: one row per leaf (path, type with each `@axis` marked in
 * its mesh axis colour, spec, bytes per device, copies), filterable by path (text,
 * or a glob as the rules use), sortable by bytes, and virtualised: only the
 * rows in view (and a few beyond) exist in the DOM, so a large tree costs
 * what its visible rows do.
 */

import type { Tree } from "../payload/tree";
import { formatCount } from "../util/bytes";
import { h, replaceChildren } from "../util/dom";
import { globToRegExp, isGlob } from "../util/glob";
import { leafRow, leafRowKey } from "./leafRow";

/** Row height in CSS pixels (fixed, so a row's place follows from its number). */
export const ROW_HEIGHT = 26;
/** Rows shown at once before the table scrolls. */
export const VISIBLE_ROWS = 14;
/** Rows drawn beyond each edge of the view, so a quick scroll shows no gap. */
const OVERSCAN = 4;

export type SortOrder = "flatten" | "bytes-desc" | "bytes-asc";

const NEXT_SORT: Record<SortOrder, SortOrder> = {
  flatten: "bytes-desc",
  "bytes-desc": "bytes-asc",
  "bytes-asc": "flatten",
};

const SORT_LABEL: Record<SortOrder, string> = {
  flatten: "per device",
  "bytes-desc": "per device \u2193",
  "bytes-asc": "per device \u2191",
};

const ARIA_SORT: Record<SortOrder, string> = { flatten: "none", "bytes-desc": "descending", "bytes-asc": "ascending" };

export interface LeafTableOptions {
  /** The user picked leaf i (click, Enter or Space). */
  onSelect: (leaf: number) => void;
  signal: AbortSignal;
}

/** Leaves that pass `filter`, in `sort` order (stable: flatten order among equal bytes). */
export function leafOrder(tree: Tree, filter: string, sort: SortOrder, lowerPaths?: string[]): Int32Array {
  const text = filter.trim();
  let order: number[];
  if (!text) {
    order = Array.from({ length: tree.leafCount }, (_, i) => i);
  } else if (isGlob(text)) {
    const pattern = globToRegExp(text);
    order = [];
    for (let i = 0; i < tree.leafCount; i++) if (pattern.test(tree.paths[i])) order.push(i);
  } else {
    const needle = text.toLowerCase();
    const paths = lowerPaths ?? tree.paths.map((p) => p.toLowerCase());
    order = [];
    for (let i = 0; i < tree.leafCount; i++) if (paths[i].includes(needle)) order.push(i);
  }
  if (sort !== "flatten") {
    const sign = sort === "bytes-desc" ? -1 : 1;
    const { bytes } = tree;
    order.sort((a, b) => sign * (bytes[a] - bytes[b]) || a - b);
  }
  return Int32Array.from(order);
}

export class LeafTable {
  readonly element: HTMLElement;
  private readonly options: LeafTableOptions;
  private readonly filter: HTMLInputElement;
  private readonly count = h("span", {
    class: "sv-muted sv-leaf-count",
    "data-role": "leaf-count",
    "aria-live": "polite",
  });
  private readonly sortButton: HTMLButtonElement;
  private readonly sortHeader: HTMLElement;
  private readonly grid: HTMLElement;
  private readonly body: HTMLElement;
  private readonly spacer = h("div", { class: "sv-grid-spacer" });
  private readonly rows = h("div", { class: "sv-grid-rows" });
  private readonly empty = h("p", { class: "sv-muted sv-grid-empty" });
  private tree: Tree | null = null;
  private lowerPaths: string[] | null = null;
  private order: Int32Array = new Int32Array(0);
  private sort: SortOrder = "flatten";
  private selected: number | null = null;
  /** Place in `order` of the row the keyboard is on. */
  private active = 0;
  private drawn: [number, number] = [0, 0];
  /**
   * The body's scroll offset and height as last set or reported. Reading them
   * from the DOM after a change would force a layout in the middle of a redraw.
   */
  private scroll = 0;
  private viewHeight = 0;

  constructor(options: LeafTableOptions) {
    this.options = options;
    const { signal } = options;
    this.filter = h("input", {
      type: "search",
      class: "sv-input sv-leaf-filter",
      "data-role": "leaf-filter",
      placeholder: "filter by path: text, or a glob such as *layers.*.w",
      "aria-label": "filter leaves by path",
      spellcheck: "false",
      autocomplete: "off",
    });
    this.filter.addEventListener("input", () => this.refilter(), { signal });
    this.sortButton = h("button", { type: "button", class: "sv-sort", "data-role": "sort-bytes" }, [
      SORT_LABEL.flatten,
    ]);
    this.sortButton.title = "Sort by bytes per device: largest first, smallest first, flatten order";
    this.sortButton.addEventListener("click", () => this.setSort(NEXT_SORT[this.sort]), { signal });
    this.sortHeader = h("div", { role: "columnheader", class: "sv-cell-bytes", "aria-sort": "none" }, [
      this.sortButton,
    ]);
    const head = h("div", { role: "row", class: "sv-row sv-head-row", "aria-rowindex": 1 }, [
      h("div", { role: "columnheader" }, ["path"]),
      h("div", { role: "columnheader" }, ["type"]),
      h("div", { role: "columnheader", title: "the leaf's NamedSharding spec, one entry per dimension" }, ["spec"]),
      this.sortHeader,
      h("div", { role: "columnheader", class: "sv-cell-copies" }, ["copies"]),
    ]);
    this.body = h("div", { class: "sv-grid-body", role: "rowgroup", tabindex: -1 }, [this.spacer]);
    this.spacer.append(this.rows);
    this.grid = h("div", { class: "sv-grid", role: "grid", "aria-label": "Leaves", "aria-colcount": 5 }, [
      h("div", { role: "rowgroup", class: "sv-grid-head" }, [head]),
      this.body,
    ]);
    this.element = h("div", { class: "sv-leaf-table" }, [
      h("div", { class: "sv-leaf-tools" }, [this.filter, this.count]),
      this.grid,
      this.empty,
    ]);
    this.body.addEventListener(
      "scroll",
      () => {
        this.scroll = this.body.scrollTop;
        this.drawRows();
      },
      { signal, passive: true },
    );
    this.body.addEventListener("click", (event) => this.onClick(event), { signal });
    this.body.addEventListener("keydown", (event) => this.onKey(event), { signal });
  }

  /** Shows a tree's leaves, keeping the filter, the sort and the scroll (a rules edit keeps the leaves). */
  setTree(tree: Tree): void {
    const samePaths = this.tree !== null && sameStrings(this.tree.paths, tree.paths);
    this.tree = tree;
    if (!samePaths) this.lowerPaths = null;
    if (!samePaths && this.selected !== null && this.selected >= tree.leafCount) this.selected = null;
    this.reorder();
  }

  setSelected(leaf: number | null): void {
    this.selected = leaf;
    if (leaf !== null) {
      const at = this.order.indexOf(leaf);
      if (at >= 0) this.active = at;
    }
    this.drawRows(true);
  }

  /** Scrolls leaf i into view when the filter shows it. */
  reveal(leaf: number): void {
    const at = this.order.indexOf(leaf);
    if (at < 0) return;
    this.active = at;
    this.scrollToRow(at);
    this.drawRows(true);
  }

  /** The leaves in table order (after filter and sort). */
  get shown(): Int32Array {
    return this.order;
  }

  setSort(sort: SortOrder): void {
    this.sort = sort;
    this.sortButton.textContent = SORT_LABEL[sort];
    this.sortHeader.setAttribute("aria-sort", ARIA_SORT[sort]);
    this.reorder();
    this.scrollTo(0);
    this.active = 0;
    this.drawRows(true);
  }

  private refilter(): void {
    this.reorder();
    this.scrollTo(0);
    this.active = 0;
    this.drawRows(true);
  }

  private reorder(): void {
    const tree = this.tree;
    if (!tree) return;
    const text = this.filter.value;
    if (text.trim() && !isGlob(text) && this.lowerPaths === null) {
      this.lowerPaths = tree.paths.map((p) => p.toLowerCase());
    }
    let invalid = false;
    try {
      this.order = leafOrder(tree, text, this.sort, this.lowerPaths ?? undefined);
    } catch {
      invalid = true; // a glob JS cannot compile (none known): show nothing rather than fail
      this.order = new Int32Array(0);
    }
    this.active = Math.min(this.active, Math.max(0, this.order.length - 1));
    const n = this.order.length;
    const total = tree.leafCount;
    this.count.textContent = text.trim() ? `${n} of ${leafWord(total)}` : leafWord(total);
    this.grid.setAttribute("aria-rowcount", String(n + 1));
    this.spacer.style.height = `${n * ROW_HEIGHT}px`;
    this.viewHeight = Math.max(1, Math.min(n, VISIBLE_ROWS)) * ROW_HEIGHT;
    this.body.style.height = `${this.viewHeight}px`;
    // Fewer rows than the offset reaches: the browser pulls the offset in (and says so by a scroll event).
    this.scroll = Math.min(this.scroll, Math.max(0, n * ROW_HEIGHT - this.viewHeight));
    this.empty.textContent =
      total === 0 ? "This tree has no leaves." : n === 0 ? `No leaf path matches \u201c${text.trim()}\u201d.` : "";
    if (invalid) this.empty.textContent = `\u201c${text.trim()}\u201d is not a pattern this page can read.`;
    this.drawRows(true);
  }

  private scrollTo(top: number): void {
    this.body.scrollTop = top;
    this.scroll = top;
  }

  private scrollToRow(at: number): void {
    const top = at * ROW_HEIGHT;
    if (top < this.scroll) this.scrollTo(top);
    else if (top + ROW_HEIGHT > this.scroll + this.viewHeight) this.scrollTo(top + ROW_HEIGHT - this.viewHeight);
  }

  /**
   * Draws the rows in view (plus overscan); `force` redraws even when the
   * window did not move. A row whose content did not change is kept as it is
   * (a rules edit changes a few leaves: the rest cost no style or layout).
   */
  private drawRows(force = false): void {
    const tree = this.tree;
    if (!tree) return;
    const n = this.order.length;
    const first = Math.max(0, Math.floor(this.scroll / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(n, Math.ceil((this.scroll + this.viewHeight) / ROW_HEIGHT) + OVERSCAN);
    if (!force && first === this.drawn[0] && last === this.drawn[1]) return;
    this.drawn = [first, last];
    const hadFocus = this.rows.contains(this.rows.ownerDocument.activeElement);
    this.rows.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    const kept = new Map<string, HTMLElement>();
    for (const row of Array.from(this.rows.children) as HTMLElement[])
      kept.set(row.getAttribute("data-key") ?? "", row);
    const rows: HTMLElement[] = [];
    for (let at = first; at < last; at++) {
      const leaf = this.order[at];
      const selected = leaf === this.selected;
      const active = at === this.active;
      const key = leafRowKey(tree, leaf, at, selected, active);
      rows.push(kept.get(key) ?? leafRow(tree, leaf, at, key, selected, active));
    }
    const current = this.rows.children;
    const same = rows.length === current.length && rows.every((row, k) => current[k] === row);
    if (!same) replaceChildren(this.rows, rows);
    if (hadFocus) {
      const row = this.rowAt(this.active);
      (row ?? this.body).focus({ preventScroll: true });
    }
  }

  private rowAt(at: number): HTMLElement | null {
    return this.rows.querySelector<HTMLElement>(`[aria-rowindex="${at + 2}"]`);
  }

  private onClick(event: Event): void {
    const row = (event.target as Element | null)?.closest?.("[data-leaf]");
    if (!row) return;
    const leaf = Number(row.getAttribute("data-leaf"));
    this.active = this.order.indexOf(leaf);
    this.options.onSelect(leaf);
  }

  private onKey(event: KeyboardEvent): void {
    const n = this.order.length;
    if (n === 0) return;
    const page = Math.max(1, VISIBLE_ROWS - 1);
    const moves: Record<string, number> = {
      ArrowDown: this.active + 1,
      ArrowUp: this.active - 1,
      PageDown: this.active + page,
      PageUp: this.active - page,
      Home: 0,
      End: n - 1,
    };
    if (event.key in moves) {
      event.preventDefault();
      this.active = Math.min(n - 1, Math.max(0, moves[event.key]));
      this.scrollToRow(this.active);
      this.drawRows(true);
      this.rowAt(this.active)?.focus({ preventScroll: true });
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      this.options.onSelect(this.order[this.active]);
    }
  }
}

function leafWord(count: number): string {
  return `${formatCount(count)} ${count === 1 ? "leaf" : "leaves"}`;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
