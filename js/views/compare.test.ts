/**
 * The comparison view on a payload written as docs/compare-payload.md says:
 * rank order, sorting by a column both ways, two rows side by side with their
 * differences worked out by hand, mesh grids of the right size, and rules
 * editors that trace again only where a kernel is live.
 */

import { describe, expect, it, vi } from "vitest";
import type { ComparePayload, CompareRow, LineEntry } from "../payload/compare";
import { readOnlyHost } from "../traits/host";
import { type CompareHost, CompareView } from "./compare";

function row(candidate: string, rank: number, step: number, mesh: [string, number][], lines: LineEntry[]): CompareRow {
  return {
    candidate,
    hardware: "h100",
    rank,
    mesh,
    step_s: step,
    bound: "network",
    compute_s: step / 4,
    memory_s: step / 2,
    network_s: step,
    network_by_axis: [],
    network_by_link: [],
    device_bytes: 1000 * rank,
    hbm_bytes: 2500,
    fits: 1000 * rank <= 2500,
    slices: 1,
    trace_seconds: 1,
    lines,
    against: "",
    changes: [],
  };
}

const GATHER: LineEntry = ["step.py:10", "all-gather", "data", 1, 4096, 2e-6, "NVLink"];
const PAYLOAD: ComparePayload = {
  kind: "compare",
  version: 1,
  step: "mlp",
  baseline: "best",
  hardware: ["h100"],
  candidates: ["tp", "fsdp", "big"],
  workers: 2,
  seconds: 3,
  rows: [
    row(
      "tp",
      1,
      3e-5,
      [
        ["data", 2],
        ["model", 4],
      ],
      [["step.py:10", "all-gather", "data", 1, 1024, 1e-6, "NVLink"]],
    ),
    row(
      "fsdp",
      2,
      1e-4,
      [
        ["data", 8],
        ["model", 1],
      ],
      [GATHER, ["step.py:12", "all-reduce", "model", 1, 512, 4e-6, "NVLink"]],
    ),
    row(
      "big",
      3,
      2e-5,
      [
        ["data", 4],
        ["model", 2],
      ],
      [],
    ),
  ],
  failures: [{ candidate: "uneven", hardware: "", mesh: [["data", 3]], error: "does not divide 64" }],
  rules: { tp: "0 = data, model" },
  editable: true,
};

function mount(host: CompareHost): { el: HTMLElement; view: CompareView } {
  const el = document.createElement("div");
  document.body.appendChild(el);
  return { el, view: new CompareView(el, host) };
}

const names = (el: HTMLElement) =>
  Array.from(el.querySelectorAll<HTMLElement>('[data-role="compare-row"]')).map((r) => r.dataset.candidate);
const header = (el: HTMLElement, column: string) =>
  el.querySelector<HTMLButtonElement>(`button[data-column="${column}"]`) as HTMLButtonElement;
const traits = { payload: PAYLOAD, error: "", error_source: "", notice: "", rules_edit: "" };
const saved: CompareHost = readOnlyHost(traits, "Saved page, no kernel.");

describe("the comparison view", () => {
  it("lists rows in rank order and sorts by any column, both ways", () => {
    const { el, view } = mount(saved);
    expect(names(el)).toEqual(["tp", "fsdp", "big"]);
    header(el, "step").click();
    expect(names(el)).toEqual(["big", "tp", "fsdp"]);
    header(el, "step").click();
    expect(names(el)).toEqual(["fsdp", "tp", "big"]);
    header(el, "candidate").click();
    expect(names(el)).toEqual(["big", "fsdp", "tp"]);
    expect(header(el, "candidate").closest("th")?.getAttribute("aria-sort")).toBe("ascending");
    view.destroy();
  });

  it("shows each row's bar and headroom, and the failures", () => {
    const { el, view } = mount(saved);
    const big = el.querySelector<HTMLElement>('[data-candidate="big"]') as HTMLElement;
    // 2.5 KB of HBM, 3 KB held: over by 500 B; the bar's parts against the slowest step (100 us)
    expect(big.querySelector('[data-column="headroom"]')?.textContent).toBe("over by 500 B");
    const parts = Array.from(big.querySelectorAll<HTMLElement>("[data-part]")).map((p) => p.style.width);
    expect(parts).toEqual(["5%", "10%", "20%"]);
    expect(el.querySelector('[data-role="compare-failures"]')?.textContent).toBe("uneven: does not divide 64");
    view.destroy();
  });

  it("sets two selected rows side by side with their differences", () => {
    const { el, view } = mount(saved);
    (el.querySelector('[data-candidate="tp"]') as HTMLElement).click();
    expect(el.querySelector('[data-role="compare-sides"]')).toBeNull();
    (el.querySelector('[data-candidate="fsdp"]') as HTMLElement).click();
    const lines = Array.from(el.querySelectorAll<HTMLElement>('[data-role="compare-line"]'));
    expect(lines.map((l) => l.dataset.differs)).toEqual(["true", "true"]);
    const text = (l: HTMLElement, role: string) => l.querySelector(`[data-role="${role}"]`)?.textContent;
    // the all-reduce appeared (512 B, 4 us); the gather grew from 1 KiB to 4 KiB (+3 KiB, +1 us)
    expect([text(lines[0], "bytes-delta"), text(lines[0], "time-delta")]).toEqual(["+512 B", "+4.0 us"]);
    expect([text(lines[1], "bytes-delta"), text(lines[1], "time-delta")]).toEqual(["+3.0 KiB", "+1.0 us"]);
    const meshes = Array.from(el.querySelectorAll<HTMLElement>('[data-role="compare-mesh"] .sv-mesh'));
    expect(meshes.map((m) => m.dataset.deviceCount)).toEqual(["8", "8"]);
    // No array is drawn on these meshes: every device has the one neutral fill, none a tile's colour.
    const fills = new Set(
      meshes.flatMap((m) => Array.from(m.querySelectorAll<HTMLElement>(".sv-cell")).map((c) => c.style.background)),
    );
    expect(fills.size).toBe(1);
    // a third selection replaces the oldest
    (el.querySelector('[data-candidate="big"]') as HTMLElement).click();
    const selected = Array.from(el.querySelectorAll<HTMLElement>('[aria-selected="true"]')).map(
      (r) => r.dataset.candidate,
    );
    expect(selected).toEqual(["fsdp", "big"]);
    view.destroy();
  });

  it("edits a candidate's rules only where a kernel is live", () => {
    const { el, view } = mount(saved);
    expect((el.querySelector("textarea") as HTMLTextAreaElement).readOnly).toBe(true);
    expect((el.querySelector('[data-role="retrace"]') as HTMLButtonElement).disabled).toBe(true);
    view.destroy();
    const edit = vi.fn();
    const live = mount({ ...readOnlyHost(traits), readOnly: false, edit });
    const area = live.el.querySelector("textarea") as HTMLTextAreaElement;
    area.value = "0 = data";
    (live.el.querySelector('[data-role="retrace"]') as HTMLButtonElement).click();
    expect(edit).toHaveBeenCalledWith("rules_edit", JSON.stringify({ candidate: "tp", rules: "0 = data" }));
    live.view.destroy();
  });

  it("shows a search's space and its best plan's rules, and gives the code on Use this plan", () => {
    const code = 'mesh = jax.make_mesh((4, 2), (\'data\', \'model\'))\nrules = """\n0 = data, model\n"""\n';
    const search = {
      devices: 8,
      hardware: "h100",
      considered: 13,
      pruned: 10,
      traced: 3,
      pruned_by: { "analytic step": 9, "does not split": 1 },
      best: "tp",
      best_rules: "0 = data, model\n<b>1</b> = data, None",
      best_mesh: [
        ["data", 4],
        ["model", 2],
      ] as [string, number][],
      network_bound: true,
      best_logical_rules: [
        ["embed", ["fsdp"]],
        ["mlp", ["model"]],
        ["norm", []],
      ] as [string, string[]][],
      verdict:
        "every plan is network-bound: the best, tp, ...\nthe book: <i>every</i> FSDP/tensor mix is network-bound",
      code,
    };
    const { el, view } = mount(readOnlyHost({ ...traits, payload: { ...PAYLOAD, search } }));
    const panel = el.querySelector('[data-role="search-space"]') as HTMLElement;
    expect(panel.querySelector('[data-role="search-counts"]')?.textContent).toBe(
      "13 candidates considered on 8 devices of h100, 10 pruned (9 by analytic step, 1 by does not split), 3 traced",
    );
    const verdict = panel.querySelector('[data-role="search-verdict"]') as HTMLElement;
    expect(verdict.className).toBe("sv-alert");
    // one paragraph a sentence, as text
    expect([...verdict.querySelectorAll("p")].map((p) => p.textContent)).toEqual([
      "every plan is network-bound: the best, tp, ...",
      "the book: <i>every</i> FSDP/tensor mix is network-bound",
    ]);
    expect(verdict.querySelector("i")).toBeNull();
    expect(panel.querySelector('[data-role="search-logical-rules"]')?.textContent).toBe(
      "Logical-axis rules: embed -> fsdp, mlp -> model, norm -> None",
    );
    // the rules reach the page as text, never as markup
    const rules = panel.querySelector('[data-role="search-rules"]') as HTMLElement;
    expect(rules.textContent).toBe("0 = data, model\n<b>1</b> = data, None");
    expect(rules.querySelector("b")).toBeNull();
    const shown = panel.querySelector('[data-role="search-code"]') as HTMLElement;
    expect(shown.hidden).toBe(true);
    (panel.querySelector('[data-role="use-plan"]') as HTMLButtonElement).click();
    expect(shown.hidden).toBe(false);
    expect(shown.textContent).toBe(code);
    view.destroy();
    const plain = mount(saved);
    expect(plain.el.querySelector('[data-role="search-space"]')).toBeNull();
    plain.view.destroy();
  });
});
