/**
 * The memory heat map: the existing mesh grid (DOM cells, a canvas past 512
 * devices) with each device painted by the bytes of the tree it holds, all
 * memory kinds together or one kind, with a legend. The grid's cells come
 * from the layout of an array with one block per device (its tile k is the
 * device at mesh position k), so lighting a "tile" lights one device. Devices outside the
 * first mesh (a leaf on a device of its own, another mesh's devices) follow
 * as a row of cells of their own. Devices are reported by their place in
 * the tree's device columns.
 */

import { type Layout, meshCoords } from "../payload/array";
import type { Tree } from "../payload/tree";
import { formatBytesExact, formatBytesShort } from "../util/bytes";
import { h, replaceChildren } from "../util/dom";
import { heatColour, heatGradient } from "../util/heat";
import { formatBytes } from "../util/ranges";
import type { PictureEvents, PictureView, Target } from "./interaction";
import { type DevicePaint, renderMeshGrid } from "./meshGrid";

/** "all" sums every memory kind. */
export type KindView = string;
export const ALL_KINDS = "all";

export interface HeatMapEvents {
  onHover: (place: number | null) => void;
  onFocus: (place: number | null) => void;
  onActivate: (place: number) => void;
}

/** Bytes per device place for a kind view. */
export function deviceValues(tree: Tree, kind: KindView): Float64Array {
  if (kind === ALL_KINDS) return tree.deviceTotals;
  return tree.deviceBytes.get(kind) ?? new Float64Array(tree.deviceCount);
}

/** The least and most any device holds. */
export function extent(values: Float64Array): [number, number] {
  let low = Number.POSITIVE_INFINITY;
  let high = 0;
  for (const v of values) {
    if (v < low) low = v;
    if (v > high) high = v;
  }
  return values.length ? [low, high] : [0, 0];
}

/** `424 KiB to 2.6 GiB`, or `424 KiB (within 4 B)` where rounding would print one number twice. */
export function spreadText(low: number, high: number): string {
  if (low === high) return formatBytes(high);
  if (formatBytes(low) === formatBytes(high)) return `${formatBytes(high)} (within ${formatBytes(high - low)})`;
  return `${formatBytes(low)} to ${formatBytes(high)}`;
}

/** `data=0 model=3`: the device's coordinates on the first mesh ("" off it). */
export function deviceCoordsText(tree: Tree, place: number): string {
  const mesh = tree.payload.meshes[0];
  const k = tree.meshPositions[0]?.indexOf(place) ?? -1;
  return mesh && k >= 0
    ? meshCoords(k, mesh)
        .map((c, a) => `${mesh.names[a]}=${c}`)
        .join(" ")
    : "";
}

/** `Device 3, data=0 model=3, holds 2.6 KiB (device 2.5 KiB, pinned_host 128 B)`. */
export function deviceLabel(tree: Tree, place: number): string {
  const parts = [`Device ${tree.ids[place]}`];
  const coords = deviceCoordsText(tree, place);
  if (coords) parts.push(coords);
  const kinds = tree.memoryKinds.map((kind) => `${kind} ${formatBytes(tree.deviceBytes.get(kind)?.[place] ?? 0)}`);
  const total = formatBytes(tree.deviceTotals[place]);
  parts.push(`holds ${total}${kinds.length > 1 ? ` (${kinds.join(", ")})` : ""}`);
  if (isRemoteDevice(tree, place)) parts.push(`process ${tree.process[place]}, not addressable here`);
  return parts.join(", ");
}

export function isRemoteDevice(tree: Tree, place: number): boolean {
  const abstract = tree.payload.meshes[0]?.abstract ?? false;
  return tree.addressable[place] === 0 && !abstract;
}

export class MemoryHeatMap {
  readonly element: HTMLElement;
  private readonly events: HeatMapEvents;
  private readonly signal: AbortSignal;
  private readonly kindSlot = h("div", { class: "sv-heat-kinds" });
  private readonly legend = h("div", { class: "sv-heat-legend", "data-role": "heat-legend" });
  private readonly gridSlot = h("div", { class: "sv-heat-grid" });
  private readonly extraSlot = h("div", { class: "sv-heat-extra" });
  private gridLifetime = new AbortController();
  private tree: Tree | null = null;
  private grid: PictureView | null = null;
  private gridLayout: Layout | null = null;
  private extraCells: HTMLElement[] = [];
  private kind: KindView = ALL_KINDS;
  private values: Float64Array = new Float64Array(0);
  private range: [number, number] = [0, 0];
  private lit: number | null = null;
  private kindsKey = "";
  private legendText = "";

  constructor(events: HeatMapEvents, signal: AbortSignal) {
    this.events = events;
    this.signal = signal;
    this.element = h("div", { class: "sv-heat", "data-role": "heat-map" }, [
      this.kindSlot,
      this.legend,
      this.gridSlot,
      this.extraSlot,
    ]);
    signal.addEventListener("abort", () => this.gridLifetime.abort());
  }

  /**
   * Shows a tree's devices; the same devices in the same places are repainted,
   * not rebuilt. `grid` is the first mesh's device grid (`deviceGridPayload`,
   * decoded), null for a tree with no mesh.
   */
  setTree(tree: Tree, grid: Layout | null): void {
    const previous = this.tree;
    this.tree = tree;
    this.gridLayout = grid;
    if (!tree.memoryKinds.includes(this.kind)) this.kind = ALL_KINDS;
    this.renderKinds();
    this.computeValues();
    if (previous && sameDevices(previous, tree) && this.grid?.repaint) {
      this.grid.repaint();
      this.paintExtra();
    } else {
      this.build();
    }
    this.renderLegend();
  }

  /** Outlines one device (hovered, focused or pinned); null for none. */
  setHighlight(place: number | null): void {
    this.lit = place;
    const tree = this.tree;
    if (!tree) return;
    const k = place === null ? -1 : (tree.meshPositions[0]?.indexOf(place) ?? -1);
    this.grid?.setHighlight(k >= 0 ? { tile: k, position: k } : null);
    this.extraCells.forEach((cell) => {
      cell.classList.toggle("sv-active", Number(cell.getAttribute("data-place")) === place);
    });
  }

  private computeValues(): void {
    const tree = this.tree;
    if (!tree) return;
    this.values = deviceValues(tree, this.kind);
    this.range = extent(this.values);
  }

  // From nothing to the fullest device, so a colour says how full a device is, not how it ranks.
  private paint(place: number): { fill: string; ink: string } {
    return heatColour(this.values[place], 0, this.range[1]);
  }

  private build(): void {
    const tree = this.tree;
    if (!tree) return;
    this.gridLifetime.abort();
    this.gridLifetime = new AbortController();
    const positions = tree.meshPositions[0];
    this.grid = null;
    if (this.gridLayout && positions) {
      const placeOf = (k: number): number => positions[k];
      const paint: DevicePaint = {
        fill: (k) => this.paint(placeOf(k)).fill,
        ink: (k) => this.paint(placeOf(k)).ink,
        tag: (k) => formatBytesShort(this.values[placeOf(k)]),
        label: (k) => deviceLabel(tree === this.tree ? tree : (this.tree as Tree), placeOf(k)),
      };
      const toPlace = (target: Target | null): number | null =>
        target?.kind === "device" ? placeOf(target.position) : null;
      const events: PictureEvents = {
        onHover: (target) => this.events.onHover(toPlace(target)),
        onFocus: (target) => this.events.onFocus(toPlace(target)),
        onActivate: (target) => {
          const place = toPlace(target);
          if (place !== null) this.events.onActivate(place);
        },
      };
      // The tile fill is never read: the paint colours every device.
      const style = { fill: () => "", label: "id" as const, paint };
      this.grid = renderMeshGrid(this.gridLayout, events, this.gridLifetime.signal, style);
      replaceChildren(this.gridSlot, [this.grid.element]);
    } else {
      replaceChildren(this.gridSlot, []);
    }
    this.buildExtra();
    this.setHighlight(this.lit);
  }

  /** Devices outside the first mesh, as a row of cells. */
  private buildExtra(): void {
    const tree = this.tree;
    if (!tree) return;
    const onMesh = new Set(tree.meshPositions[0] ?? []);
    const places: number[] = [];
    for (let p = 0; p < tree.deviceCount; p++) if (!onMesh.has(p)) places.push(p);
    this.extraCells = places.map((place) =>
      h(
        "div",
        {
          class: "sv-cell sv-extra-cell",
          role: "button",
          tabindex: 0,
          "data-device-id": tree.ids[place],
          "data-place": place,
        },
        [h("span", { class: "sv-cell-id" }, [String(tree.ids[place])]), h("span", { class: "sv-cell-tile" })],
      ),
    );
    const signal = this.gridLifetime.signal;
    const placeOf = (event: Event): number | null => {
      const cell = (event.target as Element | null)?.closest?.("[data-place]");
      return cell ? Number(cell.getAttribute("data-place")) : null;
    };
    const row = h("div", { class: "sv-extra-row", role: "group" }, this.extraCells);
    row.addEventListener("pointerover", (event) => this.events.onHover(placeOf(event)), { signal });
    row.addEventListener("pointerleave", () => this.events.onHover(null), { signal });
    row.addEventListener("focusin", (event) => this.events.onFocus(placeOf(event)), { signal });
    row.addEventListener("focusout", () => this.events.onFocus(null), { signal });
    row.addEventListener(
      "click",
      (event) => {
        const place = placeOf(event);
        if (place !== null) this.events.onActivate(place);
      },
      { signal },
    );
    row.addEventListener(
      "keydown",
      (event) => {
        const place = placeOf(event);
        if (place !== null && (event.key === "Enter" || event.key === " ")) {
          event.preventDefault();
          this.events.onActivate(place);
        }
      },
      { signal },
    );
    const title = tree.payload.meshes.length ? "Devices outside the first mesh" : "Devices";
    row.setAttribute("aria-label", title);
    replaceChildren(this.extraSlot, places.length ? [h("div", { class: "sv-heat-extra-title" }, [title]), row] : []);
    this.paintExtra();
  }

  private paintExtra(): void {
    const tree = this.tree;
    if (!tree) return;
    for (const cell of this.extraCells) {
      const place = Number(cell.getAttribute("data-place"));
      const { fill, ink } = this.paint(place);
      cell.style.backgroundColor = fill;
      cell.style.color = ink;
      cell.classList.toggle("sv-remote", isRemoteDevice(tree, place));
      cell.setAttribute("aria-label", deviceLabel(tree, place));
      (cell.lastChild as HTMLElement).textContent = formatBytesShort(this.values[place]);
    }
  }

  private renderKinds(): void {
    const tree = this.tree;
    // Unchanged kinds keep their select (and spare the page a layout).
    const key = JSON.stringify([tree?.memoryKinds ?? [], this.kind]);
    if (key === this.kindsKey) return;
    this.kindsKey = key;
    if (!tree || tree.memoryKinds.length < 2) {
      replaceChildren(this.kindSlot, []);
      return;
    }
    const select = h("select", { "data-role": "memory-view", "aria-label": "memory kind shown" });
    for (const kind of [ALL_KINDS, ...tree.memoryKinds]) {
      select.append(
        h("option", { value: kind, selected: kind === this.kind }, [kind === ALL_KINDS ? "all memory kinds" : kind]),
      );
    }
    select.addEventListener(
      "change",
      () => {
        this.kind = select.value;
        this.kindsKey = JSON.stringify([tree.memoryKinds, this.kind]);
        this.computeValues();
        this.grid?.repaint?.();
        this.paintExtra();
        this.renderLegend();
      },
      { signal: this.signal },
    );
    replaceChildren(this.kindSlot, [
      h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, ["show"]), select]),
    ]);
  }

  private renderLegend(): void {
    const tree = this.tree;
    if (!tree || tree.deviceCount === 0) {
      this.legendText = "";
      replaceChildren(this.legend, [h("p", { class: "sv-muted" }, ["No device holds any of this tree."])]);
      return;
    }
    const [low, high] = this.range;
    const bar = h("span", { class: "sv-heat-bar", "aria-hidden": "true" });
    bar.style.backgroundImage = heatGradient();
    const what = this.kind === ALL_KINDS ? "" : ` of ${this.kind}`;
    const text =
      low === high
        ? `every device holds ${formatBytesExact(low)}${what}`
        : `${spreadText(low, high)}${what} per device`;
    if (text === this.legendText && this.legend.childElementCount > 1) return;
    this.legendText = text;
    replaceChildren(this.legend, [
      h("span", { class: "sv-heat-end" }, ["0"]),
      bar,
      h("span", { class: "sv-heat-end" }, [formatBytesShort(high)]),
      h("span", { class: "sv-muted sv-heat-text" }, [text]),
    ]);
  }
}

function sameDevices(a: Tree, b: Tree): boolean {
  if (a.deviceCount !== b.deviceCount) return false;
  if (JSON.stringify(a.payload.meshes) !== JSON.stringify(b.payload.meshes)) return false;
  for (let p = 0; p < a.deviceCount; p++) {
    if (a.ids[p] !== b.ids[p] || a.addressable[p] !== b.addressable[p] || a.process[p] !== b.process[p]) return false;
  }
  return true;
}
