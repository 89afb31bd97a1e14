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
import { deviceGridPayload } from "../engine/tree/leaf";
import { decodePayload, type Layout } from "../payload/array";
import { decodeTreePayload, isTreePayload, type Tree } from "../payload/tree";
import { ANSWERED } from "../traits/host";
import type { TreeHost } from "../traits/tree";
import { h, replaceChildren } from "../util/dom";
import { measured, ROOT_CLASS } from "../util/measure";
import { SelectedLeaf } from "./treeLeaf";

export class TreeView {
  readonly root: HTMLElement;
  private readonly host: TreeHost;
  private readonly lifetime = new AbortController();
  private readonly summarySlot = h("div", { class: "sv-summary-slot" });
  private readonly statusSlot = h("div", { class: "sv-status" });
  private readonly devicePanelSlot = h("div", { class: "sv-device-slot" });
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
  /** Counts the payloads drawn, to key what depends on the whole tree. */
  private drawnPayload = 0;
  /** What each slot was last drawn from (see redrawSlot). */
  private readonly slotKeys = new Map<HTMLElement, string>();
  private gridLayout: Layout | null = null;
  private readonly leaf: SelectedLeaf;
  private hovered: number | null = null;
  private focused: number | null = null;
  private pinned: number | null = null;

  constructor(el: HTMLElement, host: TreeHost) {
    this.host = host;
    const signal = this.lifetime.signal;
    this.table = new LeafTable({ onSelect: (leaf) => this.selectLeaf(leaf), signal });
    this.leaf = new SelectedLeaf(host.send);
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
      this.leaf.element,
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
    this.leaf.receive(message);
  }

  destroy(): void {
    this.leaf.destroy();
    this.lifetime.abort();
    this.root.remove();
  }

  /** The leaf selected now, by index (null for none). */
  get selectedLeaf(): number | null {
    return this.leaf.leaf;
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
    const leaf = this.leaf.setTree(tree);
    this.table.setSelected(leaf >= 0 ? leaf : null);
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
      this.table.setSelected(leaf);
      this.leaf.select(leaf);
      if (reveal) this.table.reveal(leaf);
    });
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
