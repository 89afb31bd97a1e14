/**
 * The array view's pictures (type line, mesh grid, array map, inspector) for
 * a layout another view shows: a program's value, a tree's leaf. A picture,
 * not an editor: the layout is the other view's to decide, so its host takes
 * no edits. The view is kept and repainted in place from one payload to the
 * next, so selecting another value or leaf costs a repaint, not a rebuild.
 */

import type { Payload } from "../payload/array";
import { payloadTraits, type SyncedTraits, type ViewHost } from "../traits/array";
import { readOnlyHost } from "../traits/host";
import { ShardvizView } from "./array";

export class LayoutPicture {
  private view: ShardvizView | null = null;
  private traits: SyncedTraits | null = null;

  /** `slot` holds the pictures; it is hidden while there is nothing to show. */
  constructor(private readonly slot: HTMLElement) {}

  /** Shows `payload`'s layout, or hides the slot (keeping the view for the next one) when null. */
  show(payload: Payload | null): void {
    this.slot.hidden = payload === null;
    if (payload === null) return;
    if (this.view && this.traits) {
      this.traits.payload = payload;
      this.view.update(["payload"]);
      return;
    }
    const traits = payloadTraits(payload);
    const host: ViewHost = readOnlyHost(traits);
    this.traits = traits;
    this.view = new ShardvizView(this.slot, host, { embedded: true });
  }

  destroy(): void {
    this.view?.destroy();
    this.view = null;
    this.traits = null;
  }
}
