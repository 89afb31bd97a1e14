/**
 * Two candidates side by side: each one's mesh on the mesh grid (its virtual
 * devices 0..N-1 in mesh order), and their collectives per source line with
 * the difference in bytes and time; lines that differ are marked.
 */

import { deviceFacts, deviceGrid } from "../engine/array/place";
import { decodePayload } from "../payload/array";
import { type CompareRow, pairLines } from "../payload/compare";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";

/** The program table's figure, named as it names it: a combined collective's operands each on their own line. */
/** The fill of a device of a mesh shown without an array. */
export const MESH_ONLY_FILL = "#d8dee4";

const SENT_TITLE = "bytes each device sends per call of the step (ring estimate), as the program's table counts them";

import { renderMeshGrid } from "./meshGrid";

/** Meshes of more devices are named, not drawn, beside each other. */
const GRID_LIMIT = 1024;

export function seconds(value: number | null): string {
  if (value === null) return "?";
  if (value < 1e-3) return `${(value * 1e6).toFixed(1)} us`;
  return value < 1 ? `${(value * 1e3).toFixed(2)} ms` : `${value.toFixed(2)} s`;
}

function signed(text: string, value: number): string {
  return value > 0 ? `+${text}` : value < 0 ? `-${text}` : "0";
}

function meshPicture(row: CompareRow, signal: AbortSignal): HTMLElement {
  const names = row.mesh.map(([name]) => name);
  const sizes = row.mesh.map(([, size]) => size);
  const count = sizes.reduce((a, b) => a * b, 1);
  const label = row.mesh.map(([name, size]) => `${name}=${size}`).join(" x ");
  if (count > GRID_LIMIT || count === 0) {
    return h("p", { class: "sv-muted", "data-role": "compare-mesh" }, [`mesh ${label}: ${count} devices`]);
  }
  const devices = deviceFacts(
    {
      count,
      id: [[0, 1, count]],
      process: [[0, 0, count]],
      addressable: [[1, 0, count]],
      kind: [[0, 0, count]],
      virtual: true,
      machine_order: false,
    },
    [{ platform: "virtual", device_kind: row.hardware }],
  );
  const layout = decodePayload(
    deviceGrid({
      mesh: { names, sizes, types: names.map(() => "Explicit"), abstract: true },
      devices,
      memoryKinds: ["device"],
      machineDevices: count,
      processIndex: 0,
      processCount: 1,
    }),
  );
  const none = () => {};
  // A mesh with no array on it: one neutral fill, not a tile colour per device as if one were drawn.
  const grid = renderMeshGrid(layout, { onHover: none, onFocus: none, onActivate: none }, signal, {
    fill: () => MESH_ONLY_FILL,
    label: "id",
  });
  return h("div", { class: "sv-compare-mesh", "data-role": "compare-mesh" }, [
    h("p", {}, [`mesh ${label}`]),
    grid.element,
  ]);
}

function entryCells(entry: readonly [string, string, string, number, number, number, string] | null): HTMLElement[] {
  return entry === null
    ? [h("td", {}, ["-"]), h("td", {}, ["-"])]
    : [h("td", {}, [formatBytes(entry[4])]), h("td", {}, [seconds(entry[5])])];
}

/** The side-by-side panel of rows `a` and `b`. */
export function renderSides(a: CompareRow, b: CompareRow, signal: AbortSignal): HTMLElement {
  const title = (row: CompareRow) => `${row.candidate} on ${row.hardware}: ${seconds(row.step_s)}, ${row.bound}-bound`;
  const rows = pairLines(a, b).map((pair) => {
    const bytes = (pair.b?.[4] ?? 0) - (pair.a?.[4] ?? 0);
    const time = (pair.b?.[5] ?? 0) - (pair.a?.[5] ?? 0);
    return h(
      "tr",
      {
        class: pair.differs ? "sv-compare-differs" : "",
        "data-role": "compare-line",
        "data-differs": String(pair.differs),
      },
      [
        h("td", {}, [pair.line]),
        h("td", {}, [`${pair.kind} over ${pair.axes}`]),
        ...entryCells(pair.a),
        ...entryCells(pair.b),
        h("td", { "data-role": "bytes-delta" }, [signed(formatBytes(Math.abs(bytes)), bytes)]),
        h("td", { "data-role": "time-delta" }, [signed(seconds(Math.abs(time)), time)]),
      ],
    );
  });
  const head = h("tr", {}, [
    h("th", {}, ["line"]),
    h("th", {}, ["collective"]),
    h("th", { title: SENT_TITLE }, [`${a.candidate} bytes per call`]),
    h("th", {}, [`${a.candidate} time`]),
    h("th", { title: SENT_TITLE }, [`${b.candidate} bytes per call`]),
    h("th", {}, [`${b.candidate} time`]),
    h("th", { title: SENT_TITLE }, ["bytes per call"]),
    h("th", {}, ["time"]),
  ]);
  return h("div", { class: "sv-compare-sides", "data-role": "compare-sides" }, [
    h("div", { class: "sv-compare-side-meshes" }, [
      h("div", {}, [h("h4", {}, [title(a)]), meshPicture(a, signal)]),
      h("div", {}, [h("h4", {}, [title(b)]), meshPicture(b, signal)]),
    ]),
    rows.length === 0
      ? h("p", { class: "sv-muted" }, ["Neither sends anything."])
      : h("table", { class: "sv-compare-lines" }, [h("thead", {}, [head]), h("tbody", {}, rows)]),
  ]);
}
