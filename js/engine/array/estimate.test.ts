import { describe, expect, it } from "vitest";
import { loadFixture, loadPythonAnswers } from "../../test/fixtures";
import { makePayload } from "../../test/payloads";
import { applyEdit } from "./edits";
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

describe("the bytes of an edit only a kernel can place, from its texts", () => {
  const MiB = 2 ** 20;
  // float32[8192, 8192] split x, y over 2 x 4 devices: 4096 x 2048 x 4 B = 32 MiB each.
  const big = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [8192, 8192], spec: [["x"], ["y"]] });

  it("keeps each device's share when the kernel moves the array to another memory", () => {
    expect(estimateEdit(big, { memory_kind: "pinned_host" })).toEqual({ bytesNow: 32 * MiB, bytesAfter: 32 * MiB });
  });

  it("splits by the typed spec on Manual axes, which only JAX can judge", () => {
    const manual = makePayload({
      names: ["x", "y"],
      sizes: [2, 4],
      types: ["Manual", "Manual"],
      shape: [8192, 8192],
      spec: [["x"], ["y"]],
    });
    // dim 0 over x=2 only: 4096 x 8192 x 4 B.
    expect(estimateEdit(manual, { spec_text: "x" })).toEqual({ bytesNow: 32 * MiB, bytesAfter: 128 * MiB });
  });

  it("carries the spec over to a smaller mesh of the machine's devices, renaming its axes as Python does", () => {
    // x -> a, y -> b: 4096 x 4096 x 4 B over a=2, b=2 (4 of the machine's 8 devices).
    expect(estimateEdit(big, { mesh_text: "a=2, b=2" })).toEqual({ bytesNow: 32 * MiB, bytesAfter: 64 * MiB });
  });

  it("takes the engine's own answer where it places the edit, which may restore the spec the user set", () => {
    // Shown split x only (4096 x 8192 x 4 B = 128 MiB) after a mesh dropped the y the user set; on x=4, y=2 the
    // user's x, y fits again: 2048 x 4096 x 4 B. The spec shown alone would give 2048 x 8192 x 4 B.
    const shown = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [8192, 8192], spec: [["x"]] });
    const restored = { ...shown, user_spec: [["x"], ["y"]] };
    expect(estimateEdit(restored, { mesh_text: "x=4, y=2" })).toEqual({ bytesNow: 128 * MiB, bytesAfter: 32 * MiB });
  });

  it("gives a single-device array spread over a new mesh the whole array per device (no spec yet)", () => {
    const single = { ...makePayload({ names: [], sizes: [], shape: [8192, 8192], spec: [] }), machine_devices: 8 };
    expect(single.mesh).toBeNull();
    expect(estimateEdit(single, { mesh_text: "x=2" })).toEqual({ bytesNow: 256 * MiB, bytesAfter: 256 * MiB });
  });
});

describe("where confirming starts", () => {
  const MiB = 2 ** 20;
  const big = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [8192, 8192], spec: [["x"], ["y"]] });
  const asks = (bytesNow: number, bytesAfter: number) => needsConfirmation(big, { bytesNow, bytesAfter });

  it("asks past 64 MiB per device, not at it", () => {
    expect(asks(32 * MiB, 64 * MiB)).toBe(false);
    expect(asks(32 * MiB, 64 * MiB + 1)).toBe(true);
  });

  it("asks from twice the share on, not below", () => {
    expect(asks(64 * MiB, 128 * MiB)).toBe(true);
    expect(asks(100 * MiB, 128 * MiB)).toBe(false);
    expect(asks(128 * MiB, 128 * MiB)).toBe(false);
  });
});

describe("one edit's answer, asked for by the hint, the check and the edit in turn", () => {
  it("is worked out once for the same payload and edit, and again for anything else", () => {
    const payload = makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [64, 64], spec: [["x"], ["y"]] });
    const first = applyEdit(payload, { spec_text: "y, x" }, { kernel: true });
    expect(applyEdit(payload, { spec_text: "y, x" }, { kernel: true })).toBe(first);
    expect(first.status === "applied" && first.payload.spec).toEqual([["y"], ["x"]]);
    // Another text, another context, or an equal payload that is another object: answered anew.
    expect(applyEdit(payload, { spec_text: "x, y" }, { kernel: true })).not.toBe(first);
    const again = applyEdit(payload, { spec_text: "y, x" }, { kernel: true });
    expect(applyEdit(payload, { spec_text: "y, x" }, { kernel: false })).not.toBe(again);
    const copy = structuredClone(payload);
    const fromCopy = applyEdit(copy, { spec_text: "y, x" }, { kernel: false });
    expect(fromCopy).not.toBe(again);
    expect(fromCopy).toEqual(again);
  });
});
