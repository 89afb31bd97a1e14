/** What the pictures report to the view, and how the view answers back. */

import type { Layout } from "../payload/array";

/** A thing the user points at: a device (by mesh-order position) or a tile. */
export type Target = { kind: "device"; position: number } | { kind: "tile"; tile: number };

export interface PictureEvents {
  /** Pointer over a device or tile; null when it leaves. */
  onHover: (target: Target | null) => void;
  /** Keyboard focus on a device or tile; null when focus leaves. */
  onFocus: (target: Target | null) => void;
  /** Click, Enter or Space: pin the target in the inspector. */
  onActivate: (target: Target) => void;
}

/** What to light up: a tile and its holders, and optionally one device itself. */
export interface Highlight {
  tile: number;
  position: number | null;
}

/** How a picture paints its items (browser-only choices the view makes). */
export interface PictureStyle {
  /** Fill colour of tile t. */
  fill: (tile: number) => string;
}

export interface PictureView {
  readonly element: HTMLElement;
  /** Lights up what the pointer, focus or pin is on (and its partners). */
  setHighlight: (highlight: Highlight | null) => void;
  /** Marks the pinned item, so it looks different from a hovered one; null for none. */
  setPinned?: (target: Target | null) => void;
  /** Dims the items that hold none of `tiles` (the slice the array map shows); null shows all alike. */
  setShown?: (tiles: ReadonlySet<number> | null) => void;
  /**
   * Redraws in place for a layout with the same structure (same devices in
   * the same places, only tiles moved); false when a rebuild is needed.
   */
  update?: (layout: Layout, style: PictureStyle) => boolean;
  /** Paints every item again from the same layout (a painter's values changed). */
  repaint?: () => void;
}

/**
 * Above this many devices the mesh grid is drawn on a canvas: past it a DOM
 * grid's mesh edit (every cell moved, new blocks) misses a frame in
 * JupyterLab where the canvas does not (docs/performance.md).
 */
export const CANVAS_THRESHOLD = 256;

/**
 * Above this many visible tiles the array map is drawn on a canvas: tiles
 * that small cannot hold their labels, and the DOM would cost a frame.
 */
export const MAP_CANVAS_THRESHOLD = 256;

export function sameTarget(a: Target | null, b: Target | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.kind === "device" && b.kind === "device") return a.position === b.position;
  if (a.kind === "tile" && b.kind === "tile") return a.tile === b.tile;
  return false;
}

// ------------------------------------------------------- shared wiring

/** The number in `attribute` on the item at or around the event's target; -1 outside every item. */
export function itemNumber(event: Event, attribute: string): number {
  const item = (event.target as Element | null)?.closest?.(`[${attribute}]`);
  return item ? Number(item.getAttribute(attribute)) : -1;
}

/** The device (`data-position`) or tile (`data-tile`) around an event's target in a DOM picture, or null. */
export function itemTarget(event: Event): Target | null {
  const position = itemNumber(event, "data-position");
  if (position >= 0) return { kind: "device", position };
  const tile = itemNumber(event, "data-tile");
  return tile >= 0 ? { kind: "tile", tile } : null;
}

/** Reports hover, focus and clicks on the items of a DOM picture through one listener each on its root. */
export function delegateTargets(root: HTMLElement, events: PictureEvents, signal: AbortSignal): void {
  const onItem = (report: (target: Target) => void) => (event: Event) => {
    const target = itemTarget(event);
    if (target) report(target);
  };
  root.addEventListener("pointerover", (event) => events.onHover(itemTarget(event)), { signal });
  root.addEventListener("pointerleave", () => events.onHover(null), { signal });
  root.addEventListener("focusin", onItem(events.onFocus), { signal });
  root.addEventListener("focusout", () => events.onFocus(null), { signal });
  root.addEventListener("click", onItem(events.onActivate), { signal });
}

/** Where keys move a cursor over a picture's items. */
export interface KeyMoves {
  /** The item a key leads to from item `from` (`from` itself at an edge), or null when the key moves nothing. */
  move: (from: number, key: string) => number | null;
}

/** Arrow keys over `count` items laid out row-major in `cols` columns; the edges hold. */
export function gridMoves(cols: number, count: number): KeyMoves["move"] {
  const steps: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
  return (from, key) => {
    const step = steps[key];
    if (typeof step !== "number") return null;
    const next = from + step;
    return next >= 0 && next < count ? next : from;
  };
}

/** Keyboard use of a picture: keys move between items (`go`), Enter and Space pin the current one. */
export function navigateByKeys(
  element: HTMLElement,
  signal: AbortSignal,
  nav: KeyMoves & {
    /** The item the key press starts from, or -1 (not on an item). */
    from: (event: KeyboardEvent) => number;
    go: (i: number) => void;
    activate: (i: number) => void;
  },
): void {
  element.addEventListener(
    "keydown",
    (event) => {
      const from = nav.from(event);
      if (from < 0) return;
      const to = nav.move(from, event.key);
      if (to !== null) {
        event.preventDefault();
        nav.go(to);
      } else if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        nav.activate(from);
      }
    },
    { signal },
  );
}

/**
 * A roving tabindex over a DOM picture's items: exactly one item is in the tab
 * order; `go` moves it there and focuses it, `track` follows focus the pointer moved.
 */
export function rovingFocus(items: readonly HTMLElement[]): { go: (i: number) => void; track: (i: number) => void } {
  let current = 0;
  const track = (i: number): void => {
    if (i === current || !items[i]) return;
    if (items[current]) items[current].tabIndex = -1;
    current = i;
    items[i].tabIndex = 0;
  };
  return {
    go: (i) => {
      track(i);
      items[i]?.focus();
    },
    track,
  };
}
