/**
 * A program's totals: a bar per mesh axis for the bytes each device sends
 * over it per call (collectives over several axes count toward each), the
 * same per kind, and the memory and flops JAX reported per device (or
 * "not reported" where it returned nothing).
 */

import type { Program, ProgramMemory, TotalRow } from "../payload/program";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import { formatBytes } from "../util/ranges";
import { countText } from "./programText";

function countsText(row: TotalRow): string {
  const [, , collectives, runs] = row;
  return `${collectives} collective${collectives === 1 ? "" : "s"}, ${runs} run${runs === 1 ? "" : "s"}`;
}

/** The total under the other count, where it differs: XLA:CPU's module's (bf16/f16 widened to f32). */
function otherTotalLine(program: Program): HTMLElement | null {
  const other = program.payload.totals.other_wire_bytes;
  if (other == null) return null;
  const text =
    program.payload.bytes_from === "cpu"
      ? `Counted as XLA:CPU's module moves them (bf16 and f16 widened to f32); a TPU or GPU sends ${formatBytes(other)} in the program's dtypes.`
      : `Counted in the program's dtypes, as a TPU or GPU moves them; XLA:CPU's module sends ${formatBytes(other)} (it widens bf16 and f16 to f32).`;
  return h("p", { class: "sv-muted sv-small", "data-role": "other-total" }, [text]);
}

/** One bar per mesh axis (then `?` for groups on no whole axes), scaled to the busiest. */
export function renderAxisTotals(program: Program): HTMLElement {
  const { totals, mesh } = program.payload;
  const names = mesh?.names ?? [];
  const most = Math.max(1, ...totals.by_axis.map((row) => row[1]));
  const box = h("div", { class: "sv-totals", "data-role": "axis-totals" }, [
    h("p", { class: "sv-total-line" }, [
      totals.runs === 0
        ? "No bytes sent: this program has no collectives."
        : `${formatBytes(totals.wire_bytes)} sent per device per call, in ${totals.runs} collective run${totals.runs === 1 ? "" : "s"}.`,
    ]),
    otherTotalLine(program),
  ]);
  if (totals.by_axis.length === 0) return box;
  const bars = h("div", { class: "sv-bars" });
  for (const row of totals.by_axis) {
    const [key, bytes] = row;
    const axis = names.indexOf(key);
    const bar = h("span", { class: "sv-bar" });
    bar.style.width = `${(100 * bytes) / most}%`;
    bar.style.backgroundColor = axis >= 0 ? axisColor(axis) : "var(--sv-muted)";
    bars.append(
      h(
        "div",
        {
          class: "sv-bar-row",
          "data-role": "axis-total",
          "data-axis": key,
          "data-bytes": bytes,
          title: key === "?" ? "collectives whose groups are no set of whole mesh axes" : `mesh axis ${key}`,
        },
        [
          h("span", { class: "sv-bar-label" }, [key]),
          h("span", { class: "sv-bar-track" }, [bar]),
          h("span", { class: "sv-bar-value" }, [formatBytes(bytes)]),
          h("span", { class: "sv-bar-counts sv-muted" }, [countsText(row)]),
        ],
      ),
    );
  }
  box.append(bars);
  if (totals.by_kind.length > 0) {
    box.append(
      h(
        "ul",
        { class: "sv-kind-totals" },
        totals.by_kind.map((row) =>
          h("li", { "data-role": "kind-total", "data-kind": row[0] }, [
            h("span", { class: "sv-coll-kind" }, [row[0]]),
            ` ${formatBytes(row[1])} (${countsText(row)})`,
          ]),
        ),
      ),
    );
  }
  if (totals.by_axis.length > 1) {
    box.append(h("p", { class: "sv-muted sv-small" }, ["A collective over several axes counts toward each of them."]));
  }
  return box;
}

const DEVICE_ROWS: [keyof ProgramMemory, string][] = [
  ["argument_bytes", "arguments"],
  ["output_bytes", "outputs"],
  ["temp_bytes", "temporaries (scratch XLA sets aside)"],
  ["alias_bytes", "aliased (arguments reused as outputs)"],
  ["peak_bytes", "XLA:CPU's own peak (not the one fits uses)"],
  ["generated_code_bytes", "generated code"],
];

const HOST_ROWS: [keyof ProgramMemory, string][] = [
  ["host_argument_bytes", "host arguments"],
  ["host_output_bytes", "host outputs"],
  ["host_temp_bytes", "host temporaries"],
  ["host_alias_bytes", "host aliased"],
];

/** Memory per device from `memory_analysis()`, flops and bytes accessed from `cost_analysis()`. */
export function renderMemory(program: Program): HTMLElement {
  const { memory, flops, bytes_accessed, matmul_flops } = program.payload;
  const list = h("dl", { class: "sv-memory-list" });
  const add = (label: string, value: string, role: string): void => {
    list.append(h("dt", {}, [label]), h("dd", { "data-role": role }, [value]));
  };
  if (memory === null) {
    add("memory", "not reported", "memory-none");
  } else {
    for (const [key, label] of DEVICE_ROWS) {
      const value = memory[key];
      add(label, value === null ? "not reported" : formatBytes(value), `memory-${key}`);
    }
    for (const [key, label] of HOST_ROWS) {
      const value = memory[key];
      if (value) add(label, formatBytes(value), `memory-${key}`);
    }
  }
  add("flops", countText(flops), "flops");
  if (matmul_flops != null && (flops === null || matmul_flops > flops * 1.01)) {
    // XLA's cost analysis counts a loop's body once; a scanned model's dots, loops counted, are more
    add("matrix multiplies, loops counted", countText(matmul_flops), "matmul-flops");
  }
  add("bytes accessed", bytes_accessed === null ? "not reported" : formatBytes(bytes_accessed), "bytes-accessed");
  const peakBelowScratch = memory !== null && memory.peak_bytes !== null && memory.peak_bytes < memory.temp_bytes;
  return h("div", { class: "sv-memory", "data-role": "memory" }, [
    list,
    peakBelowScratch
      ? h("p", { class: "sv-muted sv-small", "data-role": "memory-why" }, [
          "Peak live is below the temporaries: not every temporary is alive at the same time, and XLA's schedule holds at most the peak at once.",
        ])
      : null,
    h("p", { class: "sv-muted sv-small" }, [
      memory === null
        ? "JAX returned no memory analysis for this program."
        : "Per device, from the compiled program's memory_analysis() and cost_analysis(): XLA:CPU's figures, its f32 copies of bf16 values included. The memory strip's peak, in the program's dtypes, is the one fits and assert_fits use.",
    ]),
  ]);
}
