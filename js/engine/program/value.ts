/**
 * A program value's layout, in the browser: the array payload Python's
 * `describe` writes for an array of the value's shape, dtype, sharding and
 * memory kind, built from the program payload (its mesh and device columns
 * once, each value's row of `types`). Where the sharding is unknown the
 * answer says so and why; nothing is guessed.
 */

import type { Payload } from "../../payload/array";
import { expandRuns } from "../../payload/array";
import type { Program } from "../../payload/program";
import { deviceFacts, deviceGrid, type MeshContext, placeOnMesh } from "../array/place";

export type ValueLayout =
  | { status: "local"; payload: Payload }
  /** Its sharding is unknown; `reason` is Python's note. */
  | { status: "unknown"; reason: string }
  /** Laid out with no mesh: the whole array on these devices. */
  | { status: "no-mesh"; deviceIds: number[] }
  /** A payload from before types carried their itemsize. */
  | { status: "old-payload" };

/** The program's mesh and devices for the placement engine; null without a mesh. */
export function programContext(program: Program): MeshContext | null {
  const { mesh, devices, kinds, memory_kinds, machine_devices, process_index, process_count } = program.payload;
  if (!mesh || !devices) return null;
  return {
    mesh,
    devices: deviceFacts(devices, kinds),
    memoryKinds: memory_kinds,
    machineDevices: machine_devices,
    processIndex: process_index,
    processCount: process_count,
  };
}

/** The layout of row `t` of the payload's `types`. */
export function typeLayout(program: Program, t: number, context: MeshContext | null, unknownReason = ""): ValueLayout {
  const row = program.payload.types[t];
  if (row.spec === null || row.memory_kind === null) {
    return { status: "unknown", reason: unknownReason || "shardviz found no sharding for it" };
  }
  if (row.devices !== undefined || context === null) {
    return { status: "no-mesh", deviceIds: row.devices ? Array.from(expandRuns(row.devices)) : [] };
  }
  if (row.itemsize === undefined) return { status: "old-payload" };
  return {
    status: "local",
    payload: placeOnMesh(
      {
        typeStr: row.type_str,
        dtype: row.dtype,
        itemsize: row.itemsize,
        shape: row.shape,
        spec: row.spec,
        memoryKind: row.memory_kind,
      },
      context,
    ),
  };
}

/** Value i's layout (see ValueLayout). */
export function valueLayout(
  program: Program,
  i: number,
  context: MeshContext | null = programContext(program),
): ValueLayout {
  const { values, notes } = program.payload;
  return typeLayout(program, values.type[i], context, notes[values.note[i]] ?? "");
}

/** The program mesh's devices, one block each (see `deviceGrid`); null without a mesh. */
export function programDeviceGrid(program: Program): Payload | null {
  const context = programContext(program);
  return context ? deviceGrid(context) : null;
}
