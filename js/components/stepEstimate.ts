/**
 * The estimated time of one step on named hardware, with a selector: the
 * payload carries every named hardware's estimate (Python's
 * shardviz.plan.estimate), so switching hardware is answered here, on a
 * saved page as in a live kernel. Shows the step time and what bounds it,
 * the three times, where the program runs (TPU slices, GPU nodes), whether
 * its memory fits the chip, and the collectives that take longest, each on
 * its line, with the parts of one that runs on several links.
 */

import type { EstimatePart, HardwareEstimate, Program } from "../payload/program";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { axesText, collectiveLine } from "./programText";

const PREFERRED = "tpu-v5p";
const SLOWEST = 3;

/** `23.3 µs`, `72.0 ms`, `1.25 s`; "unknown" where the module reported nothing. */
export function timeText(seconds: number | null): string {
  if (seconds === null) return "unknown";
  if (seconds < 1e-3) return `${(seconds * 1e6).toFixed(1)} \u00b5s`;
  if (seconds < 1) return `${(seconds * 1e3).toFixed(1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

function fitText(estimate: HardwareEstimate): string {
  if (estimate.fits === null || estimate.hbm_bytes === null) return "";
  return estimate.fits
    ? `fits in ${formatBytes(estimate.hbm_bytes)} of HBM`
    : `does not fit in ${formatBytes(estimate.hbm_bytes)} of HBM`;
}

/** `one slice of 16x16x16`, `2 slices of 16x16x16 joined by DCN`, `32 nodes`; "" where the payload does not say. */
export function whereText(estimate: HardwareEstimate): string {
  const slices = estimate.slices;
  if (slices === undefined) return "";
  if (!estimate.topology) return `${slices} node${slices === 1 ? "" : "s"}`;
  const torus = estimate.topology.join("x");
  return slices === 1 ? `one slice of ${torus}` : `${slices} slices of ${torus} joined by DCN`;
}

function partsList(parts: EstimatePart[]): HTMLElement {
  return h(
    "ul",
    { class: "sv-estimate-legs", "data-role": "collective-links" },
    parts.map(([what, link, seconds]) => h("li", {}, [`${what} on ${link}: ${timeText(seconds)}`])),
  );
}

export class StepEstimate {
  readonly element: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly body: HTMLElement;
  private program: Program | null = null;

  constructor(signal: AbortSignal) {
    this.select = h("select", { "data-role": "hardware", "aria-label": "Hardware" });
    this.select.addEventListener("change", () => this.show(), { signal });
    this.body = h("div", { "data-role": "estimate" });
    this.element = h("div", { class: "sv-estimate" }, [
      h("label", { class: "sv-estimate-pick" }, ["Estimated on ", this.select]),
      this.body,
    ]);
  }

  /** Draws ``program``'s estimates, keeping the hardware picked if it is still offered. */
  setProgram(program: Program): void {
    this.program = program;
    const names = program.payload.estimates?.hardware ?? [];
    const kept = this.select.value;
    replaceChildren(
      this.select,
      names.map((name) => h("option", { value: name }, [name])),
    );
    const pick = names.includes(kept) ? kept : names.includes(PREFERRED) ? PREFERRED : (names[0] ?? "");
    this.select.value = pick;
    this.select.disabled = names.length === 0;
    this.show();
  }

  private show(): void {
    const payload = this.program?.payload;
    const estimate = payload?.estimates?.by_hardware[this.select.value];
    if (!payload || !estimate) {
      replaceChildren(this.body, [h("p", { class: "sv-muted" }, ["No estimate: this payload carries none."])]);
      return;
    }
    const fit = fitText(estimate);
    const place = whereText(estimate);
    const slowest = estimate.collectives
      .map((row, i) => ({ row, i }))
      .filter(({ row }) => row[0] > 0)
      .sort((a, b) => b.row[0] - a.row[0])
      .slice(0, SLOWEST);
    replaceChildren(this.body, [
      h("p", { class: "sv-estimate-step", "data-role": "estimate-step" }, [
        `${timeText(estimate.step_s)} per step, ${estimate.bound}-bound`,
      ]),
      h("p", { class: "sv-small", "data-role": "estimate-parts" }, [
        `compute ${timeText(estimate.compute_s)}, memory ${timeText(estimate.memory_s)}, network ${timeText(estimate.network_s)}`,
        place ? `; on ${place}` : "",
        fit ? `; ${fit}` : "",
      ]),
      slowest.length === 0
        ? null
        : h(
            "ol",
            { class: "sv-estimate-slowest", "data-role": "estimate-slowest" },
            slowest.map(({ row, i }) => {
              const c = payload.collectives[i];
              const where = collectiveLine(payload, c);
              const parts = row[5] ?? [];
              return h("li", { "data-collective": String(i), title: row[3] }, [
                `${timeText(row[0])} ${c.kind} ${axesText(c)} on ${row[1]}${where ? ` at ${where}` : ""}`,
                parts.length > 1 ? partsList(parts) : null,
              ]);
            }),
          ),
      h("p", { class: "sv-muted sv-small", "data-role": "estimate-caveat" }, [payload.estimates?.caveat ?? ""]),
    ]);
  }
}
