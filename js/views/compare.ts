/**
 * The comparison view: candidate plans ranked side by side. A table of rows
 * (one candidate on one hardware) sortable by any column, each with a bar
 * split into compute, memory and network time and its memory headroom; two
 * rows selected show side by side (js/components/compareSides.ts); each
 * candidate given as rules can be edited, and the kernel traces that
 * candidate again. The selection and sort are the browser's own and survive
 * a new payload.
 */

import { renderSides, seconds } from "../components/compareSides";
import { type CompareRow, headroom, isComparePayload, rowKey, type SearchPayload } from "../payload/compare";
import type { Host } from "../traits/host";
import { h, replaceChildren } from "../util/dom";
import { ROOT_CLASS } from "../util/measure";
import { formatBytes } from "../util/ranges";
import type { MountedView } from "./index";

/** What the view reads, and its one control (src/shardviz/widgets/compare.py): a candidate's new rules, as JSON. */
export interface CompareTraits {
  payload: unknown;
  error: string;
  error_source: string;
  notice: string;
  /** `{"candidate", "rules"}` as JSON: trace that candidate again with these rules. */
  rules_edit: string;
}

export type CompareHost = Host<CompareTraits, "rules_edit">;

type Column = { name: string; value: (row: CompareRow) => number | string };

const COLUMNS: Column[] = [
  { name: "#", value: (r) => r.rank },
  { name: "candidate", value: (r) => r.candidate },
  { name: "mesh", value: (r) => r.mesh.map(([n, s]) => `${n}=${s}`).join(" x ") },
  { name: "hardware", value: (r) => r.hardware },
  { name: "step", value: (r) => r.step_s },
  { name: "bound", value: (r) => r.bound },
  { name: "compute", value: (r) => r.compute_s ?? -1 },
  { name: "memory", value: (r) => r.memory_s ?? -1 },
  { name: "network", value: (r) => r.network_s },
  { name: "per device", value: (r) => r.device_bytes ?? -1 },
  { name: "headroom", value: (r) => headroom(r) ?? Number.NEGATIVE_INFINITY },
];

function cellText(column: string, row: CompareRow): string {
  switch (column) {
    case "step":
      return seconds(row.step_s);
    case "compute":
      return seconds(row.compute_s);
    case "memory":
      return seconds(row.memory_s);
    case "network":
      return seconds(row.network_s);
    case "mesh":
      // Wraps only before an axis's " x ": a narrow output area gets "data=4" over "x model=2".
      return row.mesh.map(([n, s]) => `${n}=${s}`).join(" x\u00a0");
    case "per device":
      return row.device_bytes === null ? "?" : formatBytes(row.device_bytes);
    case "headroom": {
      const left = headroom(row);
      if (left === null) return "?";
      return left < 0 ? `over by ${formatBytes(-left)}` : `${formatBytes(left)} free`;
    }
    default:
      return String(COLUMNS.find((c) => c.name === column)?.value(row) ?? "");
  }
}

/** A bar per row: compute, memory and network time, each as a share of the slowest row's step. */
function timeBar(row: CompareRow, longest: number): HTMLElement {
  const part = (what: string, value: number | null) => {
    const width = longest > 0 && value !== null ? (100 * value) / longest : 0;
    const bar = h("span", { class: `sv-compare-bar-${what}`, "data-part": what, title: `${what} ${seconds(value)}` });
    bar.style.width = `${width.toFixed(2)}%`;
    return bar;
  };
  return h("div", { class: "sv-compare-bar", "data-role": "time-bar" }, [
    part("compute", row.compute_s),
    part("memory", row.memory_s),
    part("network", row.network_s),
  ]);
}

export class CompareView implements MountedView {
  readonly root: HTMLElement;
  private readonly host: CompareHost;
  private readonly lifetime = new AbortController();
  private sidesLifetime = new AbortController();
  private sortBy = "#";
  private ascending = true;
  private selected: string[] = [];

  constructor(el: HTMLElement, host: CompareHost) {
    this.host = host;
    // The stylesheet's rules (the mesh grid's too) apply under the root class every view carries.
    this.root = h("div", { class: `${ROOT_CLASS} sv-compare`, "data-shardviz": "", "data-view": "compare" });
    el.appendChild(this.root);
    this.render();
  }

  update(changed: Iterable<string>): void {
    const keys = new Set(changed);
    if (keys.has("payload") || keys.has("error") || keys.has("notice")) this.render();
  }

  receive(): void {}

  destroy(): void {
    this.lifetime.abort();
    this.sidesLifetime.abort();
    this.root.remove();
  }

  /** Sorts by `column` (again: the other way round). */
  sort(column: string): void {
    this.ascending = this.sortBy === column ? !this.ascending : true;
    this.sortBy = column;
    this.render();
  }

  /** Selects a row (or unselects it); a third selection replaces the oldest. */
  toggle(key: string): void {
    this.selected = this.selected.includes(key)
      ? this.selected.filter((k) => k !== key)
      : [...this.selected, key].slice(-2);
    this.render();
  }

  private render(): void {
    const payload = this.host.get("payload");
    if (!isComparePayload(payload)) {
      replaceChildren(this.root, [h("p", { class: "sv-muted" }, ["No comparison to show."])]);
      return;
    }
    const rows = this.sorted(payload.rows);
    const keys = new Set(rows.map(rowKey));
    this.selected = this.selected.filter((k) => keys.has(k));
    const longest = Math.max(0, ...rows.map((r) => r.step_s));
    const error = String(this.host.get("error") ?? "");
    const notice = String(this.host.get("notice") ?? "");
    const head = h("tr", {}, [...COLUMNS.map((c) => this.header(c.name)), h("th", {}, ["compute, memory, network"])]);
    const body = rows.map((row) => this.rowElement(row, longest));
    const picked = this.selected.map((k) => rows.find((r) => rowKey(r) === k)).filter((r) => r !== undefined);
    this.sidesLifetime.abort();
    this.sidesLifetime = new AbortController();
    replaceChildren(this.root, [
      h("h3", { class: "sv-panel-title" }, [
        `${payload.step}: ${payload.candidates.length} candidates on ${payload.hardware.join(", ")}`,
      ]),
      error ? h("div", { class: "sv-alert", role: "alert", "data-role": "error" }, [error]) : null,
      notice ? h("div", { class: "sv-notice", role: "status" }, [notice]) : null,
      h("table", { class: "sv-compare-table", "data-role": "compare-table" }, [
        h("thead", {}, [head]),
        h("tbody", {}, body),
      ]),
      picked.length === 2
        ? renderSides(picked[0], picked[1], this.sidesLifetime.signal)
        : h("p", { class: "sv-muted", "data-role": "compare-hint" }, ["Select two rows to set them side by side."]),
      ...this.searchSpace(payload.search),
      ...this.failures(payload.failures),
      ...this.editors(payload.rules ?? {}, payload.editable === true),
    ]);
  }

  private sorted(rows: readonly CompareRow[]): CompareRow[] {
    const column = COLUMNS.find((c) => c.name === this.sortBy) ?? COLUMNS[0];
    const sign = this.ascending ? 1 : -1;
    return rows.slice().sort((a, b) => {
      const x = column.value(a);
      const y = column.value(b);
      const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return sign * order || a.rank - b.rank;
    });
  }

  private header(name: string): HTMLElement {
    // A no-break space: a header that wraps keeps its arrow beside its name.
    const mark = this.sortBy === name ? (this.ascending ? "\u00a0\u25b2" : "\u00a0\u25bc") : "";
    const button = h("button", { type: "button", class: "sv-compare-sort", "data-column": name }, [`${name}${mark}`]);
    button.addEventListener("click", () => this.sort(name), { signal: this.lifetime.signal });
    return h("th", { "aria-sort": this.sortBy === name ? (this.ascending ? "ascending" : "descending") : "none" }, [
      button,
    ]);
  }

  private rowElement(row: CompareRow, longest: number): HTMLElement {
    const key = rowKey(row);
    const tr = h(
      "tr",
      {
        class: `${row.fits === false ? "sv-compare-over" : ""} ${this.selected.includes(key) ? "sv-selected" : ""}`,
        "data-role": "compare-row",
        "data-candidate": row.candidate,
        "data-hardware": row.hardware,
        "aria-selected": String(this.selected.includes(key)),
        tabindex: 0,
      },
      [
        ...COLUMNS.map((c) => h("td", { "data-column": c.name }, [cellText(c.name, row)])),
        h("td", { class: "sv-compare-bar-cell" }, [timeBar(row, longest)]),
      ],
    );
    const choose = () => this.toggle(key);
    tr.addEventListener("click", choose, { signal: this.lifetime.signal });
    tr.addEventListener(
      "keydown",
      (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          choose();
        }
      },
      { signal: this.lifetime.signal },
    );
    return tr;
  }

  /** A search's space and its best plan's rules; "Use this plan" shows the code that lays it out. */
  private searchSpace(search: SearchPayload | undefined): HTMLElement[] {
    if (search === undefined) return [];
    const by = Object.entries(search.pruned_by)
      .map(([why, n]) => `${n} by ${why}`)
      .join(", ");
    const code = h("pre", { class: "sv-compare-code", "data-role": "search-code", hidden: true }, [search.code]);
    const use = h("button", { type: "button", "data-role": "use-plan", disabled: search.best === null }, [
      "Use this plan",
    ]);
    use.addEventListener(
      "click",
      () => {
        code.hidden = false;
        void navigator.clipboard?.writeText(search.code).catch(() => undefined);
      },
      { signal: this.lifetime.signal },
    );
    const mesh = search.best_mesh.map(([name, size]) => `${name}=${size}`).join(" x ");
    return [
      h("div", { class: "sv-compare-search", "data-role": "search-space" }, [
        h("h4", {}, ["Search"]),
        h("p", { "data-role": "search-counts" }, [
          `${search.considered} candidates considered on ${search.devices} devices of ${search.hardware}, ` +
            `${search.pruned} pruned (${by || "none"}), ${search.traced} traced`,
        ]),
        h(
          "div",
          { class: search.network_bound ? "sv-alert" : "", "data-role": "search-verdict" },
          search.verdict.split("\n").map((line) => h("p", {}, [line])),
        ),
        search.best === null
          ? null
          : h("div", {}, [
              h("p", {}, [`Best plan: ${search.best} (${mesh})`]),
              h("pre", { class: "sv-compare-rules-text", "data-role": "search-rules" }, [search.best_rules]),
              search.best_logical_rules
                ? h("p", { "data-role": "search-logical-rules" }, [
                    `Logical-axis rules: ${search.best_logical_rules
                      .map(([name, axes]) => `${name} -> ${axes.join("+") || "None"}`)
                      .join(", ")}`,
                  ])
                : null,
              use,
              code,
            ]),
      ]),
    ];
  }

  private failures(failures: readonly { candidate: string; hardware: string; error: string }[]): HTMLElement[] {
    if (failures.length === 0) return [];
    return [
      h("h4", {}, ["Could not be traced"]),
      h(
        "ul",
        { class: "sv-compare-failures", "data-role": "compare-failures" },
        failures.map((f) => h("li", {}, [`${f.candidate}${f.hardware ? ` on ${f.hardware}` : ""}: ${f.error}`])),
      ),
    ];
  }

  private editors(rules: Record<string, string>, editable: boolean): HTMLElement[] {
    const names = Object.keys(rules);
    if (names.length === 0) return [];
    const host = this.host;
    const live = editable && !host.readOnly;
    const out: (HTMLElement | null)[] = [
      h("h4", {}, ["Rules"]),
      ...names.map((name) => {
        const text = h("textarea", { class: "sv-compare-rules", "data-candidate": name, rows: 4, spellcheck: false });
        text.value = rules[name];
        if (!live) text.readOnly = true;
        const apply = h("button", { type: "button", "data-role": "retrace", disabled: !live }, [`Trace ${name} again`]);
        apply.addEventListener(
          "click",
          () => host.edit("rules_edit", JSON.stringify({ candidate: name, rules: text.value })),
          {
            signal: this.lifetime.signal,
          },
        );
        return h("div", { class: "sv-compare-editor" }, [h("label", {}, [name]), text, apply]);
      }),
      live ? null : h("p", { class: "sv-muted" }, [host.note ?? "Tracing again needs a live kernel."]),
    ];
    return out.filter((e): e is HTMLElement => e !== null);
  }
}
