/**
 * Composes the editors' text grammars (docs/payload.md) from structured
 * choices. Python parses the result; the front end never parses these texts.
 */

import { formatSpec, nameText } from "../engine/array/grammar";
import type { AxisType, MeshInfo } from "../payload/array";

/** An axis name as the grammars read it: bare when it can be, quoted otherwise (the grammar's own). */
export const quoteName = nameText;

export interface MeshAxis {
  name: string;
  size: number;
  type: AxisType;
}

export function meshAxes(mesh: MeshInfo | null): MeshAxis[] {
  if (!mesh) return [];
  return mesh.names.map((name, i) => ({ name, size: mesh.sizes[i], type: mesh.types[i] }));
}

/** `x=2, y=4:auto`: Explicit axes carry no suffix, as with `jax.make_mesh`. */
export function composeMeshText(axes: readonly MeshAxis[]): string {
  return axes
    .map(({ name, size, type }) => `${quoteName(name)}=${size}${type === "Explicit" ? "" : `:${type.toLowerCase()}`}`)
    .join(", ");
}

/** The same mesh with every axis Explicit (what the "Explicit view" asks for). */
export function explicitMeshText(mesh: MeshInfo): string {
  return composeMeshText(meshAxes(mesh).map((axis) => ({ ...axis, type: "Explicit" })));
}

/** `x, None` / `(b, c), None`; trailing unpartitioned dimensions are dropped (the grammar's own). */
export const composeSpecText = formatSpec;

/**
 * A spec text as an editor box shows it: a fully replicated spec (Python
 * writes "") as `P()`, which both grammars read back as the same spec.
 */
export function shownSpecText(text: string): string {
  return text.trim() === "" ? "P()" : text;
}

/** A fresh axis name not already in the mesh. */
export function unusedAxisName(taken: readonly string[]): string {
  for (const candidate of ["x", "y", "z", "w", "u", "v"]) if (!taken.includes(candidate)) return candidate;
  let i = taken.length;
  while (taken.includes(`axis${i}`)) i++;
  return `axis${i}`;
}
