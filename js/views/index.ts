/**
 * Which view draws a payload: one entry per payload `kind`. How each view is
 * built with its host is js/host/kinds.ts's to say (the widget entry makes
 * its factories from it); `ViewSwitch` mounts the one the payload asks for
 * and swaps it when the kind changes (the trait starts as `{}`, and a widget
 * may be handed a payload of another kind). A new view is one more kind here
 * and one more entry there.
 */

export type ViewKind = "array" | "tree" | "program" | "compare";

/** What an entry needs of a mounted view. */
export interface MountedView {
  /** Trait changes, by name; a view ignores names it does not know. */
  update(changed: Iterable<string>): void;
  /** A custom message from Python. */
  receive(message: unknown): void;
  destroy(): void;
}

export type ViewFactories = Record<ViewKind, (el: HTMLElement) => MountedView>;

/** The view a payload asks for; anything else (nothing yet, an unknown kind) goes to the array view, which says so. */
export function viewKind(payload: unknown): ViewKind {
  const kind = (payload as { kind?: unknown } | null)?.kind;
  return kind === "tree" || kind === "program" || kind === "compare" ? kind : "array";
}

export class ViewSwitch implements MountedView {
  private readonly el: HTMLElement;
  private readonly payload: () => unknown;
  private readonly factories: ViewFactories;
  private kind: ViewKind;
  private view: MountedView;

  constructor(el: HTMLElement, payload: () => unknown, factories: ViewFactories) {
    this.el = el;
    this.payload = payload;
    this.factories = factories;
    this.kind = viewKind(payload());
    this.view = factories[this.kind](el);
  }

  /** The kind of view mounted now. */
  get current(): ViewKind {
    return this.kind;
  }

  update(changed: Iterable<string>): void {
    const keys = Array.from(changed);
    if (keys.includes("payload")) {
      const kind = viewKind(this.payload());
      if (kind !== this.kind) {
        // A new view reads every trait itself when it is built.
        this.view.destroy();
        this.kind = kind;
        this.view = this.factories[kind](this.el);
        return;
      }
    }
    this.view.update(keys);
  }

  receive(message: unknown): void {
    this.view.receive(message);
  }

  destroy(): void {
    this.view.destroy();
  }
}
