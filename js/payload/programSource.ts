/**
 * The source view of a traced program, as a plan to draw: each function of
 * the user's that the program runs is a block of its own lines (the
 * payload's `functions`); each line carries what it makes, the forward and
 * the backward pass apart, with values grouped into families (one per name,
 * operation and type: a loop's passes and a layer's scopes together), the
 * collectives it causes, the bytes it sends per call and holds at the memory
 * peak, and the calls it makes (`calls`) to other blocks. The call tree runs
 * from the traced function down. Lines in no block (none recorded, a
 * library's) are listed apart. Pure arithmetic on a decoded program.
 */

import type { Program, ProgramFunction, ProgramPayload } from "./program";

export type PassName = "forward" | "backward";

/** Values of one line and pass with the same name (or operation) and type: a loop's passes, a layer's scopes. */
export interface ValueFamily {
  values: number[];
  /** The label they share, `%` for unnamed ones, else the first label and how many more. */
  name: string;
  primitive: string;
  type: number;
}

/** A collective on a line, or one operand (`part`) of a combined one; `bytes` per call, loops counted. */
export interface CollectiveItem {
  collective: number;
  part: number | null;
  bytes: number;
}

/** Collectives of one line and pass of the same kind, axes and purpose: a loop's passes, a layer's scopes. */
export interface CollectiveFamily {
  items: CollectiveItem[];
  kind: string;
  bytes: number;
}

export interface PassNotes {
  collectives: CollectiveFamily[];
  values: ValueFamily[];
  valueCount: number;
}

export interface SourceRow {
  /** Index of the block in the plan's `blocks` (-1: a line of no block). */
  block: number;
  /** The line number in its file (null: no line recorded). */
  lineNo: number | null;
  file: number | null;
  /** The line's text without the block's common indentation, nor its own. */
  text: string;
  /** Its own indentation after the block's is taken off, in characters. */
  indent: number;
  /** Indices into the payload's `lines` of the entries on this line. */
  entries: number[];
  forward: PassNotes;
  backward: PassNotes;
  /** Blocks (plan indices) this line calls. */
  calls: number[];
  /** A function defined inside the block, whose lines this one row stands for (plan index), or -1. */
  nested: number;
  /** Bytes one device sends per call for the collectives on this line (loops counted). */
  sentBytes: number;
  /** Bytes its memory groups hold at the program's memory peak, per device. */
  peakBytes: number;
}

export interface SourceBlock {
  /** Index into the payload's `functions`. */
  fn: number;
  name: string;
  file: number;
  firstLine: number;
  lastLine: number;
  rows: SourceRow[];
  /** Call sites of this block: `[caller block, line]`, plan indices. */
  callers: [number, number][];
  /** Loop and branch bodies its values are made in (indices into `bodies`). */
  bodies: number[];
  sentBytes: number;
  peakBytes: number;
  valueCount: number;
}

/** A node of the call tree: a block reached from its parent's line `line` (null for a root). */
export interface CallNode {
  block: number;
  line: number | null;
  children: CallNode[];
  /** The block was already reached above: its children are listed there. */
  repeat: boolean;
}

export interface SourcePlan {
  /** Blocks in the call tree's order: the traced function first, then what it calls, depth first. */
  blocks: SourceBlock[];
  tree: CallNode[];
  /** Lines with something on them that are in no block. */
  elsewhere: SourceRow[];
  /** The row of each entry of the payload's `lines` (null for none, e.g. the inputs). */
  rowOfEntry: (SourceRow | null)[];
}

const emptyNotes = (): PassNotes => ({ collectives: [], values: [], valueCount: 0 });

/** Leading whitespace, in characters. */
function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

/** The source functions of a payload: `functions`, or, for payloads from before them, the traced function alone. */
export function sourceFunctions(payload: ProgramPayload): ProgramFunction[] {
  if (payload.functions && payload.functions.length > 0) return payload.functions;
  return payload.source ? [payload.source] : [];
}

interface Extent {
  file: number;
  first: number;
  last: number;
}

const extentOf = (f: ProgramFunction): Extent => ({
  file: f.file,
  first: f.first_line,
  last: f.first_line + Math.max(f.lines.length, 1) - 1,
});
const within = (inner: Extent, outer: Extent): boolean =>
  inner.file === outer.file &&
  inner.first >= outer.first &&
  inner.last <= outer.last &&
  inner.last - inner.first < outer.last - outer.first;

export function sourcePlan(program: Program): SourcePlan {
  return new PlanBuilder(program).build();
}

class PlanBuilder {
  private readonly payload: ProgramPayload;
  private readonly functions: ProgramFunction[];
  private readonly extents: Extent[];
  /** Function -> the function it is drawn in: itself, or the block around a one-line function (a lambda). */
  private readonly drawnIn: number[];
  /** Function -> plan block index (-1: drawn in another). */
  private readonly blockOf: number[] = [];
  private readonly blocks: SourceBlock[] = [];
  private readonly elsewhere = new Map<number, SourceRow>();
  private rowOfEntry: (SourceRow | null)[] = [];

  constructor(private readonly program: Program) {
    this.payload = program.payload;
    this.functions = sourceFunctions(this.payload);
    this.extents = this.functions.map(extentOf);
    this.drawnIn = this.extents.map((e, i) => {
      if (e.last !== e.first) return i;
      const around = this.innermost(e.file, e.first, (j) => j !== i && within(e, this.extents[j]));
      return around ?? i;
    });
  }

  /** The innermost function (by extent) containing `file:line` that `accept` takes. */
  private innermost(file: number, line: number, accept: (j: number) => boolean): number | null {
    let best: number | null = null;
    this.extents.forEach((e, j) => {
      if (e.file !== file || line < e.first || line > e.last || !accept(j)) return;
      if (best === null || e.last - e.first < this.extents[best].last - this.extents[best].first) best = j;
    });
    return best;
  }

  build(): SourcePlan {
    const { tree, order } = this.callTree();
    for (const fn of order) this.addBlock(fn);
    this.placeCallers();
    this.rowOfEntry = this.payload.lines.map(() => null);
    for (const block of this.blocks) {
      for (const row of block.rows) for (const e of row.entries) this.rowOfEntry[e] = row;
    }
    this.placeValues();
    this.placeCollectives();
    this.placeMemory();
    this.total();
    const relabel = (node: CallNode): CallNode => ({
      ...node,
      block: this.blockOf[node.block],
      children: node.children.map(relabel),
    });
    return {
      blocks: this.blocks,
      tree: tree.map(relabel),
      elsewhere: Array.from(this.elsewhere.values()).sort(
        (a, b) => (a.file ?? -1) - (b.file ?? -1) || (a.lineNo ?? -1) - (b.lineNo ?? -1),
      ),
      rowOfEntry: this.rowOfEntry,
    };
  }

  /** Calls between drawn functions: `[caller, line, callee]`, one-line functions folded into their block. */
  private drawnCalls(): [number, number, number][] {
    const seen = new Set<string>();
    const out: [number, number, number][] = [];
    for (const [caller, line, callee] of this.payload.calls ?? []) {
      if (!this.functions[caller] || !this.functions[callee]) continue;
      const from = this.drawnIn[caller];
      const to = this.drawnIn[callee];
      const key = `${from}:${line}:${to}`;
      if (from === to || seen.has(key)) continue;
      seen.add(key);
      out.push([from, line, to]);
    }
    return out.sort((a, b) => a[1] - b[1] || a[2] - b[2]);
  }

  /** The call tree over functions (not yet plan indices), and the order blocks are drawn in. */
  private callTree(): { tree: CallNode[]; order: number[] } {
    const calls = this.drawnCalls();
    const order: number[] = [];
    const placed = new Set<number>();
    const visit = (fn: number, line: number | null, path: Set<number>): CallNode => {
      const repeat = placed.has(fn);
      const node: CallNode = { block: fn, line, children: [], repeat };
      if (repeat) return node;
      placed.add(fn);
      order.push(fn);
      path.add(fn);
      for (const [caller, at, callee] of calls) {
        if (caller === fn && !path.has(callee)) node.children.push(visit(callee, at, path));
      }
      path.delete(fn);
      return node;
    };
    const source = this.payload.source;
    const root = source
      ? this.functions.findIndex((f) => f.file === source.file && f.first_line === source.first_line)
      : -1;
    const tree: CallNode[] = [];
    const called = new Set(calls.map(([, , callee]) => callee));
    if (root >= 0) tree.push(visit(this.drawnIn[root], null, new Set()));
    // Then functions nothing drawn calls, then any left (called only from a cycle), in payload order.
    for (const pass of [false, true]) {
      this.functions.forEach((_, fn) => {
        if (this.drawnIn[fn] !== fn || placed.has(fn) || (!pass && called.has(fn))) return;
        tree.push(visit(fn, null, new Set()));
      });
    }
    return { tree, order };
  }

  private addBlock(fn: number): void {
    const f = this.functions[fn];
    const extent = this.extents[fn];
    const index = this.blocks.length;
    this.blockOf[fn] = index;
    // Functions defined inside this one (more than a line): one row each, standing for their lines.
    const nested = this.extents
      .map((e, j) => ({ e, j }))
      .filter(({ e, j }) => this.drawnIn[j] === j && j !== fn && within(e, extent) && e.last > e.first)
      .filter(({ e, j }) => this.innermost(e.file, e.first, (k) => k !== j && within(e, this.extents[k])) === fn);
    const common = Math.min(...f.lines.filter((t) => t.trim() !== "").map(indentOf), Number.POSITIVE_INFINITY);
    const cut = Number.isFinite(common) ? common : 0;
    const rows: SourceRow[] = [];
    for (let k = 0; k < f.lines.length; k++) {
      const lineNo = f.first_line + k;
      const inner = nested.find(({ e }) => e.first === lineNo);
      const text = f.lines[k].slice(Math.min(cut, indentOf(f.lines[k])));
      rows.push({
        block: index,
        lineNo,
        file: f.file,
        text: text.trimStart(),
        indent: indentOf(text),
        entries: [],
        forward: emptyNotes(),
        backward: emptyNotes(),
        calls: [],
        nested: inner ? inner.j : -1,
        sentBytes: 0,
        peakBytes: 0,
      });
      if (inner) k = inner.e.last - f.first_line;
    }
    this.blocks.push({
      fn,
      name: f.name,
      file: f.file,
      firstLine: extent.first,
      lastLine: extent.last,
      rows,
      callers: [],
      bodies: [],
      sentBytes: 0,
      peakBytes: 0,
      valueCount: 0,
    });
  }

  /** Entries of `lines` onto rows: the innermost drawn block around each line. */
  private rowFor(entry: number): SourceRow | null {
    const line = this.payload.lines[entry];
    if (!line || line.file === null || line.line === null) return null;
    const fn = this.innermost(line.file, line.line, (j) => this.drawnIn[j] === j && this.blockOf[j] !== undefined);
    if (fn === null) return null;
    const block = this.blocks[this.blockOf[fn]];
    const row = block.rows.find((r) => r.lineNo === line.line) ?? null;
    if (row && !row.entries.includes(entry)) row.entries.push(entry);
    return row;
  }

  private placeCallers(): void {
    // Nested functions' rows point at their blocks by plan index, like calls.
    for (const block of this.blocks) {
      for (const row of block.rows) if (row.nested >= 0) row.nested = this.blockOf[row.nested] ?? -1;
    }
    for (const [caller, line, callee] of this.drawnCalls()) {
      const from = this.blockOf[caller];
      const to = this.blockOf[callee];
      if (from === undefined || to === undefined) continue;
      const row = this.blocks[from].rows.find((r) => r.lineNo === line);
      if (row && !row.calls.includes(to)) row.calls.push(to);
      this.blocks[to].callers.push([from, line]);
    }
    this.payload.lines.forEach((_, e) => {
      this.rowFor(e);
    });
  }

  /** The row of an entry, made apart when no block holds its line (null for the inputs' entry). */
  private rowOrElsewhere(entry: number, inputsOnly: boolean): SourceRow | null {
    const row = this.rowOfEntry[entry];
    if (row) return row;
    if (inputsOnly) return null;
    let apart = this.elsewhere.get(entry);
    if (!apart) {
      const line = this.payload.lines[entry];
      const text = lineTextOf(this.payload, line?.file ?? null, line?.line ?? null);
      apart = {
        block: -1,
        lineNo: line?.line ?? null,
        file: line?.file ?? null,
        text: text.trimStart(),
        indent: 0,
        entries: [entry],
        forward: emptyNotes(),
        backward: emptyNotes(),
        calls: [],
        nested: -1,
        sentBytes: 0,
        peakBytes: 0,
      };
      this.elsewhere.set(entry, apart);
      this.rowOfEntry[entry] = apart;
    }
    return apart;
  }

  private placeValues(): void {
    const { values, primitives, roles } = this.payload;
    const families = new Map<SourceRow, Map<string, ValueFamily>>();
    for (let i = 0; i < this.program.valueCount; i++) {
      const input = roles[values.role[i]] === "input";
      const row = this.rowOrElsewhere(values.line[i], input);
      if (!row) continue;
      const notes = values.backward?.[i] ? row.backward : row.forward;
      const label = values.label?.[i] ?? values.name[i];
      const primitive = values.primitive[i] >= 0 ? primitives[values.primitive[i]] : roles[values.role[i]];
      const byName = /^[A-Za-z_][A-Za-z0-9_]*$/.test(label);
      const key = `${notes === row.backward ? "b" : "f"}\u0000${byName ? label : ""}\u0000${primitive}\u0000${values.type[i]}`;
      let known = families.get(row);
      if (!known) {
        known = new Map();
        families.set(row, known);
      }
      let family = known.get(key);
      if (!family) {
        family = { values: [], name: label, primitive, type: values.type[i] };
        known.set(key, family);
        notes.values.push(family);
      }
      family.values.push(i);
      notes.valueCount++;
    }
    for (const known of families.values()) {
      for (const family of known.values()) family.name = familyName(this.payload, family.values);
    }
  }

  private placeCollectives(): void {
    const { collectives, lines } = this.payload;
    const families = new Map<string, CollectiveFamily>();
    const add = (entry: number, item: CollectiveItem, backward: boolean): void => {
      const row = this.rowOrElsewhere(entry, false);
      if (!row) return;
      const c = collectives[item.collective];
      const notes = backward ? row.backward : row.forward;
      const owner = item.part === null ? -1 : item.collective;
      const key = [entry, backward, c.kind, c.axes_label ?? "", c.charged_to ?? "", owner].join("\u0000");
      let family = families.get(key);
      if (!family) {
        family = { items: [], kind: c.kind, bytes: 0 };
        families.set(key, family);
        notes.collectives.push(family);
      }
      family.items.push(item);
      family.bytes += item.bytes;
      row.sentBytes += item.bytes;
    };
    lines.forEach((line, entry) => {
      for (const c of line.collectives) {
        const collective = collectives[c];
        if ((collective.parts?.length ?? 0) > 0) continue;
        add(entry, { collective: c, part: null, bytes: collective.total_wire_bytes }, collective.backward ?? false);
      }
      for (const [c, k] of line.parts ?? []) {
        const part = collectives[c]?.parts?.[k];
        if (!part) continue;
        const backward = part.backward ?? collectives[c].backward ?? false;
        add(entry, { collective: c, part: k, bytes: part.total_wire_bytes }, backward);
      }
    });
  }

  private placeMemory(): void {
    const timeline = this.payload.memory_timeline;
    if (!timeline) return;
    const { line, peak_bytes } = timeline.groups;
    line.forEach((entry, g) => {
      if (entry < 0 || !peak_bytes[g]) return;
      const row = this.rowOrElsewhere(entry, false);
      if (row) row.peakBytes += peak_bytes[g];
    });
  }

  private total(): void {
    const { values } = this.payload;
    for (const block of this.blocks) {
      const bodies = new Set<number>();
      for (const row of block.rows) {
        block.sentBytes += row.sentBytes;
        block.peakBytes += row.peakBytes;
        block.valueCount += row.forward.valueCount + row.backward.valueCount;
        for (const family of [...row.forward.values, ...row.backward.values]) {
          for (const i of family.values) if (values.body[i] >= 0) bodies.add(values.body[i]);
        }
      }
      block.bodies = Array.from(bodies).sort((a, b) => a - b);
    }
  }
}

/** The text of a line from the payload's `line_texts` ("" when Python could not read it). */
function lineTextOf(payload: ProgramPayload, file: number | null, line: number | null): string {
  if (file === null || line === null) return "";
  return payload.line_texts?.find(([f, l]) => f === file && l === line)?.[2] ?? "";
}

/** The name a family of values goes by: their one label, `%` when none is named, else the first and a count. */
export function familyName(payload: ProgramPayload, values: number[]): string {
  const labels = values.map((i) => payload.values.label?.[i] ?? payload.values.name[i]);
  if (labels.every((l) => l === labels[0])) return labels[0];
  if (labels.every((l) => l.startsWith("%"))) return "%";
  return `${labels[0]} and ${labels.length - 1} more`;
}

/** The row a value is on (null for an input). */
export function rowOfValue(plan: SourcePlan, program: Program, i: number): SourceRow | null {
  return plan.rowOfEntry[program.payload.values.line[i]] ?? null;
}

/** The rows a collective is on: its own line's, or, combined, each operand's. */
export function rowsOfCollective(plan: SourcePlan, program: Program, c: number): SourceRow[] {
  const rows = new Set<SourceRow>();
  program.payload.lines.forEach((line, entry) => {
    const row = plan.rowOfEntry[entry];
    if (!row) return;
    if (line.collectives.includes(c) || (line.parts ?? []).some(([owner]) => owner === c)) rows.add(row);
  });
  return Array.from(rows);
}

/** `scan ×24`, `while`, `cond` and the bodies around it, outermost first: `scan ×24 › cond`. */
export function foldLabel(program: Program, body: number): string {
  return program.bodyChain[body]
    .map((b) => {
      const { primitive, trip_count } = program.payload.bodies[b];
      return trip_count !== null ? `${primitive} \u00d7${trip_count}` : primitive;
    })
    .join(" \u203a ");
}
