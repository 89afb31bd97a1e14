/** Keeping keyboard focus on a control that a redraw replaces. */

/** A selector for the focused control inside `container`, to focus its replacement after a redraw. */
export function focusKey(container: HTMLElement): string | null {
  const active = container.ownerDocument.activeElement;
  if (!active || !container.contains(active)) return null;
  const role = active.getAttribute("data-role");
  if (!role) return null;
  const dim = active.getAttribute("data-dim");
  return `[data-role="${role}"]${dim !== null ? `[data-dim="${dim}"]` : ""}`;
}
