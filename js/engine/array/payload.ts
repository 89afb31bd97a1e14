/**
 * The payload writer (docs/payload.md, version 3): a port of
 * src/shardviz/engine/payload.py. Keys come in the same order as Python
 * writes them, so a local payload and the kernel's serialise to the same
 * bytes.
 */

import type { DeviceColumns, DeviceKind, MeshInfo, Payload, Run } from "../../payload/array";
import { PAYLOAD_VERSION } from "../../payload/array";
import type { BlockAssignment } from "./blocks";
import { shardingCode } from "./codegen";
import { formatMesh, formatSpec } from "./grammar";
import { encodeRuns } from "./runs";

/** Per-device facts other than blocks, in mesh order, already run-encoded. */
export interface DeviceFacts {
  count: number;
  id: Run[];
  process: Run[];
  addressable: Run[];
  kind: Run[];
  virtual: boolean;
  machineOrder: boolean;
  coords?: Run[][];
  coreOnChip?: Run[];
  sliceIndex?: Run[];
  kinds: DeviceKind[];
  /** The ids, expanded (copy code lists them for a mesh off the machine's order). */
  ids: ArrayLike<number>;
}

/** A layout as the local engine builds it: what `LayoutData` holds in Python. */
export interface LocalLayout {
  typeStr: string;
  dtype: string;
  itemsize: number;
  shape: number[];
  /** One list of mesh axis names per dimension, `[]` where unpartitioned. */
  spec: string[][];
  memoryKind: string;
  memoryKinds: string[];
  mesh: MeshInfo | null;
  shardingName: string;
  hasArray: boolean;
  processIndex: number;
  processCount: number;
  machineDevices: number;
  blocks: BlockAssignment;
  devices: DeviceFacts;
  arrayName: string | null;
  /** The spec the user set, where a mesh edit cut `spec` from it (Python's `asked_spec`). */
  userSpec?: string[][] | null;
}

export function shardShape(blocks: BlockAssignment): number[] {
  return blocks.bounds.map((cuts) => (cuts.length > 1 ? cuts[1] - cuts[0] : 0));
}

function deviceColumns(layout: LocalLayout): DeviceColumns {
  const facts = layout.devices;
  const columns: DeviceColumns = {
    count: facts.count,
    id: facts.id,
    tile: encodeRuns(layout.blocks.tile),
    replica: encodeRuns(layout.blocks.replica),
    process: facts.process,
    addressable: facts.addressable,
    kind: facts.kind,
    virtual: facts.virtual,
    machine_order: facts.machineOrder,
  };
  if (facts.coords !== undefined) columns.coords = facts.coords;
  if (facts.coreOnChip !== undefined) columns.core_on_chip = facts.coreOnChip;
  if (facts.sliceIndex !== undefined) columns.slice_index = facts.sliceIndex;
  return columns;
}

export function layoutPayload(layout: LocalLayout): Payload {
  const { mesh } = layout;
  const shard = shardShape(layout.blocks);
  return {
    kind: "array",
    version: PAYLOAD_VERSION,
    type_str: layout.typeStr,
    dtype: layout.dtype,
    shape: layout.shape.slice(),
    itemsize: layout.itemsize,
    spec: layout.spec.map((axes) => axes.slice()),
    shard_shape: shard,
    shard_bytes: shard.reduce((a, b) => a * b, 1) * layout.itemsize,
    memory_kind: layout.memoryKind,
    memory_kinds: layout.memoryKinds.slice(),
    mesh:
      mesh === null
        ? null
        : { names: mesh.names.slice(), sizes: mesh.sizes.slice(), types: mesh.types.slice(), abstract: mesh.abstract },
    tiles: { bounds: layout.blocks.bounds.map(encodeRuns) },
    devices: deviceColumns(layout),
    kinds: layout.devices.kinds.map((k) => ({ platform: k.platform, device_kind: k.device_kind })),
    process_index: layout.processIndex,
    process_count: layout.processCount,
    machine_devices: layout.machineDevices,
    sharding: layout.shardingName,
    spec_text: formatSpec(layout.spec),
    mesh_text: mesh === null ? "" : formatMesh(mesh.names, mesh.sizes, mesh.types),
    array_name: layout.arrayName,
    code: shardingCode(
      {
        shape: layout.shape,
        dtype: layout.dtype,
        spec: layout.spec,
        memoryKind: layout.memoryKind,
        mesh,
        ids: layout.devices.ids,
        machineOrder: layout.devices.machineOrder,
        machineDevices: layout.machineDevices,
        hasArray: layout.hasArray,
      },
      layout.arrayName,
    ),
    has_array: layout.hasArray,
    ...(layout.userSpec ? { user_spec: layout.userSpec.map((axes) => axes.slice()) } : {}),
  };
}
