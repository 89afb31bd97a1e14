/**
 * Colour choice, kept apart from index arithmetic and drawing.
 *
 * Colours only ever help: every cell and tile also carries a text label, so
 * nothing is told by colour alone. A tile's colour depends on its index and
 * nothing else, so it survives edits that keep the tile grid (a memory kind
 * change, a re-render) and the first tiles keep their colours as more appear.
 */

/**
 * Paul Tol's "light" qualitative scheme (minus its grey, which reads as
 * "empty"): designed for black labels on the fill and to stay apart under
 * the common colour-vision deficiencies.
 */
const TILE_BASE = ["#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33", "#AAAA00"];

/** Paul Tol's "bright" scheme, for mesh axes: used as marks (bars, underlines), never as text colour. */
const AXIS_BASE = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377"];

const GOLDEN_ANGLE = 137.508;

/** Generated colours, computed once each (a 4096-tile redraw asks for thousands). */
const generated: string[] = [];

/** Fill colour of tile `t`, as `#rrggbb`. */
export function tileColor(t: number): string {
  if (t < TILE_BASE.length) return TILE_BASE[t];
  let colour = generated[t];
  if (colour === undefined) {
    colour = generateTileColor(t);
    generated[t] = colour;
  }
  return colour;
}

function generateTileColor(t: number): string {
  // Past the base set: hues a golden angle apart (never repeating), with
  // lightness stepping through three levels so that neighbours differ in
  // lightness too, which survives every kind of colour blindness.
  const k = t - TILE_BASE.length;
  const lightness = [0.84, 0.74, 0.92][k % 3];
  return oklchToHex(lightness, 0.11, (20 + k * GOLDEN_ANGLE) % 360);
}

/** Mark colour of mesh axis `i` (by position in the mesh). */
export function axisColor(i: number): string {
  if (i < AXIS_BASE.length) return AXIS_BASE[i];
  return oklchToHex(0.62, 0.14, (200 + (i - AXIS_BASE.length) * GOLDEN_ANGLE) % 360);
}

/** Converts OKLCH to an sRGB hex string, pulling chroma in until the colour fits the gamut. */
export function oklchToHex(lightness: number, chroma: number, hueDegrees: number): string {
  const h = (hueDegrees * Math.PI) / 180;
  for (let c = chroma; c >= 0; c -= 0.005) {
    const rgb = oklabToLinearSrgb(lightness, c * Math.cos(h), c * Math.sin(h));
    if (rgb.every((v) => v >= -1e-4 && v <= 1 + 1e-4)) return toHex(rgb);
  }
  return toHex(oklabToLinearSrgb(lightness, 0, 0));
}

/** Björn Ottosson's OKLab -> linear sRGB transform. */
function oklabToLinearSrgb(L: number, a: number, b: number): [number, number, number] {
  const l = (L + 0.3963377774 * a + 0.2158037573 * b) ** 3;
  const m = (L - 0.1055613458 * a - 0.0638541728 * b) ** 3;
  const s = (L - 0.0894841775 * a - 1.291485548 * b) ** 3;
  return [
    4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
    -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
    -0.0041960863 * l - 0.7034186147 * m + 1.707614701 * s,
  ];
}

function toHex(linear: readonly number[]): string {
  const channel = (v: number): string => {
    const x = Math.min(1, Math.max(0, v));
    const encoded = x <= 0.0031308 ? 12.92 * x : 1.055 * x ** (1 / 2.4) - 0.055;
    return Math.round(encoded * 255)
      .toString(16)
      .padStart(2, "0");
  };
  return `#${linear.map(channel).join("")}`;
}

/** WCAG relative luminance of a `#rrggbb` colour (used to pick label ink). */
export function relativeLuminance(hex: string): number {
  const lin = [1, 3, 5].map((i) => {
    const v = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}

/**
 * Fill colour of step `i` of `count` ordered steps (block i of a dimension
 * split into `count`): a sequential ramp from pale yellow through green to
 * blue whose lightness falls steadily, so order reads in any colour vision,
 * and which stays light enough for the dark label ink everywhere.
 */
export function rampColor(i: number, count: number): string {
  const f = count > 1 ? Math.min(1, Math.max(0, i / (count - 1))) : 0;
  return oklchToHex(0.95 - 0.3 * f, 0.08 + 0.04 * f, 100 + 165 * f);
}

/**
 * Fill of block `i` of `count` in a structural colouring: the ramp's
 * lightness (so order, and the major axes' big steps, read as before), with
 * every other block more saturated and turned in hue. Past eight blocks
 * neighbours on the ramp are too close to tell apart (1/255 of it at 256);
 * the alternation keeps any two adjacent blocks visibly different without
 * changing how light they are.
 */
export function structureColor(i: number, count: number): string {
  if (count <= 8) return rampColor(i, count);
  const even = rampColor(i, count);
  if (i % 2 === 0) return even;
  const f = Math.min(1, Math.max(0, i / (count - 1)));
  const chroma = 0.125 + 0.04 * f;
  const hue = 122 + 165 * f;
  // The lightness that gives the ramp's own luminance at this chroma and hue (bisection).
  const target = relativeLuminance(even);
  let low = 0.5;
  let high = 1;
  for (let step = 0; step < 14; step++) {
    const mid = (low + high) / 2;
    if (relativeLuminance(oklchToHex(mid, chroma, hue)) < target) low = mid;
    else high = mid;
  }
  return oklchToHex((low + high) / 2, chroma, hue);
}
