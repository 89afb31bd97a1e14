/**
 * What the source listing shows beside each line of the traced function:
 * the values the line makes and the collectives it causes, grouped by the
 * source line that really made them (a line of a function it calls, a loop
 * body), with loop and branch bodies folded. Values and collectives that no
 * listing line leads to (the inputs, a program whose source Python could
 * not read) are grouped by their own source line apart. Pure arithmetic on
 * a decoded program.
 */

import { type Program, type ProgramPayload, stackFrames } from "./program";

/** The values and collectives of one source line (an entry of the payload's `lines`). */
export interface SourceGroup {
  /** Index into the payload's `lines`. */
  line: number;
  /** Values made outside any body. */
  values: number[];
  /** Values made inside bodies, one fold per innermost body, in the order first met. */
  folds: { body: number; values: number[] }[];
  collectives: number[];
  /** Operands of combined collectives made on this line, `[collective, operand]`: each on its own line. */
  parts: [number, number][];
  /**
   * The user's lines that called this one, innermost first, up to (not including) the traced
   * function's own lines: `[file, line]` each. A line reached through different calls (one
   * helper called from two lines) is one group per call, so each says which call it is.
   */
  callers: [number, number][];
}

export interface ListingRow {
  /** The line number in the file. */
  lineNo: number;
  text: string;
  groups: SourceGroup[];
  valueCount: number;
  /** Distinct collectives with bytes under this line: a combined one counts once however many operands are here. */
  collectiveCount: number;
  /** Operands of combined collectives under this line (each on the line that made it). */
  operandCount: number;
  /** Distinct combined collectives those operands belong to. */
  combinedCount: number;
  /** Bytes one device sends per call for the collectives under this line (loops counted). */
  wireBytes: number;
}

export interface ListingPlan {
  /** One row per line of the traced function's source; empty when Python could not read it. */
  rows: ListingRow[];
  /** Groups no listing line leads to, in the payload's line order. */
  elsewhere: SourceGroup[];
}

export function listingPlan(program: Program): ListingPlan {
  const plan = new ListingBuilder(program);
  plan.placeValues();
  plan.placeCollectives();
  return plan.finish();
}

/** Puts a program's values and collectives under the listing's rows (or elsewhere), counting as it goes. */
class ListingBuilder {
  private readonly payload: ProgramPayload;
  private readonly firstLine: number;
  private readonly rows: ListingRow[];
  /** Per row, the collectives already counted there (a combined one counts once). */
  private readonly counted: Set<number>[];
  private readonly elsewhere = new Map<string, SourceGroup>();

  constructor(private readonly program: Program) {
    this.payload = program.payload;
    const source = this.payload.source;
    this.firstLine = source?.first_line ?? 0;
    this.rows = (source?.lines ?? []).map((text, i) => ({
      lineNo: this.firstLine + i,
      text,
      groups: [],
      valueCount: 0,
      collectiveCount: 0,
      operandCount: 0,
      combinedCount: 0,
      wireBytes: 0,
    }));
    this.counted = this.rows.map(() => new Set<number>());
  }

  private rowOf(listingLine: number | null): ListingRow | null {
    if (listingLine === null || !this.payload.source) return null;
    return this.rows[listingLine - this.firstLine] ?? null;
  }

  /** Counts a collective once per row; true the first time. */
  private count(row: ListingRow, collective: number): boolean {
    const seen = this.counted[row.lineNo - this.firstLine];
    if (seen.has(collective)) return false;
    seen.add(collective);
    row.collectiveCount++;
    return true;
  }

  /** The group of ``line`` reached through call chain ``stack``, under ``row`` (or elsewhere). */
  private groupIn(row: ListingRow | null, line: number, stack: number | undefined): SourceGroup {
    const chain = callersOf(this.payload, line, stack);
    const key = `${line}|${chain.map(([f, l]) => `${f}:${l}`).join(",")}`;
    const sameCall = (g: SourceGroup) => g.line === line && g.callers.join(",") === chain.join(",");
    let group = row ? row.groups.find(sameCall) : this.elsewhere.get(key);
    if (!group) {
      group = { line, values: [], folds: [], collectives: [], parts: [], callers: chain };
      if (row) row.groups.push(group);
      else this.elsewhere.set(key, group);
    }
    return group;
  }

  /** Each value under its line; a loop body's values folded by body. */
  placeValues(): void {
    const { values } = this.payload;
    for (let i = 0; i < this.program.valueCount; i++) {
      const row = this.rowOf(this.program.valueListingLine[i]);
      const group = this.groupIn(row, values.line[i], values.stack?.[i]);
      const body = values.body[i];
      if (body < 0) {
        group.values.push(i);
      } else {
        let fold = group.folds.find((f) => f.body === body);
        if (!fold) {
          fold = { body, values: [] };
          group.folds.push(fold);
        }
        fold.values.push(i);
      }
      if (row) row.valueCount++;
    }
  }

  /** Each collective under its line; a combined one's operands each under the line that made it. */
  placeCollectives(): void {
    const lineOfCollective = new Map<number, number>();
    this.payload.lines.forEach((entry, l) => {
      for (const c of entry.collectives) lineOfCollective.set(c, l);
    });
    this.payload.collectives.forEach((c, i) => {
      if ((c.parts ?? []).length > 0) {
        this.placeOperands(i);
        return;
      }
      const row = this.rowOf(this.program.collectiveListingLine[i]);
      this.groupIn(row, lineOfCollective.get(i) ?? 0, c.stack).collectives.push(i);
      if (row) {
        this.count(row, i);
        row.wireBytes += c.total_wire_bytes;
      }
    });
  }

  private placeOperands(i: number): void {
    const operands = this.payload.collectives[i].parts ?? [];
    this.payload.lines.forEach((entry, l) => {
      for (const [owner, k] of entry.parts ?? []) {
        if (owner !== i) continue;
        const row = this.rowOf(operands[k].listing_line);
        this.groupIn(row, l, operands[k].stack).parts.push([i, k]);
        if (row) {
          if (this.count(row, i)) row.combinedCount++;
          row.operandCount++;
          row.wireBytes += operands[k].total_wire_bytes;
        }
      }
    });
  }

  finish(): ListingPlan {
    // Within a row, the line itself first, then the lines it calls, in file order.
    for (const row of this.rows) {
      row.groups.sort((a, b) => rank(this.program, a.line, row.lineNo) - rank(this.program, b.line, row.lineNo));
    }
    return { rows: this.rows, elsewhere: Array.from(this.elsewhere.values()).sort((a, b) => a.line - b.line) };
  }
}

/**
 * The lines that called line `line` on call chain `stack`, innermost first, leaving out the traced
 * function's own lines (the listing row already is one).
 */
export function callersOf(payload: ProgramPayload, line: number, stack: number | undefined): [number, number][] {
  const entry = payload.lines[line];
  if (!entry) return [];
  const frames = stackFrames(payload, stack);
  const at = frames.findIndex(([f, l]) => f === entry.file && l === entry.line);
  const source = payload.source;
  const inListing = (f: number, l: number) =>
    source !== null && f === source.file && l >= source.first_line && l < source.first_line + source.lines.length;
  return at < 0
    ? []
    : frames
        .slice(at + 1)
        .filter(([f, l]) => !inListing(f, l))
        .map(([f, l]): [number, number] => [f, l]);
}

function rank(program: Program, line: number, lineNo: number): number {
  const entry = program.payload.lines[line];
  const own = entry.file === program.payload.source?.file && entry.line === lineNo;
  return own ? -1 : line;
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
