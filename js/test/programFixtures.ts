/**
 * Program payloads written by `shardviz.trace` from real compiles, and what
 * JAX says about the same programs (`python tests/make_js_fixtures.py`
 * writes them through tests/program_js_fixtures.py). A missing fixture
 * fails the test that asks for it.
 */

import type { AnyModel } from "@anywidget/types";
import type { ProgramPayload } from "../payload/program";
import type { SyncedTraits } from "../traits/array";
import type { ProgramTraits } from "../traits/program";
import widget from "../widget";
import { FakeModel } from "./fakeModel";
import { loadJson } from "./treeFixtures";

export const PROGRAM_NAMES = [
  "mlp",
  "scan_grad",
  "two_scans",
  "shard_map",
  "explicit",
  "permuted",
  "single_device",
  "hostile",
  "train_step",
  "bf16_step",
  "sub_axes",
  "relayout",
  "helper_twice",
  "layers",
  "pod_step",
  "nested",
] as const;

export type ProgramName = (typeof PROGRAM_NAMES)[number];

export function loadProgram(name: ProgramName): ProgramPayload {
  return loadJson<ProgramPayload>(`program_${name}`);
}

/** What JAX says about a program, read without shardviz (tests/program_js_fixtures.py `jax_truth`). */
export interface ProgramTruth {
  input_types: string[];
  output_types: string[];
  /** Every collective of the compiled module: device ids per group, or a permute's [source, target] ids. */
  collectives: {
    kind: string;
    groups: number[][] | null;
    pairs: number[][] | null;
    /** The module's result buffers: `[element type, bytes]` each, as XLA:CPU holds them. */
    results: [string, number][];
  }[];
  memory: { argument_bytes: number; output_bytes: number; temp_bytes: number } | null;
  flops: number | null;
}

export function programTruth(name: ProgramName): ProgramTruth {
  return loadJson<Record<string, ProgramTruth>>("program_truth")[name];
}

/** A value as Python's `Program.values` holds it (tests/program_js_fixtures.py `python_values`). */
export interface PythonValue {
  key: string;
  label: string;
  type_str: string;
  spec: string[][] | null;
  /** The file's last path part, or null for a value with no line (an input). */
  file: string | null;
  line: number | null;
  listing_line: number | null;
  scope: string;
  pass: number | null;
  passes: number | null;
  role: string;
  from: string;
}

export function pythonValues(name: ProgramName): PythonValue[] {
  return loadJson<Record<string, PythonValue[]>>("program_values")[name];
}

/** What ProgramWidget answered to spec edits of the MLP (tests/program_js_fixtures.py `widget_answers`). */
export interface ProgramAnswers {
  start: string[];
  good: { input_specs: string[]; payload: ProgramPayload; error: string; error_source: string };
  bad_spec: { sent: string[]; error: string; error_source: string };
  failing: { sent: string[]; error: string; error_source: string };
}

export function programAnswers(): ProgramAnswers {
  return loadJson<ProgramAnswers>("program_answers");
}

export interface RenderedProgram {
  el: HTMLElement;
  model: FakeModel;
  cleanup: () => void;
  /** Python changes program traits (set them all, then one change event each). */
  fromPython: (changes: Partial<ProgramTraits>) => void;
  /** The edits the front end saved. */
  saved: () => Partial<ProgramTraits>[];
}

/** Renders the widget entry with a fake model holding the program view's traits. */
export function renderProgram(payload: ProgramPayload, traits: Partial<ProgramTraits> = {}): RenderedProgram {
  const el = document.createElement("div");
  document.body.append(el);
  const model = new FakeModel(
    payload as unknown as SyncedTraits["payload"],
    { input_specs: (payload.inputs ?? []).map((i) => i.spec_text), ...traits } as unknown as Partial<SyncedTraits>,
  );
  const cleanup = widget.render({ model: model as unknown as AnyModel<never>, el });
  return {
    el,
    model,
    cleanup,
    fromPython: (changes) => model.fromPython(changes as unknown as Partial<SyncedTraits>),
    saved: () => model.saved as unknown as Partial<ProgramTraits>[],
  };
}
