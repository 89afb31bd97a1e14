/**
 * The array view: the whole widget for an `array` payload, drawn from the
 * synced traits through a ViewHost.
 *
 * Synced state (the traits) and browser-only state are kept apart. The
 * browser-only state is: which dimensions the map shows and which slab of
 * the others, how the pictures colour and label devices, what is hovered,
 * focused or pinned, and the last value preview. On every new payload the
 * view re-derives that state for the new layout (a pinned device by its id,
 * a pinned tile by its index block) or drops what no longer exists, so
 * nothing shown ever describes an older layout.
 */

import { type MapRoom, renderArrayMap } from "../components/arrayMap";
import { CodeBlock } from "../components/codeBlock";
import {
  type ColourMode,
  colouring,
  reconcileColourMode,
  renderColourLegend,
  renderColourPicker,
  splitDims,
} from "../components/colouring";
import { explicitMeshText } from "../components/compose";
import { EditorsPanel } from "../components/editors";
import { type PreviewState, renderInspector, renderPinBar } from "../components/inspector";
import type { Highlight, PictureEvents, PictureView, Target } from "../components/interaction";
import { sameTarget } from "../components/interaction";
import { keepInView } from "../components/keepInView";
import { type CellLabel, renderMeshGrid } from "../components/meshGrid";
import { renderMove } from "../components/moveLine";
import { decodedOrSaid, sayNothingYet } from "../components/payloadStatus";
import { reconcileSlice, type SliceChoice, visibleTiles } from "../components/slicing";
import { renderTypeLine } from "../components/typeLine";
import { decodePayload, isPayload, type Layout, type PreviewReply, ravel, tileIntervals } from "../payload/array";
import type { ViewHost } from "../traits/array";
import { ANSWERED } from "../traits/host";
import { h, replaceChildren } from "../util/dom";
import { measured, ROOT_CLASS } from "../util/measure";

// Kept here too for older imports; the view root and its timing live in util/measure.ts.
export { measured, RENDER_MEASURE, ROOT_CLASS } from "../util/measure";

/** Tiles that get one of the palette's hand-picked colours each. */
const TILE_BASE_COLOURS = 8;

export interface ShardvizViewOptions {
  /**
   * Pictures only, inside another view (the tree view's selected leaf): no
   * editors, no code, and no widget root of its own.
   */
  embedded?: boolean;
}

export class ShardvizView {
  readonly root: HTMLElement;
  private readonly host: ViewHost;
  private readonly lifetime = new AbortController();
  /** Listeners of the current pictures; each is replaced when its picture is rebuilt. */
  private meshLifetime = new AbortController();
  private mapLifetime = new AbortController();
  /** The room the map had when last laid out: the next map fits its labels to it before layout. */
  private readonly mapRoom: MapRoom = { width: Number.POSITIVE_INFINITY };
  private barLifetime = new AbortController();
  private readonly typeSlot = h("div", { class: "sv-type-slot" });
  private readonly pictureBar = h("div", { class: "sv-picture-bar" });
  private readonly meshSlot = h("div", { class: "sv-panel sv-mesh-slot" });
  private readonly mapSlot = h("div", { class: "sv-panel sv-map-slot" });
  private readonly inspectorSlot = h("div", { class: "sv-inspector-slot" });
  private readonly pinSlot = h("div", { class: "sv-pin-slot" });
  private readonly statusSlot = h("div", { class: "sv-status" });
  private readonly moveSlot = h("div", { class: "sv-move-slot" });
  private readonly editors: EditorsPanel;
  /** Pictures only (see ShardvizViewOptions): the editors and the code are never shown, so never filled. */
  private readonly embedded: boolean;
  private readonly code: CodeBlock;
  /** Asks for the map and the inspector to be placed in view again (after the pictures changed). */
  private readonly followPictures: () => void;
  /** The slots' sizes as last laid out (a ResizeObserver's, so reading them forces no layout). */
  private readonly laidOut = { meshWidth: 0, meshHeight: 0, mapHeight: 0 };
  /** While the user edits, the pictures' slots keep the largest size they had: nothing moves under them. */
  private steady = false;

  private layout: Layout | null = null;
  private payloadKey = "";
  private slice: SliceChoice | null = null;
  /** The colouring the user picked (null: the default for each layout). */
  private chosenColour: ColourMode | null = null;
  private colour: ColourMode = { kind: "tile" };
  private cellLabel: CellLabel = "id";
  private meshView: PictureView | null = null;
  private mapView: PictureView | null = null;
  private hovered: Target | null = null;
  private focused: Target | null = null;
  private pinned: Target | null = null;
  private preview: PreviewState | null = null;
  /** What the pin bar was last drawn for. */
  private pinBarKey = "";
  private pinBarLayout: Layout | null = null;

  constructor(el: HTMLElement, host: ViewHost, options: ShardvizViewOptions = {}) {
    this.host = host;
    this.embedded = options.embedded ?? false;
    this.editors = new EditorsPanel(host, this.lifetime.signal);
    this.code = new CodeBlock(this.lifetime.signal);
    // The map and the inspector share one column beside the grid: however large the grid grows,
    // they stay next to it and to each other (the inspector goes under the map when both do not fit).
    const side = h("div", { class: "sv-side" }, [
      this.mapSlot,
      h("div", { class: "sv-inspector-column" }, [this.inspectorSlot, this.pinSlot]),
    ]);
    const pictures = h("div", { class: "sv-pictures" }, [this.meshSlot, side]);
    // However tall the grid, the map and the inspector stay in view beside it (or under it).
    this.followPictures = keepInView(side, pictures, this.lifetime.signal);
    this.root = options.embedded
      ? h("div", { class: "sv-embedded-view" }, [this.typeSlot, this.statusSlot, this.pictureBar, pictures])
      : h("div", { class: ROOT_CLASS, "data-shardviz": "" }, [
          this.typeSlot,
          this.statusSlot,
          this.pictureBar,
          pictures,
          this.editors.element,
          this.moveSlot,
          this.code.element,
        ]);
    this.root.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Escape" && this.pinned) this.pin(null);
      },
      { signal: this.lifetime.signal },
    );
    if (!this.embedded) this.holdStill();
    el.append(this.root);
    this.update(["payload", "error", "error_source", "notice", "spec_text", "mesh_text", "memory_kind", "move"]);
  }

  /** Applies trait changes: the pictures redraw only when the payload really changed; the editors always follow. */
  update(changed: Iterable<string>): void {
    const keys = new Set(changed);
    keys.delete(ANSWERED); // an answer that changed nothing leaves everything drawn as it is
    if (keys.size === 0) return;
    if (keys.has("payload")) this.setPayload(this.host.get("payload"));
    if (!this.embedded) {
      this.editors.sync({
        payload: this.layout?.payload ?? null,
        error: this.host.get("error"),
        errorSource: this.host.get("error_source"),
        notice: this.host.get("notice") ?? "",
      });
    }
    if (keys.has("move") || keys.has("payload")) {
      replaceChildren(this.moveSlot, [renderMove(this.host.get("move"), this.layout?.payload.mesh?.names ?? [])]);
    }
  }

  /** Handles custom messages from Python (preview answers). */
  receive(message: unknown): void {
    if (!isPreviewReply(message)) return;
    if (!this.preview || this.preview.device !== message.device) return; // a stale answer
    this.preview = { device: message.device, status: "done", reply: message };
    this.renderPinBar();
  }

  destroy(): void {
    this.meshLifetime.abort();
    this.mapLifetime.abort();
    this.barLifetime.abort();
    this.lifetime.abort();
    this.root.remove();
  }

  private setPayload(value: unknown): void {
    const key = JSON.stringify(value ?? null);
    if (key === this.payloadKey) return; // same picture: nothing to redraw
    this.payloadKey = key;
    if (!isPayload(value)) {
      this.layout = null;
      sayNothingYet(this.statusSlot);
      return;
    }
    // Keep the last good picture; say why the new one is not drawn.
    const layout = decodedOrSaid(this.statusSlot, "layout", () => decodePayload(value));
    if (layout === null) return;
    const previous = this.layout;
    this.layout = layout;
    this.slice = reconcileSlice(sameGrid(previous, layout) ? this.slice : null, value, layout.tileCounts);
    // What was hovered, focused or pinned is carried over where it still exists, else dropped.
    this.hovered = carryTarget(this.hovered, previous, layout);
    this.focused = carryTarget(this.focused, previous, layout);
    this.pinned = carryTarget(this.pinned, previous, layout);
    this.preview = null; // values of an older layout
    this.colour = reconcileColourMode(this.chosenColour, layout);
    this.keepSlotSizes();
    if (this.cellLabel === "physical" && !layout.physical.coords) this.cellLabel = "id";
    measured(() => {
      replaceChildren(this.typeSlot, [
        renderTypeLine(value, {
          onExplicitView: this.host.readOnly || !value.mesh ? undefined : () => this.requestExplicitView(),
          signal: this.lifetime.signal,
        }),
      ]);
      this.renderPictures(false);
      if (!this.embedded) this.code.update(value.code);
    });
  }

  /**
   * Keeps the editors and the inspector where they are while the user edits (focus inside the
   * widget): a picture that shrinks leaves its slot as large as it was, until focus leaves.
   */
  private holdStill(): void {
    const { signal } = this.lifetime;
    if (typeof ResizeObserver !== "undefined") {
      const observer = new ResizeObserver(() => {
        this.laidOut.meshWidth = this.meshSlot.offsetWidth;
        this.laidOut.meshHeight = this.meshSlot.offsetHeight;
        this.laidOut.mapHeight = this.mapSlot.offsetHeight;
      });
      observer.observe(this.meshSlot);
      observer.observe(this.mapSlot);
      signal.addEventListener("abort", () => observer.disconnect(), { once: true });
    }
    this.root.addEventListener(
      "focusout",
      (event) => {
        const next = (event as FocusEvent).relatedTarget;
        if (next instanceof Node && this.root.contains(next)) return;
        this.steady = false;
        for (const slot of [this.meshSlot, this.mapSlot]) slot.style.minWidth = slot.style.minHeight = "";
      },
      { signal },
    );
  }

  /** On a new picture while the user edits: the slots keep at least the size they were laid out at. */
  private keepSlotSizes(): void {
    if (this.embedded) return;
    const active = this.root.ownerDocument.activeElement;
    if (!this.steady && !(active && this.root.contains(active))) return;
    this.steady = true;
    const { meshWidth, meshHeight, mapHeight } = this.laidOut;
    atLeast(this.meshSlot, "minWidth", meshWidth);
    atLeast(this.meshSlot, "minHeight", meshHeight);
    atLeast(this.mapSlot, "minHeight", mapHeight);
  }

  private requestExplicitView(): void {
    const mesh = this.layout?.payload.mesh;
    if (mesh) this.editors.submitMesh(explicitMeshText(mesh));
  }

  private readonly pictureEvents: PictureEvents = {
    onHover: (target) => this.setTarget("hovered", target),
    onFocus: (target) => this.setTarget("focused", target),
    onActivate: (target) => this.pin(sameTarget(this.pinned, target) ? null : target),
  };

  private pin(target: Target | null): void {
    this.pinned = target;
    this.preview = null;
    this.refreshTargets();
  }

  /** Draws both pictures; `rebuildMesh` forces a new mesh grid (a new cell labelling). */
  private renderPictures(rebuildMesh: boolean): void {
    const layout = this.layout;
    if (!layout || !this.slice) return;
    const style = { fill: colouring(layout, this.colour).fill, label: this.cellLabel };
    // A spec or memory-kind edit keeps the devices where they are: repaint instead of rebuilding.
    if (rebuildMesh || !this.meshView?.update?.(layout, style)) {
      this.meshLifetime.abort();
      this.meshLifetime = new AbortController();
      this.meshView = renderMeshGrid(layout, this.pictureEvents, this.meshLifetime.signal, style);
      replaceChildren(this.meshSlot, [h("h3", { class: "sv-panel-title" }, ["Devices"]), this.meshView.element]);
    }
    this.renderPictureBar(layout);
    this.renderMap();
    this.followPictures();
  }

  /** The colour and label choices of the pictures, and the colour legend. */
  private renderPictureBar(layout: Layout): void {
    this.barLifetime.abort();
    this.barLifetime = new AbortController();
    const { signal } = this.barLifetime;
    const parts: (HTMLElement | null)[] = [];
    // Per-tile colours need no choice while the eight base colours suffice.
    if (splitDims(layout).length > 0 && (layout.tileCount > TILE_BASE_COLOURS || this.chosenColour?.kind === "dim")) {
      parts.push(
        renderColourPicker(
          layout,
          this.colour,
          (mode) => {
            this.chosenColour = mode;
            this.colour = mode;
            measured(() => this.renderPictures(false));
          },
          signal,
        ),
      );
    }
    if (layout.physical.coords) parts.push(this.renderLabelPicker(signal));
    parts.push(renderColourLegend(layout, this.colour));
    replaceChildren(this.pictureBar, parts);
  }

  /** Cell labels: device ids, or the physical coordinates the devices report (TPUs). */
  private renderLabelPicker(signal: AbortSignal): HTMLElement {
    const select = h("select", { "data-role": "cell-label", "aria-label": "label the devices by" }, [
      h("option", { value: "id" }, ["device id"]),
      h("option", { value: "physical" }, ["physical coords"]),
    ]);
    select.value = this.cellLabel;
    select.addEventListener(
      "change",
      () => {
        this.cellLabel = select.value === "physical" ? "physical" : "id";
        measured(() => this.renderPictures(true));
      },
      { signal },
    );
    return h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, ["label"]), select]);
  }

  private renderMap(): void {
    const layout = this.layout;
    if (!layout || !this.slice) return;
    this.mapLifetime.abort();
    this.mapLifetime = new AbortController();
    const refocus = focusKey(this.mapSlot);
    this.mapView = renderArrayMap(layout, this.pictureEvents, this.mapLifetime.signal, {
      choice: this.slice,
      fill: colouring(layout, this.colour).fill,
      room: this.mapRoom,
      onChoice: (choice) => {
        this.slice = choice;
        measured(() => this.renderMap());
      },
    });
    replaceChildren(this.mapSlot, [h("h3", { class: "sv-panel-title" }, ["Array"]), this.mapView.element]);
    if (refocus) this.mapSlot.querySelector<HTMLElement>(refocus)?.focus();
    // Devices holding none of the tiles in the slice shown are dimmed in the mesh.
    const shown = visibleTiles(layout, this.slice).map((v) => v.tile);
    this.meshView?.setShown?.(shown.length < layout.tileCount ? new Set(shown) : null);
    this.refreshTargets();
  }

  private setTarget(which: "hovered" | "focused", target: Target | null): void {
    if (sameTarget(this[which], target)) return;
    this[which] = target;
    this.refreshTargets();
  }

  /** What the pictures light up and the inspector shows: the pointer's target, else focus, else the pin. */
  private current(): Target | null {
    return this.hovered ?? this.focused ?? this.pinned;
  }

  private refreshTargets(): void {
    const current = this.current();
    const highlight = this.toHighlight(current);
    for (const view of [this.meshView, this.mapView]) {
      view?.setHighlight(highlight);
      view?.setPinned?.(this.pinned);
    }
    this.renderInspector(current);
    // The pin bar holds buttons: it is rebuilt only when what it shows changes (never on a mere
    // hover, which would swap a button under a click in progress).
    const pinKey = JSON.stringify([this.pinned, this.preview === null]);
    if (pinKey !== this.pinBarKey || this.pinBarLayout !== this.layout) this.renderPinBar();
  }

  private toHighlight(target: Target | null): Highlight | null {
    if (!target || !this.layout) return null;
    if (target.kind === "tile") return { tile: target.tile, position: null };
    return { tile: this.layout.tileOf[target.position], position: target.position };
  }

  private renderInspector(target: Target | null): void {
    if (!this.layout) return;
    const pinned = target !== null && sameTarget(target, this.pinned);
    replaceChildren(this.inspectorSlot, [renderInspector(this.layout, target, pinned)]);
  }

  private renderPinBar(): void {
    if (!this.layout) return;
    this.pinBarKey = JSON.stringify([this.pinned, this.preview === null]);
    this.pinBarLayout = this.layout;
    const send = this.host.send;
    const refocus = focusKey(this.pinSlot);
    replaceChildren(this.pinSlot, [
      renderPinBar(this.layout, this.pinned, {
        preview: this.preview,
        onPreview: send ? (deviceId) => this.requestPreview(deviceId, send) : undefined,
        onUnpin: () => this.pin(null),
        signal: this.lifetime.signal,
      }),
    ]);
    if (refocus) this.pinSlot.querySelector<HTMLElement>(refocus)?.focus();
  }

  private requestPreview(deviceId: number, send: NonNullable<ViewHost["send"]>): void {
    const dims = [this.slice?.rowDim ?? null, this.slice?.colDim ?? null].filter((d): d is number => d !== null);
    this.preview = { device: deviceId, status: "loading" };
    send({ kind: "preview", device: deviceId, dims });
    this.renderPinBar();
  }
}

/**
 * A target of the previous layout in the new one: a device by its id, a tile
 * by its index block. Null when the new layout has no such device or block.
 */
export function carryTarget(target: Target | null, previous: Layout | null, next: Layout): Target | null {
  if (!target || !previous) return null;
  if (target.kind === "device") {
    const position = next.positionOfId.get(previous.ids[target.position]);
    return position === undefined ? null : { kind: "device", position };
  }
  if (target.tile >= previous.tileCount || previous.bounds.length !== next.bounds.length) return null;
  const block = tileIntervals(target.tile, previous.bounds);
  const cell: number[] = [];
  for (const [d, [start, stop]] of block.entries()) {
    const i = next.bounds[d].indexOf(start);
    if (i < 0 || next.bounds[d][i + 1] !== stop) return null;
    cell.push(i);
  }
  return { kind: "tile", tile: ravel(cell, next.tileCounts) };
}

/** Raises a minimum size to `pixels` (never lowers it; a style left as it is costs no restyle). */
function atLeast(slot: HTMLElement, property: "minWidth" | "minHeight", pixels: number): void {
  if (pixels <= (Number.parseFloat(slot.style[property]) || 0)) return;
  slot.style[property] = `${pixels}px`;
}

/** True when two layouts cut the same array the same way (so the map's slice still applies). */
function sameGrid(a: Layout | null, b: Layout): boolean {
  return (
    a !== null &&
    a.deviceCount === b.deviceCount &&
    JSON.stringify(a.payload.shape) === JSON.stringify(b.payload.shape) &&
    JSON.stringify(a.bounds) === JSON.stringify(b.bounds)
  );
}

/** A selector for the focused control inside `container`, to focus its replacement after a redraw. */
function focusKey(container: HTMLElement): string | null {
  const active = container.ownerDocument.activeElement;
  if (!active || !container.contains(active)) return null;
  const role = active.getAttribute("data-role");
  if (!role) return null;
  const dim = active.getAttribute("data-dim");
  return `[data-role="${role}"]${dim !== null ? `[data-dim="${dim}"]` : ""}`;
}

function isPreviewReply(message: unknown): message is PreviewReply {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { kind?: unknown }).kind === "preview" &&
    typeof (message as { device?: unknown }).device === "number"
  );
}
