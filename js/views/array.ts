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
import { colouring, reconcileColourMode } from "../components/colouring";
import { explicitMeshText } from "../components/compose";
import { EditorsPanel } from "../components/editors";
import type { PictureView } from "../components/interaction";
import { keepInView } from "../components/keepInView";
import { renderMeshGrid } from "../components/meshGrid";
import { renderMove } from "../components/moveLine";
import { decodedOrSaid, sayNothingYet } from "../components/payloadStatus";
import { reconcileSlice, type SliceChoice, visibleTiles } from "../components/slicing";
import { renderTypeLine } from "../components/typeLine";
import { decodePayload, isPayload, type Layout } from "../payload/array";
import type { ViewHost } from "../traits/array";
import { ANSWERED } from "../traits/host";
import { h, replaceChildren } from "../util/dom";
import { measured, ROOT_CLASS } from "../util/measure";
import { ArrayTargets } from "./arrayTargets";
import { focusKey } from "./focus";
import { type PictureChoices, renderPictureBar } from "./pictureBar";
import { SteadySlots } from "./steadySlots";

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
  private readonly statusSlot = h("div", { class: "sv-status" });
  private readonly moveSlot = h("div", { class: "sv-move-slot" });
  private readonly editors: EditorsPanel;
  /** Pictures only (see ShardvizViewOptions): the editors and the code are never shown, so never filled. */
  private readonly embedded: boolean;
  private readonly code: CodeBlock;
  /** Asks for the map and the inspector to be placed in view again (after the pictures changed). */
  private readonly followPictures: () => void;
  /** While the user edits, the pictures' slots keep the largest size they had: nothing moves under them. */
  private readonly steady: SteadySlots | null;
  private readonly targets: ArrayTargets;

  private layout: Layout | null = null;
  private payloadKey = "";
  private slice: SliceChoice | null = null;
  private readonly choices: PictureChoices = { colour: { kind: "tile" }, chosenColour: null, cellLabel: "id" };
  private meshView: PictureView | null = null;
  private mapView: PictureView | null = null;

  constructor(el: HTMLElement, host: ViewHost, options: ShardvizViewOptions = {}) {
    this.host = host;
    this.embedded = options.embedded ?? false;
    this.editors = new EditorsPanel(this.markingMovePending(host), this.lifetime.signal);
    this.code = new CodeBlock(this.lifetime.signal);
    this.targets = new ArrayTargets({
      layout: () => this.layout,
      pictures: () => [this.meshView, this.mapView],
      shownDims: () => [this.slice?.rowDim ?? null, this.slice?.colDim ?? null].filter((d): d is number => d !== null),
      send: host.send,
      signal: this.lifetime.signal,
    });
    // The map and the inspector share one column beside the grid: however large the grid grows,
    // they stay next to it and to each other (the inspector goes under the map when both do not fit).
    const side = h("div", { class: "sv-side" }, [
      this.mapSlot,
      h("div", { class: "sv-inspector-column" }, [this.targets.inspectorSlot, this.targets.pinSlot]),
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
        if (event.key === "Escape" && this.targets.isPinned) this.targets.pin(null);
      },
      { signal: this.lifetime.signal },
    );
    this.steady = this.embedded ? null : new SteadySlots(this.root, this.meshSlot, this.mapSlot, this.lifetime.signal);
    el.append(this.root);
    this.update(["payload", "error", "error_source", "notice", "spec_text", "mesh_text", "memory_kind", "move"]);
  }

  /** Applies trait changes: the pictures redraw only when the payload really changed; the editors always follow. */
  update(changed: Iterable<string>): void {
    const keys = new Set(changed);
    const answered = keys.delete(ANSWERED);
    if (keys.size === 0) {
      // An answer that changed nothing leaves everything drawn as it is, but the move line waited for it.
      if (answered) this.drawMove();
      return;
    }
    if (keys.has("payload")) this.setPayload(this.host.get("payload"));
    if (!this.embedded) {
      this.editors.sync({
        payload: this.layout?.payload ?? null,
        error: this.host.get("error"),
        errorSource: this.host.get("error_source"),
        notice: this.host.get("notice") ?? "",
      });
    }
    if (keys.has("move") || keys.has("payload") || answered) this.drawMove();
  }

  /**
   * The move line says what the kernel's answer to the latest edit moved; while
   * an edit awaits its answer it says so, never showing an earlier edit's move
   * beside the new layout.
   */
  private drawMove(): void {
    if (this.embedded) return;
    const waiting = this.host.editsInFlight?.() ?? false;
    replaceChildren(this.moveSlot, [
      waiting
        ? h("div", { class: "sv-move sv-muted", "data-role": "move", "data-pending": "" }, [
            "Working out what this edit moves\u2026",
          ])
        : renderMove(this.host.get("move"), this.layout?.payload.mesh?.names ?? []),
    ]);
  }

  /** The host as the editors use it: each edit sent marks the move line as waiting for its answer. */
  private markingMovePending(host: ViewHost): ViewHost {
    return {
      get readOnly() {
        return host.readOnly;
      },
      note: host.note,
      get: (key) => host.get(key),
      edit: (control, text) => {
        host.edit(control, text);
        this.drawMove();
      },
      send: host.send,
      editsInFlight: host.editsInFlight,
      onChange: (listener) => host.onChange(listener),
    };
  }

  /** Handles custom messages from Python (preview answers). */
  receive(message: unknown): void {
    this.targets.receive(message);
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
    this.targets.carry(previous, layout);
    this.choices.colour = reconcileColourMode(this.choices.chosenColour, layout);
    this.steady?.keep();
    if (this.choices.cellLabel === "physical" && !layout.physical.coords) this.choices.cellLabel = "id";
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

  private requestExplicitView(): void {
    const mesh = this.layout?.payload.mesh;
    if (mesh) this.editors.submitMesh(explicitMeshText(mesh));
  }

  /** Draws both pictures; `rebuildMesh` forces a new mesh grid (a new cell labelling). */
  private renderPictures(rebuildMesh: boolean): void {
    const layout = this.layout;
    if (!layout || !this.slice) return;
    const style = { fill: colouring(layout, this.choices.colour).fill, label: this.choices.cellLabel };
    // A spec or memory-kind edit keeps the devices where they are: repaint instead of rebuilding.
    if (rebuildMesh || !this.meshView?.update?.(layout, style)) {
      this.meshLifetime.abort();
      this.meshLifetime = new AbortController();
      this.meshView = renderMeshGrid(layout, this.targets.events, this.meshLifetime.signal, style);
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
    const events = {
      onColour: (mode: PictureChoices["colour"]) => {
        this.choices.chosenColour = this.choices.colour = mode;
        measured(() => this.renderPictures(false));
      },
      onLabel: (label: PictureChoices["cellLabel"]) => {
        this.choices.cellLabel = label;
        measured(() => this.renderPictures(true));
      },
    };
    replaceChildren(this.pictureBar, renderPictureBar(layout, this.choices, events, this.barLifetime.signal));
  }

  private renderMap(): void {
    const layout = this.layout;
    if (!layout || !this.slice) return;
    this.mapLifetime.abort();
    this.mapLifetime = new AbortController();
    const refocus = focusKey(this.mapSlot);
    this.mapView = renderArrayMap(layout, this.targets.events, this.mapLifetime.signal, {
      choice: this.slice,
      fill: colouring(layout, this.choices.colour).fill,
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
    this.targets.refresh();
  }
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
