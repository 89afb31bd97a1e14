/**
 * The tree view's selected leaf: its layout drawn as the array view's
 * pictures, worked out in the browser for a leaf on a mesh and asked of the
 * kernel otherwise (a `leaf_layout` request), or why it cannot be shown.
 */

import { leafLayout } from "../engine/tree/leaf";
import type { Payload } from "../payload/array";
import { leafType, type Tree } from "../payload/tree";
import { isLeafLayoutReply, type LeafLayoutRequest } from "../traits/tree";
import { h, replaceChildren } from "../util/dom";
import { measured } from "../util/measure";
import { LayoutPicture } from "./layoutPicture";

/** Where the selected leaf's layout comes from. */
type LeafState =
  | { leaf: number; status: "local"; payload: Payload }
  | { leaf: number; status: "kernel"; payload: Payload }
  | { leaf: number; status: "asking" }
  | { leaf: number; status: "error"; message: string }
  | { leaf: number; status: "none"; message: string };

export class SelectedLeaf {
  readonly element: HTMLElement;
  private readonly title = h("h3", { class: "sv-panel-title" }, ["Selected leaf"]);
  private readonly message = h("div", { class: "sv-leaf-message" });
  private readonly picture: LayoutPicture;
  /** Asks the kernel for a leaf's layout; absent where there is none. */
  private readonly send?: (message: LeafLayoutRequest) => void;
  private tree: Tree | null = null;
  private state: LeafState | null = null;
  /** The path selected, kept across rules edits (they keep the leaves). */
  private path: string | null = null;
  /** What the selected leaf's local layout was worked out from (see leafInputs). */
  private inputs = "";

  constructor(send?: (message: LeafLayoutRequest) => void) {
    this.send = send;
    const pictures = h("div", { class: "sv-leaf-pictures" });
    this.picture = new LayoutPicture(pictures);
    this.element = h(
      "section",
      { class: "sv-panel sv-leaf-detail", "data-role": "leaf-detail", "aria-label": "Selected leaf" },
      [this.title, this.message, pictures],
    );
  }

  /** The leaf selected now, by index (null for none). */
  get leaf(): number | null {
    return this.state?.leaf ?? null;
  }

  /** A new tree: the leaf selected before (by path) is laid out again; the index of the leaf, or -1. */
  setTree(tree: Tree): number {
    this.tree = tree;
    const leaf = this.path === null ? -1 : tree.paths.indexOf(this.path);
    if (leaf >= 0) this.select(leaf);
    else this.clear();
    return leaf;
  }

  /** Works out leaf i's layout: in the browser for a leaf on a mesh, from the kernel otherwise. */
  select(leaf: number): void {
    const tree = this.tree;
    if (!tree) return;
    this.path = tree.paths[leaf];
    // A rules edit that leaves this leaf's sharding alone leaves its pictures alone too.
    const inputs = leafInputs(tree, leaf);
    if (this.state?.leaf === leaf && this.state.status === "local" && inputs === this.inputs) return;
    this.inputs = inputs;
    const outcome = leafLayout(tree, leaf);
    const name = tree.paths[leaf] || "(root)";
    if (outcome.status === "local") {
      this.state = { leaf, status: "local", payload: outcome.payload };
    } else if (outcome.status === "not-array") {
      const type = tree.otherTypes.get(leaf) ?? "Python value";
      this.state = { leaf, status: "none", message: `${name} is a ${type}, not an array: it holds no device memory.` };
    } else if (this.send) {
      this.state = { leaf, status: "asking" };
      this.send({ kind: "leaf_layout", leaf });
    } else {
      const group = tree.payload.groups[tree.group[leaf]];
      const why =
        outcome.status === "no-mesh"
          ? `its ${group.sharding} has no mesh, so only a kernel lays it out`
          : "this page's payload is too old to lay leaves out in the browser";
      this.state = { leaf, status: "none", message: `${name}'s layout is not available offline: ${why}.` };
    }
    this.render();
  }

  /** The kernel's answer to a `leaf_layout` request. */
  receive(message: unknown): void {
    if (!isLeafLayoutReply(message)) return;
    if (this.state?.status !== "asking" || this.state.leaf !== message.leaf) return; // a stale answer
    this.state =
      "payload" in message
        ? { leaf: message.leaf, status: "kernel", payload: message.payload }
        : { leaf: message.leaf, status: "error", message: message.error };
    measured(() => this.render());
  }

  destroy(): void {
    this.picture.destroy();
  }

  private clear(): void {
    this.path = null;
    this.state = null;
    this.render();
  }

  private render(): void {
    const tree = this.tree;
    const state = this.state;
    if (!tree || !state) {
      this.title.textContent = "Selected leaf";
      this.say(h("p", { class: "sv-muted sv-hint" }, ["Select a leaf in the table (or the audit) to see its layout."]));
      return;
    }
    const name = tree.paths[state.leaf] || "(root)";
    this.title.textContent = `Leaf ${name}`;
    if (state.status === "local" || state.status === "kernel") {
      const how = state.status === "local" ? "laid out in the browser from the tree" : "laid out by the kernel";
      replaceChildren(this.message, [h("p", { class: "sv-muted sv-leaf-source" }, [`${name}: ${how}.`])]);
      this.picture.show(state.payload); // rules change a leaf's sharding, so these pictures take no edits
    } else if (state.status === "asking") {
      this.say(h("p", { class: "sv-muted" }, ["Asking the kernel for this leaf's layout\u2026"]));
    } else if (state.status === "error") {
      this.say(h("div", { class: "sv-error", role: "alert", "data-source": "leaf" }, [state.message]));
    } else {
      this.say(h("p", { class: "sv-note", "data-role": "leaf-unavailable" }, [state.message]));
    }
  }

  /** A message in place of the pictures (none at all for no leaf). */
  private say(message: HTMLElement): void {
    replaceChildren(this.message, [message]);
    this.picture.destroy();
    this.picture.show(null);
  }
}

/** Everything a leaf's layout in the browser depends on: equal texts give equal layouts. */
function leafInputs(tree: Tree, leaf: number): string {
  const { payload } = tree;
  const g = tree.group[leaf];
  const group = g >= 0 ? payload.groups[g] : null;
  const mesh = group?.mesh === null || group === null ? null : payload.meshes[group.mesh];
  return JSON.stringify([
    group,
    mesh,
    payload.leaves.shape[leaf],
    leafType(tree, leaf),
    payload.devices,
    payload.kinds,
    payload.machine_devices,
    payload.process_index,
    payload.process_count,
  ]);
}
