/**
 * One leaf of a tree, laid out in the browser: the array payload that
 * Python's `TreeLayout.leaf_layout(i).to_json()` sends, built from the tree
 * payload alone for a leaf on a mesh (its mesh, device columns, spec, shape,
 * dtype and memory kind are all there). A leaf with no mesh (a sharding JAX
 * describes only through index maps, or one device) is the kernel's to lay
 * out; so is a leaf of a payload too old to carry its mesh's memory kinds.
 */

import type { DeviceKind, Payload, Run } from "../../payload/array";
import type { Tree } from "../../payload/tree";
import { leafType } from "../../payload/tree";
import type { DeviceFacts } from "../array/payload";
import { deviceGrid, type MeshContext, placeOnMesh } from "../array/place";
import { encodeRuns } from "../array/runs";

/** Why the browser cannot lay out a leaf itself. */
export type LeafRefusal = "not-array" | "no-mesh" | "old-payload";

export type LeafLayoutOutcome = { status: "local"; payload: Payload } | { status: LeafRefusal };

/** The device facts of mesh `m`'s devices, in its mesh order, as a leaf's own layout lists them. */
export function meshDevices(tree: Tree, m: number): DeviceFacts {
  const mesh = tree.payload.meshes[m];
  const positions = tree.meshPositions[m];
  const count = positions.length;
  const ids = new Int32Array(count);
  const process = new Int32Array(count);
  const addressable = new Int32Array(count);
  const kind = new Int32Array(count);
  // Device kinds are numbered by first appearance in this mesh's order, as Python numbers them per mesh.
  const local = new Map<number, number>();
  const kinds: DeviceKind[] = [];
  for (let k = 0; k < count; k++) {
    const p = positions[k];
    ids[k] = tree.ids[p];
    process[k] = tree.process[p];
    addressable[k] = tree.addressable[p];
    const global = tree.kind[p];
    let index = local.get(global);
    if (index === undefined) {
      index = kinds.length;
      local.set(global, index);
      const known = tree.payload.kinds[global];
      kinds.push({ platform: known.platform, device_kind: known.device_kind });
    }
    kind[k] = index;
  }
  return {
    count,
    id: encodeRuns(ids),
    process: encodeRuns(process),
    addressable: encodeRuns(addressable),
    kind: encodeRuns(kind),
    virtual: mesh.abstract,
    machineOrder: mesh.machine_order ?? false,
    coords: mesh.coords?.map((column: Run[]) => column.map((run) => [...run] as Run)),
    coreOnChip: mesh.core_on_chip,
    sliceIndex: mesh.slice_index,
    kinds,
    ids,
  };
}

/** Mesh `m` of a tree with its devices, as the placement engine takes it; null for a payload too old. */
function meshContext(tree: Tree, m: number): MeshContext | null {
  const mesh = tree.payload.meshes[m];
  const machineDevices = tree.payload.machine_devices;
  if (mesh.memory_kinds === undefined || machineDevices === undefined) return null;
  return {
    mesh: { names: mesh.names, sizes: mesh.sizes, types: mesh.types, abstract: mesh.abstract },
    devices: meshDevices(tree, m),
    memoryKinds: mesh.memory_kinds,
    machineDevices,
    processIndex: tree.payload.process_index,
    processCount: tree.payload.process_count,
  };
}

/** Leaf i's array payload, or why the browser leaves it to the kernel. */
export function leafLayout(tree: Tree, i: number): LeafLayoutOutcome {
  const g = tree.group[i];
  if (g === undefined || g < 0) return { status: "not-array" };
  const group = tree.payload.groups[g];
  if (group.mesh === null) return { status: "no-mesh" };
  const context = meshContext(tree, group.mesh);
  if (context === null) return { status: "old-payload" };
  return {
    status: "local",
    payload: placeOnMesh(
      {
        typeStr: leafType(tree, i),
        dtype: group.dtype,
        itemsize: group.itemsize,
        shape: tree.payload.leaves.shape[i],
        spec: group.spec,
        memoryKind: group.memory_kind,
        shardingName: group.sharding,
        hasArray: group.array,
      },
      context,
    ),
  };
}

/**
 * The first mesh's devices as an array layout with one block per device
 * (see `deviceGrid`): the memory heat map draws its cells from it. Null
 * without a mesh.
 */
export function deviceGridPayload(tree: Tree): Payload | null {
  const mesh = tree.payload.meshes[0];
  if (!mesh) return null;
  return deviceGrid({
    mesh: { names: mesh.names, sizes: mesh.sizes, types: mesh.types, abstract: mesh.abstract },
    devices: meshDevices(tree, 0),
    memoryKinds: mesh.memory_kinds ?? ["device"],
    machineDevices: tree.payload.machine_devices ?? tree.meshPositions[0].length,
    processIndex: tree.payload.process_index,
    processCount: tree.payload.process_count,
  });
}
