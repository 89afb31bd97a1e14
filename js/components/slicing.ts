/**
 * Which two array dimensions the array map shows, and which slab of the
 * others. This is browser-only state: Python never sees it.
 */

import type { Layout, Payload } from "../payload/array";
import { ravel } from "../payload/array";

export interface SliceChoice {
  /** Dimension drawn down the map (null for rank < 2). */
  rowDim: number | null;
  /** Dimension drawn across the map (null for a scalar). */
  colDim: number | null;
  /** For every dimension, the interval index shown when it is not drawn. */
  steps: number[];
}

/**
 * The two dimensions a picture draws as rows and columns: the two most split
 * (most blocks; ties go to the later dimension, so an unsplit array shows its
 * last two), rows before columns in array order. The terminal picture's rule
 * (`picture_dims` in src/shardviz/text/ranges.py), so both show the same pair.
 */
export function defaultPictureDims(blockCounts: readonly number[]): { rowDim: number | null; colDim: number | null } {
  const rank = blockCounts.length;
  if (rank === 0) return { rowDim: null, colDim: null };
  if (rank === 1) return { rowDim: null, colDim: 0 };
  const ranked = Array.from({ length: rank }, (_, d) => d).sort((a, b) => blockCounts[b] - blockCounts[a] || b - a);
  const [row, col] = ranked.slice(0, 2).sort((a, b) => a - b);
  return { rowDim: row, colDim: col };
}

/** The map's first choice for a payload: the picture's dimensions, the first block of the others. */
export function defaultSlice(payload: Payload, blockCounts: readonly number[]): SliceChoice {
  const steps = new Array<number>(payload.shape.length).fill(0);
  return { ...defaultPictureDims(blockCounts), steps };
}

/** Keeps a previous choice where it still fits the payload, else starts afresh. */
export function reconcileSlice(
  previous: SliceChoice | null,
  payload: Payload,
  tileCounts: readonly number[],
): SliceChoice {
  const rank = payload.shape.length;
  if (!previous || previous.steps.length !== rank) return defaultSlice(payload, tileCounts);
  const steps = previous.steps.map((s, d) => Math.min(s, tileCounts[d] - 1));
  return { ...previous, steps };
}

/** A tile as the map shows it: its place in the 2-D grid of intervals. */
export interface VisibleTile {
  tile: number;
  row: number;
  col: number;
}

/** The tiles of the slab the choice selects, row-major over (rows, cols). */
export function visibleTiles(layout: Layout, choice: SliceChoice): VisibleTile[] {
  const counts = layout.tileCounts;
  const rows = choice.rowDim === null ? 1 : counts[choice.rowDim];
  const cols = choice.colDim === null ? 1 : counts[choice.colDim];
  const cell = choice.steps.slice();
  const out: VisibleTile[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      if (choice.rowDim !== null) cell[choice.rowDim] = r;
      if (choice.colDim !== null) cell[choice.colDim] = c;
      out.push({ tile: ravel(cell, counts), row: r, col: c });
    }
  }
  return out;
}

/** The dimensions not drawn, which get a stepper each. */
export function steppedDims(rank: number, choice: SliceChoice): number[] {
  return Array.from({ length: rank }, (_, d) => d).filter((d) => d !== choice.rowDim && d !== choice.colDim);
}

/** Picks a dimension for one side of the map, swapping sides if the other already shows it. */
export function chooseDim(choice: SliceChoice, side: "row" | "col", dim: number): SliceChoice {
  if (side === "row") {
    return { ...choice, rowDim: dim, colDim: choice.colDim === dim ? choice.rowDim : choice.colDim };
  }
  return { ...choice, colDim: dim, rowDim: choice.rowDim === dim ? choice.colDim : choice.rowDim };
}
