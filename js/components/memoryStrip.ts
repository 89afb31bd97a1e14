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
import { lineLabel } from "../payload/program";
import { columnOfStep, type MemoryPlan, memoryPlan, stepsOfLine, stripColumns } from "../payload/programMemory";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { entryPlace, KIND_WORDS, liveAtStep, stackedAreas } from "./memoryStripDraw";

/** Columns the strip is drawn with at most (a longer program shows the most bytes of each run of steps). */
export const STRIP_COLUMNS = 600;
export { LIVE_SHOWN } from "./memoryStripDraw";

const SVG = "http://www.w3.org/2000/svg";

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
    this.svg.setAttribute("viewBox", `0 0 ${count} ${height}`);
    while (this.svg.firstChild) this.svg.firstChild.remove();
    for (const path of stackedAreas(plan, columns, height)) this.svg.append(path);
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
    this.cursor.style.left = `${(100 * (step + 0.5)) / plan.steps}%`;
    const bytes = timeline.step_bytes[step];
    const peak = step === timeline.peak_step;
    this.track.setAttribute("aria-valuenow", String(step));
    this.track.setAttribute(
      "aria-valuetext",
      `step ${step + 1} of ${timeline.steps}: ${formatBytes(bytes)} live${peak ? ", the peak" : ""}`,
    );
    replaceChildren(this.live, liveAtStep(program, plan, step, this.showAll));
    this.live.setAttribute("data-step", String(step));
  }
}
