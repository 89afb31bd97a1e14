/**
 * The program view: where a traced program's shardings go, what it
 * communicates and where its memory peaks. It composes the summary, the
 * inputs (one spec editor per array input) and outputs, the memory strip
 * along the program, the source view (each function the program runs as an
 * annotated block of its lines, with the call tree), the table of
 * collectives, the totals per mesh axis, memory and flops, and the selected
 * value's layout (the array view's pictures, computed in the browser from
 * the payload), the selected collective's device groups on the mesh grid, or
 * what a selected line sends and holds.
 * Browser-only state (the selection) stays apart from the synced traits and
 * survives a re-trace where the same value or collective is still there.
 */

import { axisMark } from "../components/axisText";
import { CollectiveTable } from "../components/collectiveTable";
import { InputSpecs } from "../components/inputSpecs";
import { MemoryStrip } from "../components/memoryStrip";
import { decodedOrSaid, sayNothingYet } from "../components/payloadStatus";
import { modeText } from "../components/programText";
import { renderAxisTotals, renderMemory } from "../components/programTotals";
import { SourceView } from "../components/sourceView";
import { StepEstimate } from "../components/stepEstimate";
import { formatSpec, parseSpec } from "../engine/array/grammar";
import { decodeProgram, isProgramPayload, type Program, plural } from "../payload/program";
import { type SourcePlan, sourcePlan } from "../payload/programSource";
import { ANSWERED } from "../traits/host";
import type { ProgramHost } from "../traits/program";
import { h, replaceChildren } from "../util/dom";
import { measured, ROOT_CLASS } from "../util/measure";
import { formatBytes } from "../util/ranges";
import { layoutChangeText, type ProgramSelection, SelectionPanel } from "./programSelection";

export class ProgramView {
  readonly root: HTMLElement;
  private readonly host: ProgramHost;
  private readonly lifetime = new AbortController();
  private readonly summarySlot = h("div", { class: "sv-summary-slot" });
  private readonly statusSlot = h("div", { class: "sv-status" });
  private readonly alertSlot = h("div", { class: "sv-alert-slot" });
  private readonly noticeSlot = h("div", { class: "sv-notice-slot", role: "status" });
  private readonly totalsSlot = h("div", { class: "sv-totals-slot" });
  private readonly memorySlot = h("div", { class: "sv-memory-slot" });
  private readonly listing: SourceView;
  private readonly strip: MemoryStrip;
  private readonly stripPanel: HTMLElement;
  private readonly table: CollectiveTable;
  private readonly estimate: StepEstimate;
  private readonly inputs: InputSpecs;
  private readonly selectionPanel: SelectionPanel;

  private program: Program | null = null;
  private plan: SourcePlan | null = null;
  private payloadRef: unknown = null;
  private selection: ProgramSelection | null = null;

  constructor(el: HTMLElement, host: ProgramHost) {
    this.host = host;
    const signal = this.lifetime.signal;
    this.listing = new SourceView({
      onSelectValue: (i) => this.select({ kind: "value", index: i }, "listing"),
      onSelectCollective: (c) => this.select({ kind: "collective", index: c }, "listing"),
      onSelectLine: (entry) => this.select({ kind: "line", index: entry }, "listing"),
      signal,
    });
    this.strip = new MemoryStrip({ onSelectGroup: (g) => this.selectGroup(g), signal });
    this.stripPanel = h("section", { class: "sv-panel sv-strip-panel", "aria-label": "Memory over the program" }, [
      h("h3", { class: "sv-panel-title" }, ["Memory over the program, per device"]),
      this.strip.element,
    ]);
    this.table = new CollectiveTable({
      onSelect: (c) => this.select({ kind: "collective", index: c }, "table"),
      signal,
    });
    this.inputs = new InputSpecs({
      readOnly: host.readOnly,
      note: host.note,
      canonical: canonicalSpec,
      send: (specs) => host.edit("input_specs", specs),
      inFlight: () => host.editsInFlight?.() ?? false,
      onSelectInput: (k) => this.select({ kind: "input", index: k }),
      onSelectOutput: (k) => this.select({ kind: "output", index: k }),
      signal,
    });
    this.selectionPanel = new SelectionPanel(
      (c) => this.select({ kind: "collective", index: c }),
      signal,
      host.readOnly ? null : (text) => host.edit("fix", text),
    );
    this.estimate = new StepEstimate(signal);
    this.root = h("div", { class: `${ROOT_CLASS} sv-program`, "data-shardviz": "", "data-view": "program" }, [
      this.summarySlot,
      this.statusSlot,
      h("div", { class: "sv-alerts" }, [this.alertSlot, this.noticeSlot]),
      h("section", { class: "sv-panel sv-io-panel", "aria-label": "Inputs and outputs" }, [
        h("h3", { class: "sv-panel-title" }, ["Inputs and outputs"]),
        this.inputs.element,
      ]),
      this.stripPanel,
      h("div", { class: "sv-program-main" }, [
        h("section", { class: "sv-panel sv-source-panel", "aria-label": "Source" }, [
          h("h3", { class: "sv-panel-title" }, ["Source"]),
          this.listing.element,
        ]),
        this.selectionPanel.element,
      ]),
      h("div", { class: "sv-program-lower" }, [
        h("section", { class: "sv-panel sv-coll-panel", "aria-label": "Collectives" }, [
          h("h3", { class: "sv-panel-title" }, ["Collectives"]),
          this.table.element,
        ]),
        h("div", { class: "sv-program-side" }, [
          h("section", { class: "sv-panel", "aria-label": "Bytes per mesh axis" }, [
            h("h3", { class: "sv-panel-title" }, ["Bytes per mesh axis"]),
            this.totalsSlot,
          ]),
          h("section", { class: "sv-panel", "aria-label": "Memory per device" }, [
            h("h3", { class: "sv-panel-title" }, ["Memory per device"]),
            this.memorySlot,
          ]),
          h("section", { class: "sv-panel", "aria-label": "Step time" }, [
            h("h3", { class: "sv-panel-title" }, ["Step time"]),
            this.estimate.element,
          ]),
        ]),
      ]),
    ]);
    this.root.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Escape" && this.selection) this.select(null);
      },
      { signal },
    );
    el.append(this.root);
    this.update(["payload", "error", "error_source", "notice"]);
  }

  /** Applies trait changes; the pictures redraw only when Python sent a new payload. */
  update(changed: Iterable<string>): void {
    const keys = new Set(changed);
    if (keys.has("payload")) this.setPayload(this.host.get("payload"));
    if (keys.has("error") || keys.has("error_source")) this.renderAlert();
    if (keys.has("notice")) {
      const notice = this.host.get("notice");
      replaceChildren(this.noticeSlot, notice ? [h("p", { class: "sv-note", "data-role": "notice" }, [notice])] : []);
    }
    // ANSWERED comes with the kernel's whole answer to an edit, even one that changed nothing else.
    if (keys.has(ANSWERED)) this.syncInputs(true);
    else if (["payload", "error", "error_source"].some((k) => keys.has(k))) this.syncInputs();
  }

  /** The program view takes no custom messages. */
  receive(_message: unknown): void {}

  private syncInputs(answered = false): void {
    this.inputs.sync({ error: this.host.get("error"), errorSource: this.host.get("error_source") }, answered);
  }

  destroy(): void {
    this.selectionPanel.destroy();
    this.lifetime.abort();
    this.root.remove();
  }

  /** What is selected now. */
  get selected(): ProgramSelection | null {
    return this.selection;
  }

  /**
   * Selects a value, a collective, an input or an output (null clears); redraws only the selection.
   * The listing and the table scroll to the selection unless it was picked there (already in view).
   */
  select(selection: ProgramSelection | null, origin: "listing" | "table" | "other" = "other"): void {
    if (!this.program) return;
    measured(() => {
      this.selection = selection;
      this.showSelection({ listing: origin !== "listing", table: origin !== "table" });
    });
  }

  /**
   * A memory group was chosen in the strip: its line in the source view, or, for an argument or an
   * output made on no line of the user's, that input or output.
   */
  private selectGroup(g: number): void {
    const program = this.program;
    const timeline = program?.payload.memory_timeline;
    if (!program || !timeline) return;
    const line = timeline.groups.line[g];
    if (line >= 0) {
      this.select({ kind: "line", index: line });
      return;
    }
    const label = timeline.groups.label[g];
    const input = program.payload.inputs.findIndex((i) => i.path === label);
    if (input >= 0) {
      this.select({ kind: "input", index: input });
      return;
    }
    const output = program.payload.outputs.findIndex((o) => o.path === label);
    if (output >= 0) this.select({ kind: "output", index: output });
  }

  /** The `lines` entries a selection is on, for the memory strip to mark their steps. */
  private linesOf(selection: ProgramSelection | null): number[] | null {
    const program = this.program;
    if (!program || !selection) return null;
    const { payload } = program;
    if (selection.kind === "line") return this.plan?.rowOfEntry[selection.index]?.entries ?? [selection.index];
    if (selection.kind === "value") return [payload.values.line[selection.index]];
    if (selection.kind === "collective") {
      return payload.lines.flatMap((line, e) =>
        line.collectives.includes(selection.index) || (line.parts ?? []).some(([c]) => c === selection.index)
          ? [e]
          : [],
      );
    }
    return null;
  }

  private renderAlert(): void {
    const error = this.host.get("error");
    const source = this.host.get("error_source");
    const own = source.startsWith("input:");
    replaceChildren(this.alertSlot, [
      error && !own
        ? h("div", { class: "sv-error", role: "alert", "data-source": source || "general" }, [
            source === "program" ? `The program did not trace or compile with these specs: ${error}` : error,
          ])
        : null,
    ]);
  }

  private setPayload(value: unknown): void {
    if (value === this.payloadRef) return;
    this.payloadRef = value;
    if (!isProgramPayload(value)) {
      sayNothingYet(this.statusSlot);
      return;
    }
    // Keep the last good picture; say why the new one is not drawn.
    const program = decodedOrSaid(this.statusSlot, "program", () => decodeProgram(value));
    if (program === null) return;
    measured(() => this.draw(program));
  }

  private draw(program: Program): void {
    const previous = this.program;
    this.program = program;
    this.selectionPanel.setProgram(program);
    replaceChildren(this.summarySlot, [
      renderSummary(program),
      rematFlag(program),
      fixBack(program, this.host, this.lifetime.signal),
    ]);
    this.inputs.setProgram(program);
    this.plan = sourcePlan(program);
    this.listing.setProgram(program, this.plan);
    this.stripPanel.hidden = !this.strip.setProgram(program);
    this.table.setProgram(program);
    replaceChildren(this.totalsSlot, [renderAxisTotals(program)]);
    replaceChildren(this.memorySlot, [renderMemory(program)]);
    this.estimate.setProgram(program);
    this.selection = previous && this.selection ? carried(previous, program, this.selection) : null;
    this.showSelection({ listing: false, table: false });
  }

  private showSelection(reveal: { listing: boolean; table: boolean }): void {
    const program = this.program;
    if (!program) return;
    const selection = this.selection;
    this.listing.setSelected(
      selection?.kind === "value" || selection?.kind === "collective" || selection?.kind === "line" ? selection : null,
      reveal.listing,
    );
    this.strip.setLine(this.linesOf(selection));
    this.table.setSelected(selection?.kind === "collective" ? selection.index : null, reveal.table);
    this.inputs.setSelected(selection?.kind === "input" || selection?.kind === "output" ? selection : null);
    this.selectionPanel.show(program, this.plan, selection);
  }
}

/** A spec text as Python writes it back, or null when the grammar refuses it (Python then says why). */
export function canonicalSpec(text: string): string | null {
  try {
    return formatSpec(parseSpec(text).map((entry) => entry ?? []));
  } catch {
    return null;
  }
}

/** The same selection in a re-traced program: the value or collective of the same name, or the same input. */
function carried(before: Program, after: Program, selection: ProgramSelection): ProgramSelection | null {
  if (selection.kind === "input" || selection.kind === "output") {
    const list = selection.kind === "input" ? after.payload.inputs : after.payload.outputs;
    return selection.index < list.length ? selection : null;
  }
  if (selection.kind === "line") {
    const { file, line } = before.payload.lines[selection.index] ?? {};
    const fileName = file == null ? null : before.payload.files[file];
    const index = after.payload.lines.findIndex(
      (l) => l.line === line && (l.file == null ? null : after.payload.files[l.file]) === fileName,
    );
    return index >= 0 ? { kind: "line", index } : null;
  }
  if (selection.kind === "value") {
    // By the value's key, unique and stable across re-traces (names repeat: `_`).
    const index = after.valueKeys.indexOf(before.valueKeys[selection.index]);
    return index >= 0 ? { kind: "value", index } : null;
  }
  const name = before.payload.collectives[selection.index]?.name;
  const index = after.payload.collectives.findIndex((c) => c.name === name);
  return index >= 0 ? { kind: "collective", index } : null;
}

function renderSummary(program: Program): HTMLElement {
  const { payload } = program;
  const mesh = payload.mesh;
  const chips: (string | HTMLElement)[] = [];
  const chip = (text: string | HTMLElement, title = ""): HTMLElement =>
    h("span", { class: "sv-chip", title: title || null }, [text]);
  if (mesh) {
    const meshText = h("span", {}, []);
    mesh.names.forEach((name, i) => {
      if (i > 0) meshText.append(" ");
      meshText.append(axisMark(name, i), `=${mesh.sizes[i]}`);
    });
    const types = Array.from(new Set(mesh.types));
    meshText.append(` (${types.join(", ")})`);
    chips.push(chip(meshText, "the program's mesh"));
  }
  chips.push(chip(`${payload.num_partitions} device${payload.num_partitions === 1 ? "" : "s"}`));
  chips.push(chip(modeText(payload.sharding_mode)));
  chips.push(
    chip(
      payload.totals.runs === 0
        ? "no collectives"
        : `${formatBytes(payload.totals.wire_bytes)} sent per device per call`,
      "ring estimates, loops counted",
    ),
  );
  if (payload.process_count > 1) chips.push(chip(`process ${payload.process_index} of ${payload.process_count}`));
  const changes = payload.layout_changes ?? [];
  if (changes.length > 0) {
    const flag = chip(
      `${plural(changes.length, "output")} laid out unlike ${changes.length === 1 ? "its input" : "their inputs"}`,
      changes.map((c) => layoutChangeText(c)).join("\n"),
    );
    flag.classList.add("sv-warn-chip");
    flag.setAttribute("data-role", "layout-changes");
    chips.push(flag);
  }
  return h("div", { class: "sv-program-summary", "data-role": "program-summary" }, [
    h("div", { class: "sv-program-title" }, [
      h("code", { class: "sv-program-name" }, [payload.name]),
      h("span", { class: "sv-muted" }, [
        ` (${payload.hlo_module}), ${plural(program.valueCount, "value")}, ${plural(payload.collectives.length, "collective")}`,
      ]),
    ]),
    h("div", { class: "sv-chip-row" }, chips),
  ]);
}

/** XLA's involuntary full rematerializations, flagged beside the summary (each one's panel opens on its line's collectives). */
function rematFlag(program: Program): HTMLElement | null {
  const remats = program.payload.reasons?.rematerializations ?? [];
  if (remats.length === 0) return null;
  return h(
    "div",
    { class: "sv-remat-flag", "data-role": "remat-flag", role: "alert" },
    remats.map((r) => h("p", {}, [r.text])),
  );
}

/** "Back" after a tried fix (the reason panel's "Try it"): the program it was tried on. */
function fixBack(program: Program, host: ProgramHost, signal: AbortSignal): HTMLElement | null {
  if (!program.payload.reasons?.back || host.readOnly) return null;
  const button = h("button", { type: "button", class: "sv-button", "data-role": "fix-back" }, [
    "Back to the program before the fix",
  ]);
  button.addEventListener("click", () => host.edit("fix", "back"), { signal });
  return h("div", { class: "sv-fix-back" }, [button]);
}
