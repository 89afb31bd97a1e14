/**
 * What the memory strip draws from a program's timeline: the stacked areas of
 * bytes live per kind along the steps, and the list of what is live at one
 * step (largest first, each group a button that selects it).
 */

import type { Program } from "../payload/program";
import { lineLabel, lineText, plural } from "../payload/program";
import { liveAt, type MemoryPlan } from "../payload/programMemory";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";

/** Groups listed for a step before a "more" button. */
export const LIVE_SHOWN = 10;

const SVG = "http://www.w3.org/2000/svg";

export const KIND_WORDS: Record<string, string> = {
  argument: "arguments",
  output: "outputs",
  saved: "saved for the backward pass",
  temporary: "temporaries",
  other: "small buffers",
};

/** One SVG path per kind with bytes, stacked in the kinds' order, over `columns` (a step each) of a `height`-high box. */
export function stackedAreas(plan: MemoryPlan, columns: readonly number[], height: number): SVGPathElement[] {
  const count = columns.length;
  const top = Math.max(1, plan.timeline.peak_bytes, ...plan.timeline.step_bytes);
  const below = new Float64Array(count);
  const paths: SVGPathElement[] = [];
  plan.kindNames.forEach((kind, k) => {
    const row = plan.byKind[k];
    if (!row.some((b) => b > 0)) return;
    const upper: string[] = [];
    const lower: string[] = [];
    columns.forEach((step, c) => {
      const y0 = height - (below[c] / top) * height;
      below[c] += row[step];
      const y1 = height - (below[c] / top) * height;
      upper.push(`${c} ${y1.toFixed(2)} ${c + 1} ${y1.toFixed(2)}`);
      lower.unshift(`${c + 1} ${y0.toFixed(2)} ${c} ${y0.toFixed(2)}`);
    });
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", `M${upper.join(" L")} L${lower.join(" L")} Z`);
    path.setAttribute("class", `sv-mem-${kind}`);
    path.setAttribute("data-kind", kind);
    paths.push(path);
  });
  return paths;
}

/** What is live at `step`: a heading (bytes, where, a way back to the peak), the groups (all, or the first few), what is left. */
export function liveAtStep(program: Program, plan: MemoryPlan, step: number, showAll: boolean): (HTMLElement | null)[] {
  const { timeline } = plan;
  const { payload } = program;
  const bytes = timeline.step_bytes[step];
  const peak = step === timeline.peak_step;
  const backward = timeline.backward_step !== null && step >= timeline.backward_step;
  const [file, line] = entryPlace(program, plan.stepLines[step]);
  const where = lineLabel(payload, file, line);
  const text = lineText(payload, file, line);
  const groups = liveAt(timeline, step);
  const shown = showAll ? groups : groups.slice(0, LIVE_SHOWN);
  const most = Math.max(1, ...groups.map((g) => g.bytes));
  const list = h(
    "ul",
    { class: "sv-live-list" },
    shown.map(({ group, bytes: held }) => {
      const kind = timeline.kinds[timeline.groups.kind[group]] ?? "other";
      const bar = h("span", { class: `sv-live-bar sv-mem-${kind}` });
      bar.style.width = `${(100 * held) / most}%`;
      const scope = timeline.groups.scope[group];
      const lineIndex = timeline.groups.line[group];
      const own = lineIndex >= 0 ? payload.lines[lineIndex] : undefined;
      const groupWhere = own ? lineLabel(payload, own.file, own.line) : "";
      return h("li", {}, [
        h(
          "button",
          {
            type: "button",
            class: "sv-live-group",
            "data-role": "memory-group",
            "data-group": group,
            "data-bytes": held,
            "data-kind": kind,
            title: `${KIND_WORDS[kind] ?? kind}${groupWhere ? `, made on ${groupWhere}` : ""}: select its ${lineIndex >= 0 ? "line" : "array"}`,
          },
          [
            h("span", { class: "sv-live-label" }, [
              timeline.groups.label[group],
              scope && !scope.includes(";") ? h("span", { class: "sv-where sv-muted" }, [scope]) : null,
              groupWhere ? h("span", { class: "sv-where sv-muted" }, [groupWhere]) : null,
            ]),
            h("span", { class: "sv-muted sv-live-kind" }, [KIND_WORDS[kind] ?? kind]),
            h("span", { class: "sv-live-track" }, [bar]),
            h("span", { class: "sv-live-bytes" }, [formatBytes(held)]),
          ],
        ),
      ]);
    }),
  );
  const rest = groups.length - shown.length;
  const listedBytes = groups.reduce((sum, g) => sum + g.bytes, 0);
  return [
    h("p", { class: "sv-live-head", "data-step": step }, [
      h("strong", {}, [`Step ${step + 1}`]),
      `: ${formatBytes(bytes)} live${peak ? " (the peak)" : ""}${backward ? ", backward pass" : ""}`,
      where ? ` \u00b7 ${where}` : "",
      text ? h("code", { class: "sv-src-text" }, [text]) : null,
      peak ? null : " ",
      peak ? null : h("button", { type: "button", class: "sv-link", "data-role": "memory-to-peak" }, ["show the peak"]),
    ]),
    groups.length > 0 ? list : h("p", { class: "sv-muted" }, ["Nothing large enough to list is live here."]),
    rest > 0
      ? h("button", { type: "button", class: "sv-button sv-more", "data-role": "memory-more" }, [
          `+${plural(rest, "more group")}`,
        ])
      : null,
    bytes > listedBytes
      ? h("p", { class: "sv-muted sv-small" }, [
          `${formatBytes(bytes - listedBytes)} more in buffers too small to list.`,
        ])
      : null,
  ];
}

/** The file and line of a `lines` entry (null, null for none). */
export function entryPlace(program: Program, entry: number): [number | null, number | null] {
  const line = entry >= 0 ? program.payload.lines[entry] : undefined;
  return [line?.file ?? null, line?.line ?? null];
}
