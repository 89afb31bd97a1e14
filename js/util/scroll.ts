/** Scrolling one box to show an item inside it, without moving the page or the notebook around it. */

/** Scrolls `container` (a scrolling box) just enough to show `item`; nothing else moves. */
export function revealWithin(container: HTMLElement, item: HTMLElement): void {
  const box = container.getBoundingClientRect();
  const at = item.getBoundingClientRect();
  if (at.top < box.top) container.scrollTop -= box.top - at.top;
  else if (at.bottom > box.bottom) container.scrollTop += Math.min(at.bottom - box.bottom, at.top - box.top);
}
