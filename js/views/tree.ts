/**
 * The tree (model) view: every leaf of a pytree and every device's memory.
 * It composes the summary, the leaf table, the memory heat map (the mesh
 * grid painted by bytes) with what a device holds, the selected leaf's
 * layout (the array view's pictures, computed in the browser for a leaf on a
 * mesh, asked of the kernel otherwise), the audit and the rules editor. It
 * keeps browser-only state (selection, hovered and pinned device, filter,
 * sort) apart from the synced traits, and redraws from each new payload
 * without losing it.
 */

import { CodeBlock } from "../components/codeBlock";
import { renderDevicePanel } from "../components/devicePanel";
import { MemoryHeatMap } from "../components/heatMap";
import { LeafTable } from "../components/leafTable";
import { decodedOrSaid, sayNothingYet } from "../components/payloadStatus";
import { RulesEditor } from "../components/rulesEditor";
import { renderAudit } from "../components/treeAudit";
import { renderTreeSummary } from "../components/treeSummary";
import { deviceGridPayload, leafLayout } from "../engine/tree/leaf";
import { decodePayload, type Layout, type Payload } from "../payload/array";
import { decodeTreePayload, isTreePayload, leafType, type Tree } from "../payload/tree";
import { ANSWERED } from "../traits/host";
import { isLeafLayoutReply, type TreeHost } from "../traits/tree";
import { h, replaceChildren } from "../util/dom";
import { measured, ROOT_CLASS } from "../util/measure";
import { LayoutPicture } from "./layoutPicture";

/** Where the selected leaf's layout comes from. */
type LeafState =
  | { leaf: number; status: "local"; payload: Payload }
  | { leaf: number; status: "kernel"; payload: Payload }
  | { leaf: number; status: "asking" }
  | { leaf: number; status: "error"; message: string }
  | { leaf: number; status: "none"; message: string };

export class TreeView {
  readonly root: HTMLElement;
  private readonly host: TreeHost;
  private readonly lifetime = new AbortController();
  private readonly summarySlot = h("div", { class: "sv-summary-slot" });
  private readonly statusSlot = h("div", { class: "sv-status" });
  private readonly devicePanelSlot = h("div", { class: "sv-device-slot" });
  private readonly leafTitle = h("h3", { class: "sv-panel-title" }, ["Selected leaf"]);
  private readonly leafMessage = h("div", { class: "sv-leaf-message" });
  private readonly leafPictures = h("div", { class: "sv-leaf-pictures" });
  private readonly auditSlot = h("div", { class: "sv-audit-slot" });
  private readonly code: CodeBlock;
  private readonly noCode = h("p", { class: "sv-muted sv-no-code" }, [
    "No rules in force: every leaf keeps its own sharding.",
  ]);
  private readonly table: LeafTable;
  private readonly heatMap: MemoryHeatMap;
  private readonly rules: RulesEditor;

  private tree: Tree | null = null;
  private payloadRef: unknown = null;
  private gridKey = "";
  /** What the selected leaf's local layout was worked out from (see leafInputs). */
  private leafInputs = "";
  /** Counts the payloads drawn, to key what depends on the whole tree. */
  private drawnPayload = 0;
  /** What each slot was last drawn from (see redrawSlot). */
  private readonly slotKeys = new Map<HTMLElement, string>();
  private gridLayout: Layout | null = null;
  private selectedPath: string | null = null;
  private leafState: LeafState | null = null;
  private readonly leafPicture = new LayoutPicture(this.leafPictures);
  private hovered: number | null = null;
  private focused: number | null = null;
  private pinned: number | null = null;

  constructor(el: HTMLElement, host: TreeHost) {
    this.host = host;
    const signal = this.lifetime.signal;
    this.table = new LeafTable({ onSelect: (leaf) => this.selectLeaf(leaf), signal });
    this.heatMap = new MemoryHeatMap(
      {
        onHover: (place) => this.setDevice("hovered", place),
        onFocus: (place) => this.setDevice("focused", place),
        onActivate: (place) => {
          this.pinned = this.pinned === place ? null : place;
          this.refreshDevice();
        },
      },
      signal,
    );
    this.code = new CodeBlock(signal, "Python that applies these rules");
    this.rules = new RulesEditor({
      readOnly: host.readOnly,
      note: host.note,
      onCommit: (text) => host.edit("rules_text", text),
      inFlight: () => host.editsInFlight?.() ?? false,
      signal,
    });
    this.root = h("div", { class: `${ROOT_CLASS} sv-tree`, "data-shardviz": "", "data-view": "tree" }, [
      this.summarySlot,
      this.statusSlot,
      h("div", { class: "sv-tree-main" }, [
        h("section", { class: "sv-panel sv-leaves-panel", "aria-label": "Leaves" }, [
          h("h3", { class: "sv-panel-title" }, ["Leaves"]),
          this.table.element,
        ]),
        h("section", { class: "sv-panel sv-devices-panel", "aria-label": "Memory per device" }, [
          h("h3", { class: "sv-panel-title" }, ["Memory per device"]),
          this.heatMap.element,
          this.devicePanelSlot,
        ]),
      ]),
      h("section", { class: "sv-panel sv-leaf-detail", "data-role": "leaf-detail", "aria-label": "Selected leaf" }, [
        this.leafTitle,
        this.leafMessage,
        this.leafPictures,
      ]),
      h("div", { class: "sv-tree-lower" }, [
        h("section", { class: "sv-panel sv-audit-panel" }, [
          h("h3", { class: "sv-panel-title" }, ["Audit"]),
          this.auditSlot,
        ]),
        h("section", { class: "sv-panel sv-rules-panel" }, [
          h("h3", { class: "sv-panel-title" }, ["Rules"]),
          this.rules.element,
          this.code.element,
          this.noCode,
        ]),
      ]),
    ]);
    this.root.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Escape" && this.pinned !== null) {
          this.pinned = null;
          this.refreshDevice();
        }
      },
      { signal },
    );
    el.append(this.root);
    this.update(["payload", "error", "error_source", "notice", "rules_text"]);
  }

  /** Applies trait changes; the pictures redraw only when Python sent a new payload. */
  update(changed: Iterable<string>): void {
    const keys = new Set(changed);
    if (keys.has("payload")) this.setPayload(this.host.get("payload"));
    const errorChanged = keys.has("error") || keys.has("error_source");
    if (errorChanged) this.rules.showError(this.host.get("error"), this.host.get("error_source"));
    if (keys.has("notice")) this.rules.showNotice(this.host.get("notice"));
    // An edit that changed nothing (the rules in force again) is answered by its number alone.
    const answered = errorChanged || keys.has("payload") || keys.has("notice") || keys.has(ANSWERED);
    if (answered || keys.has("rules_text"))
      this.rules.sync(this.host.get("rules_text"), this.host.get("error"), answered);
  }

  /** Custom messages from Python: a leaf's layout it was asked for. */
  receive(message: unknown): void {
    if (!isLeafLayoutReply(message)) return;
    const state = this.leafState;
    if (state?.status !== "asking" || state.leaf !== message.leaf) return; // a stale answer
    this.leafState =
      "payload" in message
        ? { leaf: message.leaf, status: "kernel", payload: message.payload }
        : { leaf: message.leaf, status: "error", message: message.error };
    measured(() => this.renderLeaf());
  }

  destroy(): void {
    this.leafPicture.destroy();
    this.lifetime.abort();
    this.root.remove();
  }

  /** The leaf selected now, by index (null for none). */
  get selectedLeaf(): number | null {
    return this.leafState?.leaf ?? null;
  }

  private setPayload(value: unknown): void {
    if (value === this.payloadRef) return; // the same object: nothing new to draw
    this.payloadRef = value;
    if (!isTreePayload(value)) {
      sayNothingYet(this.statusSlot);
      return;
    }
    // Keep the last good picture; say why the new one is not drawn.
    const tree = decodedOrSaid(this.statusSlot, "tree", () => decodeTreePayload(value, this.tree));
    if (tree === null) return;
    measured(() => this.draw(tree));
  }

  /** Replaces a slot's content only when its inputs changed: unchanged DOM costs no style or layout. */
  private redrawSlot(slot: HTMLElement, key: string, render: () => HTMLElement): void {
    if (this.slotKeys.get(slot) === key) return;
    this.slotKeys.set(slot, key);
    replaceChildren(slot, [render()]);
  }

  private draw(tree: Tree): void {
    this.tree = tree;
    this.drawnPayload++;
    const p = tree.payload;
    // The heat map first: its canvas reads theme colours, which costs least before the DOM changes.
    this.heatMap.setTree(tree, this.deviceGrid(tree));
    const summaryKey = JSON.stringify([p.leaves.count, p.total_bytes, p.meshes, p.device_bytes, tree.arrayCount]);
    this.redrawSlot(this.summarySlot, summaryKey, () => renderTreeSummary(tree));
    this.table.setTree(tree);
    for (const which of ["hovered", "focused", "pinned"] as const) {
      const place = this[which];
      if (place !== null && place >= tree.deviceCount) this[which] = null;
    }
    this.refreshDevice();
    const signal = this.lifetime.signal;
    const auditKey = JSON.stringify([p.audit, p.replicated_bytes, p.meshes.map((m) => m.names)]);
    this.redrawSlot(this.auditSlot, auditKey, () =>
      renderAudit(tree, { onSelectLeaf: (leaf) => this.selectLeaf(leaf, true), signal }),
    );
    // One code block for the view's lifetime: an edit replaces its code, and it stays open if opened.
    const code = tree.payload.code ?? "";
    this.code.update(code);
    this.code.element.hidden = code === "";
    this.noCode.hidden = code !== "";
    // A rules edit keeps the leaves: the selected one is laid out again under its new sharding.
    const path = this.selectedPath;
    const leaf = path === null ? -1 : tree.paths.indexOf(path);
    if (leaf >= 0) this.layOut(leaf);
    else this.clearLeaf();
  }

  /** The first mesh's device grid, rebuilt only when the mesh or its devices change. */
  private deviceGrid(tree: Tree): Layout | null {
    const { meshes, devices, kinds } = tree.payload;
    const key = JSON.stringify([meshes[0] ?? null, devices, kinds]);
    if (key !== this.gridKey) {
      this.gridKey = key;
      const payload = deviceGridPayload(tree);
      this.gridLayout = payload ? decodePayload(payload) : null;
    }
    return this.gridLayout;
  }

  private selectLeaf(leaf: number, reveal = false): void {
    if (!this.tree) return;
    measured(() => {
      this.layOut(leaf);
      if (reveal) this.table.reveal(leaf);
    });
  }

  /** Works out leaf i's layout: in the browser for a leaf on a mesh, from the kernel otherwise. */
  private layOut(leaf: number): void {
    const tree = this.tree;
    if (!tree) return;
    this.selectedPath = tree.paths[leaf];
    this.table.setSelected(leaf);
    // A rules edit that leaves this leaf's sharding alone leaves its pictures alone too.
    const inputs = leafInputs(tree, leaf);
    if (this.leafState?.leaf === leaf && this.leafState.status === "local" && inputs === this.leafInputs) return;
    this.leafInputs = inputs;
    const outcome = leafLayout(tree, leaf);
    const name = tree.paths[leaf] || "(root)";
    if (outcome.status === "local") {
      this.leafState = { leaf, status: "local", payload: outcome.payload };
    } else if (outcome.status === "not-array") {
      this.leafState = {
        leaf,
        status: "none",
        message: `${name} is a ${tree.otherTypes.get(leaf) ?? "Python value"}, not an array: it holds no device memory.`,
      };
    } else if (this.host.send) {
      this.leafState = { leaf, status: "asking" };
      this.host.send({ kind: "leaf_layout", leaf });
    } else {
      const group = tree.payload.groups[tree.group[leaf]];
      const why =
        outcome.status === "no-mesh"
          ? `its ${group.sharding} has no mesh, so only a kernel lays it out`
          : "this page's payload is too old to lay leaves out in the browser";
      this.leafState = { leaf, status: "none", message: `${name}'s layout is not available offline: ${why}.` };
    }
    this.renderLeaf();
  }

  private clearLeaf(): void {
    this.selectedPath = null;
    this.leafState = null;
    this.table.setSelected(null);
    this.renderLeaf();
  }

  private renderLeaf(): void {
    const tree = this.tree;
    const state = this.leafState;
    if (!tree || !state) {
      this.leafTitle.textContent = "Selected leaf";
      replaceChildren(this.leafMessage, [
        h("p", { class: "sv-muted sv-hint" }, ["Select a leaf in the table (or the audit) to see its layout."]),
      ]);
      this.showLeafPictures(null);
      return;
    }
    const name = tree.paths[state.leaf] || "(root)";
    this.leafTitle.textContent = `Leaf ${name}`;
    if (state.status === "local" || state.status === "kernel") {
      const how = state.status === "local" ? "laid out in the browser from the tree" : "laid out by the kernel";
      replaceChildren(this.leafMessage, [h("p", { class: "sv-muted sv-leaf-source" }, [`${name}: ${how}.`])]);
      this.showLeafPictures(state.payload);
    } else if (state.status === "asking") {
      replaceChildren(this.leafMessage, [
        h("p", { class: "sv-muted" }, ["Asking the kernel for this leaf's layout\u2026"]),
      ]);
      this.showLeafPictures(null);
    } else if (state.status === "error") {
      replaceChildren(this.leafMessage, [
        h("div", { class: "sv-error", role: "alert", "data-source": "leaf" }, [state.message]),
      ]);
      this.showLeafPictures(null);
    } else {
      replaceChildren(this.leafMessage, [
        h("p", { class: "sv-note", "data-role": "leaf-unavailable" }, [state.message]),
      ]);
      this.showLeafPictures(null);
    }
  }

  /** A leaf's pictures (rules change a leaf's sharding, so these take no edits); none at all for no leaf. */
  private showLeafPictures(payload: Payload | null): void {
    if (payload === null) this.leafPicture.destroy();
    this.leafPicture.show(payload);
  }

  private setDevice(which: "hovered" | "focused", place: number | null): void {
    if (this[which] === place) return;
    this[which] = place;
    this.refreshDevice();
  }

  private refreshDevice(): void {
    const tree = this.tree;
    if (!tree) return;
    const current = this.hovered ?? this.focused ?? this.pinned;
    this.heatMap.setHighlight(current);
    const pinned = current !== null && current === this.pinned && this.hovered === null;
    // Keyed by the tree too: a rules edit changes what a device holds.
    this.redrawSlot(this.devicePanelSlot, `${current}|${pinned}|${current === null ? "" : this.drawnPayload}`, () =>
      renderDevicePanel(tree, current, {
        pinned,
        onSelectLeaf: (leaf) => this.selectLeaf(leaf, true),
        signal: this.lifetime.signal,
      }),
    );
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
