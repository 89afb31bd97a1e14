/**
 * The DOM of the source listing: a function's block (its heading, facts,
 * callers and rows), one annotated source row, the block of lines in no
 * function, and folding a block open or shut. Pure builders: the source view
 * keeps the elements and decides what a click does.
 */

import type { Program } from "../payload/program";
import { lineLabel, plural } from "../payload/program";
import { foldLabel, type PassNotes, type SourceBlock, type SourcePlan, type SourceRow } from "../payload/programSource";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { passElement } from "./sourceNotes";

/** A function's block: heading (fold toggle, where, facts, callers), column heads and its rows. */
export function blockElement(
  program: Program,
  plan: SourcePlan,
  block: SourceBlock,
  b: number,
  bodyId: string,
  rows: HTMLElement[],
): HTMLElement {
  const { payload } = program;
  const facts: string[] = [];
  if (block.sentBytes > 0) facts.push(`sends ${formatBytes(block.sentBytes)} per call`);
  if (block.peakBytes > 0) facts.push(`holds ${formatBytes(block.peakBytes)} at the peak`);
  if (block.valueCount > 0) facts.push(plural(block.valueCount, "value"));
  for (const body of block.bodies) facts.push(`in a ${foldLabel(program, body)} body`);
  const callers: (HTMLElement | string)[] = [];
  block.callers.forEach(([caller, line], k) => {
    if (k > 0) callers.push(", ");
    callers.push(
      h(
        "button",
        { type: "button", class: "sv-link", "data-role": "caller-link", "data-block": caller, "data-line": line },
        [`${plan.blocks[caller].name}:${line}`],
      ),
    );
  });
  const body = h("div", { class: "sv-block-body", id: bodyId }, rows);
  const lastLine = block.lastLine > block.firstLine ? `\u2013${block.lastLine}` : "";
  return h(
    "section",
    {
      class: "sv-block",
      "data-role": "source-block",
      "data-block": b,
      "data-function": block.name,
      "aria-label": `${block.name}, ${lineLabel(payload, block.file, block.firstLine)}`,
    },
    [
      h("div", { class: "sv-block-head" }, [
        h(
          "button",
          {
            type: "button",
            class: "sv-block-toggle",
            "data-role": "block-toggle",
            "aria-expanded": "true",
            "aria-controls": bodyId,
          },
          [
            h("span", { class: "sv-fold-mark", "aria-hidden": "true" }, ["\u25be"]),
            h("code", { class: "sv-block-name" }, [block.name]),
          ],
        ),
        h("span", { class: "sv-muted", title: payload.files[block.file] ?? "" }, [
          `${lineLabel(payload, block.file, block.firstLine)}${lastLine}`,
        ]),
        facts.length > 0 ? h("span", { class: "sv-block-facts sv-muted" }, [facts.join(" \u00b7 ")]) : null,
        callers.length > 0 ? h("span", { class: "sv-block-callers sv-muted" }, ["called from ", ...callers]) : null,
      ]),
      h("div", { class: "sv-src-columns sv-muted", "aria-hidden": "true" }, [
        h("span", {}, ["line"]),
        h("span", { class: "sv-src-sent" }, ["sends"]),
        h("span", { class: "sv-src-peak" }, ["at peak"]),
        h("span", {}, [""]),
      ]),
      body,
    ],
  );
}

/** One source line: its number (a button when it has notes), bytes sent and held, code, calls and notes. */
export function rowElement(program: Program, plan: SourcePlan, row: SourceRow): HTMLElement {
  const { payload } = program;
  const annotated = row.entries.length > 0 && hasNotes(row);
  const lineText = row.block < 0 ? lineLabel(payload, row.file, row.lineNo) || "no line" : String(row.lineNo);
  const number = annotated
    ? h(
        "button",
        {
          type: "button",
          class: "sv-src-no",
          "data-role": "line-number",
          "aria-label": `line ${lineLabel(payload, row.file, row.lineNo) || "(none)"}: show what it holds and sends`,
        },
        [lineText],
      )
    : h("span", { class: "sv-src-no" }, [lineText]);
  const bytesCell = (bytes: number, role: string, what: string): HTMLElement => {
    const cell = h("span", { class: `sv-src-${role}`, "data-role": `line-${role}`, "data-bytes": bytes }, [
      bytes > 0 ? formatBytes(bytes) : "",
    ]);
    if (bytes > 0) cell.setAttribute("aria-label", `${what} ${formatBytes(bytes)}`);
    return cell;
  };
  const why = whyMarker(program, row);
  const sent = why
    ? h(
        "button",
        {
          type: "button",
          class: why.remat ? "sv-src-sent sv-why-mark sv-why-remat" : "sv-src-sent sv-why-mark",
          "data-role": "line-sent",
          "data-bytes": row.sentBytes,
          "data-why-collective": why.collective,
          "aria-label": `sends ${formatBytes(row.sentBytes)} per call${why.remat ? ", with an involuntary full rematerialization" : ""}: why?`,
          title: "Why is it sent? Opens the reason of this line's first collective",
        },
        [row.sentBytes > 0 ? formatBytes(row.sentBytes) : "why"],
      )
    : bytesCell(row.sentBytes, "sent", "sends per call");
  const code = h("pre", { class: "sv-src-code" }, [row.text || " "]);
  code.style.setProperty("--sv-indent", String(row.indent));
  const links: HTMLElement[] = [];
  for (const callee of row.calls) {
    links.push(
      h("button", { type: "button", class: "sv-link", "data-role": "call-link", "data-block": callee }, [
        `\u2192 ${plan.blocks[callee].name}`,
      ]),
    );
  }
  if (row.nested >= 0) {
    const nested = plan.blocks[row.nested];
    links.push(
      h("button", { type: "button", class: "sv-link", "data-role": "nested-link", "data-block": row.nested }, [
        `\u2192 ${nested.name}, lines ${nested.firstLine}\u2013${nested.lastLine}: its own block`,
      ]),
    );
  }
  const notes = annotated
    ? h("div", { class: "sv-src-notes" }, [
        passElement(program, row.forward, "forward", row.backward.valueCount + row.backward.collectives.length > 0),
        passElement(program, row.backward, "backward", true),
      ])
    : null;
  return h(
    "div",
    {
      class: annotated ? "sv-src-row sv-src-annotated" : "sv-src-row",
      "data-role": "source-line",
      "data-line": row.lineNo,
      "data-block": row.block,
      "data-entries": row.entries.length > 0 ? row.entries.join(",") : null,
    },
    [
      number,
      sent,
      bytesCell(row.peakBytes, "peak", "holds at the peak"),
      h("div", { class: "sv-src-main" }, [
        code,
        links.length > 0 ? h("div", { class: "sv-src-calls" }, links) : null,
        notes,
      ]),
    ],
  );
}

/** The lines no block holds (or every line, when Python could read no source), under a heading of their own. */
export function elsewhereSection(plan: SourcePlan, rows: HTMLElement[]): HTMLElement {
  return h(
    "section",
    { class: "sv-block sv-listing-elsewhere", "data-role": "elsewhere", "aria-label": "Other lines" },
    [
      h("div", { class: "sv-block-head" }, [
        h("span", { class: "sv-block-title" }, [
          plan.blocks.length > 0 ? "Lines of no function above" : "By source line",
        ]),
        h("span", { class: "sv-muted sv-small" }, [
          " JAX recorded these lines outside your functions' blocks, or none at all",
        ]),
      ]),
      h("div", { class: "sv-block-body" }, rows),
    ],
  );
}

/** Folds block `block` open or shut: its toggle, mark, column heads and body. */
export function setBlockOpen(block: HTMLElement, open: boolean): void {
  const toggle = block.querySelector<HTMLElement>("[data-role='block-toggle']");
  toggle?.setAttribute("aria-expanded", String(open));
  const mark = toggle?.querySelector(".sv-fold-mark");
  if (mark) mark.textContent = open ? "\u25be" : "\u25b8";
  for (const part of Array.from(
    block.querySelectorAll<HTMLElement>(":scope > .sv-block-body, :scope > .sv-src-columns"),
  )) {
    part.hidden = !open;
  }
}

/**
 * The collective a line's "sends" marker opens the reason of (the first chip listed on the line), and
 * whether XLA rematerialized an array there; null where the payload carries no reasons or the line no collective.
 */
export function whyMarker(program: Program, row: SourceRow): { collective: number; remat: boolean } | null {
  const reasons = program.payload.reasons;
  if (!reasons) return null;
  const first = [...row.forward.collectives, ...row.backward.collectives].find((f) => f.items.length > 0);
  if (!first) return null;
  const remat = row.lineNo !== null && reasons.rematerializations.some((r) => r.line === row.lineNo);
  return { collective: first.items[0].collective, remat };
}

function hasNotes(row: SourceRow): boolean {
  const count = (n: PassNotes) => n.valueCount + n.collectives.length;
  return count(row.forward) + count(row.backward) > 0 || row.peakBytes > 0 || row.calls.length > 0;
}
