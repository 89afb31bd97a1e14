/**
 * The reason panel of a selected collective: why it is there and what would remove it.
 *
 * The operands' layouts are drawn as small mesh grids side by side (each device
 * cell names the block of the array it holds, one index per split dimension),
 * beside the layout wanted where one is asked for; then the rule in words, and
 * the fixes traced so far, each with what it changes line by line and its
 * estimated step. "Find fixes" asks the kernel to trace them; "Try it" makes a
 * fix the program shown, and "Back" returns. A saved page shows what was traced,
 * read-only. Every user string reaches the DOM as text.
 */

import { specText } from "../payload/program";
import {
  type FixPayload,
  type Mesh,
  type ReasonsPayload,
  type RematPayload,
  type WhyPayload,
  whyText,
} from "../payload/reasons";
import { h } from "../util/dom";
import { formatBytes, formatSeconds } from "../util/ranges";

const CAUSE_TITLES: Record<string, string> = {
  "partial-sums": "Partial sums",
  "layout-mismatch": "Layout mismatch",
  "whole-dimension": "Needs a whole dimension",
  "loop-carry": "Loop carry",
  "shard-map": "Your shard_map",
  unknown: "Cannot tell",
};

/** For each device (mesh order), the block of the array it holds: one index per dimension, "*" for a whole one. */
export function blockLabels(spec: string[][], mesh: Mesh): string[] {
  const count = mesh.sizes.reduce((a, b) => a * b, 1);
  const out: string[] = [];
  for (let device = 0; device < count; device++) {
    const coords: Record<string, number> = {};
    let rest = device;
    for (let a = mesh.names.length - 1; a >= 0; a--) {
      coords[mesh.names[a]] = rest % mesh.sizes[a];
      rest = Math.floor(rest / mesh.sizes[a]);
    }
    const parts = spec.map((axes) => {
      if (axes.length === 0) return "*";
      let index = 0;
      for (const axis of axes) {
        const size = mesh.sizes[mesh.names.indexOf(axis)] ?? 1;
        index = index * size + (coords[axis] ?? 0);
      }
      return String(index);
    });
    out.push(parts.join(","));
  }
  return out;
}

/** A small mesh grid of one layout: rows along the first mesh axis, columns along the rest. */
export function specGrid(title: string, specText: string, spec: string[][] | null, mesh: Mesh | null): HTMLElement {
  const head = h("div", { class: "sv-reason-grid-title" }, [title]);
  const text = h("code", { class: "sv-reason-spec" }, [specText]);
  if (spec === null || mesh === null || mesh.sizes.length === 0) {
    return h("figure", { class: "sv-reason-grid", "data-role": "reason-grid" }, [head, text]);
  }
  const labels = blockLabels(spec, mesh);
  const rows = mesh.sizes[0];
  const cols = labels.length / rows;
  const table = h(
    "div",
    {
      class: "sv-reason-cells",
      style: `grid-template-columns: repeat(${cols}, auto)`,
      role: "img",
      "aria-label": `${title}: ${specText}`,
    },
    labels.map((label) => h("span", { class: "sv-reason-cell" }, [label])),
  );
  return h("figure", { class: "sv-reason-grid", "data-role": "reason-grid" }, [head, text, table]);
}

function fixRow(fix: FixPayload, index: number, canTry: boolean): HTMLElement {
  const verdict = fix.removed
    ? fix.slower
      ? "removes it, but the step is slower"
      : "removes it"
    : "does not remove it";
  const step =
    fix.step_s !== null && fix.before_s !== null
      ? `step ${formatSeconds(fix.step_s)} on ${fix.hardware} (now ${formatSeconds(fix.before_s)})`
      : "";
  const changes = fix.changes.map((c) =>
    h("li", {}, [
      `line ${c.line ?? "?"}: ${c.kind} over ${c.axes} ${formatBytes(c.before)} → ${formatBytes(c.after)}${
        c.after === 0 ? " (vanished)" : c.before === 0 ? " (appeared)" : ""
      }`,
    ]),
  );
  return h("li", { class: "sv-reason-fix", "data-role": "reason-fix", "data-removed": String(fix.removed) }, [
    h("div", {}, [h("strong", {}, [fix.summary]), `: ${verdict}`]),
    step ? h("div", { class: "sv-muted" }, [step]) : null,
    h("div", { class: "sv-muted" }, [
      `sent per call: ${formatBytes(fix.wire_before)} → ${formatBytes(fix.wire_after)}`,
    ]),
    changes.length > 0 ? h("ul", { class: "sv-reason-changes" }, changes) : null,
    h("pre", { class: "sv-reason-code", "data-role": "reason-code" }, [fix.code]),
    canTry
      ? h("button", { type: "button", class: "sv-button", "data-role": "try-fix", "data-fix": String(index) }, [
          "Try it",
        ])
      : null,
  ]);
}

export interface ReasonOptions {
  /** The key of the fixes in `reasons.fixes`: the collective's index, or `remat K`. */
  key: string;
  /** Sends the `fix` control's text; null on a read-only page. */
  send: ((text: string) => void) | null;
}

/** An involuntary full rematerialization: both layouts as grids, the bytes, and its fixes. */
export function renderRemat(
  remat: RematPayload,
  k: number,
  reasons: ReasonsPayload,
  mesh: Mesh | null,
  send: ((text: string) => void) | null,
): HTMLElement {
  const fixes = reasons.fixes[`remat ${k}`];
  const body: (HTMLElement | null)[] = [
    h("p", { class: "sv-reason-rule" }, [remat.text]),
    h("div", { class: "sv-reason-grids" }, [
      specGrid("from", remat.before_text, remat.before, mesh),
      specGrid("to", remat.after_text, remat.after, mesh),
    ]),
    h("p", { class: "sv-muted" }, [
      `each device holds the whole ${remat.dtype}[${remat.shape.join(",")}] (${formatBytes(remat.full_bytes)}); its collectives send ${formatBytes(remat.wire_bytes)} per device per call`,
    ]),
  ];
  if (fixes !== undefined) {
    body.push(
      h(
        "ol",
        { class: "sv-reason-fixes", "data-role": "reason-fixes" },
        fixes.map((f, j) => fixRow(f, j, send !== null)),
      ),
    );
  } else if (send) {
    body.push(h("button", { type: "button", class: "sv-button", "data-role": "find-fixes" }, ["Find fixes"]));
  }
  const box = h("div", { class: "sv-remat", "data-role": "remat", role: "alert" }, [
    h("strong", {}, ["Involuntary full rematerialization"]),
    ...body,
  ]);
  if (send) {
    box.addEventListener("click", (event) => {
      const target = (event.target as Element | null)?.closest?.("button");
      if (!target) return;
      const role = target.getAttribute("data-role");
      if (role === "find-fixes") send(`show:remat:${k}`);
      else if (role === "try-fix") send(`try:remat:${k}:${target.getAttribute("data-fix")}`);
    });
  }
  return box;
}

/** The reason panel of one collective (or rematerialization): layouts, rule, fixes. */
export function renderReason(
  why: WhyPayload | null,
  reasons: ReasonsPayload,
  mesh: Mesh | null,
  options: ReasonOptions,
): HTMLElement {
  const children: (HTMLElement | null)[] = [];
  if (why === null) {
    children.push(h("p", { class: "sv-muted" }, ["No reason was read for this collective."]));
  } else {
    children.push(
      h("h4", { class: "sv-reason-title", "data-role": "reason-cause" }, [
        `${CAUSE_TITLES[why.cause] ?? why.cause}: ${why.primitive}`,
      ]),
    );
    if (why.expression) children.push(h("code", { class: "sv-src-text" }, [why.expression]));
    const grids = why.operands.map((o, k) =>
      specGrid(
        `${o.role ?? "operand"} ${o.label}${k === why.operand ? " ←" : ""}`,
        o.spec === null ? "?" : specText(o.spec),
        o.spec,
        mesh,
      ),
    );
    if (why.wanted !== undefined) {
      grids.push(specGrid(`wanted (${why.wanted_by ?? ""})`, specText(why.wanted), why.wanted, mesh));
    }
    children.push(h("div", { class: "sv-reason-grids", "data-role": "reason-grids" }, grids));
    children.push(h("p", { class: "sv-reason-rule", "data-role": "reason-rule" }, [whyText(why)]));
  }
  const fixes = reasons.fixes[options.key];
  const send = options.send;
  if (fixes !== undefined) {
    children.push(
      fixes.length === 0
        ? h("p", { class: "sv-muted", "data-role": "reason-no-fix" }, ["No change shardviz tried removes it."])
        : h(
            "ol",
            { class: "sv-reason-fixes", "data-role": "reason-fixes" },
            fixes.map((f, k) => fixRow(f, k, send !== null)),
          ),
    );
  } else if (send && why !== null && why.cause !== "shard-map" && why.cause !== "unknown") {
    children.push(
      h("button", { type: "button", class: "sv-button", "data-role": "find-fixes" }, [
        "Find fixes (traces each change)",
      ]),
    );
  }
  const panel = h("section", { class: "sv-reason", "data-role": "reason", "aria-label": "Why it is there" }, [
    h("h3", { class: "sv-panel-title" }, ["Why it is there"]),
    ...children,
  ]);
  if (send) {
    panel.addEventListener("click", (event) => {
      const target = (event.target as Element | null)?.closest?.("button");
      if (!target) return;
      const role = target.getAttribute("data-role");
      if (role === "find-fixes") send(`show:${options.key.replace(" ", ":")}`);
      else if (role === "try-fix") send(`try:${options.key.replace(" ", ":")}:${target.getAttribute("data-fix")}`);
    });
  }
  return panel;
}
