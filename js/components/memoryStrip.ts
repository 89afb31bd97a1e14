/**
 * Memory over the program, per device: a strip along the program's steps
 * (the compiled schedule) of the bytes live at each, stacked by kind
 * (arguments, outputs, activations saved for the backward pass,
 * temporaries), with the peak marked and the backward pass shaded. Pointing
 * at a step (or moving along with the arrow keys: the strip is a slider)
 * shows what is live there, largest first; clicking pins that step.
 * Choosing a group reports it; the view selects its line (or its input).
 * Drawn from the payload alone, so a saved page shows it too.
 */

import type { Program } from "../payload/program";
import { lineLabel, lineText, plural } from "../payload/program";
import { columnOfStep, liveAt, type MemoryPlan, memoryPlan, stepsOfLine, stripColumns } from "../payload/programMemory";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";

/** Columns the strip is drawn with at most (a longer program shows the most bytes of each run of steps). */
export const STRIP_COLUMNS = 600;
/** Groups listed for a step before a "more" button. */
export const LIVE_SHOWN = 10;

const SVG = "http://www.w3.org/2000/svg";

const KIND_WORDS: Record<string, string> = {
  argument: "arguments",
  output: "outputs",
  saved: "saved for the backward pass",
  temporary: "temporaries",
  other: "small buffers",
};

export interface MemoryStripOptions {
  /** A group of the timeline was chosen. */
  onSelectGroup: (group: number) => void;
  signal: AbortSignal;
}

export class MemoryStrip {
  readonly element: HTMLElement;
  private readonly head = h("p", { class: "sv-strip-head", "data-role": "memory-peak" });
  private readonly track: HTMLElement;
  private readonly svg: SVGSVGElement;
  private readonly cursor = h("div", { class: "sv-strip-cursor", "aria-hidden": "true" });
  private readonly peakMark = h("div", { class: "sv-strip-peak", "aria-hidden": "true" });
  private readonly backwardMark = h("div", { class: "sv-strip-backward", "aria-hidden": "true" });
  private readonly lineMarks = h("div", { class: "sv-strip-line-marks", "aria-hidden": "true" });
  private readonly legend = h("ul", { class: "sv-strip-legend", "data-role": "memory-legend" });
  private readonly live = h("div", { class: "sv-strip-live", "data-role": "memory-live", "aria-live": "polite" });
  private program: Program | null = null;
  private plan: MemoryPlan | null = null;
  /** The step shown when the pointer is elsewhere: the peak until one is clicked. */
  private pinned = 0;
  private shown = -1;
  private showAll = false;

  constructor(options: MemoryStripOptions) {
    const { signal } = options;
    this.svg = document.createElementNS(SVG, "svg");
    this.svg.setAttribute("class", "sv-strip-svg");
    this.svg.setAttribute("preserveAspectRatio", "none");
    this.svg.setAttribute("aria-hidden", "true");
    this.track = h(
      "div",
      {
        class: "sv-strip-track",
        role: "slider",
        tabindex: 0,
        "data-role": "memory-track",
        "aria-label": "Bytes live per device along the program: a step",
        "aria-valuemin": 0,
      },
      [this.backwardMark, this.lineMarks, this.peakMark, this.cursor],
    );
    this.track.prepend(this.svg);
    this.element = h("div", { class: "sv-strip", "data-role": "memory-strip" }, [
      this.head,
      this.track,
      h("div", { class: "sv-strip-axis sv-muted sv-small", "aria-hidden": "true" }, [
        h("span", {}, ["start"]),
        h("span", {}, ["the program's steps, in XLA's schedule \u2192"]),
        h("span", {}, ["end"]),
      ]),
      this.legend,
      this.live,
    ]);
    const stepAt = (event: PointerEvent | MouseEvent): number | null => {
      const plan = this.plan;
      if (!plan) return null;
      const box = this.track.getBoundingClientRect();
      if (box.width <= 0) return null;
      const x = Math.min(Math.max(0, event.clientX - box.left), box.width - 1);
      return Math.min(plan.steps - 1, Math.floor((x / box.width) * plan.steps));
    };
    this.track.addEventListener(
      "pointermove",
      (event) => {
        const step = stepAt(event);
        if (step !== null) this.show(step);
      },
      { signal },
    );
    this.track.addEventListener("pointerleave", () => this.show(this.pinned), { signal });
    this.track.addEventListener(
      "click",
      (event) => {
        const step = stepAt(event);
        if (step !== null) this.pin(step);
      },
      { signal },
    );
    this.track.addEventListener(
      "keydown",
      (event) => {
        const plan = this.plan;
        if (!plan) return;
        const big = Math.max(1, Math.round(plan.steps / 20));
        const moves: Record<string, number> = {
          ArrowRight: this.pinned + 1,
          ArrowUp: this.pinned + 1,
          ArrowLeft: this.pinned - 1,
          ArrowDown: this.pinned - 1,
          PageUp: this.pinned + big,
          PageDown: this.pinned - big,
          Home: 0,
          End: plan.steps - 1,
        };
        if (!(event.key in moves)) return;
        event.preventDefault();
        event.stopPropagation();
        this.pin(Math.min(plan.steps - 1, Math.max(0, moves[event.key])));
      },
      { signal },
    );
    this.live.addEventListener(
      "click",
      (event) => {
        const target = (event.target as Element | null)?.closest?.("[data-role]") as HTMLElement | null;
        if (!target) return;
        const role = target.getAttribute("data-role");
        if (role === "memory-group") options.onSelectGroup(Number(target.getAttribute("data-group")));
        else if (role === "memory-more") {
          this.showAll = true;
          this.render(this.shown);
        } else if (role === "memory-to-peak" && this.plan) this.pin(this.plan.timeline.peak_step);
      },
      { signal },
    );
  }

  /** Draws a program's timeline; false (and nothing drawn) when it has none. */
  setProgram(program: Program): boolean {
    this.program = program;
    this.plan = memoryPlan(program.payload.memory_timeline);
    const plan = this.plan;
    if (!plan) {
      replaceChildren(this.legend, []);
      replaceChildren(this.live, []);
      return false;
    }
    const { timeline } = plan;
    this.pinned = timeline.peak_step;
    this.shown = -1;
    this.showAll = false;
    this.drawStrip(plan);
    const at = lineLabel(program.payload, ...entryPlace(program, plan.stepLines[timeline.peak_step]));
    replaceChildren(this.head, [
      h("strong", {}, [`Peak ${formatBytes(timeline.peak_bytes)} per device`]),
      ` at step ${timeline.peak_step + 1} of ${timeline.steps}${at ? ` (${at})` : ""}`,
      timeline.xla_peak_bytes != null
        ? h("span", { class: "sv-muted" }, [
            ` \u00b7 memory_analysis() says ${formatBytes(timeline.xla_peak_bytes)}${timeline.xla_peak_bytes < timeline.peak_bytes ? " (it leaves temporaries out)" : ""}`,
          ])
        : null,
    ]);
    this.track.setAttribute("aria-valuemax", String(timeline.steps - 1));
    const used = plan.kindNames.filter((_, k) => plan.byKind[k].some((b) => b > 0));
    replaceChildren(
      this.legend,
      used.map((kind) =>
        h("li", { "data-kind": kind }, [
          h("span", { class: `sv-swatch sv-mem-${kind}`, "aria-hidden": "true" }, []),
          KIND_WORDS[kind] ?? kind,
        ]),
      ),
    );
    this.show(this.pinned);
    return true;
  }

  /** Marks the steps a line's instructions run at (`entries` index the payload's `lines`), or none. */
  setLine(entries: readonly number[] | null): void {
    const plan = this.plan;
    replaceChildren(this.lineMarks, []);
    if (!plan || !entries || entries.length === 0) return;
    for (const [first, last] of stepsOfLine(plan, entries)) {
      const mark = h("span", { class: "sv-strip-line-mark" });
      mark.style.left = `${(100 * first) / plan.steps}%`;
      mark.style.width = `max(2px, ${(100 * (last - first + 1)) / plan.steps}%)`;
      this.lineMarks.append(mark);
    }
  }

  /** The step shown now. */
  get step(): number {
    return this.shown;
  }

  /** Pins a step: it stays shown when the pointer leaves. */
  pin(step: number): void {
    this.pinned = step;
    this.show(step);
  }

  private show(step: number): void {
    if (step === this.shown || !this.plan) return;
    this.showAll = false;
    this.render(step);
  }

  private drawStrip(plan: MemoryPlan): void {
    const columns = stripColumns(plan, STRIP_COLUMNS);
    const count = columns.length;
    const height = 100;
    const top = Math.max(1, plan.timeline.peak_bytes, ...plan.timeline.step_bytes);
    this.svg.setAttribute("viewBox", `0 0 ${count} ${height}`);
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
    while (this.svg.firstChild) this.svg.firstChild.remove();
    for (const path of paths) this.svg.append(path);
    const { peak_step, backward_step } = plan.timeline;
    const at = (step: number) => `${(100 * (columnOfStep(plan.steps, count, step) + 0.5)) / count}%`;
    this.peakMark.style.left = at(peak_step);
    this.peakMark.classList.toggle("sv-label-left", peak_step > plan.steps * 0.7);
    this.peakMark.textContent = "";
    this.peakMark.append(
      h("span", { class: "sv-strip-peak-label" }, [`peak ${formatBytes(plan.timeline.peak_bytes)}`]),
    );
    this.backwardMark.hidden = backward_step === null;
    if (backward_step !== null) {
      this.backwardMark.style.left = `${(100 * backward_step) / plan.steps}%`;
      this.backwardMark.textContent = "backward";
    }
    this.lineMarks.textContent = "";
  }

  private render(step: number): void {
    const plan = this.plan;
    const program = this.program;
    if (!plan || !program) return;
    this.shown = step;
    const { timeline } = plan;
    const { payload } = program;
    this.cursor.style.left = `${(100 * (step + 0.5)) / plan.steps}%`;
    const bytes = timeline.step_bytes[step];
    const peak = step === timeline.peak_step;
    const backward = timeline.backward_step !== null && step >= timeline.backward_step;
    this.track.setAttribute("aria-valuenow", String(step));
    this.track.setAttribute(
      "aria-valuetext",
      `step ${step + 1} of ${timeline.steps}: ${formatBytes(bytes)} live${peak ? ", the peak" : ""}`,
    );
    const [file, line] = entryPlace(program, plan.stepLines[step]);
    const where = lineLabel(payload, file, line);
    const text = lineText(payload, file, line);
    const groups = liveAt(timeline, step);
    const shown = this.showAll ? groups : groups.slice(0, LIVE_SHOWN);
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
    replaceChildren(this.live, [
      h("p", { class: "sv-live-head", "data-step": step }, [
        h("strong", {}, [`Step ${step + 1}`]),
        `: ${formatBytes(bytes)} live${peak ? " (the peak)" : ""}${backward ? ", backward pass" : ""}`,
        where ? ` \u00b7 ${where}` : "",
        text ? h("code", { class: "sv-src-text" }, [text]) : null,
        peak ? null : " ",
        peak
          ? null
          : h("button", { type: "button", class: "sv-link", "data-role": "memory-to-peak" }, ["show the peak"]),
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
    ]);
    this.live.setAttribute("data-step", String(step));
  }
}

/** The file and line of a `lines` entry (null, null for none). */
function entryPlace(program: Program, entry: number): [number | null, number | null] {
  const line = entry >= 0 ? program.payload.lines[entry] : undefined;
  return [line?.file ?? null, line?.line ?? null];
}
