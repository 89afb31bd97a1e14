import { afterEach, describe, expect, it } from "vitest";
import type { ProgramPayload } from "../payload/program";
import { loadProgram, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import { timeText } from "./stepEstimate";

let shown: RenderedProgram | null = null;
afterEach(() => {
  shown?.cleanup();
  shown = null;
});

function show(payload: ProgramPayload): HTMLElement {
  shown = renderProgram(payload);
  return shown.el;
}

describe("the step time panel", () => {
  it("offers every hardware Python estimated and shows its step, bound and slowest collectives", () => {
    const payload = loadProgram("train_step");
    const estimates = payload.estimates;
    if (!estimates) throw new Error("the fixture carries no estimates: regenerate js/fixtures");
    const el = show(payload);
    const select = query<HTMLSelectElement>(el, 'select[data-role="hardware"]');
    expect(Array.from(select.options).map((o) => o.value)).toEqual(estimates.hardware);
    expect(select.value).toBe("tpu-v5p");
    for (const name of estimates.hardware) {
      select.value = name;
      select.dispatchEvent(new Event("change"));
      const estimate = estimates.by_hardware[name];
      expect(query(el, '[data-role="estimate-step"]').textContent).toBe(
        `${timeText(estimate.step_s)} per step, ${estimate.bound}-bound`,
      );
      const listed = Array.from(el.querySelectorAll('[data-role="estimate-slowest"] li'));
      const seconds = listed.map((li) => estimate.collectives[Number(li.getAttribute("data-collective"))][0]);
      expect(seconds).toEqual([...seconds].sort((a, b) => b - a));
      expect(listed.length).toBe(Math.min(3, estimate.collectives.filter((row) => row[0] > 0).length));
      for (const li of listed) {
        const row = estimate.collectives[Number(li.getAttribute("data-collective"))];
        expect(li.textContent).toContain(` on ${row[1]}`);
        expect(li.getAttribute("title")).toBe(row[3]);
      }
    }
    expect(query(el, '[data-role="estimate-caveat"]').textContent).toContain("compiled for CPU");
  });

  it("keeps the hardware picked when a new payload arrives, and says when a payload has no estimates", () => {
    const payload = loadProgram("mlp");
    const el = show(payload);
    const select = query<HTMLSelectElement>(el, 'select[data-role="hardware"]');
    select.value = "h100";
    select.dispatchEvent(new Event("change"));
    shown?.model.set("payload", { ...payload, name: "again" } as never); // the program payload rides the shared trait
    expect(query<HTMLSelectElement>(el, 'select[data-role="hardware"]').value).toBe("h100");
    shown?.cleanup();
    const bare = show({ ...payload, estimates: undefined });
    expect(query(bare, '[data-role="estimate"]').textContent).toContain("No estimate");
    expect(query<HTMLSelectElement>(bare, 'select[data-role="hardware"]').disabled).toBe(true);
  });

  it("writes times in the unit that reads best", () => {
    expect(timeText(2.33e-5)).toBe("23.3 \u00b5s");
    expect(timeText(0.072)).toBe("72.0 ms");
    expect(timeText(1.254)).toBe("1.25 s");
    expect(timeText(null)).toBe("unknown");
  });
});
