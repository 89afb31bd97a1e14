/**
 * The inspector: the facts of the device or tile under the pointer or focus
 * (or the pinned one when nothing else is), in a panel whose size does not
 * depend on what it shows; and under it the pin bar, which names the pinned
 * device or tile and, for a device of a real array, offers a bounded preview
 * of its values.
 */

import type { Layout, PreviewReply } from "../payload/array";
import { h } from "../util/dom";
import { formatBytes, formatIndex } from "../util/ranges";
import {
  coordText,
  deviceKindText,
  holderIdsText,
  isRemote,
  isVirtual,
  physicalFacts,
  platformLabel,
  tileIndexText,
} from "./describe";
import type { Target } from "./interaction";

export type PreviewState =
  | { device: number; status: "loading" }
  | { device: number; status: "done"; reply: PreviewReply };

/** `16 B`, or `4.0 KiB (4096 B)` where the rounding hides the exact count. */
function bytesText(bytes: number): string {
  const short = formatBytes(bytes);
  return bytes < 1024 ? short : `${short} (${bytes} B)`;
}

function shapeText(shape: readonly number[]): string {
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}

type Fact = readonly [term: string, value: string];

/** The facts the inspector lists for the device at mesh position k. */
export function deviceFacts(layout: Layout, k: number): Fact[] {
  const { payload } = layout;
  const t = layout.tileOf[k];
  const copies = layout.holders[t].length;
  const facts: Fact[] = [];
  const kind = deviceKindText(layout, k);
  if (kind) facts.push(["platform", kind]);
  // Virtual devices belong to no process: they are numbers on a what-if mesh.
  if (!isVirtual(layout)) {
    facts.push(["process", `${layout.process[k]}${isRemote(layout, k) ? " (not addressable from this process)" : ""}`]);
  }
  facts.push(["mesh coords", coordText(layout, k) || "none (single device)"]);
  facts.push(...physicalFacts(layout, k));
  facts.push(
    ["tile", `t${t} ${tileIndexText(layout, t)}`],
    ["shard shape", shapeText(payload.shard_shape)],
    ["bytes", bytesText(payload.shard_bytes)],
    // Counted from 1, as one counts copies; the payload's replica id counts from 0.
    ["replica", copies > 1 ? `${layout.replica[k] + 1} of ${copies} copies` : "only copy"],
    ["memory kind", payload.memory_kind],
  );
  return facts;
}

/** The facts the inspector lists for tile t. */
export function tileFacts(layout: Layout, t: number): Fact[] {
  const { payload } = layout;
  return [
    ["index", tileIndexText(layout, t)],
    ["devices", `${platformLabel(layout)} ${holderIdsText(layout, t)}`],
    ["copies", String(layout.holders[t].length)],
    ["shard shape", shapeText(payload.shard_shape)],
    ["bytes", `${bytesText(payload.shard_bytes)} each`],
    ["memory kind", payload.memory_kind],
  ];
}

/** The most rows either kind of target can list for this layout: the panel is sized for it. */
export function inspectorRows(layout: Layout): number {
  return Math.max(layout.deviceCount > 0 ? deviceFacts(layout, 0).length : 0, tileFacts(layout, 0).length);
}

export function targetTitle(layout: Layout, target: Target): string {
  if (target.kind === "tile") return `Tile t${target.tile}`;
  return `Device ${layout.ids[target.position]}${isVirtual(layout) ? " (virtual)" : ""}`;
}

/** The panel for `target` (a hint when null). `pinned` marks a target that is the pinned one. */
export function renderInspector(layout: Layout, target: Target | null, pinned: boolean): HTMLElement {
  const panel = h("section", {
    class: "sv-inspector",
    "aria-live": "polite",
    "data-role": "inspector",
    "data-showing": target ? target.kind : "none",
  });
  panel.style.setProperty("--sv-inspector-rows", String(inspectorRows(layout)));
  if (!target) {
    panel.append(
      h("p", { class: "sv-muted sv-hint" }, [
        "Hover or focus a device or a tile to see where it lives; click to pin it.",
      ]),
    );
    return panel;
  }
  const title = h("h3", { class: "sv-inspector-title" }, [targetTitle(layout, target)]);
  if (pinned) title.append(" ", h("span", { class: "sv-pin-tag" }, ["pinned"]));
  const facts = target.kind === "device" ? deviceFacts(layout, target.position) : tileFacts(layout, target.tile);
  const list = h("dl", {});
  for (const [term, value] of facts) list.append(h("dt", {}, [term]), h("dd", {}, [value]));
  panel.append(title, list);
  return panel;
}

export interface PinBarOptions {
  preview: PreviewState | null;
  /** Asks Python for a preview of device `id`; absent when there is no kernel. */
  onPreview?: (deviceId: number) => void;
  onUnpin: () => void;
  signal: AbortSignal;
}

/** One line naming the pinned target (or how to pin one), and the pinned device's value preview. */
export function renderPinBar(layout: Layout, pinned: Target | null, options: PinBarOptions): HTMLElement {
  const bar = h("div", { class: "sv-pin-bar", "data-role": "pin-bar" });
  if (!pinned) {
    bar.append(h("p", { class: "sv-muted" }, ["Click or press Enter on a device or tile to pin it."]));
    return bar;
  }
  const unpin = h("button", { type: "button", class: "sv-button", "data-role": "unpin" }, ["Unpin"]);
  unpin.title = "Unpin (Escape)";
  unpin.addEventListener("click", options.onUnpin, { signal: options.signal });
  const line = h("div", { class: "sv-pin-line" }, [
    h("span", { class: "sv-pin-tag" }, ["pinned"]),
    h("span", {}, [targetTitle(layout, pinned)]),
  ]);
  bar.append(line);
  if (pinned.kind === "device") line.append(...previewControls(layout, pinned.position, options));
  line.append(unpin);
  if (pinned.kind === "device") {
    const values = previewValues(layout, pinned.position, options.preview);
    if (values) bar.append(values);
  }
  return bar;
}

function previewControls(layout: Layout, k: number, options: PinBarOptions): HTMLElement[] {
  const id = layout.ids[k];
  const { onPreview } = options;
  if (!layout.payload.has_array) return [h("span", { class: "sv-muted" }, ["no array: nothing to preview"])];
  if (isRemote(layout, k)) {
    return [h("span", { class: "sv-muted" }, ["another process holds its values"])];
  }
  if (layout.addressable[k] !== 1 || !onPreview) return [];
  const button = h("button", { type: "button", class: "sv-button", "data-role": "preview" }, ["Preview values"]);
  button.addEventListener("click", () => onPreview(id), { signal: options.signal });
  return [button];
}

function previewValues(layout: Layout, k: number, state: PreviewState | null): HTMLElement | null {
  if (!state || state.device !== layout.ids[k]) return null;
  if (state.status === "loading") return h("p", { class: "sv-muted" }, ["Loading\u2026"]);
  const { reply } = state;
  if ("error" in reply) return h("p", { class: "sv-error", role: "alert", "data-source": "preview" }, [reply.error]);
  return renderValuesTable(reply);
}

/** The returned corner of the shard, with global row and column indices as headers. */
export function renderValuesTable(reply: Extract<PreviewReply, { values: unknown }>): HTMLElement {
  const table = h("table", { class: "sv-values", "data-role": "preview-table" });
  const width = reply.values[0]?.length ?? 0;
  const head = h("tr", {}, [h("th", {}, [""])]);
  for (let c = 0; c < width; c++) head.append(h("th", { scope: "col" }, [String(reply.col_start + c)]));
  table.append(h("thead", {}, [head]));
  const body = h("tbody", {});
  reply.values.forEach((values, r) => {
    const tr = h("tr", {}, [h("th", { scope: "row" }, [String(reply.row_start + r)])]);
    for (const v of values) tr.append(h("td", {}, [formatValue(v)]));
    body.append(tr);
  });
  table.append(body);
  const more = reply.rows > reply.values.length || reply.cols > width;
  const caption = h("caption", {}, [
    `shard ${formatIndex(reply.index)}${more ? `, first ${reply.values.length}\u00d7${width} of ${reply.rows}\u00d7${reply.cols}` : ""}`,
  ]);
  table.prepend(caption);
  return table;
}

function formatValue(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(4);
  return String(v);
}
