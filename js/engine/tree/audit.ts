/**
 * The audit of a tree's layout, as src/shardviz/tree/audit.py writes it: the
 * costliest leaves, avoidable replication and device imbalance, with the
 * same sentences. Pure arithmetic over a tree payload's columns.
 */

import type { ReplicatedFinding, TreeAudit, TreeGroup, TreeImbalance, TreeMeshInfo } from "../../payload/tree";
import { compressIds, formatBytes } from "../../util/ranges";

const AUDIT_ROWS = 10;

/** The columns the audit reads, in flatten order. */
export interface AuditColumns {
  paths: readonly string[];
  shapes: readonly (readonly number[])[];
  group: ArrayLike<number>;
  bytes: ArrayLike<number>;
  groups: readonly TreeGroup[];
  meshes: readonly TreeMeshInfo[];
  /** Per group, how many devices hold its leaves. */
  holders: readonly number[];
  /** Device ids, and every device's bytes (all memory kinds), in the order of the device columns. */
  ids: ArrayLike<number>;
  totals: ArrayLike<number>;
}

export const leafName = (path: string): string => path || "(root)";

/** Leaves in `candidates` ordered by bytes per device, largest first, flatten order among equals; the first `limit`. */
function largestFirst(candidates: number[], bytes: ArrayLike<number>, limit: number): number[] {
  return candidates.sort((a, b) => bytes[b] - bytes[a] || a - b).slice(0, limit);
}

export function auditTree(c: AuditColumns): TreeAudit {
  const arrays: number[] = [];
  for (let i = 0; i < c.paths.length; i++) if (c.group[i] >= 0 && c.bytes[i] > 0) arrays.push(i);
  const { findings, count, saving } = replicationFindings(c);
  return {
    largest: largestFirst(arrays, c.bytes, AUDIT_ROWS),
    replicated: findings,
    replicated_count: count,
    replicated_saving: saving,
    imbalance: imbalance(c),
  };
}

interface Candidate {
  leaf: number;
  axis: number;
  dim: number;
  saving: number;
}

/** For one leaf and axis of size k: the dimension to split (unsplit first, then the longest shard), or -1. */
function bestDimension(shape: readonly number[], divisors: readonly number[], k: number): number {
  let best = -1;
  let bestScore = -1;
  const extents = shape.map((n, d) => n / divisors[d]);
  const longest = Math.max(...extents);
  extents.forEach((extent, d) => {
    if (extent % k !== 0 || extent <= 0) return;
    const score = (divisors[d] === 1 ? longest + 1 : 0) + extent;
    if (score > bestScore) {
      best = d;
      bestScore = score;
    }
  });
  return best;
}

function members(c: AuditColumns): number[][] {
  const out: number[][] = c.groups.map(() => []);
  for (let i = 0; i < c.paths.length; i++) if (c.group[i] >= 0) out[c.group[i]].push(i);
  return out;
}

/** Leaves replicated over a mesh axis that divides one of their dimensions (audit.py's replication_findings). */
function replicationFindings(c: AuditColumns): {
  findings: ReplicatedFinding[];
  count: number;
  saving: Record<string, number>;
} {
  const axisNames: string[] = [];
  const axisSizes: number[] = [];
  const found: Candidate[] = [];
  members(c).forEach((idx, g) => {
    const group = c.groups[g];
    if (group.mesh === null || group.replicated.length === 0 || group.divisors.length === 0 || idx.length === 0) return;
    const mesh = c.meshes[group.mesh];
    for (const axis of group.replicated) {
      const k = mesh.sizes[mesh.names.indexOf(axis)];
      let a = axisNames.indexOf(axis);
      for (const i of idx) {
        const dim = bestDimension(c.shapes[i], group.divisors, k);
        if (dim < 0 || c.bytes[i] <= 0) continue;
        if (a < 0) {
          a = axisNames.push(axis) - 1;
          axisSizes.push(k);
        }
        found.push({ leaf: i, axis: a, dim, saving: c.bytes[i] - Math.floor(c.bytes[i] / k) });
      }
    }
  });
  const saving: Record<string, number> = {};
  axisNames.forEach((name, a) => {
    saving[name] = found.reduce((sum, f) => sum + (f.axis === a ? f.saving : 0), 0);
  });
  found.sort((x, y) => y.saving - x.saving || x.leaf - y.leaf || x.axis - y.axis);
  const findings = found.slice(0, AUDIT_ROWS).map((f) => finding(c, f, axisNames[f.axis], axisSizes[f.axis]));
  return { findings, count: found.length, saving };
}

function finding(c: AuditColumns, f: Candidate, axis: string, size: number): ReplicatedFinding {
  const group = c.groups[c.group[f.leaf]];
  const dimSize = c.shapes[f.leaf][f.dim];
  const extent = Math.floor(dimSize / group.divisors[f.dim]);
  const where = extent === dimSize ? `dim ${f.dim} (${dimSize})` : `dim ${f.dim} (${dimSize}, ${extent} per shard)`;
  const message =
    `${leafName(c.paths[f.leaf])} is replicated over ${axis}; ${where} is divisible by ${axis}=${size}: ` +
    `sharding it saves ${formatBytes(f.saving)} per device`;
  return { leaf: f.leaf, axis, dim: f.dim, saving: f.saving, message };
}

const devicesText = (ids: number[]): string => (ids.length === 1 ? `device ${ids[0]}` : `devices ${compressIds(ids)}`);

/** How far apart the devices' totals are, and the leaves only some devices hold; null when even. */
function imbalance(c: AuditColumns): TreeImbalance | null {
  const count = c.ids.length;
  if (count === 0) return null;
  let high = -Infinity;
  let low = Infinity;
  for (let p = 0; p < count; p++) {
    high = Math.max(high, c.totals[p]);
    low = Math.min(low, c.totals[p]);
  }
  if (high === low) return null;
  const idsWith = (value: number): number[] => {
    const out: number[] = [];
    for (let p = 0; p < count; p++) if (c.totals[p] === value) out.push(c.ids[p]);
    return out.sort((a, b) => a - b);
  };
  const most = idsWith(high);
  const least = idsWith(low);
  const uneven: number[] = [];
  for (let i = 0; i < c.paths.length; i++) {
    const g = c.group[i];
    if (g >= 0 && c.holders[g] < count && c.bytes[i] > 0) uneven.push(i);
  }
  const leaves = largestFirst(uneven.slice(), c.bytes, AUDIT_ROWS);
  let message =
    `${devicesText(most)} ${most.length === 1 ? "holds" : "hold"} ${formatBytes(high)}, ` +
    `${formatBytes(high - low)} more than ${devicesText(least)} (${formatBytes(low)})`;
  if (leaves.length > 0) {
    const shown = leaves
      .slice(0, 3)
      .map((i) => `${leafName(c.paths[i])} on ${c.holders[c.group[i]]} of ${count}`)
      .join(", ");
    const more = uneven.length - Math.min(3, leaves.length);
    message += `; on only some devices: ${shown}${more ? ` and ${more} more` : ""}`;
  }
  return { max_bytes: high, min_bytes: low, max_devices: most, min_devices: least, leaves, message };
}
