/**
 * What an entry needs of a mounted view, and `ViewSwitch`, which keeps the
 * view of the payload's kind mounted: the entry says which kind a payload is
 * and how to mount it (js/host/kinds.ts), and a widget handed a payload of
 * another kind gets that kind's view.
 */

/** What an entry needs of a mounted view. */
export interface MountedView {
  /** Trait changes, by name; a view ignores names it does not know. */
  update(changed: Iterable<string>): void;
  /** A custom message from Python. */
  receive(message: unknown): void;
  destroy(): void;
}

export class ViewSwitch implements MountedView {
  private readonly el: HTMLElement;
  private readonly kindNow: () => string;
  private readonly mount: (kind: string, el: HTMLElement) => MountedView;
  private kind: string;
  private view: MountedView;

  /** `kindNow`: the kind of the payload shown now; `mount`: a view of a kind. */
  constructor(el: HTMLElement, kindNow: () => string, mount: (kind: string, el: HTMLElement) => MountedView) {
    this.el = el;
    this.kindNow = kindNow;
    this.mount = mount;
    this.kind = kindNow();
    this.view = mount(this.kind, el);
  }

  /** The kind of view mounted now. */
  get current(): string {
    return this.kind;
  }

  update(changed: Iterable<string>): void {
    const kind = this.kindNow();
    if (kind === this.kind) {
      this.view.update(changed);
      return;
    }
    // A new view reads everything itself when it is built.
    this.view.destroy();
    this.kind = kind;
    this.view = this.mount(kind, this.el);
  }

  receive(message: unknown): void {
    this.view.receive(message);
  }

  destroy(): void {
    this.view.destroy();
  }
}
