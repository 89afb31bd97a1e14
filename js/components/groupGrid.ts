/**
 * A collective's device groups on the mesh grid: every device painted in its
 * group's colour (one colour per group), tagged with the group (or, for a
 * collective-permute, the device it sends to), and a legend listing each
 * group's device ids. The cells are the existing mesh grid's, drawn from the
 * mesh's one-block-per-device layout; DOM cells also carry `data-group`.
 * The grid is scaled down to the width of its column rather than cut (a
 * 16x16 mesh is wider than the program view's side column), and the legend's
 * device lists wrap within their column.
 */

import type { Layout } from "../payload/array";
import { meshCoords } from "../payload/array";
import type { DeviceGroups, Program } from "../payload/program";
import { h, replaceChildren } from "../util/dom";
import { tileColor } from "../util/palette";
import { compressIds } from "../util/ranges";
import type { PictureEvents, PictureView, Target } from "./interaction";
import { renderMeshGrid } from "./meshGrid";
import { axesText } from "./programText";

/** Fill of a device in no group. */
export const NO_GROUP_FILL = "#e4e7eb";
/** Groups listed in the legend before "and N more". */
export const LEGEND_GROUPS = 16;

/** One colour per group (the tile palette: light fills for dark labels). */
export function groupColour(g: number): string {
  return g < 0 ? NO_GROUP_FILL : tileColor(g);
}

export class GroupGrid {
  readonly element: HTMLElement;
  private readonly gridSlot = h("div", { class: "sv-group-grid-slot" });
  private readonly legend = h("div", { class: "sv-group-legend", "data-role": "group-legend" });
  private readonly pointed = h("p", { class: "sv-muted sv-pointed", "aria-live": "polite" });
  private readonly events: PictureEvents;
  private gridLifetime = new AbortController();
  private grid: PictureView | null = null;
  private layout: Layout | null = null;
  private gridKey = "";
  private program: Program | null = null;
  private collective: number | null = null;
  private groups: DeviceGroups | null = null;
  /** Where each device sends, for a permute (-1: nowhere). */
  private sendsTo: Int32Array = new Int32Array(0);
  private receivesFrom: Int32Array = new Int32Array(0);

  constructor(signal: AbortSignal) {
    this.element = h("div", { class: "sv-group-grid", "data-role": "group-grid" }, [
      this.gridSlot,
      this.pointed,
      this.legend,
    ]);
    signal.addEventListener("abort", () => this.gridLifetime.abort());
    if (typeof ResizeObserver !== "undefined") {
      const observer = new ResizeObserver(() => this.fit());
      observer.observe(this.gridSlot);
      signal.addEventListener("abort", () => observer.disconnect(), { once: true });
    }
    const point = (target: Target | null): void => {
      this.pointed.textContent = target?.kind === "device" ? this.label(target.position) : "";
    };
    this.events = { onHover: point, onFocus: point, onActivate: point };
  }

  /** Shows collective `c` of `program` on `grid` (its mesh, one block per device); null clears the groups. */
  show(program: Program, grid: Layout, c: number | null): void {
    this.program = program;
    this.collective = c;
    this.groups = c === null ? null : program.groupSets[program.payload.collectives[c].groups];
    const n = grid.deviceCount;
    this.sendsTo = new Int32Array(n).fill(-1);
    this.receivesFrom = new Int32Array(n).fill(-1);
    for (const [source, target] of this.groups?.pairs ?? []) {
      this.sendsTo[source] = target;
      this.receivesFrom[target] = source;
    }
    const key = JSON.stringify([grid.payload.mesh, grid.payload.devices]);
    if (key !== this.gridKey || !this.grid?.repaint) {
      this.gridKey = key;
      this.layout = grid;
      this.gridLifetime.abort();
      this.gridLifetime = new AbortController();
      // The tile fill is never read: the paint colours every device.
      this.grid = renderMeshGrid(grid, this.events, this.gridLifetime.signal, {
        fill: () => "",
        label: "id",
        paint: {
          fill: (k) => groupColour(this.groupOf(k)),
          ink: () => "var(--sv-tile-ink)",
          tag: (k) => this.tag(k),
          label: (k) => this.label(k),
        },
      });
      replaceChildren(this.gridSlot, [this.grid.element]);
      if (typeof ResizeObserver !== "undefined") {
        const observer = new ResizeObserver(() => this.fit());
        observer.observe(this.grid.element);
        this.gridLifetime.signal.addEventListener("abort", () => observer.disconnect(), { once: true });
      }
    } else {
      this.grid.repaint();
    }
    this.markCells();
    this.pointed.textContent = "";
    this.renderLegend();
  }

  /**
   * Scales the grid down to the slot's width (never up), and gives the slot the scaled height: a
   * transform, so that the grid is laid out (and its cells placed) at its own size, and pointer
   * positions still find their device (the canvas grid measures its drawn size).
   */
  private fit(): void {
    const grid = this.grid?.element;
    if (!grid?.isConnected) return;
    const room = this.gridSlot.clientWidth;
    const width = grid.offsetWidth;
    const scale = room > 0 && width > room ? fitScale(room, width) : 1;
    const transform = scale === 1 ? "" : `scale(${scale})`;
    if (grid.style.transform !== transform) grid.style.transform = transform;
    const height = scale === 1 ? "" : `${Math.ceil(grid.offsetHeight * scale)}px`;
    if (this.gridSlot.style.height !== height) this.gridSlot.style.height = height;
  }

  private groupOf(k: number): number {
    return this.groups ? this.groups.groupOf[k] : -1;
  }

  private tag(k: number): string {
    if (!this.groups) return "";
    if (this.groups.pairs.length > 0) return this.sendsTo[k] >= 0 ? `\u2192${this.layout?.ids[this.sendsTo[k]]}` : "";
    const g = this.groupOf(k);
    return g >= 0 ? `g${g}` : "";
  }

  private label(k: number): string {
    const layout = this.layout;
    if (!layout) return "";
    const mesh = layout.payload.mesh;
    const coords = mesh
      ? meshCoords(k, mesh)
          .map((x, a) => `${mesh.names[a]}=${x}`)
          .join(" ")
      : "";
    const parts = [`Device ${layout.ids[k]}${coords ? ` (${coords})` : ""}`];
    const groups = this.groups;
    if (!groups) return parts[0];
    if (groups.pairs.length > 0) {
      parts.push(this.sendsTo[k] >= 0 ? `sends to device ${layout.ids[this.sendsTo[k]]}` : "sends nothing");
      if (this.receivesFrom[k] >= 0) parts.push(`receives from device ${layout.ids[this.receivesFrom[k]]}`);
      return parts.join(", ");
    }
    const g = this.groupOf(k);
    if (g < 0) return `${parts[0]}: in no group`;
    const members = compressIds(groups.groups[g].map((m) => layout.ids[m]));
    return `${parts[0]}: group ${g} of ${groups.groups.length} (devices ${members})`;
  }

  private markCells(): void {
    for (const cell of Array.from(this.gridSlot.querySelectorAll<HTMLElement>("[data-position]"))) {
      const g = this.groupOf(Number(cell.getAttribute("data-position")));
      if (this.groups && g >= 0) cell.setAttribute("data-group", String(g));
      else cell.removeAttribute("data-group");
    }
  }

  private renderLegend(): void {
    const { program, layout, groups } = this;
    if (!program || !layout) return;
    const c = this.collective;
    if (c === null) {
      replaceChildren(this.legend, [h("p", { class: "sv-muted" }, ["Select a collective to see its device groups."])]);
      return;
    }
    const collective = program.payload.collectives[c];
    if (!groups) {
      replaceChildren(this.legend, [
        h("p", { class: "sv-note" }, [
          "The program's device order is unknown, so its groups cannot be placed on the mesh: ",
          h("code", {}, [collective.hlo.slice(0, 200)]),
        ]),
      ]);
      return;
    }
    const items: HTMLElement[] = [];
    if (groups.pairs.length > 0) {
      const pairs = groups.pairs.slice(0, LEGEND_GROUPS).map(([s, t]) => `${layout.ids[s]}\u2192${layout.ids[t]}`);
      const more = groups.pairs.length - pairs.length;
      items.push(
        h("p", { "data-role": "group-pairs" }, [`Sends: ${pairs.join(", ")}${more > 0 ? `, and ${more} more` : ""}.`]),
      );
    }
    const shown = groups.groups.slice(0, LEGEND_GROUPS);
    const list = h(
      "ul",
      { class: "sv-group-list" },
      shown.map((members, g) => {
        const swatch = h("span", { class: "sv-swatch", "aria-hidden": "true" });
        swatch.style.backgroundColor = groupColour(g);
        return h("li", { "data-role": "group", "data-group": g }, [
          swatch,
          h("span", { class: "sv-group-members" }, [
            `group ${g}: devices ${memberList(members.map((m) => layout.ids[m]))}`,
          ]),
        ]);
      }),
    );
    if (groups.groups.length > shown.length) {
      list.append(h("li", { class: "sv-muted" }, [`and ${groups.groups.length - shown.length} more groups`]));
    }
    items.unshift(
      h("p", {}, [
        `${collective.kind} ${axesText(collective)}: ${groups.groups.length} group${groups.groups.length === 1 ? "" : "s"} of ${collective.group_size}.`,
      ]),
    );
    items.push(list);
    replaceChildren(this.legend, items);
  }
}

/** The scale that fits `width` into `room`, rounded down to a thousandth so it never overflows. */
export function fitScale(room: number, width: number): number {
  return Math.floor((room / width) * 1000) / 1000;
}

/**
 * A group's device ids as a list that can wrap: an evenly spaced run of five or more as its
 * first ones and its last (`0, 16, 32, …, 240`), else runs and single ids (`0-3, 8-11`); four
 * or fewer are all named (an ellipsis would stand for nothing).
 */
export function memberList(ids: readonly number[]): string {
  const sorted = Array.from(new Set(ids)).sort((a, b) => a - b);
  const step = sorted.length >= 5 ? sorted[1] - sorted[0] : 0;
  if (step > 1 && sorted.every((id, i) => id === sorted[0] + i * step)) {
    return `${sorted[0]}, ${sorted[1]}, ${sorted[2]}, \u2026, ${sorted[sorted.length - 1]} (step ${step})`;
  }
  return compressIds(sorted).split(",").join(", ");
}
