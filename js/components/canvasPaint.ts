/**
 * What the two canvas pictures (the large mesh grid and the large array map)
 * share: a backing store at device resolution, a cleared and scaled context
 * per frame, the focus mark, and the wiring that turns pointer, focus and key
 * events on one canvas into PictureEvents through a movable cursor.
 */

import type { PictureEvents, Target } from "./interaction";
import { type KeyMoves, navigateByKeys } from "./interaction";

/** A canvas drawing area in CSS pixels. */
export interface CanvasSize {
  width: number;
  height: number;
}

/**
 * Sizes the backing store at device resolution; CSS keeps the proportions
 * (height: auto). A store already of that size is kept (setting a canvas's
 * size, even to the same, resets it).
 */
export function sizeCanvas(canvas: HTMLCanvasElement, size: CanvasSize): number {
  const ratio = globalThis.devicePixelRatio || 1;
  const width = Math.round(size.width * ratio);
  const height = Math.round(size.height * ratio);
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  canvas.style.width = `${size.width}px`;
  return ratio;
}

/**
 * Coalesces repaint requests into one paint in the next frame, when the
 * page's styles are computed anyway: a paint reads CSS variables, and
 * reading them between DOM changes would force extra style passes. Without
 * requestAnimationFrame it paints at once.
 */
export function framePainter(paint: () => void, signal: AbortSignal): () => void {
  let pending = 0;
  signal.addEventListener("abort", () => {
    if (pending) cancelAnimationFrame(pending);
    pending = 0;
  });
  return () => {
    if (typeof requestAnimationFrame !== "function") {
      paint();
      return;
    }
    if (pending || signal.aborted) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      if (!signal.aborted) paint();
    });
  };
}

/** The canvas's context, cleared and scaled to CSS pixels; null without canvas support (tests without a backend). */
export function beginPaint(
  canvas: HTMLCanvasElement,
  size: CanvasSize,
  ratio: number,
): CanvasRenderingContext2D | null {
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, size.width, size.height);
  return ctx;
}

/** A 2px outline around a box, the mark of the hovered or keyboard-focused item. */
export function strokeMark(
  ctx: CanvasRenderingContext2D,
  ink: string,
  x: number,
  y: number,
  w: number,
  h: number,
): void {
  ctx.strokeStyle = ink;
  ctx.lineWidth = 2;
  ctx.strokeRect(x, y, w, h);
}

/** The mark of a pinned item: a dashed square in the accent colour, set apart from the hover mark. */
export function strokePin(
  ctx: CanvasRenderingContext2D,
  accent: string,
  x: number,
  y: number,
  w: number,
  h: number,
): void {
  ctx.save();
  ctx.strokeStyle = accent;
  ctx.lineWidth = 2;
  ctx.setLineDash([3, 2]);
  ctx.strokeRect(x, y, w, h);
  ctx.restore();
}

/** How a canvas picture finds and names its items. */
export interface CanvasItems extends KeyMoves {
  /** The item under the drawing coordinates (x, y), or -1. */
  hit: (x: number, y: number) => number;
  /** What an item stands for in the view's events. */
  target: (i: number) => Target;
  /** Called when the keyboard cursor lands on an item (to announce it, say). */
  onCursor?: (i: number) => void;
}

/** Reports the item under the pointer as it changes (pointermove fires per pixel), and none on leaving. */
function wireHover(
  canvas: HTMLCanvasElement,
  itemAt: (event: MouseEvent) => number,
  onHover: (i: number) => void,
  signal: AbortSignal,
): void {
  let hovered = -1;
  canvas.addEventListener(
    "pointermove",
    (event) => {
      const i = itemAt(event);
      if (i === hovered) return;
      hovered = i;
      onHover(i);
    },
    { signal },
  );
  canvas.addEventListener(
    "pointerleave",
    () => {
      hovered = -1;
      onHover(-1);
    },
    { signal },
  );
}

/**
 * Wires hover, click, focus and arrow keys on a canvas. Returns the keyboard
 * cursor (the last clicked or key-selected item, -1 before any) for drawing;
 * a picture whose items change sets it back to -1 when its item is gone.
 * `size` and `items` are read at each event: a picture may change them.
 */
export function wireCanvas(
  canvas: HTMLCanvasElement,
  size: CanvasSize,
  items: CanvasItems,
  events: PictureEvents,
  signal: AbortSignal,
): { cursor: number } {
  const state = { cursor: -1 };
  const itemAt = (event: MouseEvent): number => {
    const rect = canvas.getBoundingClientRect();
    const sx = rect.width > 0 ? size.width / rect.width : 1;
    const sy = rect.height > 0 ? size.height / rect.height : 1;
    return items.hit((event.clientX - rect.left) * sx, (event.clientY - rect.top) * sy);
  };
  const land = (i: number): void => {
    state.cursor = i;
    items.onCursor?.(i);
    events.onFocus(items.target(i));
  };
  wireHover(
    canvas,
    (event) => itemAt(event),
    (i) => events.onHover(i >= 0 ? items.target(i) : null),
    signal,
  );
  // A press focuses the canvas before its click lands: that focus is the pointer's, not the
  // keyboard's, so it must not report the cursor's old item (device 0 before any) as focused.
  let pressing = false;
  canvas.addEventListener(
    "pointerdown",
    () => {
      pressing = true;
    },
    { signal },
  );
  canvas.addEventListener(
    "click",
    (event) => {
      pressing = false;
      const i = itemAt(event);
      if (i < 0) return;
      // The clicked item becomes the focused one, as a click on a DOM cell focuses that cell.
      land(i);
      events.onActivate(items.target(i));
    },
    { signal },
  );
  canvas.addEventListener(
    "focus",
    () => {
      if (!pressing) land(Math.max(state.cursor, 0));
    },
    { signal },
  );
  canvas.addEventListener(
    "pointerup",
    () => {
      // The press is over (its focus has happened); the next focus without one is the keyboard's.
      pressing = false;
    },
    { signal },
  );
  canvas.addEventListener("blur", () => events.onFocus(null), { signal });
  navigateByKeys(canvas, signal, {
    from: () => Math.max(state.cursor, 0),
    move: items.move,
    go: land,
    activate: (i) => events.onActivate(items.target(i)),
  });
  return state;
}
