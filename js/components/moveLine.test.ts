/**
 * The array view says what its last edit cost to move the data, from the
 * `move` trait the Python widget synced after real edits
 * (tests/program_js_fixtures.py `array_moves`), checked against the
 * collectives of JAX's own compile of the same move.
 */

import { afterEach, describe, expect, it } from "vitest";
import type { Payload } from "../payload/array";
import type { MoveSummary } from "../payload/move";
import { query, type Rendered, renderWidget } from "../test/render";
import { loadJson } from "../test/treeFixtures";
import { formatBytes } from "../util/ranges";

interface Move {
  payload: Payload;
  move: MoveSummary;
  jax?: { kind: string; groups: number[][] | null; pairs?: number[][] | null }[];
  block_bytes?: number;
  /** The memory kind of JAX's array after the move. */
  kind?: string;
}

const moves =
  loadJson<Record<"gathered" | "back" | "elsewhere" | "permuted" | "to_host" | "host_to_host", Move>>("array_moves");
let shown: Rendered | null = null;

afterEach(() => {
  shown?.cleanup();
  shown = null;
});

describe("the array view's move line", () => {
  it("is absent before any edit moved the array", () => {
    shown = renderWidget(moves.gathered.payload, { move: {} });
    expect(shown.el.querySelector('[data-role="move"]')).toBeNull();
  });

  it("names each collective of the move, its axes and bytes, as JAX's compile of the move has them", () => {
    const { payload, move, jax } = moves.gathered;
    shown = renderWidget(payload, { move });
    const line = query(shown.el, '[data-role="move"]');
    if (!("collectives" in move)) throw new Error("the fixture's move has no collectives");
    expect(line.textContent).toContain(`sent ${formatBytes(move.wire_bytes)} per device`);
    const items = Array.from(line.querySelectorAll<HTMLElement>('[data-role="move-collective"]'));
    expect(items.map((i) => i.getAttribute("data-kind")).sort()).toEqual((jax ?? []).map((c) => c.kind).sort());
    items.forEach((item, n) => {
      const c = move.collectives[n];
      expect(item.textContent).toContain(`over ${c.axes?.join(", ")}: ${formatBytes(c.wire_bytes)} per device`);
      expect(item.querySelector(".sv-axis-ref")?.textContent).toBe(c.axes?.[0]);
    });
    // The group sizes are JAX's: all-gathers over y (4 devices) and over x (2 devices).
    expect(move.collectives.map((c) => c.group_size).sort()).toEqual(
      (jax ?? []).map((c) => c.groups?.[0].length).sort(),
    );
  });

  it("says when the move needed no collective, and why no single program moves it onto other devices", () => {
    shown = renderWidget(moves.back.payload, { move: moves.back.move });
    expect(query(shown.el, '[data-role="move"]').textContent).toContain("needed no collective");
    shown.cleanup();
    shown = renderWidget(moves.elsewhere.payload, { move: moves.elsewhere.move });
    const error = "error" in moves.elsewhere.move ? moves.elsewhere.move.error : "";
    expect(error).toContain("device_put");
    expect(error).not.toContain("traced but did not lower");
    expect(query(shown.el, '[data-role="move"]').textContent).toContain(error);
  });

  it("says what a collective-permute's pairs are, with no groups (issue 19.3)", () => {
    const { payload, move } = moves.permuted;
    shown = renderWidget(payload, { move });
    if (!("collectives" in move)) throw new Error("the fixture's move has no collectives");
    const permute = move.collectives.find((c) => c.kind === "collective-permute");
    const item = query(shown.el, '[data-role="move-collective"][data-kind="collective-permute"]');
    expect(item.textContent).toContain(
      `each device sends ${formatBytes(permute?.wire_bytes ?? -1)} to one other device`,
    );
    // JAX's own compile of the swap: its permute's source-target pairs, of which a device sending to
    // itself moves nothing (XLA lists 8 pairs here; 4 of them are devices keeping their block).
    const jaxPairs = moves.permuted.jax?.find((c) => c.kind === "collective-permute")?.pairs ?? [];
    expect(jaxPairs).toHaveLength(8);
    const sending = jaxPairs.filter(([source, target]) => source !== target).length;
    expect(sending).toBe(4);
    expect(item.textContent).toContain(`(${sending} sender\u2192receiver pairs)`);
    expect(item.textContent).not.toContain("groups of");
    const line = query(shown.el, '[data-role="move"]').textContent ?? "";
    expect(line).not.toContain("no set of whole mesh axes");
  });

  it("calls a memory-kind change a host transfer of each device's block (issue 19.3)", () => {
    const { payload, move, block_bytes } = moves.to_host;
    shown = renderWidget(payload, { move });
    const line = query(shown.el, '[data-role="move"]').textContent ?? "";
    expect(line).toContain(`host transfer: each device copies its ${formatBytes(block_bytes ?? -1)} block`);
    expect(line).toContain("pinned_host");
    expect(line).not.toContain("needed no collective");
  });

  it("names the memory a host-to-host move leaves, not device memory (issue 30.4)", () => {
    const { payload, move, kind } = moves.host_to_host;
    expect(kind).toBe("unpinned_host");
    shown = renderWidget(payload, { move });
    const line = query(shown.el, '[data-role="move"]').textContent ?? "";
    expect(line).toContain("block from pinned_host to unpinned_host (no collective)");
    expect(line).not.toContain("device memory");
  });

  it("says a move to device memory comes back from the host memory it was in", () => {
    const move: MoveSummary = {
      collectives: [],
      wire_bytes: 0,
      memory: { from: "unpinned_host", to: "device", bytes: 64 },
    };
    shown = renderWidget(moves.to_host.payload, { move });
    expect(query(shown.el, '[data-role="move"]').textContent).toContain(
      "copies its 64 B block from unpinned_host back to device memory",
    );
  });

  it("says what each device lacked, read from the layouts (issue 30.1)", () => {
    // float32[8, 8] from P('x', 'y') on a 2x4 mesh (a 4x2 block each) to P(): each device lacks
    // 56 of its 64 elements, 224 bytes, which the two all-gathers send exactly.
    shown = renderWidget(moves.gathered.payload, { move: moves.gathered.move });
    const needs = query(shown.el, '[data-role="move-needs"]');
    expect(needs.textContent).toBe(
      "Read from the two layouts, 8 of 8 devices lacked part of their new block, at most 224 B each: no program could move less.",
    );
    expect(needs.getAttribute("data-bytes")).toBe("224");
    shown.model.fromPython({ payload: moves.back.payload, move: moves.back.move });
    expect(query(shown.el, '[data-role="move"]').textContent).not.toContain("lacked");
  });

  it("reads a move no single program does from the layouts", () => {
    shown = renderWidget(moves.elsewhere.payload, { move: moves.elsewhere.move });
    const line = query(shown.el, '[data-role="move"]').textContent ?? "";
    expect(line).toContain("This move is no single program");
    // Each of the 8 devices of the new mesh holds a 4x2 block of float32 it did not hold before.
    expect(line).toContain("8 of 8 devices lacked part of their new block, at most 32 B each");
  });

  it("says when XLA compiled the move in a separate process", () => {
    const move: MoveSummary = {
      collectives: [
        { kind: "all-to-all", axes: ["c"], group_size: 16, count: 1, wire_bytes: 960 },
        { kind: "collective-permute", axes: ["b", "c"], group_size: 2, count: 1, wire_bytes: 1024, pairs: 3840 },
      ],
      wire_bytes: 1984,
      needs: { most_bytes: 1024, receiving: 4096, devices: 4096 },
      child: { devices: 4096, seconds: 3.2 },
    };
    shown = renderWidget(moves.gathered.payload, { move });
    expect(query(shown.el, '[data-role="move"]').textContent).toContain(
      "XLA compiled this move in a separate process with 4096 CPU devices (in 3.2 s)",
    );
  });

  it("waits for the answer to the latest edit, never showing an earlier edit's collectives meanwhile", () => {
    shown = renderWidget(moves.gathered.payload, { move: moves.gathered.move });
    const { el, model } = shown;
    const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
    const commit = (text: string) => {
      input.value = text;
      input.dispatchEvent(new Event("input"));
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    };
    commit("x, y");
    commit("y, x");
    const line = () => query(el, '[data-role="move"]');
    expect(line().hasAttribute("data-pending")).toBe(true);
    expect(line().querySelectorAll('[data-role="move-collective"]')).toHaveLength(0);
    // The answer to the first edit: the second still waits, so its move is not known yet.
    model.answer(model.editSeqs[0], { payload: moves.back.payload, move: moves.back.move, spec_text: "x, y" });
    expect(line().hasAttribute("data-pending")).toBe(true);
    expect(line().textContent).not.toContain("needed no collective");
    // The answer to the second, with the move it made (here the fixture's two all-gathers).
    model.answer(model.editSeqs[1], { payload: moves.gathered.payload, move: moves.gathered.move });
    expect(line().hasAttribute("data-pending")).toBe(false);
    expect(line().querySelectorAll('[data-role="move-collective"]')).toHaveLength(2);
  });

  it("stops waiting on an answer that changed nothing", () => {
    shown = renderWidget(moves.back.payload, { move: moves.back.move });
    const input = query<HTMLInputElement>(shown.el, '[data-role="spec-input"]');
    input.value = "x,y"; // the layout in force, written another way: an edit that changes nothing
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(query(shown.el, '[data-role="move"]').hasAttribute("data-pending")).toBe(true);
    // The page's first edit is number 1; the kernel answers it with the same layout and move: no trait changed.
    shown.model.answer(1);
    expect(query(shown.el, '[data-role="move"]').hasAttribute("data-pending")).toBe(false);
    expect(query(shown.el, '[data-role="move"]').textContent).toContain("needed no collective");
  });

  it("says when XLA warned of an involuntary full rematerialization while compiling the move", () => {
    // Python's answer to the mesh edit of tests/test_move_needs.py: s32[12,4,2] from 3 blocks to 2.
    const text =
      "involuntary full rematerialization: XLA cannot move the array from P('y') on x=4, y=3 to P('y') on " +
      "y=2, x=6 efficiently, so every device gathers the whole s32[12,4,2] (384 B) and cuts its new block";
    const move: MoveSummary = {
      collectives: [{ kind: "all-gather", axes: ["y"], group_size: 3, count: 1, wire_bytes: 256 }],
      wire_bytes: 256,
      rematerializations: [
        { shape: [12, 4, 2], dtype: "s32", full_bytes: 384, before: "P('y') on x=4, y=3", after: "", text },
      ],
    };
    shown = renderWidget(moves.gathered.payload, { move });
    const remat = query(shown.el, '[data-role="move"] [data-role="move-remat"]');
    expect(remat.textContent).toBe(`XLA warned of an ${text}.`);
    expect(remat.getAttribute("data-bytes")).toBe("384");
  });

  it("follows Python's answer to the next edit", () => {
    shown = renderWidget(moves.gathered.payload, { move: moves.gathered.move });
    shown.model.fromPython({ payload: moves.back.payload, move: moves.back.move });
    expect(query(shown.el, '[data-role="move"]').textContent).toContain("needed no collective");
  });
});
