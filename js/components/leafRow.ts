/**
 * One row of the leaf table: path, type with each `@axis` marked in its mesh
 * axis colour, spec, bytes per device and copies, and the key that says when a
 * drawn row can be kept as it is.
 */

import type { Tree } from "../payload/tree";
import { leafAxisNames, leafLogical, leafSpec, leafType } from "../payload/tree";
import { formatBytesExact } from "../util/bytes";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { formatBytes } from "../util/ranges";
import { splitTypeString } from "./typeLine";

/** Everything a row shows: equal keys draw equal rows. */
export function leafRowKey(tree: Tree, leaf: number, at: number, selected: boolean, active: boolean): string {
  const g = tree.group[leaf];
  const group = g < 0 ? null : tree.payload.groups[g];
  const state = `${selected ? 1 : 0}${active ? 1 : 0}`;
  return `${leaf}|${at}|${state}|${tree.paths[leaf]}|${tree.bytes[leaf]}|${group?.replication}|${group?.replicated.join(",")}|${tree.groupPositions[g]?.length}|${leafType(tree, leaf)}|${leafAxisNames(tree, leaf).join(",")}|${leafLogical(tree, leaf)}|${leafSpec(tree, leaf)}`;
}

/** Leaf i's row at place `at` of the table (its key as `leafRowKey` makes it). */
export function leafRow(
  tree: Tree,
  i: number,
  at: number,
  key: string,
  selected: boolean,
  active: boolean,
): HTMLElement {
  const g = tree.group[i];
  const path = tree.paths[i] || "(root)";
  const row = h("div", {
    "data-key": key,
    role: "row",
    class: selected ? "sv-row sv-leaf-row sv-selected" : "sv-row sv-leaf-row",
    "data-role": "leaf",
    "data-leaf": i,
    "aria-rowindex": at + 2,
    "aria-selected": selected ? "true" : "false",
    tabindex: active ? 0 : -1,
  });
  row.append(h("div", { role: "gridcell", class: "sv-cell-path", title: path }, [path]));
  const type = h("div", { role: "gridcell", class: g < 0 ? "sv-cell-type sv-muted" : "sv-cell-type" });
  const text = leafType(tree, i);
  type.title = text;
  if (g < 0) {
    type.append(text);
  } else {
    const names = leafAxisNames(tree, i);
    for (const segment of splitTypeString(text, names)) {
      if (segment.kind === "text") {
        type.append(segment.text);
      } else {
        const mark = h("span", { class: "sv-axis-ref" }, [segment.name]);
        if (segment.axisIndex >= 0) mark.style.setProperty("--sv-axis", axisColor(segment.axisIndex));
        type.append(mark);
      }
    }
  }
  const logical = leafLogical(tree, i);
  if (logical) type.append(h("span", { class: "sv-logical sv-muted", "data-role": "logical" }, [`  ${logical}`]));
  row.append(type);
  const spec = leafSpec(tree, i);
  row.append(h("div", { role: "gridcell", class: "sv-cell-spec", "data-role": "leaf-spec", title: spec }, [spec]));
  if (g < 0) {
    row.append(h("div", { role: "gridcell", class: "sv-cell-bytes sv-muted" }, ["\u2013"]));
    row.append(h("div", { role: "gridcell", class: "sv-cell-copies sv-muted" }, ["\u2013"]));
    return row;
  }
  const group = tree.payload.groups[g];
  const bytes = tree.bytes[i];
  row.append(
    h("div", { role: "gridcell", class: "sv-cell-bytes", title: formatBytesExact(bytes) }, [formatBytes(bytes)]),
  );
  const holders = tree.groupPositions[g].length;
  const copies = group.replication;
  const over = group.replicated.length > 0 ? `, replicated over ${group.replicated.join(", ")}` : "";
  row.append(
    h(
      "div",
      {
        role: "gridcell",
        class: "sv-cell-copies",
        title: `${copies} ${copies === 1 ? "copy" : "copies"} of each element on ${holders} ${holders === 1 ? "device" : "devices"}${over}`,
      },
      // One notation for every row: ×1 beside ×4, not "1" beside "×4".
      [`\u00d7${copies}`],
    ),
  );
  return row;
}
