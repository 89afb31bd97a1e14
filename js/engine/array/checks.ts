/**
 * The refusals shared by the grammar and the edits, each naming its culprit
 * in the words of src/shardviz/engine/checks.py.
 */

import { LayoutError } from "./errors";
import { pyRepr, pyTuple, withThousands } from "./pytext";

/** One spec entry: `null` (unpartitioned) or the axis names, major first (the grammar reads them). */
export type SpecEntry = string[] | null;

/** The largest mesh shardviz lays out (a typo beyond this would allocate columns for all of it). */
export const MAX_DEVICES = 2 ** 20;
/** The most mesh axes shardviz lays out. */
export const MAX_AXES = 16;

/** The mesh a spec is checked against: axis names and sizes, in mesh order. */
export interface MeshShape {
  names: readonly string[];
  sizes: readonly number[];
}

/** Refuses a mesh too large to lay out, before anything is allocated for it. */
export function checkMeshSize(names: readonly string[], sizes: readonly bigint[]): void {
  if (sizes.length > MAX_AXES) {
    throw new LayoutError(`the mesh has ${sizes.length} axes; shardviz lays out at most ${MAX_AXES}`);
  }
  const total = sizes.reduce((a, b) => a * b, 1n);
  if (total > BigInt(MAX_DEVICES)) {
    const shape = names.map((n, i) => `${n}=${sizes[i]}`).join(" × ");
    throw new LayoutError(
      `the mesh ${shape} has ${withThousands(total)} devices; shardviz lays out at most ` +
        `${withThousands(MAX_DEVICES)} (2^20), beyond the largest machines built`,
    );
  }
}

/** `repr` of one PartitionSpec entry as JAX keeps it (a lone name is a str, not a 1-tuple). */
function entryRepr(entry: SpecEntry): string {
  if (entry === null || entry.length === 0) return "None";
  if (entry.length === 1) return pyRepr(entry[0]);
  return pyTuple(entry.map(pyRepr));
}

/** `P('x', None)`, as Python's checks write a spec. */
export function specRepr(spec: readonly SpecEntry[]): string {
  return `P(${spec.map(entryRepr).join(", ")})`;
}

/** Refuses a spec that does not fit the mesh or the shape, naming the culprit. */
export function checkSpec(mesh: MeshShape, spec: readonly SpecEntry[], shape: readonly number[]): void {
  const sizes = new Map<string, number>(mesh.names.map((name, i) => [name, mesh.sizes[i]]));
  if (spec.length > shape.length) {
    throw new LayoutError(
      `the spec ${specRepr(spec)} has ${spec.length} entries but the array has rank ${shape.length} ` +
        `(shape ${pyTuple(shape.map(String))}); give at most one entry per dimension`,
    );
  }
  // Every axis is checked before any extent: an axis used twice, or not in the mesh, is what is
  // wrong with the spec, whatever the extents (JAX refuses it first too).
  const seen = new Map<string, number>();
  spec.forEach((entry, d) => {
    for (const axis of entry ?? []) {
      if (!sizes.has(axis)) {
        throw new LayoutError(
          `dimension ${d}: axis ${pyRepr(axis)} is not in the mesh, whose axes are ${mesh.names.map(pyRepr).join(", ")}`,
        );
      }
      const earlier = seen.get(axis);
      if (earlier !== undefined) {
        throw new LayoutError(
          `axis ${pyRepr(axis)} is used twice, by dimension ${earlier} and dimension ${d}; ` +
            "each mesh axis can split at most one dimension",
        );
      }
      seen.set(axis, d);
    }
  });
  spec.forEach((entry, d) => {
    const axes = entry ?? [];
    const cuts = axes.reduce((product, axis) => product * (sizes.get(axis) ?? 1), 1);
    if (shape[d] % cuts !== 0) throw new LayoutError(indivisibleMessage(d, shape[d], axes, mesh));
  });
}

/** Why `axes` cannot split dimension `dim`, and which axes could. */
export function indivisibleMessage(dim: number, extent: number, axes: readonly string[], mesh: MeshShape): string {
  const sizeOf = (axis: string): number => mesh.sizes[mesh.names.indexOf(axis)];
  const cuts = axes.reduce((product, axis) => product * sizeOf(axis), 1);
  const split = axes.map((a) => `${a}=${sizeOf(a)}`).join(" × ");
  const fitting = mesh.names.filter((_, i) => mesh.sizes[i] > 1 && extent % mesh.sizes[i] === 0);
  const hint =
    fitting.length > 0
      ? `axes of this mesh that divide ${extent}: ${fitting.map((a) => `${a}=${sizeOf(a)}`).join(", ")}`
      : `no axis of this mesh divides ${extent}; leave dimension ${dim} unsplit (None)`;
  return (
    `dimension ${dim} has size ${extent}, which ${split} cannot split evenly into ${cuts} blocks ` +
    `(JAX has no uneven shards); ${hint}`
  );
}

/** Refuses a memory kind the devices cannot address, listing the ones they can. */
export function checkMemoryKind(kind: string, addressable: readonly string[]): void {
  if (!addressable.includes(kind)) {
    throw new LayoutError(
      `memory kind ${pyRepr(kind)} is not addressable by these devices; they address ${addressable.join(", ")}`,
    );
  }
}
