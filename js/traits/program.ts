/**
 * The traits of the program view (names are binding: src/shardviz/widgets/program.py),
 * and the narrow interface the program view uses to reach them. Only the
 * entries (js/widget.ts, the export page) implement it.
 */

import type { ProgramPayload } from "../payload/program";

export interface ProgramTraits {
  /** docs/program-payload.md; `{}` before Python has sent one. */
  payload: ProgramPayload | Record<string, never>;
  /** "" when the last edit was fine; else what went wrong, in JAX's words where JAX refused. */
  error: string;
  /** `input:<k>` for a bad spec of input k, `program` when the program failed under new shardings, `general`. */
  error_source: string;
  notice: string;
  /** One spec text per array input, in the array widget's grammar (the only trait the front end writes). */
  input_specs: string[];
}

export const PROGRAM_TRAIT_NAMES: readonly (keyof ProgramTraits)[] = [
  "payload",
  "error",
  "error_source",
  "notice",
  "input_specs",
];

export interface ProgramHost {
  readonly readOnly: boolean;
  /** Why nothing can be edited (a saved page). */
  readonly note?: string;
  get<K extends keyof ProgramTraits>(key: K): ProgramTraits[K];
  /** Records an edit (set + save_changes). Called only from user events, never from a change handler. */
  edit(key: "input_specs", value: string[]): void;
  /** True while an edit sent to the kernel awaits its answer; absent where there is no kernel. */
  editsInFlight?: () => boolean;
}
