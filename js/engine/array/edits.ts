/**
 * An edit of the array view, answered from the current payload alone: the
 * semantics of `ArrayState.edited` (src/shardviz/array/placement.py) and
 * src/shardviz/array/edits.py, with the same refusals and notices.
 *
 * What the payload cannot tell is left to a kernel:
 * - a real mesh with another number of devices: Python takes other devices
 *   of the machine, which the payload does not list (a mesh larger than the
 *   machine is a what-if AbstractMesh, which needs none);
 * - placing a real array where JAX alone knows whether `device_put` works
 *   (Manual axes), or (with a live kernel) moving it to another memory kind.
 * With a kernel those are `kernel-only`: the front end waits for its answer.
 * Without one (a saved page) they are refused in plain words, except that a
 * what-if page on an AbstractMesh takes any mesh, staying virtual.
 */

import type { MeshInfo, Payload, Run } from "../../payload/array";
import { expandRuns } from "../../payload/array";
import { meshOrderBlocks } from "./blocks";
import { checkMemoryKind, checkSpec, specRepr } from "./checks";
import { EditError, type EditSource, LayoutError } from "./errors";
import { formatMesh, type MeshRequest, parseMesh, parseSpec, type SpecEntry } from "./grammar";
import { type DeviceFacts, layoutPayload } from "./payload";
import { pyRepr } from "./pytext";
import { dtypePrefix, formatTypeStr } from "./typeStr";

/** What the front end sends for one edit (the synced traits it sets). */
export interface Edit {
  spec_text?: string;
  mesh_text?: string;
  memory_kind?: string;
}

export interface EditContext {
  /** True when a live kernel will answer the edit too (a notebook); false on a saved page. */
  kernel: boolean;
}

export type EditOutcome =
  /** The new payload and the notice (`""` unless the spec was carried over to a new mesh). */
  | { status: "applied"; payload: Payload; notice: string }
  /** The edit is refused; `message` is Python's, word for word. */
  | { status: "refused"; message: string; source: EditSource }
  /** Only the kernel can answer (only with `kernel: true`). */
  | { status: "kernel-only"; reason: string };

/** The mesh an edit asks for, and where its devices come from. */
interface TargetMesh {
  info: MeshInfo;
  /** `same`: the payload's devices, reshaped in mesh order; `virtual`: devices 0..N-1 of an AbstractMesh. */
  devices: "same" | "virtual";
  /** False when the edit kept the very mesh (the same text), so the spec is not carried over. */
  changed: boolean;
}

/** Only a kernel can answer this edit. */
class KernelOnly extends Error {}

/** Runs a check or a parser; its refusal belongs beside `source`. */
function refuseAs<T>(source: EditSource, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof LayoutError && !(error instanceof EditError)) throw new EditError(error.message, source);
    throw error;
  }
}

const product = (values: readonly number[]): number => values.reduce((a, b) => a * b, 1);

function resolveMesh(payload: Payload, text: string | undefined, context: EditContext): TargetMesh | null {
  const current = payload.mesh;
  if (text === undefined) return current === null ? null : { info: current, devices: "same", changed: false };
  // The same text keeps the very mesh (and its device order).
  if (current !== null && text === payload.mesh_text) return { info: current, devices: "same", changed: false };
  const request = refuseAs("mesh", () => parseMesh(text));
  const needed = product(request.sizes);
  const info = (abstract: boolean): MeshInfo => ({
    names: request.names,
    sizes: request.sizes,
    types: request.types,
    abstract,
  });
  // A text for the very mesh (spelt otherwise) changes nothing, as JAX gives Python the same mesh.
  const changed = (next: MeshInfo): boolean => current === null || !sameMesh(current, next);
  // A what-if stays a what-if: its devices are numbered, whatever their count.
  if (current?.abstract) return { info: info(true), devices: "virtual", changed: changed(info(true)) };
  if (current !== null && payload.devices.count === needed)
    return { info: info(false), devices: "same", changed: changed(info(false)) };
  const machine = payload.machine_devices;
  if (needed <= machine) {
    // Python builds this mesh from the machine's first devices, which the payload does not list.
    if (context.kernel) throw new KernelOnly(`a mesh of ${needed} devices takes devices of the machine`);
    throw new EditError(ownDevicesOnly(request, needed, payload), "mesh");
  }
  if (!payload.has_array) return { info: info(true), devices: "virtual", changed: true };
  throw new EditError(
    `the mesh ${formatMesh(request.names, request.sizes, request.types)} needs ${needed} devices but ` +
      `${machineName(context)} has ${machine}; use at most ${machine}, or lay out a shape without an array ` +
      "for a what-if",
    "mesh",
  );
}

function sameMesh(a: MeshInfo, b: MeshInfo): boolean {
  return (
    a.abstract === b.abstract &&
    JSON.stringify([a.names, a.sizes, a.types]) === JSON.stringify([b.names, b.sizes, b.types])
  );
}

/**
 * The machine whose devices the payload counts: the kernel's (Python's words)
 * or, on a saved page, the one the page was saved on, which is all it knows.
 */
export function machineName(context: EditContext): string {
  return context.kernel ? "this machine" : "the machine this page was saved on";
}

function ownDevicesOnly(request: MeshRequest, needed: number, payload: Payload): string {
  const count = payload.devices.count;
  const own = `its own ${count} device${count === 1 ? "" : "s"}`;
  const whatIf = payload.has_array ? "" : `, or more than the machine's ${payload.machine_devices} as a what-if`;
  return (
    `the mesh ${formatMesh(request.names, request.sizes, request.types)} needs ${needed} devices, and this page ` +
    `can re-mesh only ${own}${whatIf}: it computes without a kernel, and only a kernel can take other devices ` +
    "of the machine"
  );
}

/** The spec carried over to a new mesh, and what changed on the way (Python's `adapt_spec`). */
export function adaptSpec(
  spec: readonly SpecEntry[],
  shape: readonly number[],
  oldNames: readonly string[],
  mesh: MeshInfo,
): { spec: SpecEntry[]; changes: string[] } {
  const sizes = new Map<string, number>(mesh.names.map((name, i) => [name, mesh.sizes[i]]));
  const renamed = renames(oldNames, mesh.names);
  const entries: SpecEntry[] = [];
  const changes: string[] = [];
  spec.forEach((entry, d) => {
    const kept: string[] = [];
    let cuts = 1;
    for (const axis of entry ?? []) {
      const name = renamed.get(axis) ?? axis;
      if (name !== axis) changes.push(`dimension ${d}: axis ${pyRepr(axis)} is now ${pyRepr(name)}`);
      const size = sizes.get(name);
      if (size === undefined) {
        changes.push(`dimension ${d}: dropped axis ${pyRepr(axis)}, which the new mesh lacks`);
        continue;
      }
      if (shape[d] % (cuts * size) !== 0) {
        changes.push(
          `dimension ${d}: dropped axis ${pyRepr(name)}, since ${name}=${size} no longer divides ${shape[d]}` +
            (kept.length > 0 ? " with the axes before it" : ""),
        );
        continue;
      }
      kept.push(name);
      cuts *= size;
    }
    entries.push(kept.length > 0 ? kept : null);
  });
  while (entries.length > 0 && entries[entries.length - 1] === null) entries.pop();
  return { spec: entries, changes };
}

/** Axes renamed in place: same position, a name neither mesh shares (meshes of as many axes). */
function renames(oldNames: readonly string[], newNames: readonly string[]): Map<string, string> {
  const renamed = new Map<string, string>();
  if (oldNames.length !== newNames.length) return renamed;
  oldNames.forEach((old, i) => {
    const name = newNames[i];
    if (old !== name && !newNames.includes(old) && !oldNames.includes(name)) renamed.set(old, name);
  });
  return renamed;
}

/** `spec` with the axes `adaptSpec` renames renamed, and nothing dropped (Python's `renamed_spec`). */
export function renamedSpec(spec: readonly SpecEntry[], oldNames: readonly string[], mesh: MeshInfo): SpecEntry[] {
  const renamed = renames(oldNames, mesh.names);
  return spec.map((entry) => (entry === null ? null : entry.map((axis) => renamed.get(axis) ?? axis)));
}

/** One list of axes per dimension, padded to `rank` (Python's `spec_entries`). */
function padded(spec: readonly SpecEntry[], rank: number): string[][] {
  return Array.from({ length: rank }, (_, d) => (spec[d] ?? []).slice());
}

/** `spec` without trailing unsplit dimensions (Python's `trimmed`). */
function trimmed(spec: readonly SpecEntry[]): SpecEntry[] {
  const entries = spec.slice();
  while (entries.length > 0 && (entries[entries.length - 1] ?? []).length === 0) entries.pop();
  return entries;
}

/**
 * The spec the user set carried over to a new mesh, and the notice saying
 * how (Python's `ArrayState._carried`). `cut` is true when the spec shown is
 * a cut of the one the user set (the payload's `user_spec`).
 */
function carried(
  asked: SpecEntry[],
  shown: SpecEntry[],
  cut: boolean,
  payload: Payload,
  mesh: MeshInfo,
): { spec: SpecEntry[]; notice: string } {
  const oldNames = payload.mesh?.names ?? [];
  const adapted = adaptSpec(asked, payload.shape, oldNames, mesh);
  if (!cut) {
    if (adapted.changes.length === 0) return { spec: shown, notice: "" };
    return { spec: adapted.spec, notice: `The spec changed with the mesh: ${adapted.changes.join("; ")}.` };
  }
  const said = specRepr(trimmed(renamedSpec(asked, oldNames, mesh)));
  if (adapted.changes.length > 0) {
    return {
      spec: adapted.spec,
      notice: `The spec you set, ${said}, fits this mesh only in part: ${adapted.changes.join("; ")}.`,
    };
  }
  return { spec: adapted.spec, notice: `The spec is ${said} again, as you set it: it fits this mesh.` };
}

function virtualDevices(count: number, platform: string): DeviceFacts {
  const zeros: Run[] = [[0, 0, count]];
  return {
    count,
    id: count === 1 ? [[0, 0, 1]] : [[0, 1, count]],
    process: zeros,
    addressable: zeros,
    kind: zeros,
    virtual: true,
    machineOrder: false,
    kinds: [{ platform, device_kind: "" }],
    ids: Int32Array.from({ length: count }, (_, k) => k),
  };
}

function payloadDevices(payload: Payload): DeviceFacts {
  const d = payload.devices;
  return {
    count: d.count,
    id: d.id,
    process: d.process,
    addressable: d.addressable,
    kind: d.kind,
    virtual: d.virtual,
    machineOrder: d.machine_order,
    coords: d.coords,
    coreOnChip: d.core_on_chip,
    sliceIndex: d.slice_index,
    kinds: payload.kinds,
    ids: expandRuns(d.id, d.count),
  };
}

function answer(payload: Payload, edit: Edit, context: EditContext): { payload: Payload; notice: string } {
  const source: EditSource =
    edit.mesh_text !== undefined ? "mesh" : edit.spec_text !== undefined ? "spec" : "memory_kind";
  const mesh = resolveMesh(payload, edit.mesh_text, context);
  let spec: SpecEntry[] =
    edit.spec_text === undefined
      ? payload.spec.map((axes) => (axes.length > 0 ? axes.slice() : null))
      : refuseAs("spec", () => parseSpec(edit.spec_text as string));
  const kind = edit.memory_kind ?? payload.memory_kind;
  if (!kind) throw new EditError(`memory_kind must be a non-empty string, not ${pyRepr(kind)}`, "memory_kind");
  const cut = edit.spec_text === undefined && payload.user_spec !== undefined;
  let asked: SpecEntry[] = cut
    ? (payload.user_spec ?? []).map((axes) => (axes.length > 0 ? axes.slice() : null))
    : spec.slice();
  let notice = "";
  if (edit.mesh_text !== undefined && edit.spec_text === undefined && mesh?.changed) {
    ({ spec, notice } = carried(asked, spec, cut, payload, mesh.info));
    asked = renamedSpec(asked, payload.mesh?.names ?? [], mesh.info);
  }
  // Python's check_target.
  if (mesh === null) {
    if (spec.some((entry) => entry !== null && entry.length > 0)) {
      throw new EditError("there is no mesh to split over; set a mesh first (e.g. x=2, y=4)", "spec");
    }
    throw new EditError("a single-device array has no mesh to edit; set a mesh first (e.g. x=2, y=4)", source);
  }
  refuseAs(source === "mesh" ? "mesh" : "spec", () => checkSpec(mesh.info, spec, payload.shape));
  // A virtual mesh addresses the kinds JAX allows on the machine, which is what the payload lists.
  refuseAs("memory_kind", () => checkMemoryKind(kind, payload.memory_kinds));
  if (payload.has_array) placeableHere(payload, mesh.info, kind, source, context);

  const rank = payload.shape.length;
  const shownAxes = padded(spec, rank);
  const askedAxes = padded(asked, rank);
  const userSpec = JSON.stringify(askedAxes) === JSON.stringify(shownAxes) ? null : askedAxes;
  const { names, sizes, types } = mesh.info;
  const devices =
    mesh.devices === "same"
      ? payloadDevices(payload)
      : virtualDevices(product(sizes), payload.devices.virtual ? (payload.kinds[0]?.platform ?? "") : "");
  // A what-if is typed afresh from its dtype (no weak type); a real array keeps its own.
  const prefix = dtypePrefix(payload.type_str);
  const typePrefix = payload.has_array ? prefix : prefix.replace(/^~/, "");
  return {
    payload: layoutPayload({
      typeStr: formatTypeStr(typePrefix, kind, payload.shape, shownAxes, names, types),
      dtype: payload.dtype,
      itemsize: payload.itemsize,
      shape: payload.shape.slice(),
      spec: shownAxes,
      memoryKind: kind,
      memoryKinds: payload.memory_kinds,
      mesh: mesh.info,
      shardingName: "NamedSharding",
      hasArray: payload.has_array,
      processIndex: payload.process_index,
      processCount: payload.process_count,
      machineDevices: payload.machine_devices,
      blocks: meshOrderBlocks(sizes, names, shownAxes, payload.shape),
      devices,
      arrayName: payload.array_name ?? null,
      userSpec,
    }),
    notice,
  };
}

/** Refuses (or leaves to the kernel) placing a real array where only JAX can say whether it goes. */
function placeableHere(payload: Payload, mesh: MeshInfo, kind: string, source: EditSource, context: EditContext): void {
  if (mesh.types.includes("Manual")) {
    if (context.kernel) throw new KernelOnly("JAX alone knows whether the array can be placed on Manual axes");
    throw new EditError(
      "placing the array on Manual axes is for JAX to judge, and this page has no kernel to ask; use Auto or Explicit axes here",
      source,
    );
  }
  if (context.kernel && kind !== payload.memory_kind) throw new KernelOnly("the kernel moves the array's memory");
}

/**
 * The answer to `edit` starting from `payload`: the new payload and notice,
 * a refusal with Python's message and control, or (with a kernel) that only
 * the kernel can answer. Never throws for bad input; `payload` is not changed.
 */
export function applyEdit(payload: Payload, edit: Edit, context: EditContext): EditOutcome {
  // A box's draft hint, its Enter's check for a large edit and the edit itself each ask for the same
  // answer in turn: the last is kept (payloads are never changed, so the same object means the same input).
  const key = JSON.stringify([edit, context.kernel]);
  if (lastAnswer?.payload === payload && lastAnswer.key === key) return lastAnswer.outcome;
  const outcome = answerOrRefusal(payload, edit, context);
  lastAnswer = { payload, key, outcome };
  return outcome;
}

let lastAnswer: { payload: Payload; key: string; outcome: EditOutcome } | null = null;

function answerOrRefusal(payload: Payload, edit: Edit, context: EditContext): EditOutcome {
  try {
    return { status: "applied", ...answer(payload, edit, context) };
  } catch (error) {
    if (error instanceof EditError) return { status: "refused", message: error.message, source: error.source };
    if (error instanceof KernelOnly) return { status: "kernel-only", reason: error.message };
    throw error;
  }
}
