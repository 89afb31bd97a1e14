/**
 * The collectives table and totals count bytes in the program's dtypes, with
 * XLA:CPU's own figure under each row it widened: checked against the
 * compiled module's own buffers (tests/program_js_fixtures.py `jax_truth`
 * reads their element types and bytes from the module's text) and JAX's
 * output types for a bfloat16 data-parallel step.
 */

import { afterEach, describe, expect, it } from "vitest";
import type { ProgramPayload } from "../payload/program";
import { loadProgram, programTruth, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import { loadJson } from "../test/treeFixtures";
import { formatBytes } from "../util/ranges";
import { shortDtype } from "./collectiveTable";

let shown: RenderedProgram | null = null;
afterEach(() => {
  shown?.cleanup();
  shown = null;
});

function show(payload: ProgramPayload): HTMLElement {
  shown = renderProgram(payload);
  return shown.el;
}

/** A ring all-reduce's bytes sent per device, 2 (n-1)/n of its result (docs/program-payload.md). */
const allReduceWire = (bytes: number, n: number) => Math.floor((2 * (n - 1) * bytes) / n);

describe("the collectives table counts bytes as the device moves them", () => {
  it("shows the bfloat16 step's all-reduce in bf16, XLA:CPU's float32 figure under it", () => {
    const payload = loadProgram("bf16_step");
    const truth = programTruth("bf16_step");
    const el = show(payload);
    // JAX says the gradients are bfloat16; XLA:CPU's module all-reduces them as float32 (the loss too).
    expect(truth.output_types.slice(1)).toEqual(["bfloat16[16,32]", "bfloat16[32,8]"]);
    const [module] = truth.collectives;
    expect(module.kind).toBe("all-reduce");
    expect(module.results.map(([type]) => type)).toEqual(["f32", "f32", "f32"]);
    const n = module.groups?.[0].length ?? 0;
    expect(n).toBe(8);
    // The module's float32 bytes per operand; on the device the two gradients are half of them,
    // the loss's float32 sum (jnp.mean accumulates in float32) stays as it is.
    const [loss, w1, w2] = module.results.map(([, bytes]) => bytes);
    const onCpu = allReduceWire(loss, n) + allReduceWire(w1, n) + allReduceWire(w2, n);
    const onDevice = allReduceWire(loss, n) + allReduceWire(w1 / 2, n) + allReduceWire(w2 / 2, n);
    const row = query(el, '[data-role="collective"][data-kind="all-reduce"]');
    expect(Number(row.getAttribute("data-bytes"))).toBe(onDevice);
    expect(query(row, '[data-role="collective-dtype"]').textContent).toBe("f32+bf16");
    expect(query(row, '[data-role="other-count"]').textContent).toBe(`f32 in XLA:CPU: ${formatBytes(onCpu)}`);
    expect(query(el, '[data-role="bytes-counting"]').textContent).toContain("program's dtypes");
    // The totals say the same two figures.
    expect(query(el, '[data-role="axis-total"]').getAttribute("data-bytes")).toBe(String(onDevice));
    expect(query(el, '[data-role="other-total"]').textContent).toContain(
      `XLA:CPU's module sends ${formatBytes(onCpu)}`,
    );
  });

  it("says nothing of another count where the module moves the program's own float32", () => {
    const payload = loadProgram("train_step");
    const truth = programTruth("train_step");
    const el = show(payload);
    expect(truth.collectives.flatMap((c) => c.results.map(([type]) => type))).not.toContain("bf16");
    const rows = Array.from(el.querySelectorAll('[data-role="collective"]'));
    expect(rows.length).toBe(truth.collectives.length);
    for (const row of rows) {
      expect(query(row as HTMLElement, '[data-role="collective-dtype"]').textContent).toBe("f32");
      expect(row.querySelector('[data-role="other-count"]')).toBeNull();
    }
    expect(query(el, '[data-role="bytes-counting"]').hidden).toBe(true);
    expect(el.querySelector('[data-role="other-total"]')).toBeNull();
  });

  it("counts as XLA:CPU's module when the program was recounted that way (Program.with_bytes('cpu'))", () => {
    const device = loadProgram("bf16_step");
    const cpu = loadJson<ProgramPayload>("program_bf16_step_cpu");
    const el = show(cpu);
    const row = query(el, '[data-role="collective"][data-kind="all-reduce"]');
    const c = device.collectives[0];
    expect(Number(row.getAttribute("data-bytes"))).toBe(c.other?.total_wire_bytes);
    expect(query(row, '[data-role="collective-dtype"]').textContent).toBe("f32");
    expect(query(row, '[data-role="other-count"]').textContent).toBe(
      `${shortDtype(c.dtype)} on the device: ${formatBytes(c.total_wire_bytes)}`,
    );
    expect(query(el, '[data-role="other-total"]').textContent).toContain(
      `a TPU or GPU sends ${formatBytes(device.totals.wire_bytes)}`,
    );
  });

  it("writes XLA's short names for dtypes", () => {
    expect(shortDtype("bfloat16")).toBe("bf16");
    expect(shortDtype("float32, bfloat16")).toBe("f32+bf16");
    expect(shortDtype("")).toBe("");
    expect(shortDtype(undefined)).toBe("");
    expect(shortDtype("float8_e4m3fn")).toBe("float8_e4m3fn");
  });
});
