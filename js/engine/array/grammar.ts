/**
 * The editors' text grammars for specs and meshes (docs/payload.md): parse
 * and format, a port of src/shardviz/array/grammar.py with the same
 * refusals, word for word. A small tokenizer, never `eval`.
 */

import type { AxisType } from "../../payload/array";
import { checkMeshSize, type SpecEntry } from "./checks";
import { LayoutError } from "./errors";
import { codePoints, isPySpace, pyRepr, pyStrip } from "./pytext";

export const MAX_TEXT = 2000;

const AXIS_TYPES = new Map<string, AxisType>([
  ["auto", "Auto"],
  ["explicit", "Explicit"],
  ["manual", "Manual"],
]);
const PUNCT = new Set(["(", ")", ",", "=", ":"]);
const QUOTES = new Set(["'", '"']);
const RESERVED = new Set(["None", "P", "PartitionSpec"]);
const DIGITS = /^[0-9]+$/;

type TokenKind = "name" | "word" | "(" | ")" | "," | "=" | ":";
type Token = [kind: TokenKind, value: string];

export type { SpecEntry };

/** A mesh as typed: axis names, sizes and types, in mesh order. */
export interface MeshRequest {
  names: string[];
  sizes: number[];
  types: AxisType[];
}

function isBareChar(ch: string): boolean {
  return !isPySpace(ch) && !PUNCT.has(ch) && !QUOTES.has(ch);
}

function tokens(text: string, what: string): Token[] {
  const length = codePoints(text).length;
  if (length > MAX_TEXT) {
    throw new LayoutError(`the ${what} text is ${length} characters long; at most ${MAX_TEXT} are accepted`);
  }
  const chars = codePoints(text);
  while (chars.length > 0 && isPySpace(chars[chars.length - 1])) chars.pop(); // text.rstrip()
  const out: Token[] = [];
  let pos = 0;
  while (pos < chars.length) {
    let at = pos;
    while (at < chars.length && isPySpace(chars[at])) at++;
    const ch = chars[at];
    if (QUOTES.has(ch)) {
      const close = chars.indexOf(ch, at + 1);
      if (close < 0) {
        const shown = chars.slice(pos, pos + 12).join("");
        throw new LayoutError(`cannot read the ${what} at character ${pos + 1}: ${pyRepr(shown)}`);
      }
      out.push(["name", chars.slice(at + 1, close).join("")]);
      pos = close + 1;
    } else if (PUNCT.has(ch)) {
      out.push([ch as TokenKind, ch]);
      pos = at + 1;
    } else {
      let end = at;
      while (end < chars.length && isBareChar(chars[end])) end++;
      out.push(["word", chars.slice(at, end).join("")]);
      pos = end;
    }
  }
  return out;
}

/** Parses `P('x', None)`, `x, None` or `(a, b), None`: one entry per listed dimension. */
export function parseSpec(text: string): SpecEntry[] {
  let toks = tokens(text, "spec");
  if (toks.length >= 2 && toks[0][0] === "word" && (toks[0][1] === "P" || toks[0][1] === "PartitionSpec")) {
    if (toks[1][0] === "(") {
      if (toks[toks.length - 1][0] !== ")") {
        throw new LayoutError(`the spec ${pyRepr(pyStrip(text))} opens ${toks[0][1]}( but never closes it`);
      }
      toks = toks.slice(2, -1);
    }
  }
  const entries: SpecEntry[] = [];
  let i = 0;
  while (i < toks.length) {
    const [kind, value] = toks[i];
    if (kind === "(") {
      const names: string[] = [];
      i++;
      while (i < toks.length && toks[i][0] !== ")") {
        const [k, v] = toks[i];
        if (k === ",") {
          i++;
          continue;
        }
        if ((k !== "name" && k !== "word") || (k === "word" && v === "None")) {
          throw new LayoutError(`inside ( ) of the spec only axis names may stand, not ${pyRepr(v)}`);
        }
        names.push(v);
        i++;
      }
      if (i >= toks.length) throw new LayoutError(`the spec ${pyRepr(pyStrip(text))} has a ( without its )`);
      entries.push(names.length > 0 ? names : null);
      i++;
    } else if (kind === "word" && value === "None") {
      entries.push(null);
      i++;
    } else if (kind === "name" || kind === "word") {
      entries.push([value]);
      i++;
    } else {
      throw new LayoutError(`unexpected ${pyRepr(value)} in the spec ${pyRepr(pyStrip(text))}`);
    }
    if (i < toks.length) {
      if (toks[i][0] !== ",") {
        throw new LayoutError(
          `expected a comma after entry ${entries.length} of the spec, found ${pyRepr(toks[i][1])}`,
        );
      }
      i++;
    }
  }
  for (const entry of entries) {
    for (const name of entry ?? []) if (!name) throw new LayoutError("the spec has an empty axis name");
  }
  return entries;
}

/**
 * Parses `x=2, y=4` (optionally `y=4:auto`). A mesh beyond MAX_DEVICES
 * devices is refused here, before anything is allocated for it.
 */
export function parseMesh(text: string): MeshRequest {
  const toks = tokens(text, "mesh");
  if (toks.length === 0) throw new LayoutError("the mesh text is empty; write axes as name=size, e.g. x=2, y=4");
  const names: string[] = [];
  const sizes: bigint[] = [];
  const types: AxisType[] = [];
  let i = 0;
  while (i < toks.length) {
    if (
      i + 2 >= toks.length ||
      (toks[i][0] !== "name" && toks[i][0] !== "word") ||
      toks[i + 1][0] !== "=" ||
      toks[i + 2][0] !== "word"
    ) {
      const shown = toks
        .slice(i, i + 3)
        .map(([, v]) => v)
        .join(" ");
      throw new LayoutError(`mesh axis ${names.length + 1} should read name=size (e.g. x=2), found ${pyRepr(shown)}`);
    }
    const name = toks[i][1];
    const sizeText = toks[i + 2][1];
    i += 3;
    let axisType: AxisType = "Explicit";
    if (i < toks.length && toks[i][0] === ":") {
      const typed = i + 1 < toks.length ? AXIS_TYPES.get(toks[i + 1][1].toLowerCase()) : undefined;
      if (typed === undefined) {
        const found = i + 1 < toks.length ? toks[i + 1][1] : "";
        throw new LayoutError(
          `mesh axis ${pyRepr(name)}: unknown axis type ${pyRepr(found)}; use auto, explicit or manual`,
        );
      }
      axisType = typed;
      i += 2;
    }
    if (!name) throw new LayoutError(`mesh axis ${names.length + 1} has an empty name`);
    if (names.includes(name))
      throw new LayoutError(`mesh axis ${pyRepr(name)} appears twice; axis names must be unique`);
    // ASCII digits only, as Python's check (str.isdigit() would also take "²").
    if (!DIGITS.test(sizeText) || BigInt(sizeText) < 1n) {
      throw new LayoutError(
        `mesh axis ${pyRepr(name)} has size ${pyRepr(sizeText)}; a size is a whole number of at least 1`,
      );
    }
    names.push(name);
    sizes.push(BigInt(sizeText));
    types.push(axisType);
    if (i < toks.length) {
      if (toks[i][0] !== ",") {
        throw new LayoutError(`expected a comma after mesh axis ${pyRepr(name)}, found ${pyRepr(toks[i][1])}`);
      }
      i++;
    }
  }
  checkMeshSize(names, sizes);
  // Past the size check every size fits a number exactly.
  return { names, sizes: sizes.map(Number), types };
}

/** An axis name as the grammars read it: bare when it can be, else as Python quotes it. */
export function nameText(name: string): string {
  const chars = codePoints(name);
  if (chars.length > 0 && chars.every(isBareChar) && !RESERVED.has(name)) return name;
  return name.includes("'") ? `"${name}"` : pyRepr(name);
}

/** The spec in the editor's grammar, trailing unpartitioned dimensions dropped. */
export function formatSpec(spec: readonly (readonly string[])[]): string {
  const entries = spec.slice();
  while (entries.length > 0 && entries[entries.length - 1].length === 0) entries.pop();
  return entries
    .map((axes) => {
      if (axes.length === 0) return "None";
      if (axes.length === 1) return nameText(axes[0]);
      return `(${axes.map(nameText).join(", ")})`;
    })
    .join(", ");
}

/** The mesh in the editor's grammar; Explicit axes carry no suffix. */
export function formatMesh(names: readonly string[], sizes: readonly number[], types: readonly AxisType[]): string {
  return names
    .map((name, i) => `${nameText(name)}=${sizes[i]}${types[i] === "Explicit" ? "" : `:${types[i].toLowerCase()}`}`)
    .join(", ");
}
