/**
 * The tree's header: how many leaves and arrays, their logical bytes, the
 * mesh they live on, and the least and most any device holds (per memory
 * kind too), the lines the terminal report starts with.
 */

import type { Tree } from "../payload/tree";
import { formatBytesExact, formatCount } from "../util/bytes";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { formatBytes } from "../util/ranges";
import { extent, spreadText } from "./heatMap";

function meshLine(tree: Tree): HTMLElement | null {
  const meshes = tree.payload.meshes;
  if (meshes.length === 0) return null;
  const line = h("p", { class: "sv-summary-mesh" });
  meshes.forEach((mesh, m) => {
    if (m > 0) line.append(" \u00b7 ");
    line.append(meshes.length > 1 ? `mesh ${m}: ` : "mesh ");
    mesh.names.forEach((name, a) => {
      const mark = h("span", { class: "sv-axis-ref" }, [name]);
      mark.style.setProperty("--sv-axis", axisColor(a));
      line.append(a > 0 ? " " : "", mark, `=${mesh.sizes[a]}`);
    });
    const types = Array.from(new Set(mesh.types));
    line.append(` (${types.join(", ")}${mesh.abstract ? ", AbstractMesh: virtual devices" : ""})`);
  });
  return line;
}

export function renderTreeSummary(tree: Tree): HTMLElement {
  const other = tree.leafCount - tree.arrayCount;
  const counts = `${formatCount(tree.leafCount)} ${tree.leafCount === 1 ? "leaf" : "leaves"}: ${formatCount(tree.arrayCount)} ${tree.arrayCount === 1 ? "array" : "arrays"}${other ? ` and ${other} other` : ""}`;
  const summary = h("div", { class: "sv-summary", "data-role": "tree-summary" }, [
    h("p", { class: "sv-summary-head" }, [
      h("strong", {}, [counts]),
      `, ${formatBytes(tree.payload.total_bytes)} in all`,
    ]),
  ]);
  const mesh = meshLine(tree);
  if (mesh) summary.append(mesh);
  if (tree.deviceCount > 0) {
    const [low, high] = extent(tree.deviceTotals);
    const spread = low === high ? `each holds ${formatBytes(high)}` : `hold ${spreadText(low, high)} each`;
    const most = (kind: string): string => formatBytes(extent(tree.deviceBytes.get(kind) ?? new Float64Array())[1]);
    const kinds =
      tree.memoryKinds.length > 1 ? ` (${tree.memoryKinds.map((k) => `${k} up to ${most(k)}`).join(", ")})` : "";
    const line = h("p", { "data-role": "device-range" }, [
      `${formatCount(tree.deviceCount)} ${tree.deviceCount === 1 ? "device" : "devices"} ${spread}${kinds}`,
    ]);
    line.title = `the fullest device holds ${formatBytesExact(high)}`;
    summary.append(line);
  }
  return summary;
}
