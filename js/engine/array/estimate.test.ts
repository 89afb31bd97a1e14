import { describe, expect, it } from "vitest";
import { loadFixture, loadPythonAnswers } from "../../test/fixtures";
import { makePayload } from "../../test/payloads";
import { CONFIRM_BYTES, estimateEdit, needsConfirmation } from "./estimate";

describe("what an edit would give each device", () => {
  const cases = loadPythonAnswers().edit_estimates;

  it.each(cases.filter((c) => c.bytes !== null))(
    "$fixture: $trait '$text' gives what JAX holds after it",
    ({ fixture, trait, text, bytes }) => {
      const payload = loadFixture(fixture);
      expect(estimateEdit(payload, { [trait]: text })).toEqual({ bytesNow: payload.shard_bytes, bytesAfter: bytes });
    },
  );

  it.each(cases.filter((c) => c.bytes === null))(
    "$fixture: no estimate for $trait '$text', which Python refuses",
    ({ fixture, trait, text }) => {
      expect(estimateEdit(loadFixture(fixture), { [trait]: text })).toBeNull();
    },
  );

  it("covers refusals, acceptances, and meshes only a kernel can place", () => {
    expect(cases.filter((c) => c.bytes === null).length).toBeGreaterThan(3);
    expect(cases.filter((c) => c.bytes !== null).length).toBeGreaterThan(15);
    // x=2, y=2 takes 4 of the machine's devices: the payload does not list them, the texts suffice.
    expect(cases.some((c) => c.text === "x=2, y=2" && c.bytes === 32)).toBe(true);
  });
});

describe("confirming an edit that moves a lot of data", () => {
  // float32[8192, 8192] over 8 devices: 32 MiB each; replicated, 256 MiB each.
  const big = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [8192, 8192], spec: [["x"], ["y"]] });
  const spec = (text: string) => estimateEdit(big, { spec_text: text });

  it("asks when a real array's share would grow past the threshold", () => {
    expect(spec("")).toEqual({ bytesNow: 32 * 2 ** 20, bytesAfter: 256 * 2 ** 20 });
    expect(needsConfirmation(big, spec(""))).toBe(true);
    expect(needsConfirmation(big, spec("y, x"))).toBe(false); // the same share
    expect(needsConfirmation(big, spec("x"))).toBe(true); // 128 MiB, 4x
    // Onto 2 of the machine's devices (only a kernel can place it): 128 MiB each.
    expect(estimateEdit(big, { mesh_text: "x=2" })).toEqual({ bytesNow: 32 * 2 ** 20, bytesAfter: 128 * 2 ** 20 });
  });

  it("does not ask for small arrays, what-if layouts or edits that would be refused", () => {
    const small = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [4, 8], spec: [["x"], ["y"]] });
    expect(needsConfirmation(small, estimateEdit(small, { spec_text: "" }))).toBe(false);
    expect(needsConfirmation({ ...big, has_array: false }, spec(""))).toBe(false);
    expect(spec("z")).toBeNull();
    expect(CONFIRM_BYTES).toBe(64 * 2 ** 20);
  });
});
