/**
 * A refusal of the local engine: the same message the Python engine's
 * `ShardingError` carries, and (for an edit) the control it belongs beside.
 */

/** The controls an edit's refusal can belong to, as the Python widget names them. */
export type EditSource = "spec" | "mesh" | "memory_kind";

export class LayoutError extends Error {
  override name = "LayoutError";
}

/** A refusal that knows which control caused it (Python's `EditError`). */
export class EditError extends LayoutError {
  override name = "EditError";
  readonly source: EditSource;

  constructor(message: string, source: EditSource) {
    super(message);
    this.source = source;
  }
}
