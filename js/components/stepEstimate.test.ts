import { afterEach, describe, expect, it } from "vitest";
import type { ProgramPayload } from "../payload/program";
import { loadProgram, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import { timeText, whereText } from "./stepEstimate";

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
    shown?.model.fromPython({ payload: { ...payload, name: "again" } as never }); // the program payload rides the shared trait
    expect(query<HTMLSelectElement>(el, 'select[data-role="hardware"]').value).toBe("h100");
    shown?.cleanup();
    const bare = show({ ...payload, estimates: undefined });
    expect(query(bare, '[data-role="estimate"]').textContent).toContain("No estimate");
    expect(query<HTMLSelectElement>(bare, 'select[data-role="hardware"]').disabled).toBe(true);
  });

  it("shows where the program runs and the parts of a collective on several links", () => {
    const payload = loadProgram("train_step");
    const estimates = payload.estimates;
    if (!estimates) throw new Error("the fixture carries no estimates: regenerate js/fixtures");
    // what Python writes for a program over two v5p slices: the slowest all-reduce in three parts
    const v5p = estimates.by_hardware["tpu-v5p"];
    const slowest = v5p.collectives.reduce((best, row, i) => (row[0] > v5p.collectives[best][0] ? i : best), 0);
    const rows = v5p.collectives.map((row, i) =>
      i === slowest
        ? ([
            row[0],
            "ICI+DCN",
            row[2],
            row[3],
            row[4],
            [
              ["reduce-scatter inside the slice", "ICI", 0.002],
              ["all-reduce of the 1/4096 share between 2 slices", "DCN", 0.0005],
              ["all-gather inside the slice", "ICI", 0.002],
            ],
          ] as typeof row)
        : row,
    );
    const split = { ...v5p, slices: 2, topology: [16, 16, 16], collectives: rows };
    const el = show({
      ...payload,
      estimates: { ...estimates, by_hardware: { ...estimates.by_hardware, "tpu-v5p": split } },
    });
    expect(query(el, '[data-role="estimate-parts"]').textContent).toContain("on 2 slices of 16x16x16 joined by DCN");
    const item = query(el, `[data-role="estimate-slowest"] li[data-collective="${slowest}"]`);
    expect(item.textContent).toContain(" on ICI+DCN");
    const legs = Array.from(item.querySelectorAll('[data-role="collective-links"] li')).map((li) => li.textContent);
    expect(legs).toEqual([
      "reduce-scatter inside the slice on ICI: 2.0 ms",
      "all-reduce of the 1/4096 share between 2 slices on DCN: 500.0 \u00b5s",
      "all-gather inside the slice on ICI: 2.0 ms",
    ]);
    // a collective on one link lists no parts
    expect(el.querySelectorAll('[data-role="collective-links"]').length).toBe(1);
  });

  it("says a GPU program's nodes and a TPU program's slice", () => {
    const base = {
      step_s: 1,
      bound: "network",
      compute_s: null,
      memory_s: null,
      network_s: 1,
      fits: null,
      hbm_bytes: null,
      collectives: [],
    };
    expect(whereText({ ...base, slices: 32, topology: null })).toBe("32 nodes");
    expect(whereText({ ...base, slices: 1, topology: null })).toBe("1 node");
    expect(whereText({ ...base, slices: 1, topology: [4, 8, 8] })).toBe("one slice of 4x8x8");
    expect(whereText(base)).toBe("");
  });

  it("writes times in the unit that reads best", () => {
    expect(timeText(2.33e-5)).toBe("23.3 \u00b5s");
    expect(timeText(0.072)).toBe("72.0 ms");
    expect(timeText(1.254)).toBe("1.25 s");
    expect(timeText(null)).toBe("unknown");
  });
});
