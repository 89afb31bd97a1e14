/**
 * What the selection panel says about a source line: where it is and its
 * text, its values per pass, the bytes it sends per call and holds at the
 * memory peak, its collectives (chips that select themselves), and the
 * memory groups it makes, with the most each holds and what is live of it
 * at the peak; each distinct reason of its collectives ("because ...").
 */

import type { Program } from "../payload/program";
import { lineLabel, lineText } from "../payload/program";
import type { SourcePlan } from "../payload/programSource";
import { whyOf, whyText } from "../payload/reasons";
import { type Child, h } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { collectiveChip } from "./programChips";

export interface LineFacts {
  title: string;
  content: Child[];
}

/** The facts of `lines` entry `entry` (with the other entries on its row). */
export function lineFacts(program: Program, plan: SourcePlan | null, entry: number): LineFacts {
  const { payload } = program;
  const row = plan?.rowOfEntry[entry] ?? null;
  const line = payload.lines[entry];
  const where = lineLabel(payload, line?.file ?? null, line?.line ?? null) || "no line of yours";
  const block = row && row.block >= 0 ? plan?.blocks[row.block] : undefined;
  const entries = row?.entries ?? [entry];
  const text = lineText(payload, line?.file ?? null, line?.line ?? null);
  const facts = h("dl", { class: "sv-coll-facts", "data-role": "line-facts" });
  const add = (label: string, value: string): void => {
    facts.append(h("dt", {}, [label]), h("dd", {}, [value]));
  };
  const count = (pass: "forward" | "backward") => (row ? row[pass].valueCount : 0);
  add("values", `${count("forward")} in the forward pass, ${count("backward")} in the backward pass`);
  add("sends per call", formatBytes(row?.sentBytes ?? 0));
  const timeline = payload.memory_timeline;
  const held: HTMLElement[] = [];
  if (timeline) {
    add("holds at the peak", formatBytes(row?.peakBytes ?? 0));
    const mine = timeline.groups.line.flatMap((l, g) =>
      entries.includes(l) && timeline.groups.most_bytes[g] > 0 ? [g] : [],
    );
    if (mine.length > 0) {
      held.push(
        h("p", { class: "sv-muted" }, ["What this line makes, as memory (per device):"]),
        h(
          "ul",
          { class: "sv-line-groups", "data-role": "line-memory" },
          mine.map((g) => {
            const peak = timeline.groups.peak_bytes[g];
            return h("li", { "data-group": g }, [
              h("span", { class: "sv-value-name" }, [timeline.groups.label[g]]),
              ` ${timeline.kinds[timeline.groups.kind[g]] ?? ""}: at most ${formatBytes(timeline.groups.most_bytes[g])}`,
              peak > 0 ? `, ${formatBytes(peak)} live at the peak` : ", none live at the peak",
            ]);
          }),
        ),
      );
    }
  }
  const collectives = payload.lines.flatMap((l, e) =>
    entries.includes(e)
      ? [
          ...l.collectives
            .filter((c) => !(payload.collectives[c].parts?.length ?? 0))
            .map((c) => collectiveChip(program, c)),
          ...(l.parts ?? []).map(([c, k]) => collectiveChip(program, c, k)),
        ]
      : [],
  );
  const reasons = payload.reasons;
  const because = reasons
    ? [
        ...new Set(
          payload.lines
            .flatMap((l, e) => (entries.includes(e) ? l.collectives : []))
            .flatMap((c) => {
              const why = whyOf(reasons, c);
              return why ? [whyText(why)] : [];
            }),
        ),
      ]
    : [];
  return {
    title: `Line ${where}${block ? ` (${block.name})` : ""}`,
    content: [
      text ? h("pre", { class: "sv-line-text" }, [text]) : null,
      facts,
      collectives.length > 0 ? h("div", { class: "sv-chip-row sv-line-collectives" }, collectives) : null,
      because.length > 0
        ? h(
            "ul",
            { class: "sv-line-reasons", "data-role": "line-reasons" },
            because.map((text) => h("li", {}, [text])),
          )
        : null,
      ...held,
    ],
  };
}
