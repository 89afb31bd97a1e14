/**
 * Where each device of the mesh goes on screen: pure arithmetic shared by
 * the DOM grid, the canvas grid and keyboard navigation.
 *
 * The innermost mesh axis runs across (columns), the next one down (rows);
 * further-out axes nest the grid into labelled blocks, alternating between
 * spreading blocks across and down.
 */

import { ravel, unravel } from "../payload/array";

export type Direction = "left" | "right" | "up" | "down";

/** Indices of the mesh axes that run across (`columns`) and down (`rows`), outermost first. */
export function axisRoles(rank: number): { columns: number[]; rows: number[] } {
  const columns: number[] = [];
  const rows: number[] = [];
  for (let axis = rank - 1, depth = 0; axis >= 0; axis--, depth++) {
    (depth % 2 === 0 ? columns : rows).unshift(axis);
  }
  return { columns, rows };
}

/**
 * The device reached from mesh position `k` by an arrow key: a step along
 * the column axes (innermost first, carrying outwards, so moving right off
 * a block enters the next block) or the row axes. Returns `k` at the edge.
 */
export function neighbour(k: number, sizes: readonly number[], direction: Direction): number {
  if (sizes.length === 0) return k;
  const { columns, rows } = axisRoles(sizes.length);
  const axes = direction === "left" || direction === "right" ? columns : rows;
  const delta = direction === "right" || direction === "down" ? 1 : -1;
  const coords = unravel(k, sizes);
  for (let i = axes.length - 1; i >= 0; i--) {
    const axis = axes[i];
    const next = coords[axis] + delta;
    if (next >= 0 && next < sizes[axis]) {
      coords[axis] = next;
      return ravel(coords, sizes);
    }
    coords[axis] = delta > 0 ? 0 : sizes[axis] - 1;
  }
  return k;
}

/** The rows and columns of the innermost grid: the two innermost axes (one row for a 1-axis mesh). */
export function leafShape(sizes: readonly number[]): { rows: number; cols: number } {
  const rank = sizes.length;
  return { rows: rank >= 2 ? sizes[rank - 2] : 1, cols: rank >= 1 ? sizes[rank - 1] : 1 };
}

/**
 * Where each DOM cell goes: the cells of mesh position k sit in leaf grid
 * floor(k / (rows * cols)) (the outer coordinates, in mesh order), at their
 * row and column `pitch` apart from that grid's first slot. `slotOrigins`
 * holds each leaf's first slot, x at 2L and y at 2L + 1; so does the result
 * for each k.
 */
export function domCellOrigins(sizes: readonly number[], slotOrigins: ArrayLike<number>, pitch: number): Float32Array {
  const { rows, cols } = leafShape(sizes);
  const inner = rows * cols;
  const count = sizes.reduce((a, b) => a * b, 1);
  const origins = new Float32Array(2 * count);
  for (let k = 0; k < count; k++) {
    const leaf = Math.floor(k / inner);
    const i = k % inner;
    origins[2 * k] = slotOrigins[2 * leaf] + (i % cols) * pitch;
    origins[2 * k + 1] = slotOrigins[2 * leaf + 1] + Math.floor(i / cols) * pitch;
  }
  return origins;
}

/** A text label drawn on the canvas grid. */
export interface CanvasLabel {
  text: string;
  x: number;
  y: number;
  axisIndex: number;
  /** Vertical text reads top to bottom down the left edge, from (x, y). */
  vertical?: boolean;
}

/** Pixel placement of every device for the canvas grid (CSS pixels). */
export interface CanvasGeometry {
  width: number;
  height: number;
  cell: number;
  /** Top-left corner of the cell of mesh position k: x at 2k, y at 2k + 1. */
  origins: Float32Array;
  labels: CanvasLabel[];
  /** Coloured bars marking which axis runs along which edge. */
  bars: { x: number; y: number; w: number; h: number; axisIndex: number }[];
}

const CAPTION = 14;
const EDGE = 18;
/** The left margin: room for the rotated row-axis title and its bar, clear of the cells and captions. */
const LEFT = 28;

interface Box {
  w: number;
  h: number;
  /** Places the block at (x, y) for the given coordinate prefix, filling origins. */
  place: (x: number, y: number, coords: number[]) => void;
}

/**
 * Lays out a large mesh compactly: the two innermost axes form a block of
 * cells, each outer axis arranges copies of the inner block in a near-square
 * grid, each copy captioned `name=i`.
 */
export function canvasGeometry(sizes: readonly number[], names: readonly string[], targetWidth = 640): CanvasGeometry {
  const count = sizes.reduce((a, b) => a * b, 1);
  const pitch = Math.max(6, Math.min(24, Math.floor(targetWidth / Math.sqrt(Math.max(count, 1)))));
  const gap = pitch >= 10 ? 1 : 0.5;
  const cell = pitch - gap;
  const origins = new Float32Array(count * 2);
  const labels: CanvasLabel[] = [];
  const rank = sizes.length;

  const leaf = (): Box => {
    // One axis: wrap long rows into a near-square block; two: rows x columns.
    const colAxis = rank - 1;
    const rowAxis = rank - 2;
    const colCount = rank === 0 ? 1 : rank === 1 ? Math.min(sizes[0], Math.ceil(Math.sqrt(sizes[0]))) : sizes[colAxis];
    const rowCount = rank === 0 ? 1 : rank === 1 ? Math.ceil(sizes[0] / colCount) : sizes[rowAxis];
    return {
      w: colCount * pitch,
      h: rowCount * pitch,
      place: (x, y, coords) => {
        const inner = rank === 0 ? 1 : rank === 1 ? sizes[0] : sizes[rowAxis] * sizes[colAxis];
        for (let i = 0; i < inner; i++) {
          const row = Math.floor(i / colCount);
          const col = i % colCount;
          const full = rank === 0 ? [] : rank === 1 ? [i] : [...coords, row, col];
          const k = ravel(full, sizes);
          origins[2 * k] = x + col * pitch;
          origins[2 * k + 1] = y + row * pitch;
        }
      },
    };
  };

  const level = (axis: number): Box => {
    if (axis >= rank - 2) return leaf();
    const child = level(axis + 1);
    const n = sizes[axis];
    const spacing = Math.max(4, pitch);
    // Rounded down: the grid leans tall rather than wide, leaving the map and the inspector
    // their room beside it (eight 8x8 blocks go two across, as the DOM grid wraps them).
    const across = Math.max(1, Math.min(n, Math.floor(Math.sqrt((n * child.h) / Math.max(child.w, 1)))));
    const down = Math.ceil(n / across);
    const blockW = child.w;
    const blockH = child.h + CAPTION;
    return {
      w: across * blockW + (across - 1) * spacing,
      h: down * blockH + (down - 1) * spacing,
      place: (x, y, coords) => {
        for (let i = 0; i < n; i++) {
          const bx = x + (i % across) * (blockW + spacing);
          const by = y + Math.floor(i / across) * (blockH + spacing);
          labels.push({ text: `${names[axis]}=${i}`, x: bx, y: by + CAPTION - 4, axisIndex: axis });
          child.place(bx, by + CAPTION, [...coords, i]);
        }
      },
    };
  };

  const root = level(0);
  root.place(LEFT, EDGE, []);
  const bars: CanvasGeometry["bars"] = [];
  // Edge legend: which axis runs across and which runs down inside a block.
  if (rank >= 1) {
    const colAxis = rank - 1;
    labels.push({ text: `${names[colAxis]} (${sizes[colAxis]}) \u2192`, x: LEFT, y: EDGE - 6, axisIndex: colAxis });
    bars.push({ x: LEFT, y: EDGE - 3, w: Math.min(root.w, 160), h: 2, axisIndex: colAxis });
  }
  if (rank >= 2) {
    const rowAxis = rank - 2;
    // Past two axes the first block starts with its caption: the title starts level with its cells.
    const top = rank > 2 ? CAPTION : 0;
    labels.push({
      text: `${names[rowAxis]} (${sizes[rowAxis]}) \u2192`,
      x: 6,
      y: EDGE + top,
      axisIndex: rowAxis,
      vertical: true,
    });
    bars.push({ x: LEFT - 6, y: EDGE + top, w: 2, h: Math.min(root.h, 160), axisIndex: rowAxis });
  }
  return { width: root.w + LEFT + 4, height: root.h + EDGE + 4, cell, origins, labels, bars };
}

/** Mesh position of the cell under (x, y), or -1. */
export function hitTest(geometry: CanvasGeometry, x: number, y: number): number {
  const { origins, cell } = geometry;
  for (let k = 0; k < origins.length / 2; k++) {
    const ox = origins[2 * k];
    const oy = origins[2 * k + 1];
    if (x >= ox && x < ox + cell && y >= oy && y < oy + cell) return k;
  }
  return -1;
}
