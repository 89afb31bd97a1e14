/**
 * The tree payload Python sends for a whole pytree (docs/tree-payload.md,
 * version 1) and the index arithmetic to read it: dotted paths from the
 * prefix-shared encoding, type strings from a group's pieces, bytes per
 * device per memory kind, and which devices hold which leaf. Nothing here
 * touches the DOM or picks colours.
 */

import type { DeviceKind, MeshInfo, Run } from "./array";
import { expandCuts, expandRuns, PayloadError } from "./array";

export const TREE_PAYLOAD_VERSION = 1;

/** A mesh some leaves live on; `devices` places its k-th device (mesh order) in the device columns. */
export interface TreeMeshInfo extends MeshInfo {
  devices: Run[];
  /** Memory kinds every device of the mesh addresses (what a leaf's own layout lists). */
  memory_kinds?: string[];
  /** The mesh's devices are the machine's first ones in order (for a leaf's copy code). */
  machine_order?: boolean;
  /** Physical attributes in this mesh's order, present only where the devices have them (TPUs). */
  coords?: Run[][];
  core_on_chip?: Run[];
  slice_index?: Run[];
}

/** What leaves with one sharding, dtype and rank share. */
export interface TreeGroup {
  dtype: string;
  itemsize: number;
  spec: string[][];
  /** Blocks per dimension: a leaf's shard shape is `shape[d] / divisors[d]`. */
  divisors: number[];
  memory_kind: string;
  sharding: string;
  mesh: number | null;
  /** Only without a mesh: the places, in the device columns, of the devices holding a shard. */
  devices?: Run[];
  replicated: string[];
  replication: number;
  /** The type string cut at its dimension sizes; `[]` when the leaves carry their own. */
  type: string[];
  array: boolean;
}

export interface TreeLeafColumns {
  count: number;
  /** `[k, ...segments]`: the first k segments are the previous leaf's. */
  path: (number | string)[][];
  group: number[];
  shape: number[][];
  bytes: number[];
  other: [number, string][];
  type: [number, string][];
  /** Only where Flax named a leaf's axes: `[leaf, [name or null per dimension], text]`. */
  logical?: [number, (string | null)[], string][];
}

export interface ReplicatedFinding {
  leaf: number;
  axis: string;
  dim: number;
  saving: number;
  message: string;
}

export interface TreeImbalance {
  max_bytes: number;
  min_bytes: number;
  max_devices: number[];
  min_devices: number[];
  leaves: number[];
  message: string;
}

export interface TreeAudit {
  largest: number[];
  replicated: ReplicatedFinding[];
  replicated_count: number;
  replicated_saving: Record<string, number>;
  imbalance: TreeImbalance | null;
}

export interface TreePayload {
  kind: "tree";
  version: 1;
  process_index: number;
  process_count: number;
  /** jax.device_count() where the payload was made (for a leaf's copy code). */
  machine_devices?: number;
  meshes: TreeMeshInfo[];
  devices: { count: number; id: Run[]; process: Run[]; addressable: Run[]; kind: Run[] };
  kinds: DeviceKind[];
  /** Per memory kind, the bytes each device holds, in the order of `devices`. */
  device_bytes: Record<string, Run[]>;
  total_bytes: number;
  replicated_bytes: Record<string, number>;
  groups: TreeGroup[];
  leaves: TreeLeafColumns;
  audit: TreeAudit;
  /** The widget adds the rules in force and the Python that applies them. */
  rules_text?: string;
  code?: string;
  /** The name the copy code reads the tree from (`TREE` when unknown), for a rules edit answered in the browser. */
  code_tree?: string;
}

/** A tree payload decoded once: per-leaf and per-device columns ready for drawing and lookups. */
export interface Tree {
  payload: TreePayload;
  leafCount: number;
  /** Dotted paths (`layers.0.w`), in flatten order. */
  paths: string[];
  /** Group of each leaf, -1 for a leaf that is not an array. */
  group: Int32Array;
  /** Bytes each holding device holds of each leaf (may pass 2^31). */
  bytes: Float64Array;
  arrayCount: number;
  deviceCount: number;
  /** Device columns, by place (the first mesh's devices in mesh order, then the others by id). */
  ids: Int32Array;
  process: Int32Array;
  addressable: Int32Array;
  kind: Int32Array;
  positionOfId: Map<number, number>;
  /** Memory kinds some leaf uses, in payload order, and each one's bytes per device. */
  memoryKinds: string[];
  deviceBytes: Map<string, Float64Array>;
  /** Bytes per device, every memory kind together. */
  deviceTotals: Float64Array;
  /** Per mesh, the place of its k-th device in the device columns. */
  meshPositions: Int32Array[];
  /** Per group, the places of the devices holding its leaves' shards. */
  groupPositions: Int32Array[];
  otherTypes: Map<number, string>;
  typeOverrides: Map<number, string>;
  /** Leaf -> the logical axis names Flax put on its dimensions. */
  logical: Map<number, (string | null)[]>;
}

const product = (values: readonly number[]): number => values.reduce((a, b) => a * b, 1);

/** True for an object that claims to be a tree payload. */
export function isTreePayload(value: unknown): value is TreePayload {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "tree";
}

/** Each leaf's path segments (dict keys, indices, attribute names) from the prefix-shared encoding. */
export function decodePathSegments(encoded: readonly (readonly (number | string)[])[]): string[][] {
  const out = new Array<string[]>(encoded.length);
  let previous: string[] = [];
  for (let i = 0; i < encoded.length; i++) {
    const entry = encoded[i];
    const keep = entry[0];
    if (typeof keep !== "number" || keep < 0 || keep > previous.length) {
      throw new PayloadError(`leaf ${i}'s path keeps ${String(keep)} segments of a path of ${previous.length}`);
    }
    const segments = previous.slice(0, keep);
    for (let s = 1; s < entry.length; s++) segments.push(String(entry[s]));
    out[i] = segments;
    previous = segments;
  }
  return out;
}

/** Dotted paths from the prefix-shared encoding; a segment with a dot in it stays one segment. */
export function decodePaths(encoded: readonly (readonly (number | string)[])[]): string[] {
  return decodePathSegments(encoded).map((segments) => segments.join("."));
}

function checkLength(what: string, length: number, expected: number): void {
  if (length !== expected) throw new PayloadError(`${what} holds ${length} entries, expected ${expected}`);
}

function positionsOf(runs: readonly Run[], what: string, deviceCount: number, expected?: number): Int32Array {
  const positions = expandRuns(runs, expected);
  for (const p of positions) {
    if (p < 0 || p >= deviceCount) throw new PayloadError(`${what} names device place ${p}, out of range`);
  }
  return positions;
}

/** True when two encoded path columns are the same (a rules edit keeps every path). */
function samePathColumn(a: TreeLeafColumns["path"], b: TreeLeafColumns["path"]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.length !== y.length) return false;
    for (let k = 0; k < x.length; k++) if (x[k] !== y[k]) return false;
  }
  return true;
}

/**
 * Checks the shape of a tree payload and decodes its columns. Given the tree
 * drawn before, it keeps that tree's path strings when the paths did not
 * change (comparing the encoded column costs less than building a string per
 * leaf, and lets the table tell at once that the leaves are the same).
 */
export function decodeTreePayload(payload: TreePayload, previous?: Tree | null): Tree {
  if (payload.version !== TREE_PAYLOAD_VERSION) {
    throw new PayloadError(
      `this front end reads tree payload version ${TREE_PAYLOAD_VERSION}, got ${String(payload.version)}`,
    );
  }
  const { leaves, devices, groups } = payload;
  const n = leaves.count;
  checkLength("the leaves' path column", leaves.path.length, n);
  checkLength("the leaves' group column", leaves.group.length, n);
  checkLength("the leaves' shape column", leaves.shape.length, n);
  checkLength("the leaves' bytes column", leaves.bytes.length, n);
  const group = Int32Array.from(leaves.group);
  let arrayCount = 0;
  for (let i = 0; i < n; i++) {
    const g = group[i];
    if (g < -1 || g >= groups.length) throw new PayloadError(`leaf ${i} is in group ${g}, out of range`);
    if (g >= 0) {
      arrayCount++;
      checkLength(`leaf ${i}'s shape`, leaves.shape[i].length, groups[g].divisors.length);
    }
  }
  const count = devices.count;
  const ids = expandRuns(devices.id, count);
  const positionOfId = new Map<number, number>();
  for (let p = 0; p < count; p++) positionOfId.set(ids[p], p);
  const memoryKinds = Object.keys(payload.device_bytes);
  const deviceBytes = new Map<string, Float64Array>();
  const deviceTotals = new Float64Array(count);
  for (const kind of memoryKinds) {
    const values = expandCuts(payload.device_bytes[kind]);
    checkLength(`the ${kind} bytes column`, values.length, count);
    const column = Float64Array.from(values);
    for (let p = 0; p < count; p++) deviceTotals[p] += column[p];
    deviceBytes.set(kind, column);
  }
  const meshPositions = payload.meshes.map((mesh, m) =>
    positionsOf(mesh.devices, `mesh ${m}`, count, product(mesh.sizes)),
  );
  const groupPositions = groups.map((g, k) => {
    if (g.mesh !== null) {
      const positions = meshPositions[g.mesh];
      if (!positions) throw new PayloadError(`group ${k} is on mesh ${g.mesh}, out of range`);
      return positions;
    }
    return positionsOf(g.devices ?? [], `group ${k}`, count);
  });
  return {
    payload,
    leafCount: n,
    paths:
      previous && samePathColumn(previous.payload.leaves.path, leaves.path) ? previous.paths : decodePaths(leaves.path),
    group,
    bytes: Float64Array.from(leaves.bytes),
    arrayCount,
    deviceCount: count,
    ids,
    process: expandRuns(devices.process, count),
    addressable: expandRuns(devices.addressable, count),
    kind: expandRuns(devices.kind, count),
    positionOfId,
    memoryKinds,
    deviceBytes,
    deviceTotals,
    meshPositions,
    groupPositions,
    otherTypes: new Map(leaves.other),
    typeOverrides: new Map(leaves.type),
    logical: new Map((leaves.logical ?? []).map(([leaf, names]) => [leaf, names] as const)),
  };
}

/** `embed -> fsdp, mlp -> model`: leaf i's logical names beside the mesh axes its group splits them
 * over now (`-` where a dimension is replicated); "" for a leaf Flax named nothing on. */
export function leafLogical(tree: Tree, i: number): string {
  const names = tree.logical.get(i);
  const g = tree.group[i];
  if (names === undefined || g < 0) return "";
  const spec = tree.payload.groups[g].spec;
  return names
    .map((name, d) => (name === null ? null : `${name} -> ${(spec[d] ?? []).join("+") || "-"}`))
    .filter((part): part is string => part !== null)
    .join(", ");
}

/**
 * Leaf i's spec as JAX writes its group's NamedSharding `spec`, the way Python's
 * tree reads every sharding (no trailing None, a lone axis as a name):
 * `P(None, 'model')`, `P(('data', 'model'),)`, `P()` where nothing is split; ""
 * for a leaf with no mesh or no array. On an Auto mesh the type names no axis,
 * so this is the only place a leaf's sharding shows.
 */
export function leafSpec(tree: Tree, i: number): string {
  const g = tree.group[i];
  if (g < 0) return "";
  const group = tree.payload.groups[g];
  if (group.mesh === null || group.sharding !== "NamedSharding") return "";
  // Python's repr of a name: double quotes where the name holds a single quote and no double one.
  const quoted = (name: string) => {
    const escaped = name.replaceAll("\\", "\\\\");
    return name.includes("'") && !name.includes('"') ? `"${escaped}"` : `'${escaped.replaceAll("'", "\\'")}'`;
  };
  let used = group.spec.length;
  while (used > 0 && group.spec[used - 1].length === 0) used--;
  const entries = group.spec
    .slice(0, used)
    .map((axes) =>
      axes.length === 0 ? "None" : axes.length === 1 ? quoted(axes[0]) : `(${axes.map(quoted).join(", ")})`,
    );
  // Python writes a one-entry tuple with a trailing comma: P('data',).
  return `P(${entries.join(", ")}${entries.length === 1 ? "," : ""})`;
}

/** Leaf i's type: `str(jax.typeof(leaf))` for an array (from its group's pieces), its Python type otherwise. */
export function leafType(tree: Tree, i: number): string {
  const g = tree.group[i];
  if (g < 0) return tree.otherTypes.get(i) ?? "";
  const pieces = tree.payload.groups[g].type;
  if (pieces.length === 0) return tree.typeOverrides.get(i) ?? "";
  const shape = tree.payload.leaves.shape[i];
  let text = pieces[0];
  for (let d = 0; d < shape.length; d++) text += `${shape[d]}${pieces[d + 1]}`;
  return text;
}

/** The shape of one shard of leaf i (its own shape for a leaf that is not an array). */
export function leafShardShape(tree: Tree, i: number): number[] {
  const shape = tree.payload.leaves.shape[i];
  const g = tree.group[i];
  if (g < 0) return shape.slice();
  const { divisors } = tree.payload.groups[g];
  return shape.map((extent, d) => extent / divisors[d]);
}

/** The mesh axes of leaf i's mesh (for colouring `@axis` marks), `[]` without one. */
export function leafAxisNames(tree: Tree, i: number): string[] {
  const g = tree.group[i];
  const mesh = g < 0 ? null : tree.payload.groups[g].mesh;
  return mesh === null ? [] : tree.payload.meshes[mesh].names;
}

/** What one device holds: each leaf with a shard on it and the bytes of that shard. */
export interface Holding {
  leaf: number;
  bytes: number;
}

/** The leaves the device at place `position` holds, largest first (flatten order among equals). */
export function deviceHoldings(tree: Tree, position: number): Holding[] {
  const groups = tree.groupPositions.map((positions) => positions.includes(position));
  const out: Holding[] = [];
  for (let i = 0; i < tree.leafCount; i++) {
    const g = tree.group[i];
    if (g >= 0 && groups[g]) out.push({ leaf: i, bytes: tree.bytes[i] });
  }
  return out.sort((a, b) => b.bytes - a.bytes || a.leaf - b.leaf);
}
