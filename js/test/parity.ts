/**
 * The parity cases written by tests/make_engine_parity_fixtures.py: starting
 * payloads, edits and the Python widget's answers. A missing file fails the
 * test that asks for it.
 */

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Edit } from "../engine/array/edits";
import type { Payload } from "../payload/array";
import { FIXTURE_DIR } from "./fixtures";

export type PythonAnswer = { payload: number; notice: string } | { error: { message: string; source: string } };

export interface ParityCase {
  id: number;
  start: number;
  edit: Edit;
  python: PythonAnswer;
  kernel_only: null | "devices" | "manual" | "memory";
}

export interface ParityFile {
  seed: number;
  machine_devices: number;
  payloads: Payload[];
  cases: ParityCase[];
  /** Python's `repr` and `strip` of characters and strings: `[text, answer]`. */
  python_text: { repr: [string, string][]; strip: [string, string][] };
}

export const PARITY_PATH = join(FIXTURE_DIR, "parity", "cases.json");

let cached: ParityFile | null = null;

export function loadParity(): ParityFile {
  if (cached) return cached;
  if (!existsSync(PARITY_PATH)) {
    throw new Error(
      `missing ${PARITY_PATH}: run \`python tests/make_engine_parity_fixtures.py js/fixtures/parity\` first`,
    );
  }
  cached = JSON.parse(readFileSync(PARITY_PATH, "utf8")) as ParityFile;
  return cached;
}

/** The first case that `accept` takes, with its payloads resolved (fails the test when none does). */
export function findCase(accept: (c: ParityCase, start: Payload) => boolean): {
  case: ParityCase;
  start: Payload;
  answer: Payload | null;
} {
  const data = loadParity();
  const found = data.cases.find((c) => accept(c, data.payloads[c.start]));
  if (!found) throw new Error("no parity case fits this test");
  const answer = "payload" in found.python ? data.payloads[found.python.payload] : null;
  return { case: found, start: data.payloads[found.start], answer };
}
