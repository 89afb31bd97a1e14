/**
 * What `str(jax.typeof(x))` prints for a NamedSharding layout (checked
 * against JAX itself through the parity fixtures):
 *
 * - each dimension is its extent; only the **Explicit** mesh axes that split
 *   it are annotated: one as `8@x`, several as `8@(x,y)` (major first). Auto
 *   and Manual axes are left out, so an all-Auto mesh prints `float32[8,16]`;
 * - `<host>` follows the dtype in `pinned_host` memory (other kinds print nothing);
 * - the dtype prefix is JAX's own (`float32`, a weak type's `~float32`, a
 *   canonicalised `float64`): it never changes with an edit, so it is taken
 *   from the type the payload already carries.
 */

import type { AxisType } from "../../payload/array";

const HOST = "<host>";

/** The dtype part of a type string: what precedes `[`, less a `<host>` memory mark. */
export function dtypePrefix(typeStr: string): string {
  const open = typeStr.indexOf("[");
  const head = open < 0 ? typeStr : typeStr.slice(0, open);
  return head.endsWith(HOST) ? head.slice(0, -HOST.length) : head;
}

export function formatTypeStr(
  prefix: string,
  memoryKind: string,
  shape: readonly number[],
  spec: readonly (readonly string[])[],
  names: readonly string[],
  types: readonly AxisType[],
): string {
  const explicit = new Set(names.filter((_, i) => types[i] === "Explicit"));
  const dims = shape.map((extent, d) => {
    const shown = (spec[d] ?? []).filter((axis) => explicit.has(axis));
    if (shown.length === 0) return String(extent);
    return shown.length === 1 ? `${extent}@${shown[0]}` : `${extent}@(${shown.join(",")})`;
  });
  return `${prefix}${memoryKind === "pinned_host" ? HOST : ""}[${dims.join(",")}]`;
}
