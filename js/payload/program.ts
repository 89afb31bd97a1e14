/**
 * The program payload Python sends (docs/program-payload.md, version 2) and
 * the index arithmetic to read it: value columns and device groups of
 * collectives as mesh positions. Nothing here touches the DOM or picks colours.
 */

import type { DeviceColumnRuns, DeviceKind, MeshInfo, Run } from "./array";
import { expandRuns, PayloadError } from "./array";
import type { ReasonsPayload } from "./reasons";

export const PROGRAM_PAYLOAD_VERSION = 2;

/** A row of `types`: a value's shape, dtype and sharding; `spec` null where the sharding is unknown. */
export interface ProgramType {
  shape: number[];
  dtype: string;
  /** Bytes per element; in rows with a known sharding. */
  itemsize?: number;
  spec: string[][] | null;
  memory_kind: string | null;
  type_str: string;
  /** Device ids holding a value laid out with no mesh (a one-device program). */
  devices?: Run[];
}

/** The array payload's device columns without the per-value ones (tile, replica). */
export type ProgramDevices = DeviceColumnRuns;

export interface ProgramValues {
  name: string[];
  role: number[];
  primitive: number[];
  type: number[];
  from: number[];
  note: number[];
  body: number[];
  line: number[];
  listing_line: (number | null)[];
  /** The user's name for each value: `params['w1']`, the variable its line binds, else `%` and the jaxpr's name. */
  label?: string[];
  /** Each value's call chain, an index into `stacks` (-1: none recorded). */
  stack?: number[];
  /** Name scopes (`layers_2/attn`), `""` for none. */
  scope?: string[];
  /** The Python loop pass that made it (1-based) and its line's passes; null where the line ran once. */
  pass?: (number | null)[];
  passes?: (number | null)[];
  /** A value of the backward pass (a gradient). */
  backward?: boolean[];
  /** Each value's key as an index into `key_stems` (`decodeValueKeys` writes the keys). */
  key_stem: number[];
}

export interface ProgramLine {
  file: number | null;
  line: number | null;
  listing_line: number | null;
  values: number[];
  collectives: number[];
  /** Operands of combined collectives that this line made: `[collective, operand]`. */
  parts?: [number, number][];
  wire_bytes: number;
}

/** A what-if trace's child: its devices (virtual) and what it took (docs/planning.md, `WhatIf`). */
export interface WhatIfInfo {
  devices: number;
  child_seconds: number;
  devices_seconds: number;
  trace_seconds: number;
  peak_rss_bytes: number;
  estimated_bytes: number;
}

/** A collective's bytes under the count the payload does not show (XLA:CPU's module's, by default). */
export interface OtherCount {
  dtype: string;
  wire_bytes: number;
  total_wire_bytes: number;
}

/** One operand of a combined collective, with its own bytes and line. */
export interface ProgramCollectivePart {
  operand: string;
  result_bytes: number;
  wire_bytes: number;
  total_wire_bytes: number;
  file: number | null;
  line: number | null;
  listing_line: number | null;
  stack?: number;
  /** The dtype its bytes count in (`bytes_from` says which count); absent from older payloads. */
  dtype?: string;
  /** The other count, where it differs (XLA:CPU widened a bf16/f16 operand to f32). */
  other?: OtherCount | null;
  scope?: string;
  pass?: number | null;
  passes?: number | null;
  backward?: boolean;
  where_label?: string;
}

export interface ProgramBody {
  primitive: string;
  trip_count: number | null;
  file: number | null;
  line: number | null;
  parent: number;
}

/** One named hardware's estimate of a step (shardviz.plan.estimate), collectives in payload order. */
export interface HardwareEstimate {
  step_s: number;
  bound: string;
  compute_s: number | null;
  memory_s: number | null;
  network_s: number;
  fits: boolean | null;
  hbm_bytes: number | null;
  /** TPU slices (over DCN) or GPU nodes the program spans; absent in payloads written before parts. */
  slices?: number;
  /** One TPU slice's torus, e.g. [16, 16, 16]; null for GPUs. */
  topology?: number[] | null;
  /** Per collective: seconds (all runs), link, "bandwidth" or "latency", formula, dtype note, and the
   * parts of one that runs on several links. */
  collectives: [number, string, string, string, string, EstimatePart[]?][];
}

/** One part of a collective on several links: what it does, its link, its seconds (all runs). */
export type EstimatePart = [string, string, number];

export interface ProgramEstimates {
  hardware: string[];
  by_hardware: Record<string, HardwareEstimate>;
  caveat: string;
}

export interface ProgramCollective {
  kind: string;
  name: string;
  axes: string[] | null;
  group_size: number;
  groups: number;
  result_bytes: number;
  operand_count: number;
  count: number;
  count_exact: boolean;
  wire_bytes: number;
  total_wire_bytes: number;
  file: number | null;
  line: number | null;
  listing_line: number | null;
  op_name: string;
  hlo: string;
  hlo_truncated: boolean;
  channel_id: number | null;
  /** `data`, `x,y`, `y[sub 2 of 4]`, `-` or `?`. */
  axes_label?: string;
  /** Why the line differs from the one XLA's metadata names ("" when it does not). */
  note?: string;
  /** A combined collective's operands (empty otherwise). */
  parts?: ProgramCollectivePart[];
  stack?: number;
  scope?: string;
  pass?: number | null;
  passes?: number | null;
  backward?: boolean;
  /** The output's or input's path when XLA added it to lay that array out (`""` otherwise). */
  charged_to?: string;
  charged_role?: string;
  /** Scope, pass and charged array in words: what tells it apart from its line's others. */
  where_label?: string;
  /** The dtype its bytes count in (`bytes_from` says which count); absent from older payloads. */
  dtype?: string;
  /** The other count, where it differs (XLA:CPU widened a bf16/f16 collective to f32). */
  other?: OtherCount | null;
}

/** One function the program runs, as its own block of source. */
export interface ProgramFunction {
  name: string;
  file: number;
  first_line: number;
  lines: string[];
}

/** Memory over the program per device (docs/program-payload.md). */
export interface ProgramMemoryTimeline {
  steps: number;
  step_bytes: number[];
  step_lines: Run[];
  peak_bytes: number;
  peak_step: number;
  backward_step: number | null;
  xla_peak_bytes: number | null;
  kinds: string[];
  groups: {
    kind: number[];
    label: string[];
    line: number[];
    scope: string[];
    peak_bytes: number[];
    most_bytes: number[];
    /** Per group: its first buffer's shape and element type per device, as the device holds it. */
    type?: string[];
    /** Per group: what a planner budgets it as (parameters and inputs, gradients, ...). */
    category?: string[];
  };
  buffers: { group: number[]; start: number[]; end: number[]; bytes: number[] };
  buffers_left_out: number;
}

/** An output laid out unlike the input it stands for. */
export interface LayoutChange {
  output: string;
  input: string;
  before: string[][];
  after: string[][];
  before_memory_kind: string | null;
  after_memory_kind: string | null;
}

export interface GroupSet {
  form: string;
  sizes: Run[];
  positions: Run[];
  sources?: Run[];
  targets?: Run[];
}

/** `[key, wire_bytes, collectives, runs]`. */
export type TotalRow = [key: string, wireBytes: number, collectives: number, runs: number];

export interface ProgramMemory {
  argument_bytes: number;
  output_bytes: number;
  temp_bytes: number;
  alias_bytes: number;
  generated_code_bytes: number;
  peak_bytes: number | null;
  host_argument_bytes: number;
  host_output_bytes: number;
  host_temp_bytes: number;
  host_alias_bytes: number;
}

export interface ProgramSource {
  name: string;
  file: number;
  first_line: number;
  lines: string[];
}

export interface ProgramPayload {
  kind: "program";
  version: 2;
  name: string;
  hlo_module: string;
  sharding_mode: string;
  num_partitions: number;
  process_index: number;
  process_count: number;
  mesh: MeshInfo | null;
  machine_devices: number;
  devices: ProgramDevices | null;
  kinds: DeviceKind[];
  memory_kinds: string[];
  assignment: Run[] | null;
  source: ProgramSource | null;
  /** `real`: a real array was passed (not a ShapeDtypeStruct). */
  inputs: { path: string; type: number; spec_text: string; real?: boolean }[];
  layout_changes?: LayoutChange[];
  outputs: { path: string; type: number }[];
  values: ProgramValues;
  lines: ProgramLine[];
  bodies: ProgramBody[];
  collectives: ProgramCollective[];
  group_sets: GroupSet[];
  totals: {
    wire_bytes: number;
    runs: number;
    by_axis: TotalRow[];
    by_kind: TotalRow[];
    by_line: TotalRow[];
    /** `wire_bytes` under the other count, where it differs (null or absent otherwise). */
    other_wire_bytes?: number | null;
  };
  /** How bytes are counted: `device` (the program's dtypes, as a TPU or GPU moves them) or `cpu`. */
  bytes_from?: "device" | "cpu";
  /** How a what-if trace made the program (null for an ordinary trace; absent from older payloads). */
  whatif?: WhatIfInfo | null;
  /** Whether an edit of the inputs' specs can trace the program again (absent from older payloads: yes). */
  retrace?: boolean;
  /** Why it cannot, for the user ("" where it can). */
  retrace_reason?: string;
  memory: ProgramMemory | null;
  flops: number | null;
  /** Every dot of the module per device, loops counted (cost analysis counts a loop's body once). */
  matmul_flops?: number | null;
  /** Each named hardware's estimated step, for the hardware selector; absent from older payloads. */
  estimates?: ProgramEstimates;
  /** Why each collective is there, XLA's rematerializations and the fixes traced so far; absent from older payloads. */
  reasons?: ReasonsPayload;
  bytes_accessed: number | null;
  files: string[];
  /** How the user knows each file: `In [3]` for a notebook cell, else its name. */
  file_labels?: string[];
  /** Each function the program runs as its own source block; `calls` links call sites to them. */
  functions?: ProgramFunction[];
  /** `[caller block, line, callee block]`. */
  calls?: [number, number, number][];
  memory_timeline?: ProgramMemoryTimeline | null;
  /** Call chains: the user's own frames, innermost first, `[file, line, function]`. */
  stacks?: [number, number, string][][];
  /** The text of every line on a chain or with something on it: `[file, line, text]`. */
  line_texts?: [number, number, string][];
  types: ProgramType[];
  /** The values' keys, each repeat of one once: `values.key_stem` indexes it. */
  key_stems: string[];
  primitives: string[];
  origins: string[];
  notes: string[];
  roles: string[];
  wire_formulas: Record<string, string>;
}

/** Device groups of one collective, by mesh-order position of the devices. */
export interface DeviceGroups {
  /** Each group's devices, as mesh positions (in the order XLA lists them). */
  groups: number[][];
  /** For each mesh position, the group it is in (-1: none). */
  groupOf: Int32Array;
  /** A collective-permute's sends, as mesh positions `[source, target]`; empty for other kinds. */
  pairs: [number, number][];
}

/** Everything the drawing code needs, decoded once per payload. */
export interface Program {
  payload: ProgramPayload;
  valueCount: number;
  /** Devices of the mesh (0 without a mesh). */
  deviceCount: number;
  /** Device ids in mesh order. */
  ids: Int32Array;
  /** Mesh position of each partition position (the ids in collective groups); null when unknown. */
  meshOfPartition: Int32Array | null;
  /** Device groups of each entry of `group_sets`; null where they cannot be placed on the mesh. */
  groupSets: (DeviceGroups | null)[];
  /** The line of the traced function's listing that leads to each value, or null (Python's `listing_line`). */
  valueListingLine: (number | null)[];
  /** The same for each collective. */
  collectiveListingLine: (number | null)[];
  /** Enclosing bodies of each body, outermost first (the body itself last). */
  bodyChain: number[][];
  /** Each value's key, unique in the program and stable across re-traces: what a selection is carried by. */
  valueKeys: string[];
}

export function isProgramPayload(value: unknown): value is ProgramPayload {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "program";
}

const VALUE_COLUMNS: readonly (keyof ProgramValues)[] = [
  "name",
  "role",
  "primitive",
  "type",
  "from",
  "note",
  "body",
  "line",
  "listing_line",
  "key_stem",
];

/** Checks the payload's shape and decodes its columns; throws PayloadError naming what is wrong. */
export function decodeProgram(payload: ProgramPayload): Program {
  if (payload.version !== PROGRAM_PAYLOAD_VERSION) {
    throw new PayloadError(
      `this front end reads program payload version ${PROGRAM_PAYLOAD_VERSION}, got ${String(payload.version)}`,
    );
  }
  const values = payload.values;
  const n = values.name.length;
  for (const column of VALUE_COLUMNS) {
    if (!Array.isArray(values[column]) || values[column].length !== n) {
      throw new PayloadError(`the value column ${column} does not hold ${n} entries`);
    }
  }
  const inRange = (what: string, index: number | null, size: number, allowNone = false): void => {
    if (index === null || (allowNone && index === -1)) return;
    if (!Number.isInteger(index) || index < 0 || index >= size) {
      throw new PayloadError(`${what} ${String(index)} is out of range (${size} entries)`);
    }
  };
  for (let i = 0; i < n; i++) {
    inRange("value type", values.type[i], payload.types.length);
    inRange("value line", values.line[i], payload.lines.length);
    inRange("value body", values.body[i], payload.bodies.length, true);
    inRange("value key stem", values.key_stem[i], payload.key_stems.length);
  }
  for (const io of [...payload.inputs, ...payload.outputs]) inRange("type", io.type, payload.types.length);
  for (const c of payload.collectives) inRange("group set", c.groups, payload.group_sets.length);
  const placed = new Set<number>();
  for (const entry of payload.lines) {
    for (const c of entry.collectives) {
      inRange("collective", c, payload.collectives.length);
      placed.add(c);
    }
  }
  if (placed.size !== payload.collectives.length) throw new PayloadError("a collective is on no source line");
  payload.bodies.forEach((b, i) => {
    inRange("body parent", b.parent, payload.bodies.length, true);
    if (b.parent >= i) throw new PayloadError(`body ${i} names a parent listed after it`);
  });

  const mesh = payload.mesh;
  const deviceCount = payload.devices?.count ?? 0;
  const meshSize = mesh ? mesh.sizes.reduce((a, b) => a * b, 1) : 0;
  if (mesh && meshSize !== deviceCount) {
    throw new PayloadError(`the mesh holds ${meshSize} devices but the payload lists ${deviceCount}`);
  }
  const ids = payload.devices ? expandRuns(payload.devices.id, deviceCount) : new Int32Array(0);
  let meshOfPartition: Int32Array | null = null;
  if (payload.assignment && deviceCount > 0) {
    meshOfPartition = expandRuns(payload.assignment);
    for (const k of meshOfPartition) {
      if (k < 0 || k >= deviceCount) throw new PayloadError(`the assignment names mesh position ${k}, out of range`);
    }
  }
  const bodyChain: number[][] = [];
  payload.bodies.forEach((b, i) => {
    bodyChain.push(b.parent >= 0 ? [...bodyChain[b.parent], i] : [i]);
  });
  return {
    payload,
    valueCount: n,
    deviceCount,
    ids,
    meshOfPartition,
    groupSets: payload.group_sets.map((set) => decodeGroups(set, meshOfPartition, deviceCount)),
    valueListingLine: values.listing_line,
    collectiveListingLine: payload.collectives.map((c) => c.listing_line),
    bodyChain,
    valueKeys: decodeValueKeys(payload.key_stems, values.key_stem),
  };
}

/**
 * Each value's key: its stem, then `#` and how many values before it name the same stem, where
 * that is not 0 (the n-th repeat of a line's call chain, primitive and scope; docs/program-payload.md).
 */
export function decodeValueKeys(stems: readonly string[], stemOfValue: readonly number[]): string[] {
  const seen = new Map<number, number>();
  return stemOfValue.map((stem) => {
    const before = seen.get(stem) ?? 0;
    seen.set(stem, before + 1);
    return before === 0 ? stems[stem] : `${stems[stem]}#${before}`;
  });
}

/**
 * A group set's groups as mesh positions: partition position p is the device
 * at mesh position `meshOfPartition[p]`. Null when the program's device
 * order is unknown (no mesh, or no assignment): the groups cannot be placed.
 */
export function decodeGroups(
  set: GroupSet,
  meshOfPartition: Int32Array | null,
  deviceCount: number,
): DeviceGroups | null {
  if (meshOfPartition === null || deviceCount === 0) return null;
  const toMesh = (p: number): number => {
    if (p < 0 || p >= meshOfPartition.length) throw new PayloadError(`a group names partition ${p}, out of range`);
    return meshOfPartition[p];
  };
  const flat = expandRuns(set.positions);
  const sizes = expandRuns(set.sizes);
  const groups: number[][] = [];
  const groupOf = new Int32Array(deviceCount).fill(-1);
  let at = 0;
  for (const size of sizes) {
    if (at + size > flat.length) throw new PayloadError("group sizes add up to more positions than listed");
    const group = Array.from(flat.subarray(at, at + size), toMesh);
    for (const k of group) groupOf[k] = groups.length;
    groups.push(group);
    at += size;
  }
  if (at !== flat.length) throw new PayloadError("group sizes add up to fewer positions than listed");
  const pairs: [number, number][] = [];
  if (set.sources && set.targets) {
    const sources = expandRuns(set.sources);
    const targets = expandRuns(set.targets, sources.length);
    sources.forEach((s, i) => {
      pairs.push([toMesh(s), toMesh(targets[i])]);
    });
  }
  return { groups, groupOf, pairs };
}

/** `file.py:12` (the file's last path part) or `In [3]:12` for a notebook cell; "" for no line. */
export function lineLabel(payload: ProgramPayload, file: number | null, line: number | null): string {
  if (file === null || line === null) return "";
  const named = payload.file_labels?.[file];
  if (named) return `${named}:${line}`;
  const path = payload.files[file] ?? "";
  const base = path.split(/[\\/]/).pop() ?? path;
  return `${base}:${line}`;
}

/** The source text of a line ("" when Python could not read it). */
export function lineText(payload: ProgramPayload, file: number | null, line: number | null): string {
  if (file === null || line === null || !payload.line_texts) return "";
  const found = payload.line_texts.find(([f, l]) => f === file && l === line);
  return found ? found[2] : "";
}

/** A call chain (innermost first) of the payload's `stacks`, or none. */
export function stackFrames(payload: ProgramPayload, stack: number | undefined): [number, number, string][] {
  if (stack === undefined || stack < 0 || !payload.stacks) return [];
  return payload.stacks[stack] ?? [];
}

/** The user's name for value i (the jaxpr's name in payloads from before labels). */
export function valueLabel(payload: ProgramPayload, i: number): string {
  return payload.values.label?.[i] ?? payload.values.name[i];
}

/** `1 collective`, `3 collectives`. */
export function plural(count: number, word: string, many = `${word}s`): string {
  return `${count} ${count === 1 ? word : many}`;
}

/** Partition spec text as JAX prints it, names unquoted: `P(x, (y, z))`, `P()` when replicated. */
export function specText(spec: readonly (readonly string[])[]): string {
  let end = spec.length;
  while (end > 0 && spec[end - 1].length === 0) end--;
  const entries = spec
    .slice(0, end)
    .map((axes) => (axes.length === 0 ? "None" : axes.length === 1 ? axes[0] : `(${axes.join(", ")})`));
  return `P(${entries.join(", ")})`;
}
