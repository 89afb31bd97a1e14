/**
 * Widths of text as the page lays it out, measured on one offscreen canvas
 * (the same fonts and shaping as the DOM's) and cached by font and text.
 * The array map fits its tiles' labels with them before the tiles are laid
 * out, so a new map costs one style and layout pass, not two; the canvas
 * grid draws the ids that fit their squares.
 */

/** The measuring context, once a canvas gives one (none is kept while none is given: tests without canvas). */
let context: CanvasRenderingContext2D | null = null;
const widths = new Map<string, number>();
/** Texts kept: enough for several maps' labels; past it the cache starts again. */
const CACHE_LIMIT = 4096;

/** The width of `text` set in `font` (a CSS font shorthand), in CSS pixels; null without canvas support. */
export function textWidth(font: string, text: string): number | null {
  context ??= typeof document === "undefined" ? null : document.createElement("canvas").getContext("2d");
  if (!context) return null;
  const key = `${font}\n${text}`;
  let width = widths.get(key);
  if (width === undefined) {
    context.font = font;
    // Layout rounds a text's width up to its unit of 1/64 px: so does this.
    width = Math.ceil(context.measureText(text).width * 64) / 64;
    if (widths.size >= CACHE_LIMIT) widths.clear();
    widths.set(key, width);
  }
  return width;
}
