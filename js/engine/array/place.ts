/**
 * Lay out an array of a given shape, dtype, spec and memory kind on a mesh
 * of known devices, as Python's `describe` would for an array of that
 * sharding with no data: the array payload (docs/payload.md) built in the
 * browser. The tree view lays its leaves out with it, the program view its
 * values; both payloads carry the mesh and its device columns once.
 */

import type { DeviceColumnRuns, DeviceKind, MeshInfo, Payload } from "../../payload/array";
import { expandRuns } from "../../payload/array";
import { meshOrderBlocks } from "./blocks";
import { type DeviceFacts, layoutPayload } from "./payload";

/** What a payload says about where its arrays live, apart from each array's own shape and spec. */
export interface MeshContext {
  mesh: MeshInfo;
  devices: DeviceFacts;
  memoryKinds: string[];
  machineDevices: number;
  processIndex: number;
  processCount: number;
}

/** One array to place: its type text, dtype, shape, spec and memory kind. */
export interface Placement {
  typeStr: string;
  dtype: string;
  itemsize: number;
  shape: number[];
  spec: string[][];
  memoryKind: string;
  shardingName?: string;
  hasArray?: boolean;
  arrayName?: string | null;
}

/** Device facts from run-encoded columns whose `kind` already indexes `kinds`. */
export function deviceFacts(columns: DeviceColumnRuns, kinds: readonly DeviceKind[]): DeviceFacts {
  return {
    count: columns.count,
    id: columns.id,
    process: columns.process,
    addressable: columns.addressable,
    kind: columns.kind,
    virtual: columns.virtual,
    machineOrder: columns.machine_order,
    coords: columns.coords,
    coreOnChip: columns.core_on_chip,
    sliceIndex: columns.slice_index,
    kinds: kinds.map((k) => ({ platform: k.platform, device_kind: k.device_kind })),
    ids: expandRuns(columns.id, columns.count),
  };
}

/** The array payload of `array` laid out on `context`'s mesh, equal to Python's for the same sharding. */
export function placeOnMesh(array: Placement, context: MeshContext): Payload {
  const { mesh } = context;
  const spec = array.spec.map((axes) => axes.slice());
  const shape = array.shape.slice();
  return layoutPayload({
    typeStr: array.typeStr,
    dtype: array.dtype,
    itemsize: array.itemsize,
    shape,
    spec,
    memoryKind: array.memoryKind,
    memoryKinds: context.memoryKinds,
    mesh: { names: mesh.names, sizes: mesh.sizes, types: mesh.types, abstract: mesh.abstract },
    shardingName: array.shardingName ?? "NamedSharding",
    hasArray: array.hasArray ?? false,
    processIndex: context.processIndex,
    processCount: context.processCount,
    machineDevices: context.machineDevices,
    blocks: meshOrderBlocks(mesh.sizes, mesh.names, spec, shape),
    devices: context.devices,
    arrayName: array.arrayName ?? null,
  });
}

/**
 * The mesh's devices as an array layout with one block per device: `int8[N]`
 * split over every mesh axis, so device k (mesh order) holds tile k. Pictures
 * that paint devices by something else (bytes held, collective groups) draw
 * the mesh grid from it.
 */
export function deviceGrid(context: MeshContext): Payload {
  const count = context.devices.count;
  return placeOnMesh(
    {
      typeStr: "",
      dtype: "int8",
      itemsize: 1,
      shape: [count],
      spec: [context.mesh.names.slice()],
      memoryKind: "device",
    },
    { ...context, memoryKinds: context.memoryKinds.length > 0 ? context.memoryKinds : ["device"] },
  );
}
