/**
 * The Python that rebuilds the current layout, with a copy button. One
 * element for the view's lifetime: a new payload replaces the code in place,
 * so a block the user opened stays open, and Copy always copies the code
 * shown at the moment of the click.
 */

import { h } from "../util/dom";

export class CodeBlock {
  readonly element: HTMLDetailsElement;
  private readonly code = h("code", {});
  private readonly status = h("span", { class: "sv-muted", "aria-live": "polite" });

  constructor(signal: AbortSignal, title = "Python code for this layout") {
    const button = h("button", { type: "button", class: "sv-button", "data-role": "copy-code" }, ["Copy"]);
    const pre = h("pre", { class: "sv-code", "data-role": "code" }, [this.code]);
    button.addEventListener(
      "click",
      () => {
        copyText(this.code.textContent ?? "", pre).then(
          (ok) => {
            this.status.textContent = ok ? "Copied." : "Select the code and copy it by hand.";
          },
          () => {
            this.status.textContent = "Select the code and copy it by hand.";
          },
        );
      },
      { signal },
    );
    this.element = h("details", { class: "sv-code-block" }, [
      h("summary", {}, [title]),
      h("div", { class: "sv-code-bar" }, [button, this.status]),
      pre,
    ]);
  }

  /** Shows the code of a new payload (the "Copied." of an older one goes). */
  update(code: string): void {
    if (this.code.textContent === code) return;
    this.code.textContent = code;
    this.status.textContent = "";
  }
}

/** Copies with the async clipboard where the page may; otherwise selects the text for the user. */
async function copyText(text: string, fallbackTarget: HTMLElement): Promise<boolean> {
  if (globalThis.navigator?.clipboard?.writeText) {
    try {
      await globalThis.navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Denied (no user activation, insecure context): fall through to selecting.
    }
  }
  const selection = globalThis.getSelection?.();
  if (selection) {
    selection.selectAllChildren(fallbackTarget);
  }
  return false;
}
