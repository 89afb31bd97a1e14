/**
 * The array payload Python sends (docs/payload.md, version 3) and the index
 * arithmetic needed to read it. Nothing here touches the DOM or picks colours.
 */

export const PAYLOAD_VERSION = 3;

/** A run `[start, step, count]` stands for `start, start + step, ...` (`count` values). */
export type Run = [start: number, step: number, count: number];

export type AxisType = "Auto" | "Explicit" | "Manual";

export interface MeshInfo {
  names: string[];
  sizes: number[];
  types: AxisType[];
  abstract: boolean;
}

export interface DeviceKind {
  platform: string;
  device_kind: string;
}

/** Per-device columns in mesh order, each run-encoded. */
export interface DeviceColumns {
  count: number;
  id: Run[];
  tile: Run[];
  replica: Run[];
  process: Run[];
  addressable: Run[];
  kind: Run[];
  /** Virtual devices of an AbstractMesh: numbered, not real. */
  virtual: boolean;
  /** The ids are the machine's first devices in jax.devices() order. */
  machine_order: boolean;
  /** Physical attributes, present only where the devices have them (TPUs). */
  coords?: Run[][];
  core_on_chip?: Run[];
  slice_index?: Run[];
}

/** The device columns a layout's mesh has before any array is on it (tree and program payloads carry these). */
export type DeviceColumnRuns = Omit<DeviceColumns, "tile" | "replica">;

export interface Payload {
  kind: "array";
  version: 3;
  type_str: string;
  dtype: string;
  shape: number[];
  itemsize: number;
  spec: string[][];
  shard_shape: number[];
  shard_bytes: number;
  memory_kind: string;
  memory_kinds: string[];
  mesh: MeshInfo | null;
  /** Cut points per dimension, run-encoded like the device columns. */
  tiles: { bounds: Run[][] };
  devices: DeviceColumns;
  kinds: DeviceKind[];
  process_index: number;
  process_count: number;
  /** jax.device_count() where the payload was made. */
  machine_devices: number;
  sharding: string;
  spec_text: string;
  mesh_text: string;
  /** The user's variable name for the array, used in `code`; null when unknown. */
  array_name: string | null;
  code: string;
  has_array: boolean;
  /**
   * The spec the user set, one list of axes per dimension, where a mesh edit
   * cut `spec` from it (absent otherwise): the next mesh edit starts from it.
   */
  user_spec?: string[][];
}

/** The preview answer Python sends back as a custom message. */
export type PreviewReply =
  | {
      kind: "preview";
      device: number;
      values: (number | string | boolean | null)[][];
      row_start: number;
      col_start: number;
      rows: number;
      cols: number;
      index: [number, number][];
    }
  | { kind: "preview"; device: number; error: string };

/** Number of values a run-encoded column stands for. */
function runLength(runs: readonly Run[]): number {
  let total = 0;
  for (const run of runs) total += run[2];
  return total;
}

/** Writes the values of `runs` into `out` (an array of at least their length). */
function fillRuns(runs: readonly Run[], out: { [i: number]: number }): void {
  let at = 0;
  for (const [start, step, count] of runs) {
    for (let i = 0; i < count; i++) out[at++] = start + i * step;
  }
}

/** Expands a run-encoded device column into one integer per device. */
export function expandRuns(runs: readonly Run[], expectedCount?: number): Int32Array {
  const total = runLength(runs);
  if (expectedCount !== undefined && total !== expectedCount) {
    throw new PayloadError(`a device column holds ${total} values, expected ${expectedCount}`);
  }
  const out = new Int32Array(total);
  fillRuns(runs, out);
  return out;
}

/** Expands run-encoded cut points as plain numbers: an extent may pass 2^31. */
export function expandCuts(runs: readonly Run[]): number[] {
  const out = new Array<number>(runLength(runs));
  fillRuns(runs, out);
  return out;
}

/** Row-major unravel of a flat index over `sizes` (an empty `sizes` gives `[]`). */
export function unravel(flat: number, sizes: readonly number[]): number[] {
  const coords = new Array<number>(sizes.length);
  let rest = flat;
  for (let d = sizes.length - 1; d >= 0; d--) {
    coords[d] = rest % sizes[d];
    rest = Math.floor(rest / sizes[d]);
  }
  return coords;
}

/** Row-major ravel, the inverse of {@link unravel}. */
export function ravel(coords: readonly number[], sizes: readonly number[]): number {
  let flat = 0;
  for (let d = 0; d < sizes.length; d++) flat = flat * sizes[d] + coords[d];
  return flat;
}

/** Mesh coordinates of the device at mesh-order position `k`. */
export function meshCoords(k: number, mesh: MeshInfo | null): number[] {
  return mesh ? unravel(k, mesh.sizes) : [];
}

/** Number of intervals the tile grid cuts each dimension into. */
export function tileCounts(bounds: readonly (readonly number[])[]): number[] {
  return bounds.map((cuts) => cuts.length - 1);
}

/** A half-open interval `[start, stop)` of one array dimension. */
export type Interval = [start: number, stop: number];

/** The per-dimension intervals tile `t` spans (empty for a scalar). */
export function tileIntervals(t: number, bounds: readonly (readonly number[])[]): Interval[] {
  const cell = unravel(t, tileCounts(bounds));
  return cell.map((i, d) => [bounds[d][i], bounds[d][i + 1]]);
}

export class PayloadError extends Error {
  override name = "PayloadError";
}

/** Everything the drawing code needs, decoded once per payload. */
export interface Layout {
  payload: Payload;
  deviceCount: number;
  /** Columns indexed by mesh-order position. */
  ids: Int32Array;
  tileOf: Int32Array;
  replica: Int32Array;
  process: Int32Array;
  addressable: Int32Array;
  kind: Int32Array;
  /** Mesh sizes, `[]` when there is no mesh (a single device). */
  meshSizes: number[];
  /** Cut points of each dimension, from 0 to its extent (decoded `tiles.bounds`). */
  bounds: number[][];
  tileCounts: number[];
  tileCount: number;
  /** Mesh-order positions of the devices holding each tile. */
  holders: number[][];
  /** Mesh-order position of each device id. */
  positionOfId: Map<number, number>;
  /** Physical attributes by mesh-order position, where the devices have them (TPUs). */
  physical: PhysicalColumns;
}

/** Decoded physical device columns; each is null where the payload has none. */
export interface PhysicalColumns {
  /** One column per coordinate dimension. */
  coords: Int32Array[] | null;
  coreOnChip: Int32Array | null;
  sliceIndex: Int32Array | null;
}

/** Checks the shape of a payload and decodes its run-encoded columns. */
export function decodePayload(payload: Payload): Layout {
  if (payload.version !== PAYLOAD_VERSION) {
    throw new PayloadError(`this front end reads payload version ${PAYLOAD_VERSION}, got ${String(payload.version)}`);
  }
  const { devices, tiles } = payload;
  const n = devices.count;
  const ids = expandRuns(devices.id, n);
  const tileOf = expandRuns(devices.tile, n);
  const bounds = tiles.bounds.map(expandCuts);
  const counts = tileCounts(bounds);
  const tileCount = counts.reduce((a, b) => a * b, 1);
  const meshSizes = payload.mesh ? payload.mesh.sizes : [];
  const meshSize = meshSizes.reduce((a, b) => a * b, 1);
  if (meshSize !== n) {
    throw new PayloadError(`the mesh holds ${meshSize} devices but the payload lists ${n}`);
  }
  const holders: number[][] = Array.from({ length: tileCount }, () => []);
  const positionOfId = new Map<number, number>();
  for (let k = 0; k < n; k++) {
    const t = tileOf[k];
    if (t < 0 || t >= tileCount) throw new PayloadError(`device ${ids[k]} holds tile ${t}, out of range`);
    holders[t].push(k);
    positionOfId.set(ids[k], k);
  }
  return {
    payload,
    deviceCount: n,
    ids,
    tileOf,
    replica: expandRuns(devices.replica, n),
    process: expandRuns(devices.process, n),
    addressable: expandRuns(devices.addressable, n),
    kind: expandRuns(devices.kind, n),
    meshSizes,
    bounds,
    tileCounts: counts,
    tileCount,
    holders,
    positionOfId,
    physical: {
      coords: devices.coords ? devices.coords.map((column) => expandRuns(column, n)) : null,
      coreOnChip: devices.core_on_chip ? expandRuns(devices.core_on_chip, n) : null,
      sliceIndex: devices.slice_index ? expandRuns(devices.slice_index, n) : null,
    },
  };
}

/** True for an object that claims to be a shardviz payload (the trait starts as `{}`). */
export function isPayload(value: unknown): value is Payload {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "array";
}
