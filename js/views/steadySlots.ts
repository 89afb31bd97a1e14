/**
 * Keeps the array view's editors and inspector where they are while the user
 * edits (focus inside the widget): a picture that shrinks leaves its slot as
 * large as it was, until focus leaves the widget.
 */

export class SteadySlots {
  private readonly root: HTMLElement;
  private readonly meshSlot: HTMLElement;
  private readonly mapSlot: HTMLElement;
  /** The slots' sizes as last laid out (a ResizeObserver's, so reading them forces no layout). */
  private readonly laidOut = { meshWidth: 0, meshHeight: 0, mapHeight: 0 };
  private steady = false;

  constructor(root: HTMLElement, meshSlot: HTMLElement, mapSlot: HTMLElement, signal: AbortSignal) {
    this.root = root;
    this.meshSlot = meshSlot;
    this.mapSlot = mapSlot;
    if (typeof ResizeObserver !== "undefined") {
      const observer = new ResizeObserver(() => {
        this.laidOut.meshWidth = meshSlot.offsetWidth;
        this.laidOut.meshHeight = meshSlot.offsetHeight;
        this.laidOut.mapHeight = mapSlot.offsetHeight;
      });
      observer.observe(meshSlot);
      observer.observe(mapSlot);
      signal.addEventListener("abort", () => observer.disconnect(), { once: true });
    }
    root.addEventListener(
      "focusout",
      (event) => {
        const next = (event as FocusEvent).relatedTarget;
        if (next instanceof Node && root.contains(next)) return;
        this.steady = false;
        for (const slot of [meshSlot, mapSlot]) slot.style.minWidth = slot.style.minHeight = "";
      },
      { signal },
    );
  }

  /** On a new picture while the user edits: the slots keep at least the size they were laid out at. */
  keep(): void {
    const active = this.root.ownerDocument.activeElement;
    if (!this.steady && !(active && this.root.contains(active))) return;
    this.steady = true;
    const { meshWidth, meshHeight, mapHeight } = this.laidOut;
    atLeast(this.meshSlot, "minWidth", meshWidth);
    atLeast(this.meshSlot, "minHeight", meshHeight);
    atLeast(this.mapSlot, "minHeight", mapHeight);
  }
}

/** Raises a minimum size to `pixels` (never lowers it; a style left as it is costs no restyle). */
function atLeast(slot: HTMLElement, property: "minWidth" | "minHeight", pixels: number): void {
  if (pixels <= (Number.parseFloat(slot.style[property]) || 0)) return;
  slot.style[property] = `${pixels}px`;
}
