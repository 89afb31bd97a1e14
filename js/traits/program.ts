/**
 * The traits of the program view (names are binding: src/shardviz/widgets/program.py),
 * and the host the program view reaches them through.
 */

import type { ProgramPayload } from "../payload/program";
import type { Host } from "./host";

export interface ProgramTraits {
  /** docs/program-payload.md; `{}` before Python has sent one. */
  payload: ProgramPayload | Record<string, never>;
  /** "" when the last edit was fine; else what went wrong, in JAX's words where JAX refused. */
  error: string;
  /** `input:<k>` for a bad spec of input k, `program` when the program failed under new shardings, `general`. */
  error_source: string;
  notice: string;
  /** One spec text per array input, in the array widget's grammar. */
  input_specs: string[];
  /** The reason panel's control: `show:N`, `try:N:K`, `back` (src/shardviz/program/fix_edits.py). */
  fix: string;
}

/** The program view's host: one spec editor per array input. */
export type ProgramHost = Host<ProgramTraits, "input_specs" | "fix">;
