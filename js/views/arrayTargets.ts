/**
 * What the array view's pictures point at: the device or tile hovered,
 * focused or pinned, what the inspector and the pin bar show of it, and the
 * value preview of a pinned device. Browser-only state, carried over to a new
 * layout where it still exists (`carry`).
 */

import { type PreviewState, renderInspector, renderPinBar } from "../components/inspector";
import type { Highlight, PictureEvents, PictureView, Target } from "../components/interaction";
import { sameTarget } from "../components/interaction";
import { type Layout, type PreviewReply, ravel, tileIntervals } from "../payload/array";
import type { PreviewRequest } from "../traits/array";
import { h, replaceChildren } from "../util/dom";
import { focusKey } from "./focus";

/** What the targets read of the view they belong to. */
export interface TargetsContext {
  layout(): Layout | null;
  pictures(): (PictureView | null)[];
  /** The dimensions the map shows as rows and columns (a preview shows the same). */
  shownDims(): number[];
  /** Sends a preview request; absent where there is no kernel. */
  send?: (message: PreviewRequest) => void;
  signal: AbortSignal;
}

export class ArrayTargets {
  readonly inspectorSlot = h("div", { class: "sv-inspector-slot" });
  readonly pinSlot = h("div", { class: "sv-pin-slot" });
  private readonly context: TargetsContext;
  private hovered: Target | null = null;
  private focused: Target | null = null;
  private pinned: Target | null = null;
  private preview: PreviewState | null = null;
  /** What the pin bar was last drawn for. */
  private pinBarKey = "";
  private pinBarLayout: Layout | null = null;

  readonly events: PictureEvents = {
    onHover: (target) => this.set("hovered", target),
    onFocus: (target) => this.set("focused", target),
    onActivate: (target) => this.pin(sameTarget(this.pinned, target) ? null : target),
  };

  constructor(context: TargetsContext) {
    this.context = context;
  }

  get isPinned(): boolean {
    return this.pinned !== null;
  }

  pin(target: Target | null): void {
    this.pinned = target;
    this.preview = null;
    this.refresh();
  }

  /** A new layout: what was hovered, focused or pinned is carried over where it still exists, else dropped. */
  carry(previous: Layout | null, next: Layout): void {
    this.hovered = carryTarget(this.hovered, previous, next);
    this.focused = carryTarget(this.focused, previous, next);
    this.pinned = carryTarget(this.pinned, previous, next);
    this.preview = null; // values of an older layout
  }

  /** A preview answer from Python. */
  receive(message: unknown): void {
    if (!isPreviewReply(message)) return;
    if (!this.preview || this.preview.device !== message.device) return; // a stale answer
    this.preview = { device: message.device, status: "done", reply: message };
    this.renderPinBar();
  }

  /** Lights up what is pointed at in the pictures, and redraws the inspector (and the pin bar where it changed). */
  refresh(): void {
    const layout = this.context.layout();
    const current = this.hovered ?? this.focused ?? this.pinned;
    const highlight = toHighlight(current, layout);
    for (const view of this.context.pictures()) {
      view?.setHighlight(highlight);
      view?.setPinned?.(this.pinned);
    }
    if (!layout) return;
    const pinned = current !== null && sameTarget(current, this.pinned);
    replaceChildren(this.inspectorSlot, [renderInspector(layout, current, pinned)]);
    // The pin bar holds buttons: it is rebuilt only when what it shows changes (never on a mere
    // hover, which would swap a button under a click in progress).
    const pinKey = JSON.stringify([this.pinned, this.preview === null]);
    if (pinKey !== this.pinBarKey || this.pinBarLayout !== layout) this.renderPinBar();
  }

  private set(which: "hovered" | "focused", target: Target | null): void {
    if (sameTarget(this[which], target)) return;
    this[which] = target;
    this.refresh();
  }

  private renderPinBar(): void {
    const layout = this.context.layout();
    if (!layout) return;
    this.pinBarKey = JSON.stringify([this.pinned, this.preview === null]);
    this.pinBarLayout = layout;
    const send = this.context.send;
    const refocus = focusKey(this.pinSlot);
    replaceChildren(this.pinSlot, [
      renderPinBar(layout, this.pinned, {
        preview: this.preview,
        onPreview: send ? (device) => this.requestPreview(device, send) : undefined,
        onUnpin: () => this.pin(null),
        signal: this.context.signal,
      }),
    ]);
    if (refocus) this.pinSlot.querySelector<HTMLElement>(refocus)?.focus();
  }

  private requestPreview(device: number, send: (message: PreviewRequest) => void): void {
    this.preview = { device, status: "loading" };
    send({ kind: "preview", device, dims: this.context.shownDims() });
    this.renderPinBar();
  }
}

function toHighlight(target: Target | null, layout: Layout | null): Highlight | null {
  if (!target || !layout) return null;
  if (target.kind === "tile") return { tile: target.tile, position: null };
  return { tile: layout.tileOf[target.position], position: target.position };
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

function isPreviewReply(message: unknown): message is PreviewReply {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { kind?: unknown }).kind === "preview" &&
    typeof (message as { device?: unknown }).device === "number"
  );
}
