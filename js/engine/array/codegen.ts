/**
 * "Copy code": Python source that rebuilds a layout's mesh and sharding and
 * re-places the array, a port of src/shardviz/engine/codegen.py. It defines
 * only `layout_*` names and says so in its first line.
 */

import type { AxisType, MeshInfo } from "../../payload/array";
import { pyList, pyRepr, pyTuple } from "./pytext";

export const PLACEHOLDER = "ARRAY";

/** What the code needs to know about a layout. */
export interface CodeSubject {
  shape: readonly number[];
  dtype: string;
  spec: readonly (readonly string[])[];
  memoryKind: string;
  mesh: MeshInfo | null;
  /** Device ids in mesh order. */
  ids: ArrayLike<number>;
  machineOrder: boolean;
  machineDevices: number;
  hasArray: boolean;
}

/** `P('x', ('a', 'b'), None)`: one entry per dimension, explicit rather than terse. */
export function specSource(spec: readonly (readonly string[])[]): string {
  const parts = spec.map((axes) => {
    if (axes.length === 0) return "None";
    if (axes.length === 1) return pyRepr(axes[0]);
    return `(${axes.map(pyRepr).join(", ")})`;
  });
  return `P(${parts.join(", ")})`;
}

const ints = (values: readonly number[]): string => pyTuple(values.map(String));
const names = (values: readonly string[]): string => pyTuple(values.map(pyRepr));

function axisTypesArg(types: readonly AxisType[]): string {
  const listed = types.map((t) => `AxisType.${t}`).join(", ");
  return types.length === 1 ? `(${listed},)` : `(${listed})`;
}

/** make_mesh when the mesh takes the machine's first devices in order, else a Mesh over explicit ids. */
function realMeshSource(subject: CodeSubject, mesh: MeshInfo, typesArg: string): [string[], string] {
  const count = subject.ids.length;
  if (subject.machineOrder) {
    const devices = count === subject.machineDevices ? "" : `, devices=jax.devices()[:${count}]`;
    return [
      [`layout_mesh = jax.make_mesh(${ints(mesh.sizes)}, ${names(mesh.names)}, axis_types=${typesArg}${devices})`],
      "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P",
    ];
  }
  const ids = pyList(Array.from(subject.ids, String));
  return [
    [
      "layout_devices_by_id = {d.id: d for d in jax.devices()}",
      `layout_devices = np.array([layout_devices_by_id[i] for i in ${ids}]).reshape(${ints(mesh.sizes)})`,
      `layout_mesh = Mesh(layout_devices, ${names(mesh.names)}, axis_types=${typesArg})`,
    ],
    "import numpy as np\nfrom jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P",
  ];
}

/** Source that rebuilds the layout's mesh and sharding and re-places the array (`arrayName` null: ARRAY). */
export function shardingCode(subject: CodeSubject, arrayName: string | null): string {
  const name = arrayName || PLACEHOLDER;
  const memory = subject.memoryKind === "device" ? "" : `, memory_kind=${pyRepr(subject.memoryKind)}`;
  const { mesh } = subject;
  let body: string[];
  let imports: string;
  if (mesh === null) {
    body = [
      `layout_device = next(d for d in jax.devices() if d.id == ${subject.ids[0]})`,
      `layout_sharding = jax.sharding.SingleDeviceSharding(layout_device${memory})`,
    ];
    imports = "";
  } else {
    const typesArg = axisTypesArg(mesh.types);
    if (mesh.abstract) {
      body = [`layout_mesh = AbstractMesh(${ints(mesh.sizes)}, ${names(mesh.names)}, axis_types=${typesArg})`];
      imports = "from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P";
    } else {
      [body, imports] = realMeshSource(subject, mesh, typesArg);
    }
    body.push(`layout_sharding = NamedSharding(layout_mesh, ${specSource(subject.spec)}${memory})`);
  }
  const defined = body.map((line) => line.split(" = ")[0]).join(", ");
  let tail: string[];
  let note: string;
  if (subject.hasArray) {
    tail = [`${name} = jax.device_put(${name}, layout_sharding)`];
    note = `# Defines ${defined}; re-places ${name} on this layout.`;
    if (arrayName === null) note += ` Replace ${PLACEHOLDER} with your array.`;
  } else {
    tail = [
      `layout_struct = jax.ShapeDtypeStruct(${ints(subject.shape)}, jax.numpy.${subject.dtype}, sharding=layout_sharding)`,
    ];
    note = `# Defines ${defined}, layout_struct (a what-if array with no data).`;
  }
  const head = [note, "import jax", ...(imports ? [imports] : [])];
  return [...head, "", ...body, ...tail].join("\n");
}
