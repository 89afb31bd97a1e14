/**
 * The tree's audit, as Python found it: the leaves that cost most per
 * device, leaves replicated over an axis that divides one of their
 * dimensions (with what sharding them saves), and devices that hold
 * different amounts. Every leaf named is a button that selects it.
 */

import type { Tree } from "../payload/tree";
import { formatBytesExact, formatCount } from "../util/bytes";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { formatBytes } from "../util/ranges";

export interface AuditOptions {
  onSelectLeaf: (leaf: number) => void;
  signal: AbortSignal;
}

function leafButton(tree: Tree, leaf: number, text: string, options: AuditOptions): HTMLElement {
  const button = h("button", { type: "button", class: "sv-link", "data-leaf": leaf }, [text]);
  button.title = `Show the layout of ${tree.paths[leaf] || "(root)"}`;
  button.addEventListener("click", () => options.onSelectLeaf(leaf), { signal: options.signal });
  return button;
}

/** The colour of a mesh axis by its place in the first mesh that has it (a mark, never text colour). */
function axisMark(tree: Tree, axis: string): HTMLElement {
  const mark = h("span", { class: "sv-axis-ref" }, [axis]);
  for (const mesh of tree.payload.meshes) {
    const index = mesh.names.indexOf(axis);
    if (index >= 0) {
      mark.style.setProperty("--sv-axis", axisColor(index));
      break;
    }
  }
  return mark;
}

/** `over data 2.6 KiB, over model 2.1 KiB`, each axis marked in its mesh axis colour. */
function perAxis(tree: Tree, values: Record<string, number>): HTMLElement {
  const line = h("span", { class: "sv-per-axis" });
  Object.entries(values).forEach(([axis, bytes], n) => {
    line.append(n > 0 ? ", over " : "over ", axisMark(tree, axis), ` ${formatBytes(bytes)}`);
  });
  return line;
}

/** Items shown before the rest fold away under "n more". */
export const AUDIT_SHOWN = 5;

/** The first items as a list, the rest in a closed `<details>` below it. */
function foldedList(tag: "ol" | "ul", role: string, items: HTMLElement[]): HTMLElement[] {
  const head = h(tag, { class: "sv-audit-list", "data-role": role }, items.slice(0, AUDIT_SHOWN));
  const rest = items.slice(AUDIT_SHOWN);
  if (rest.length === 0) return [head];
  return [
    head,
    h("details", { class: "sv-audit-more" }, [
      h("summary", {}, [`${rest.length} more`]),
      h(tag, { class: "sv-audit-list", "data-role": role, start: tag === "ol" ? AUDIT_SHOWN + 1 : null }, rest),
    ]),
  ];
}

export function renderAudit(tree: Tree, options: AuditOptions): HTMLElement {
  const { audit, replicated_bytes: replicatedBytes } = tree.payload;
  const section = h("section", { class: "sv-audit", "data-role": "audit", "aria-label": "Audit" });

  const largest = audit.largest.map((leaf) =>
    h("li", {}, [
      h("span", { class: "sv-audit-bytes", title: formatBytesExact(tree.bytes[leaf]) }, [
        formatBytes(tree.bytes[leaf]),
      ]),
      leafButton(tree, leaf, tree.paths[leaf] || "(root)", options),
    ]),
  );
  section.append(h("h4", { class: "sv-audit-title" }, ["Largest per device"]));
  if (largest.length) section.append(...foldedList("ol", "audit-largest", largest));
  else section.append(h("p", { class: "sv-muted" }, ["No array leaves."]));

  section.append(
    h("h4", { class: "sv-audit-title" }, [
      `Replicated over an axis that divides a dimension${audit.replicated_count ? ` (${audit.replicated_count})` : ""}`,
    ]),
  );
  if (audit.replicated.length === 0) {
    section.append(
      h("p", { class: "sv-muted" }, ["None: every replicated leaf is too small or indivisible to split."]),
    );
  } else {
    const findings = audit.replicated.map((finding) =>
      h("li", {}, [
        h("span", { class: "sv-audit-bytes", title: `saves ${formatBytesExact(finding.saving)} per device` }, [
          `\u2212${formatBytes(finding.saving)}`,
        ]),
        leafButton(tree, finding.leaf, finding.message, options),
      ]),
    );
    section.append(...foldedList("ul", "audit-replicated", findings));
    const more = audit.replicated_count - audit.replicated.length;
    const saving = h("p", { class: "sv-audit-note" }, [
      more > 0
        ? `${formatCount(more)} more not listed; sharding every one saves, per device: `
        : "Sharding every one saves, per device: ",
      perAxis(tree, audit.replicated_saving),
    ]);
    section.append(saving);
  }
  if (Object.keys(replicatedBytes).length) {
    section.append(
      h("p", { class: "sv-audit-note", "data-role": "replicated-bytes" }, [
        "Spent on replicated leaves, per device: ",
        perAxis(tree, replicatedBytes),
      ]),
    );
  }

  section.append(h("h4", { class: "sv-audit-title" }, ["Balance"]));
  const imbalance = audit.imbalance;
  if (!imbalance) {
    section.append(
      h("p", { "data-role": "audit-imbalance" }, [
        tree.deviceCount ? "Every device holds the same bytes." : "No device holds anything.",
      ]),
    );
  } else {
    const line = h("p", { "data-role": "audit-imbalance" }, [imbalance.message]);
    section.append(line);
    if (imbalance.leaves.length) {
      const leaves = h("p", { class: "sv-audit-note" }, ["On only some devices: "]);
      imbalance.leaves.slice(0, 8).forEach((leaf, n) => {
        if (n > 0) leaves.append(", ");
        leaves.append(leafButton(tree, leaf, tree.paths[leaf] || "(root)", options));
      });
      if (imbalance.leaves.length > 8) leaves.append(` and ${imbalance.leaves.length - 8} more`);
      section.append(leaves);
    }
  }
  return section;
}
