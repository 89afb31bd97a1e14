/**
 * Keeps the map and the inspector (`side`) in view while the pictures
 * (`frame`) scroll past: beside a grid taller than the window the side slides
 * down to stay at the top of what shows; placed under the grid (no room
 * beside it) it rises to the bottom of what shows, over the grid, until its
 * own place scrolls into view. It never leaves the frame.
 *
 * CSS `position: sticky` cannot: JupyterLab's output areas clip
 * (`overflow: auto`), so a sticky box there sticks to the output, which
 * never scrolls. The side is moved by a transform, set after scrolls and
 * resizes (once a frame), and only when its offset changes.
 */

/**
 * The part of the window that shows `element`: the window less the outside of
 * every ancestor that cuts its content short (taller content than its box, and
 * not `overflow: visible`, such as JupyterLab's notebook scroller). Ancestors
 * that hold all they contain are passed over, among them boxes of no height
 * that clip nothing of their absolutely placed children (JupyterLab's theme
 * container).
 */
export function visibleBand(element: HTMLElement): { top: number; bottom: number } {
  const view = element.ownerDocument.defaultView;
  let top = 0;
  let bottom = view?.innerHeight ?? Number.POSITIVE_INFINITY;
  for (let at = element.parentElement; at; at = at.parentElement) {
    if (at.clientHeight === 0 || at.scrollHeight <= at.clientHeight + 1) continue;
    if ((view?.getComputedStyle(at).overflowY ?? "visible") === "visible") continue;
    const box = at.getBoundingClientRect();
    top = Math.max(top, box.top);
    bottom = Math.min(bottom, box.bottom);
  }
  return { top, bottom };
}

/**
 * The offset (CSS pixels, down) that keeps a side box in the band: `frame`
 * the pictures' box, `natural` the side's box where layout put it, `beside`
 * whether it sits beside the grid (else under it).
 */
export function sideOffset(
  frame: { top: number; bottom: number },
  natural: { top: number; bottom: number },
  band: { top: number; bottom: number },
  beside: boolean,
): number {
  if (beside) return Math.max(0, Math.min(band.top - natural.top, frame.bottom - natural.bottom));
  return Math.min(0, Math.max(band.bottom - natural.bottom, frame.top - natural.top));
}

/** Starts following; the returned function asks for a new placement (after a redraw). */
export function keepInView(side: HTMLElement, frame: HTMLElement, signal: AbortSignal): () => void {
  const view = frame.ownerDocument.defaultView;
  if (!view || typeof view.requestAnimationFrame !== "function") return () => {};
  let offset = 0;
  let asked = false;
  const place = (): void => {
    asked = false;
    if (!frame.isConnected) return;
    const box = side.getBoundingClientRect();
    const natural = { top: box.top - offset, bottom: box.bottom - offset };
    const frameBox = frame.getBoundingClientRect();
    // In the grid's line the side starts at the frame's top; wrapped, it starts below the grid.
    const beside = natural.top - frameBox.top < 1;
    const next = Math.round(sideOffset(frameBox, natural, visibleBand(frame), beside));
    if (next === offset) return;
    offset = next;
    side.style.transform = offset === 0 ? "" : `translateY(${offset}px)`;
    side.classList.toggle("sv-floating", offset < 0);
  };
  const ask = (): void => {
    if (asked) return;
    asked = true;
    view.requestAnimationFrame(place);
  };
  const options = { capture: true, passive: true, signal };
  frame.ownerDocument.addEventListener("scroll", ask, options);
  view.addEventListener("resize", ask, { passive: true, signal });
  if (typeof ResizeObserver !== "undefined") {
    const observer = new ResizeObserver(ask);
    observer.observe(frame);
    signal.addEventListener("abort", () => observer.disconnect(), { once: true });
  }
  return ask;
}
