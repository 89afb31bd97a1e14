/**
 * Tree payloads written by the real tree engine (`python tests/make_js_fixtures.py`
 * writes them through tests/tree_js_fixtures.py). A missing fixture fails the
 * test that asks for it.
 */

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TreePayload } from "../payload/tree";
import { FIXTURE_DIR } from "./fixtures";

export type TreeFixtureName =
  | "tree_concrete"
  | "tree_concrete_plain"
  | "tree_whatif_4096"
  | "tree_whatif_4096_plain"
  | "tree_multi_mesh"
  | "tree_empty"
  | "tree_flax_logical";

/** Any JSON file of the fixture folder, parsed. */
export function loadJson<T>(name: string): T {
  const path = join(FIXTURE_DIR, `${name}.json`);
  if (!existsSync(path)) {
    throw new Error(`missing fixture ${path}: run \`python tests/make_js_fixtures.py\` first`);
  }
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

/** A tree payload as the TreeWidget syncs it (rules_text and code included). */
export function loadTreeFixture(name: TreeFixtureName): TreePayload {
  return loadJson<TreePayload>(name);
}

/** What the widget answered a bad rules edit (tests/tree_js_fixtures.py `rules_error`). */
export interface RulesErrorFixture {
  rules_text: string;
  kept: string;
  error: string;
  error_source: string;
}
