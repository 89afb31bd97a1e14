/**
 * The comparison payload (docs/compare-payload.md, version 1): candidates
 * ranked side by side, one row per candidate and hardware.
 */

export const COMPARE_PAYLOAD_VERSION = 1;

/** One source line's collectives of one kind over the same axes: line, kind, axes, count, bytes, seconds, link. */
export type LineEntry = [
  line: string,
  kind: string,
  axes: string,
  count: number,
  bytes: number,
  seconds: number,
  link: string,
];

export interface LineChange {
  line: string;
  kind: string;
  axes: string;
  change: "appeared" | "vanished" | "grown" | "shrunk" | "slower" | "faster";
  bytes_before: number;
  bytes_after: number;
  seconds_before: number;
  seconds_after: number;
}

export interface CompareRow {
  candidate: string;
  hardware: string;
  rank: number;
  mesh: [string, number][];
  step_s: number;
  bound: "compute" | "memory" | "network";
  compute_s: number | null;
  memory_s: number | null;
  network_s: number;
  network_by_axis: [string, number][];
  network_by_link: [string, number][];
  device_bytes: number | null;
  hbm_bytes: number | null;
  fits: boolean | null;
  slices: number;
  trace_seconds: number;
  lines: LineEntry[];
  against: string;
  changes: LineChange[];
}

export interface CompareFailure {
  candidate: string;
  hardware: string;
  mesh: [string, number][];
  error: string;
}

export interface ComparePayload {
  kind: "compare";
  version: number;
  step: string;
  baseline: "best" | "first";
  hardware: string[];
  candidates: string[];
  workers: number;
  seconds: number;
  rows: CompareRow[];
  failures: CompareFailure[];
  /** What shardviz.search explored, where the comparison came from a search (docs/searching.md). */
  search?: SearchPayload;
  /** The widget's: each candidate's rules text, where it was given as rules (the ones it can edit). */
  rules?: Record<string, string>;
  /** The widget's: whether a live kernel can trace a candidate again. */
  editable?: boolean;
}

/** A search's space: how many candidates it considered, pruned (by what) and traced, and its best plan. */
export interface SearchPayload {
  devices: number;
  hardware: string;
  considered: number;
  pruned: number;
  traced: number;
  pruned_by: Record<string, number>;
  best: string | null;
  best_rules: string;
  best_mesh: [string, number][];
  network_bound: boolean;
  /** The book's claim: every FSDP/tensor mix is network-bound (null where its bound does not apply). */
  network_bound_mixes?: boolean | null;
  /** One sentence a line: the best plan, then the book's bound and the data x model plan. */
  verdict: string;
  /** With names=: the best plan as logical-axis rules, each name with its mesh axes. */
  best_logical_rules?: [string, string[]][] | null;
  /** "Use this plan": the mesh, the rules and jax.device_put of the arguments, as Python. */
  code: string;
}

export function isComparePayload(payload: unknown): payload is ComparePayload {
  const p = payload as Partial<ComparePayload> | null;
  return (
    typeof p === "object" &&
    p !== null &&
    p.kind === "compare" &&
    p.version === COMPARE_PAYLOAD_VERSION &&
    Array.isArray(p.rows) &&
    Array.isArray(p.failures) &&
    Array.isArray(p.candidates)
  );
}

/** A row's key: one candidate on one hardware. */
export function rowKey(row: CompareRow): string {
  return `${row.candidate}\u0000${row.hardware}`;
}

/** HBM left per device (negative: over by that much); null where either figure is unknown. */
export function headroom(row: CompareRow): number | null {
  return row.device_bytes === null || row.hbm_bytes === null ? null : row.hbm_bytes - row.device_bytes;
}

export interface LinePair {
  key: string;
  line: string;
  kind: string;
  axes: string;
  a: LineEntry | null;
  b: LineEntry | null;
  /** Bytes or time differ (or one side has none). */
  differs: boolean;
}

/** Two rows' collectives per (line, kind, axes), side by side, differing ones first. */
export function pairLines(a: CompareRow, b: CompareRow): LinePair[] {
  const index = (row: CompareRow) => new Map(row.lines.map((e) => [`${e[0]}|${e[1]}|${e[2]}`, e] as const));
  const left = index(a);
  const right = index(b);
  const keys = Array.from(new Set([...left.keys(), ...right.keys()])).sort();
  const pairs = keys.map((key) => {
    const x = left.get(key) ?? null;
    const y = right.get(key) ?? null;
    const [line, kind, axes] = (x ?? y) as LineEntry;
    const differs = x === null || y === null || x[4] !== y[4] || Math.abs(x[5] - y[5]) > 0.01 * Math.max(x[5], 1e-12);
    return { key, line, kind, axes, a: x, b: y, differs };
  });
  const weight = (p: LinePair) => Math.abs((p.b?.[5] ?? 0) - (p.a?.[5] ?? 0));
  return pairs.sort((p, q) => Number(q.differs) - Number(p.differs) || weight(q) - weight(p));
}
