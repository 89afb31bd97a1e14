/**
 * The one way this front end builds DOM: attributes through setAttribute,
 * text through textContent. Data never goes through innerHTML, so a hostile
 * axis name or error text shows as text and creates no element.
 */

export type Attributes = Record<string, string | number | boolean | null | undefined>;
export type Child = Node | string | null | undefined | false;

/**
 * Lumino (JupyterLab, Notebook 7) matches no shortcut for a key pressed in an element with this
 * attribute, so Enter, Shift+Enter and the command-mode letters reach the box, not the notebook.
 */
export const SUPPRESS_SHORTCUTS = "data-lm-suppress-shortcuts";

/**
 * Keeps the keys typed into a text box from the notebook: Lumino matches no shortcut under the
 * attribute, and a keydown that stops at the box never reaches JupyterLab's own handler, which
 * cancels a new line typed anywhere in a cell. Escape still bubbles (the views unpin on it).
 */
function keepKeysInBox(element: HTMLElement): void {
  element.setAttribute(SUPPRESS_SHORTCUTS, "true");
  element.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") event.stopPropagation();
  });
}

/**
 * Creates `<tag>` with attributes (null/undefined/false skipped, true as "") and children. Every
 * `<input>` and `<textarea>` keeps the keys typed into it from the notebook's shortcuts.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (tag === "input" || tag === "textarea") keepKeysInBox(element);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** Appends children; strings become text nodes. */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** A cheap stand-in for `element.replaceChildren(...)` that takes the same children as {@link h}. */
export function replaceChildren(parent: Element, children: readonly Child[]): void {
  parent.textContent = "";
  append(parent, children);
}

/** Reads a CSS custom property from the themed root, with a fallback for hosts without CSS (tests). */
export function cssVar(element: Element, name: string, fallback: string): string {
  const value = getComputedStyle(element).getPropertyValue(name).trim();
  return value || fallback;
}
