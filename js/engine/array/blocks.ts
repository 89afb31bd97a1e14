/**
 * Index arithmetic: which block of the array each device holds, from the
 * mesh order and the spec (a port of `mesh_order_blocks` in
 * src/shardviz/engine/blocks.py, which the Python tests prove equal to JAX's
 * `devices_indices_map` and replica ids).
 */

/** Blocks as a grid of cut points, and per-device columns in mesh order. */
export interface BlockAssignment {
  /** Cut points of each dimension, `0 .. shape[d]`. */
  bounds: number[][];
  /** Tile held by the k-th device in mesh order (tiles row-major over the grid). */
  tile: Int32Array;
  /** Replica id of that copy. */
  replica: Int32Array;
}

/**
 * A dimension split over axes `(a, b)` is cut `size(a) * size(b)` times,
 * `a` major: a device's block along it is the mixed-radix number of its
 * `(a, b)` coordinates. Devices that differ only along unused axes hold the
 * same block; JAX numbers those copies by the mixed-radix number over the
 * unused axes, in mesh order.
 */
export function meshOrderBlocks(
  axisSizes: readonly number[],
  axisNames: readonly string[],
  spec: readonly (readonly string[])[],
  shape: readonly number[],
): BlockAssignment {
  const deviceCount = axisSizes.reduce((a, b) => a * b, 1);
  const position = new Map<string, number>(axisNames.map((name, i) => [name, i]));
  // The stride of each axis in mesh order: coordinate i of device k is floor(k / stride) % size.
  const strides = new Array<number>(axisSizes.length);
  let stride = 1;
  for (let i = axisSizes.length - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= axisSizes[i];
  }
  const coordinate = (k: number, i: number): number => Math.floor(k / strides[i]) % axisSizes[i];

  const used = new Set<number>();
  const axesPerDim: number[][] = [];
  const cutsPerDim: number[] = [];
  spec.forEach((axes, d) => {
    // Every block of an empty dimension is the same empty range: its axes replicate (JAX counts those copies).
    const split = shape[d] ? axes.map((name) => position.get(name) as number) : [];
    for (const i of split) used.add(i);
    axesPerDim.push(split);
    cutsPerDim.push(split.reduce((product, i) => product * axisSizes[i], 1));
  });
  const unused = axisSizes.map((_, i) => i).filter((i) => !used.has(i));

  const tile = new Int32Array(deviceCount);
  const replica = new Int32Array(deviceCount);
  for (let k = 0; k < deviceCount; k++) {
    let t = 0;
    for (let d = 0; d < axesPerDim.length; d++) {
      let block = 0;
      for (const i of axesPerDim[d]) block = block * axisSizes[i] + coordinate(k, i);
      t = t * cutsPerDim[d] + block;
    }
    tile[k] = t;
    let r = 0;
    for (const i of unused) r = r * axisSizes[i] + coordinate(k, i);
    replica[k] = r;
  }

  const bounds = shape.map((extent, d) => {
    const cuts = cutsPerDim[d];
    const step = Math.floor(extent / cuts);
    return Array.from({ length: cuts + 1 }, (_, i) => i * step);
  });
  return { bounds, tile, replica };
}
