/**
 * The program payload's `reasons` (src/shardviz/program/why/reasons_payload.py): why each
 * collective is there, XLA's involuntary full rematerializations, and the fixes traced so far.
 */

export interface WhyOperand {
  label: string;
  type: string;
  spec: string[][] | null;
  /** `operand` where absent; `made`, `result`, `carry-start`, `carry-end`. */
  role?: string;
  note?: string;
}

export interface WhyPayload {
  cause: string;
  primitive: string;
  expression?: string;
  operands: WhyOperand[];
  wanted?: string[][];
  wanted_by?: string;
  operand?: number;
  dimension?: number;
  axes?: string[];
  rule: string;
}

/** "because ..." (or "cannot tell why, because ..."): the reason as one line. */
export function whyText(why: WhyPayload): string {
  return why.cause === "unknown" ? `cannot tell why, because ${why.rule}` : `because ${why.rule}`;
}

/** Collective `c`'s reason, or null where none was read (older payloads: none). */
export function whyOf(reasons: ReasonsPayload, c: number): WhyPayload | null {
  const k = reasons.whys[c];
  return k === undefined || k < 0 ? null : (reasons.why_table[k] ?? null);
}

export interface FixChange {
  line: number | null;
  kind: string;
  axes: string;
  before: number;
  after: number;
}

export interface FixPayload {
  kind: string;
  summary: string;
  code: string;
  removed: boolean;
  slower: boolean;
  step_s: number | null;
  before_s: number | null;
  hardware: string;
  target: string;
  changes: FixChange[];
  wire_before: number;
  wire_after: number;
}

export interface RematPayload {
  shape: number[];
  dtype: string;
  before: string[][] | null;
  after: string[][] | null;
  before_text: string;
  after_text: string;
  full_bytes: number;
  wire_bytes: number;
  line: number | null;
  where: string;
  label: string;
  text: string;
}

export interface ReasonsPayload {
  /** Each distinct reason once. */
  why_table: WhyPayload[];
  /** Per collective, an index into `why_table` (-1: none read). */
  whys: number[];
  /** Per collective, per operand of a combined one, the same. */
  part_whys?: number[][];
  rematerializations: RematPayload[];
  fixes: Record<string, FixPayload[]>;
  back?: boolean;
}

export interface Mesh {
  names: string[];
  sizes: number[];
}
