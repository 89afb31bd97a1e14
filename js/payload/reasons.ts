/**
 * The program payload's `reasons` (src/shardviz/program/reasons_payload.py): why each
 * collective is there, XLA's involuntary full rematerializations, and the fixes traced so far.
 */

export interface WhyOperand {
  label: string;
  type: string;
  spec: string[][] | null;
  spec_text: string;
  role: string;
  note: string;
}

export interface WhyPayload {
  cause: string;
  primitive: string;
  expression: string;
  operands: WhyOperand[];
  wanted: string[][] | null;
  wanted_text: string | null;
  wanted_by: string;
  operand: number | null;
  dimension: number | null;
  axes: string[];
  rule: string;
  text: string;
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
  whys: (WhyPayload | null)[];
  part_whys?: (WhyPayload | null)[][];
  rematerializations: RematPayload[];
  fixes: Record<string, FixPayload[]>;
  back?: boolean;
}

export interface Mesh {
  names: string[];
  sizes: number[];
}
