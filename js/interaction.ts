/** What the pictures report to the view, and how the view answers back. */

import type { Layout } from "./payload";

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

export interface PictureView {
  readonly element: HTMLElement;
  setHighlight: (highlight: Highlight | null) => void;
  /**
   * Redraws in place for a layout with the same structure (same devices in
   * the same places, only tiles moved); false when a rebuild is needed.
   */
  update?: (layout: Layout) => boolean;
}

/** Above this many devices the mesh grid is drawn on a canvas. */
export const CANVAS_THRESHOLD = 512;

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
