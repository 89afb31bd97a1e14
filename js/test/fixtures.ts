/**
 * Real payloads written by the engine (`python tests/make_js_fixtures.py`
 * writes js/fixtures/*.json). A missing fixture fails the test that asks
 * for it: these tests must never pass without the real engine's output.
 */

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Payload } from "../payload/array";

/** Tests run from the repository root (npm test, vitest.config.ts). */
export const FIXTURE_DIR = join(process.cwd(), "js", "fixtures");

export const FIXTURE_NAMES = [
  "mesh2x4_xy",
  "mesh3axis",
  "replicated_sum",
  "auto_mesh",
  "single_device",
  "scalar",
  "rank4",
  "pinned_host",
  "abstract_4096",
  "hostile_names",
  "multiprocess",
  "x_none",
  "rank5",
  "abstract_512",
  "abstract_256",
  "what_if_thin",
  "physical",
] as const;

export type FixtureName = (typeof FIXTURE_NAMES)[number];

export function fixturePath(name: FixtureName): string {
  return join(FIXTURE_DIR, `${name}.json`);
}

export function loadFixture(name: FixtureName): Payload {
  const path = fixturePath(name);
  if (!existsSync(path)) {
    throw new Error(`missing fixture ${path}: run \`python tests/make_js_fixtures.py\` first`);
  }
  return JSON.parse(readFileSync(path, "utf8")) as Payload;
}

/** What Python answers for the fixtures (written beside them by make_js_fixtures.py). */
export interface PythonAnswers {
  /** The terminal picture's [rows, columns] dims for each fixture (text/ranges.py picture_dims). */
  picture_dims: Record<FixtureName, [number | null, number | null]>;
  /** Typed edits and the bytes per device JAX reports after them (null: refused). */
  edit_estimates: {
    fixture: FixtureName;
    trait: "spec_text" | "mesh_text";
    text: string;
    bytes: number | null;
    error: string;
  }[];
  /** `[count, format_bytes(count)]` as Python writes them. */
  format_bytes: [number, string][];
  /** `[seconds, format_seconds(seconds)]` as Python writes them. */
  format_seconds: [number, string][];
}

export function loadPythonAnswers(): PythonAnswers {
  const path = join(FIXTURE_DIR, "python_answers.json");
  if (!existsSync(path)) {
    throw new Error(`missing ${path}: run \`python tests/make_js_fixtures.py\` first`);
  }
  return JSON.parse(readFileSync(path, "utf8")) as PythonAnswers;
}
