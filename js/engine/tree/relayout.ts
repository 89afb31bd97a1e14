/**
 * A tree laid out again after some leaves take new specs on their own mesh:
 * the payload `describe_tree` writes for the re-sharded tree
 * (src/shardviz/tree/describe.py), built from the tree's payload alone.
 * Leaves group by mesh, spec, memory kind, dtype and rank, numbered by their
 * first leaf; a new group's type string is what `jax.typeof` prints for it
 * (./typeStr.ts). Leaves off every mesh are the kernel's and never get here.
 */

import type { Run } from "../../payload/array";
import { expandRuns } from "../../payload/array";
import type { TreeGroup, TreePayload } from "../../payload/tree";
import { encodeRuns } from "../array/runs";
import { dtypePrefix } from "../array/typeStr";
import { auditTree } from "./audit";

/** A leaf's new spec: one list of mesh axes per dimension (as a group's `spec`). */
export type LeafSpec = string[][];

const KIND_ORDER = ["device", "pinned_host", "unpinned_host"];
const kindRank = (kind: string): number => {
  const k = KIND_ORDER.indexOf(kind);
  return k < 0 ? KIND_ORDER.length : k;
};
const product = (values: readonly number[]): number => values.reduce((a, b) => a * b, 1);

/** The group a leaf with spec `spec` falls in, written as describe.py's `_group` writes it. */
function groupFor(
  old: TreeGroup,
  spec: LeafSpec,
  names: readonly string[],
  sizes: readonly number[],
  types: readonly string[],
): TreeGroup {
  const sizeOf = (axis: string): number => sizes[names.indexOf(axis)];
  const used = new Set(spec.flat());
  const unused = names.filter((a) => !used.has(a));
  return {
    dtype: old.dtype,
    itemsize: old.itemsize,
    spec,
    divisors: spec.map((axes) => product(axes.map(sizeOf))),
    memory_kind: old.memory_kind,
    sharding: "NamedSharding",
    mesh: old.mesh,
    replicated: unused.filter((a) => sizeOf(a) > 1),
    replication: product(unused.map(sizeOf)),
    type: typePieces(dtypePrefix(old.type[0]), old.memory_kind, spec, names, types),
    array: old.array,
  };
}

/** `jax.typeof`'s string cut at the dimension sizes: only Explicit axes are annotated, `<host>` in pinned_host. */
function typePieces(
  prefix: string,
  kind: string,
  spec: LeafSpec,
  names: readonly string[],
  types: readonly string[],
): string[] {
  const head = `${prefix}${kind === "pinned_host" ? "<host>" : ""}[`;
  if (spec.length === 0) return [`${head}]`];
  const explicit = new Set(names.filter((_, i) => types[i] === "Explicit"));
  const pieces = [head];
  spec.forEach((axes, d) => {
    const shown = axes.filter((a) => explicit.has(a));
    const mark = shown.length === 0 ? "" : shown.length === 1 ? `@${shown[0]}` : `@(${shown.join(",")})`;
    pieces.push(mark + (d === spec.length - 1 ? "]" : ","));
  });
  return pieces;
}

/** What fixes a leaf's group, as a string: its mesh, spec, memory kind, dtype (with weak type) and rank. */
function groupKey(group: TreeGroup, spec: LeafSpec, g: number): string {
  if (group.mesh === null) return `off-mesh ${g}`; // keeps its own group: nothing here moves it
  return JSON.stringify([group.mesh, spec, group.memory_kind, group.dtype, dtypePrefix(group.type[0]), group.array]);
}

/**
 * `base` with leaf i on spec `specs.get(i)` (every other leaf as it was). The
 * caller has checked each new spec against its leaf's mesh and shape, and
 * that every group carries its type pieces.
 */
export function relayoutTree(
  base: TreePayload,
  specs: ReadonlyMap<number, LeafSpec>,
  /** Every leaf's dotted path (the audit names leaves by them). */
  paths: readonly string[],
): TreePayload {
  const { leaves, groups: oldGroups } = base;
  const groups: TreeGroup[] = [];
  const groupOfKey = new Map<string, number>();
  const group = new Array<number>(leaves.count);
  const bytes = leaves.bytes.slice();
  for (let i = 0; i < leaves.count; i++) {
    const g = leaves.group[i];
    if (g < 0) {
      group[i] = -1;
      continue;
    }
    const old = oldGroups[g];
    const spec = specs.get(i) ?? old.spec;
    const key = groupKey(old, spec, g);
    let k = groupOfKey.get(key);
    if (k === undefined) {
      k = groups.length;
      groupOfKey.set(key, k);
      const mesh = old.mesh === null ? null : base.meshes[old.mesh];
      const same = mesh === null || JSON.stringify(spec) === JSON.stringify(old.spec);
      groups.push(same ? old : groupFor(old, spec, mesh.names, mesh.sizes, mesh.types));
    }
    group[i] = k;
    if (specs.has(i)) bytes[i] = product(leaves.shape[i].map((n, d) => n / groups[k].divisors[d])) * old.itemsize;
  }
  return withColumns(base, groups, group, bytes, paths);
}

/** The payload with new groups and leaf columns, and what follows from them: bytes per device, the audit. */
function withColumns(
  base: TreePayload,
  groups: TreeGroup[],
  group: number[],
  bytes: number[],
  paths: readonly string[],
): TreePayload {
  const count = base.devices.count;
  const meshPositions = base.meshes.map((mesh) => expandRuns(mesh.devices, product(mesh.sizes)));
  const positions = groups.map((g) => (g.mesh === null ? expandRuns(g.devices ?? []) : meshPositions[g.mesh]));
  const groupBytes = groups.map(() => 0);
  group.forEach((g, i) => {
    if (g >= 0) groupBytes[g] += bytes[i];
  });
  const byKind = new Map<string, Float64Array>();
  groups.forEach((g, k) => {
    const column = byKind.get(g.memory_kind) ?? new Float64Array(count);
    byKind.set(g.memory_kind, column);
    for (const p of positions[k]) column[p] += groupBytes[k];
  });
  const kinds = [...byKind.keys()].sort((a, b) => kindRank(a) - kindRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const deviceBytes: Record<string, Run[]> = {};
  const totals = new Float64Array(count);
  for (const kind of kinds) {
    const column = byKind.get(kind) as Float64Array;
    deviceBytes[kind] = encodeRuns(column);
    column.forEach((value, p) => {
      totals[p] += value;
    });
  }
  const audit = auditTree({
    paths,
    shapes: base.leaves.shape,
    group,
    bytes,
    groups,
    meshes: base.meshes,
    holders: positions.map((p) => p.length),
    ids: expandRuns(base.devices.id, count),
    totals,
  });
  return {
    ...base,
    device_bytes: deviceBytes,
    replicated_bytes: replicatedBytes(base, groups, groupBytes),
    groups,
    leaves: { ...base.leaves, group, bytes },
    audit,
  };
}

/** Per mesh axis of size > 1, the bytes per device spent on leaves replicated over it. */
function replicatedBytes(
  base: TreePayload,
  groups: readonly TreeGroup[],
  groupBytes: readonly number[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const mesh of base.meshes) {
    mesh.names.forEach((name, a) => {
      if (mesh.sizes[a] > 1 && !(name in out)) out[name] = 0;
    });
  }
  groups.forEach((g, k) => {
    for (const axis of g.replicated) out[axis] = (out[axis] ?? 0) + groupBytes[k];
  });
  return out;
}
