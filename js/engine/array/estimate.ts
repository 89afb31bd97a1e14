/**
 * What an edit would give each device, before anything is sent: the editors
 * show it beside the control as the user types, and ask for a confirmation
 * when an edit would replicate a real array far beyond one device's share.
 *
 * The engine answers the edit (`applyEdit`), so the estimate is the bytes of
 * the very layout the edit makes, and nothing is estimated for an edit it
 * refuses. Where only a kernel can place the array (a mesh of other devices,
 * Manual axes, another memory) the bytes still follow from the texts: the
 * mesh sizes, the spec carried over as Python carries it (`adaptSpec`), and
 * the shape.
 */

import type { Payload } from "../../payload/array";
import { adaptSpec, applyEdit, type Edit } from "./edits";
import { parseMesh, parseSpec, type SpecEntry } from "./grammar";

/** The bytes each device would hold after an edit, beside what it holds now. */
export interface EditEstimate {
  bytesNow: number;
  bytesAfter: number;
}

/** Above this many bytes per device, an edit that grows a real array's share asks to be confirmed... */
export const CONFIRM_BYTES = 64 * 1024 * 1024;
/** ...when it also multiplies the share by at least this much. */
export const CONFIRM_GROWTH = 2;

/** True when an edit with this estimate should be confirmed before it moves a real array. */
export function needsConfirmation(payload: Payload, estimate: EditEstimate | null): boolean {
  if (!estimate || !payload.has_array) return false;
  return estimate.bytesAfter > CONFIRM_BYTES && estimate.bytesAfter >= estimate.bytesNow * CONFIRM_GROWTH;
}

/** The estimate for one edit; null when the edit would be refused or cannot be read. */
export function estimateEdit(payload: Payload, edit: Edit): EditEstimate | null {
  const outcome = applyEdit(payload, edit, { kernel: true });
  if (outcome.status === "applied") return { bytesNow: payload.shard_bytes, bytesAfter: outcome.payload.shard_bytes };
  if (outcome.status === "refused") return null;
  try {
    return fromTexts(payload, edit);
  } catch {
    return null; // a text the grammars refuse: the kernel will say why
  }
}

/** The estimate from the texts alone, for an edit only a kernel can place. */
function fromTexts(payload: Payload, edit: Edit): EditEstimate | null {
  const spec: SpecEntry[] = payload.spec.map((axes) => (axes.length > 0 ? axes : null));
  let sizes = new Map(payload.mesh ? payload.mesh.names.map((name, i) => [name, payload.mesh?.sizes[i] ?? 1]) : []);
  let entries = spec;
  if (edit.mesh_text !== undefined) {
    const request = parseMesh(edit.mesh_text);
    const mesh = { names: request.names, sizes: request.sizes, types: request.types, abstract: false };
    entries = adaptSpec(spec, payload.shape, payload.mesh?.names ?? [], mesh).spec;
    sizes = new Map(request.names.map((name, i) => [name, request.sizes[i]]));
  }
  if (edit.spec_text !== undefined) entries = parseSpec(edit.spec_text);
  let elements = 1;
  for (let d = 0; d < payload.shape.length; d++) {
    let cuts = 1;
    for (const axis of entries[d] ?? []) {
      const size = sizes.get(axis);
      if (size === undefined) return null;
      cuts *= size;
    }
    if (payload.shape[d] % cuts !== 0) return null;
    elements *= payload.shape[d] / cuts;
  }
  return { bytesNow: payload.shard_bytes, bytesAfter: elements * payload.itemsize };
}
