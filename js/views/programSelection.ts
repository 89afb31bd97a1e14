/**
 * The program view's selection panel: the selected value's, input's or
 * output's layout (the array view's pictures, computed in the browser from
 * the payload), the selected collective's facts and device groups on the mesh
 * grid, or what a selected line sends and holds.
 */

import { renderAxisText } from "../components/axisText";
import { otherCountText } from "../components/collectiveTable";
import { GroupGrid } from "../components/groupGrid";
import { lineFacts } from "../components/lineFacts";
import { collectiveWhere, valueWhere } from "../components/programChips";
import { axesText, bytesText, collectiveLine, originText, runsText } from "../components/programText";
import { renderReason, renderRemat } from "../components/reasonPanel";
import type { MeshContext } from "../engine/array/place";
import { deviceGrid } from "../engine/array/place";
import { programContext, typeLayout, type ValueLayout } from "../engine/program/value";
import { decodePayload, type Layout, type Payload } from "../payload/array";
import {
  type LayoutChange,
  lineLabel,
  lineText,
  type Program,
  plural,
  specText,
  stackFrames,
  valueLabel,
} from "../payload/program";
import { foldLabel, type SourcePlan } from "../payload/programSource";
import { whyOf } from "../payload/reasons";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { LayoutPicture } from "./layoutPicture";

/** What is selected: a value (by index), a collective, a line (an index into `lines`), or an input's or output's layout. */
export type ProgramSelection =
  | { kind: "value"; index: number }
  | { kind: "collective"; index: number }
  | { kind: "line"; index: number }
  | { kind: "input"; index: number }
  | { kind: "output"; index: number };

export class SelectionPanel {
  readonly element: HTMLElement;
  private readonly title = h("h3", { class: "sv-panel-title" }, ["Selected"]);
  private readonly message = h("div", { class: "sv-selection-message" });
  private readonly groupSlot = h("div", { class: "sv-selection-groups" });
  private readonly picture: LayoutPicture;
  private readonly groups: GroupGrid;
  private program: Program | null = null;
  private context: MeshContext | null = null;
  private grid: Layout | null = null;
  private layouts = new Map<number, ValueLayout>();

  /** Sends the reason panel's `fix` control text (null where nothing edits: a saved page). */
  private readonly sendFix: ((text: string) => void) | null;

  /** `onSelectCollective`: a line's collective chip listed here was clicked. */
  constructor(
    onSelectCollective: (c: number) => void,
    signal: AbortSignal,
    sendFix: ((text: string) => void) | null = null,
  ) {
    this.sendFix = sendFix;
    const layoutSlot = h("div", { class: "sv-selection-layout" });
    this.picture = new LayoutPicture(layoutSlot);
    this.groups = new GroupGrid(signal);
    this.groupSlot.append(this.groups.element);
    this.element = h(
      "section",
      { class: "sv-panel sv-selection", "data-role": "selection", "aria-label": "Selected" },
      [this.title, this.message, layoutSlot, this.groupSlot],
    );
    this.message.addEventListener(
      "click",
      (event) => {
        const chip = (event.target as Element | null)?.closest?.("[data-role='line-collective']");
        if (chip) onSelectCollective(Number(chip.getAttribute("data-collective")));
      },
      { signal },
    );
  }

  /** A new program: its mesh context and device grid, and no layout worked out yet. */
  setProgram(program: Program): void {
    this.program = program;
    this.context = programContext(program);
    this.grid = this.context ? decodePayload(deviceGrid(this.context)) : null;
    this.layouts = new Map();
  }

  destroy(): void {
    this.picture.destroy();
  }

  /** Shows what is selected in `program` (null: how to select something). */
  show(program: Program, plan: SourcePlan | null, selection: ProgramSelection | null): void {
    if (!selection) {
      this.title.textContent = "Selected";
      replaceChildren(this.message, [
        h("p", { class: "sv-muted sv-hint" }, [
          "Select a value (in the source or the inputs) to see its layout, or a collective to see its device groups.",
        ]),
      ]);
      this.showLayout(null);
      this.showGroups(null);
      return;
    }
    if (selection.kind === "collective") {
      this.showCollective(program, selection.index);
      return;
    }
    if (selection.kind === "line") {
      this.showLine(program, plan, selection.index);
      return;
    }
    const about = selection.kind === "value" ? valueFacts(program, selection.index) : endFacts(program, selection);
    this.title.textContent = about.title;
    const layout = this.layoutOf(program, about.type, about.reason);
    const { payload } = program;
    // A drawn layout shows the type in its own type line.
    const message: (HTMLElement | null)[] = [];
    if (layout.status !== "local") {
      const typeText = payload.types[about.type].type_str;
      message.push(h("p", { class: "sv-selection-type" }, [renderAxisText(typeText, payload.mesh?.names ?? [])]));
    }
    message.push(h("p", { class: "sv-muted sv-selection-facts" }, [about.facts.join("; ")]));
    if (about.chain.length > 0) message.push(renderChain(program, about.chain));
    message.push(layoutNote(layout));
    replaceChildren(this.message, message);
    this.showGroups(null);
    // A real input is no what-if: its picture says so (a copy: layouts are shared between values).
    const real = about.real;
    const shown = layout.status === "local" ? (real ? { ...layout.payload, has_array: true } : layout.payload) : null;
    this.showLayout(shown);
  }
  private layoutOf(program: Program, t: number, reason: string): ValueLayout {
    let layout = this.layouts.get(t);
    if (!layout) {
      layout = typeLayout(program, t, this.context, reason);
      // Unknown layouts carry the value's own reason; only known ones are shared between values.
      if (layout.status !== "unknown") this.layouts.set(t, layout);
    }
    return layout;
  }

  private showCollective(program: Program, c: number): void {
    const collective = program.payload.collectives[c];
    this.title.textContent = `Collective ${collective.kind} ${axesText(collective)}`;
    const { payload } = program;
    const facts = h("dl", { class: "sv-coll-facts" });
    const add = (label: string, value: string): void => {
      facts.append(h("dt", {}, [label]), h("dd", {}, [value]));
    };
    add("bytes per device", bytesText(collective));
    add(
      "runs per call",
      `${runsText(collective)}${collective.count_exact ? "" : " (a loop of unknown trip count or a branch is on the way)"}`,
    );
    add("group size", String(collective.group_size));
    add(
      "result per device",
      `${formatBytes(collective.result_bytes)}${collective.operand_count > 1 ? ` (${collective.operand_count} operands)` : ""}`,
    );
    if (collective.dtype) {
      const other = otherCountText(program, collective);
      add("element type", other ? `${collective.dtype} (${other} per call)` : collective.dtype);
    }
    add("estimate", payload.wire_formulas[collective.kind] ?? "");
    add("line", collectiveLine(payload, collective) || "no line of yours");
    const where = collectiveWhere(collective, null);
    if (where) add("where", where);
    add("pass", collective.backward ? "backward (gradients)" : "forward");
    if (collective.note) add("why this line", collective.note);
    if (collective.op_name) add("op", collective.op_name);
    const operands = collective.parts ?? [];
    const parts =
      operands.length > 0
        ? h("div", { class: "sv-coll-parts", "data-role": "collective-parts" }, [
            h("p", { class: "sv-muted" }, [
              `XLA combined ${plural(operands.length, "operand")} into this one collective; they travel together. Each operand's bytes belong to the line that made it:`,
            ]),
            h(
              "ol",
              {},
              operands.map((part) =>
                h("li", { "data-role": "collective-part" }, [
                  `${formatBytes(part.total_wire_bytes)} ← ${lineLabel(payload, part.file, part.line) || "no line of yours"}`,
                  lineText(payload, part.file, part.line)
                    ? h("code", { class: "sv-src-text" }, [lineText(payload, part.file, part.line)])
                    : null,
                ]),
              ),
            ),
          ])
        : null;
    const chain = stackFrames(payload, collective.stack);
    replaceChildren(this.message, [
      reasonOf(program, c, this.sendFix),
      facts,
      parts,
      chain.length > 0 ? renderChain(program, chain) : null,
      h("details", { class: "sv-hlo" }, [
        h("summary", {}, ["HLO instruction"]),
        h("pre", { "data-role": "hlo" }, [collective.hlo + (collective.hlo_truncated ? " \u2026" : "")]),
      ]),
    ]);
    this.showLayout(null);
    this.showGroups(c);
  }

  /** A line: where it is, its text, what it sends and what it holds at the memory peak. */
  private showLine(program: Program, plan: SourcePlan | null, entry: number): void {
    const about = lineFacts(program, plan, entry);
    this.title.textContent = about.title;
    replaceChildren(this.message, about.content);
    this.showLayout(null);
    this.showGroups(null);
  }

  private showGroups(c: number | null): void {
    const program = this.program;
    if (c === null || !program || !this.grid) {
      this.groupSlot.hidden = true;
      if (c !== null && !this.grid) {
        this.message.append(
          h("p", { class: "sv-note" }, ["This program has no mesh, so there are no device groups to draw."]),
        );
      }
      return;
    }
    this.groupSlot.hidden = false;
    this.groups.show(program, this.grid, c);
  }

  private showLayout(payload: Payload | null): void {
    this.picture.show(payload);
  }
}

/** An output laid out unlike its input: the next call moves it back. */
export function layoutChangeText(c: LayoutChange): string {
  const memory = c.before_memory_kind !== c.after_memory_kind;
  const after = specText(c.after) + (memory ? ` in ${c.after_memory_kind}` : "");
  const before = specText(c.before) + (memory ? ` in ${c.before_memory_kind}` : "");
  return `${c.output} comes back ${after} but ${c.input} went in ${before}: the next call moves it back`;
}

/** The call chain of a value or collective, innermost first, each line with its text. */
function renderChain(program: Program, chain: [number, number, string][]): HTMLElement {
  const { payload } = program;
  return h("div", { class: "sv-chain", "data-role": "call-chain" }, [
    h("p", { class: "sv-muted" }, ["Call chain, innermost first:"]),
    h(
      "ol",
      {},
      chain.map(([file, line, fn]) =>
        h("li", {}, [
          `${lineLabel(payload, file, line)}${fn ? ` (${fn})` : ""}`,
          lineText(payload, file, line) ? h("code", { class: "sv-src-text" }, [lineText(payload, file, line)]) : null,
        ]),
      ),
    ),
  ]);
}

/** What the selection panel says about a value, an input or an output. */
interface SelectionFacts {
  title: string;
  type: number;
  /** Python's note on why its sharding is unknown, if it is. */
  reason: string;
  facts: string[];
  chain: [number, number, string][];
  /** A real input array (not a ShapeDtypeStruct): its picture is no what-if. */
  real: boolean;
}

function valueFacts(program: Program, i: number): SelectionFacts {
  const { payload } = program;
  const { values } = payload;
  const made = values.primitive[i] >= 0 ? payload.primitives[values.primitive[i]] : payload.roles[values.role[i]];
  const label = valueLabel(payload, i);
  const entry = payload.lines[values.line[i]];
  const where = lineLabel(payload, entry.file, entry.line);
  const facts = [where ? `made on ${where}` : "no line of yours"];
  const scoped = valueWhere(program, i);
  if (scoped) facts.push(scoped);
  if (values.backward?.[i]) facts.push("backward pass (a gradient)");
  if (values.body[i] >= 0) facts.push(`inside a ${foldLabel(program, values.body[i])} body, listed once`);
  facts.push(`sharding from ${originText(program, i)}`);
  return {
    title: `Value ${label} (${made}${label === values.name[i] ? "" : `, ${values.name[i]} in the jaxpr`})`,
    type: values.type[i],
    reason: payload.notes[values.note[i]] ?? "",
    facts,
    chain: stackFrames(payload, values.stack?.[i]),
    real: false,
  };
}

function endFacts(program: Program, selection: { kind: "input" | "output"; index: number }): SelectionFacts {
  const { payload } = program;
  const input = selection.kind === "input";
  const entry = input ? payload.inputs[selection.index] : payload.outputs[selection.index];
  const real = input && (payload.inputs[selection.index].real ?? false);
  const facts = [
    input
      ? real
        ? "a real array, laid out as it was passed"
        : "a ShapeDtypeStruct: its sharding as passed, no data"
      : "sharding of the compiled program's output",
  ];
  const change = (payload.layout_changes ?? []).find((c) => (input ? c.input === entry.path : c.output === entry.path));
  if (change) facts.push(layoutChangeText(change));
  return { title: `${input ? "Input" : "Output"} ${entry.path}`, type: entry.type, reason: "", facts, chain: [], real };
}

/** Why a selected value has no picture, when it has none. */
function layoutNote(layout: ValueLayout): HTMLElement | null {
  if (layout.status === "unknown") {
    return h("p", { class: "sv-note", "data-role": "sharding-unknown" }, [
      `shardviz could not tell how this value is laid out over the devices: ${layout.reason}. It shows no layout rather than guess one.`,
    ]);
  }
  if (layout.status === "no-mesh") {
    return h("p", { class: "sv-note", "data-role": "no-mesh" }, [
      `No mesh: the whole array is on device ${layout.deviceIds.join(", ") || "(not recorded)"}.`,
    ]);
  }
  if (layout.status === "old-payload") {
    return h("p", { class: "sv-note", "data-role": "sharding-unknown" }, [
      "This payload is too old to lay values out in the browser (its types carry no itemsize).",
    ]);
  }
  return null;
}

/** The selected collective's reason panel, with the rematerializations on its line; null for older payloads. */
function reasonOf(program: Program, c: number, send: ((text: string) => void) | null): HTMLElement | null {
  const reasons = program.payload.reasons;
  if (!reasons) return null;
  const collective = program.payload.collectives[c];
  const mesh = program.payload.mesh ? { names: program.payload.mesh.names, sizes: program.payload.mesh.sizes } : null;
  const panel = renderReason(whyOf(reasons, c), reasons, mesh, { key: String(c), send });
  reasons.rematerializations.forEach((remat, k) => {
    if (remat.line !== null && remat.line === collective.line) panel.append(renderRemat(remat, k, reasons, mesh, send));
  });
  return panel;
}
