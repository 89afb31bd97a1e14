/**
 * Parity with the Python engine, byte for byte: every case of
 * js/fixtures/parity/cases.json (written by tests/make_engine_parity_fixtures.py
 * from the real Python widget) is answered by the local engine, with and
 * without a kernel, and compared with what Python answered.
 */

import { describe, expect, it } from "vitest";
import { loadParity, type ParityCase, type PythonAnswer } from "../../test/parity";
import { applyEdit, type EditOutcome } from "./edits";

const data = loadParity();
/** The mismatches a failing replay reports; it stops there, so a broken engine (or a mutant) fails fast. */
const SHOWN = 5;

/** The Python answer in the local engine's terms, serialised as the comparison sees it. */
function expected(answer: PythonAnswer): string {
  if ("error" in answer) return JSON.stringify({ status: "refused", ...answer.error });
  return JSON.stringify({ status: "applied", payload: data.payloads[answer.payload], notice: answer.notice });
}

function actual(outcome: EditOutcome): string {
  if (outcome.status === "refused") {
    return JSON.stringify({ status: "refused", message: outcome.message, source: outcome.source });
  }
  if (outcome.status === "applied") {
    return JSON.stringify({ status: "applied", payload: outcome.payload, notice: outcome.notice });
  }
  return JSON.stringify(outcome);
}

const refusedByJax = (answer: PythonAnswer): boolean =>
  "error" in answer && answer.error.message.startsWith("JAX refused to place the array there");

function describeCase(c: ParityCase): string {
  return `case ${c.id}: ${JSON.stringify(c.edit)} on ${data.payloads[c.start].type_str} (${data.payloads[c.start].mesh_text})`;
}

describe("local engine parity with Python", () => {
  it("has enough cases, of every kind", () => {
    expect(data.cases.length).toBeGreaterThanOrEqual(2000);
    const kinds = new Set(data.cases.map((c) => `${"error" in c.python ? "refused" : "applied"}/${c.kernel_only}`));
    for (const kind of ["applied/null", "refused/null", "applied/devices", "applied/memory", "applied/manual"]) {
      expect(kinds).toContain(kind);
    }
    const starts = data.cases.map((c) => data.payloads[c.start]);
    expect(starts.some((p) => p.devices.count === 8960)).toBe(true);
    expect(starts.some((p) => p.mesh?.abstract === false && !p.devices.machine_order)).toBe(true);
    expect(starts.some((p) => p.mesh?.types.includes("Manual"))).toBe(true);
  });

  it("answers every edit as Python does, where it answers (a live kernel waits on the rest)", () => {
    const mismatches: string[] = [];
    for (const c of data.cases) {
      if (mismatches.length >= SHOWN) break; // enough to fail on and to read
      const start = data.payloads[c.start];
      const before = JSON.stringify(start);
      const live = applyEdit(start, c.edit, { kernel: true });
      expect(JSON.stringify(start), "the starting payload is not changed").toBe(before);
      if (c.kernel_only !== null) {
        if (live.status !== "kernel-only")
          mismatches.push(`${describeCase(c)}: expected kernel-only, got ${actual(live)}`);
      } else if (actual(live) !== expected(c.python)) {
        mismatches.push(`${describeCase(c)}:\n  local  ${actual(live)}\n  python ${expected(c.python)}`);
      }
    }
    expect(mismatches.join("\n")).toBe("");
  });

  it("answers every edit of a saved page as Python does, and refuses in plain words what needs a kernel", () => {
    const mismatches: string[] = [];
    for (const c of data.cases) {
      if (mismatches.length >= SHOWN) break;
      const start = data.payloads[c.start];
      const offline = applyEdit(start, c.edit, { kernel: false });
      let want: string | null = null;
      if (c.kernel_only === null || (c.kernel_only === "memory" && !refusedByJax(c.python))) {
        // The page knows the machine it was saved on, not the one it is read on.
        want = expected(c.python).replace("but this machine has", "but the machine this page was saved on has");
      } else if (c.kernel_only === "memory") {
        // JAX refused this move of the real array; the page, which holds no array, lays the layout out.
        if (offline.status !== "applied")
          mismatches.push(`${describeCase(c)}: expected a layout, got ${actual(offline)}`);
      } else if (c.kernel_only === "devices") {
        const ok =
          offline.status === "refused" &&
          offline.source === "mesh" &&
          offline.message.includes(`this page can re-mesh only its own ${start.devices.count} device`);
        if (!ok) mismatches.push(`${describeCase(c)}: expected the own-devices refusal, got ${actual(offline)}`);
      } else {
        const ok = offline.status === "refused" && offline.message.startsWith("placing the array on Manual axes");
        if (!ok) mismatches.push(`${describeCase(c)}: expected the Manual refusal, got ${actual(offline)}`);
      }
      if (want !== null && actual(offline) !== want) {
        mismatches.push(`${describeCase(c)}:\n  local  ${actual(offline)}\n  python ${want}`);
      }
    }
    expect(mismatches.join("\n")).toBe("");
  });
});
