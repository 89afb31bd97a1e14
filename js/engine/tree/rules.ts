/**
 * Sharding rules for a whole tree, read and matched as
 * src/shardviz/tree/rules.py reads and matches them: `GLOB = SPEC` per line,
 * first match wins, a glob with a `/` matched against the slash-joined path.
 * Refusals carry Python's words, byte for byte (the parity fixtures check).
 */

import { globToRegExp } from "../../util/glob";
import { checkSpec, type MeshShape, type SpecEntry } from "../array/checks";
import { LayoutError } from "../array/errors";
import { MAX_TEXT, parseSpec } from "../array/grammar";
import { codePoints, pyRepr, pyStrip } from "../array/pytext";

export const MAX_RULES_TEXT = 50 * MAX_TEXT;
const SLASH = "/";

/** One line of rules: which leaves (`glob`) get which spec. */
export interface Rule {
  /** 1-based line number in the rules text. */
  line: number;
  glob: string;
  spec: SpecEntry[];
}

/** Python's `str.splitlines()`: every line break it knows, no empty line after a final break. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: Python breaks lines at these control characters too
const PY_LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

function pySplitLines(text: string): string[] {
  const lines = text.split(PY_LINE_BREAK);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Parses rules text; a bad line is refused naming it. */
export function parseRules(text: string): Rule[] {
  const length = codePoints(text).length;
  if (length > MAX_RULES_TEXT) {
    throw new LayoutError(`the rules text is ${length} characters long; at most ${MAX_RULES_TEXT} are accepted`);
  }
  const rules: Rule[] = [];
  pySplitLines(text).forEach((raw, index) => {
    const number = index + 1;
    const line = pyStrip(raw);
    if (!line || line.startsWith("#")) return;
    // The spec grammar has no "=", so the last one splits: a key may contain "=".
    const equals = line.lastIndexOf("=");
    const glob = equals < 0 ? "" : pyStrip(line.slice(0, equals));
    if (!glob) {
      throw new LayoutError(
        `line ${number}: expected GLOB = SPEC (e.g. layers.*.w = None, model), got ${pyRepr(line)}`,
      );
    }
    checkGlob(glob, number);
    let spec: SpecEntry[];
    try {
      spec = parseSpec(line.slice(equals + 1));
    } catch (err) {
      if (err instanceof LayoutError) throw new LayoutError(`line ${number}: ${err.message}`);
      throw err;
    }
    rules.push({ line: number, glob, spec });
  });
  return rules;
}

const codeOf = (ch: string | undefined): number => ch?.codePointAt(0) ?? -1;

/** Refuses a `[` that is never closed, and a reversed range: fnmatch would quietly read them otherwise. */
function checkGlob(glob: string, line: number): void {
  const chars = codePoints(glob);
  let i = 0;
  while (i < chars.length) {
    if (chars[i] !== "[") {
      i++;
      continue;
    }
    let j = i + 1; // as fnmatch reads a set: an opening "!" or "]" belongs to it
    if (chars[j] === "!") j++;
    if (chars[j] === "]") j++;
    const end = chars.indexOf("]", j);
    if (end < 0)
      throw new LayoutError(`line ${line}: bad glob ${pyRepr(glob)}: the [ at character ${i + 1} is never closed`);
    const members = chars.slice(i + 1, end);
    if (members[0] === "!") members.shift();
    for (let k = 1; k < members.length - 1; k++) {
      if (members[k] === "-" && codeOf(members[k - 1]) > codeOf(members[k + 1])) {
        const reversed = members.slice(k - 1, k + 2).join("");
        throw new LayoutError(`line ${line}: bad glob ${pyRepr(glob)}: the range ${reversed} is reversed`);
      }
    }
    i = end + 1;
  }
}

/** Which rule a leaf's path matches first: dotted paths, or slashed for a glob with a slash. */
export class RuleMatcher {
  private readonly patterns: RegExp[];
  private readonly slashed: boolean[];
  readonly paths: string[];
  private readonly slashPaths: string[];

  /** `segments`: each array leaf's path segments, in flatten order. */
  constructor(rules: readonly Rule[], segments: readonly (readonly string[])[]) {
    this.patterns = rules.map((rule) => globToRegExp(rule.glob));
    this.slashed = rules.map((rule) => rule.glob.includes(SLASH));
    this.paths = segments.map((s) => s.join("."));
    this.slashPaths = segments.map((s) => s.join(SLASH));
  }

  hits(k: number, n: number): boolean {
    return this.patterns[k].test(this.slashed[k] ? this.slashPaths[n] : this.paths[n]);
  }

  firstRule(n: number): number | null {
    for (let k = 0; k < this.patterns.length; k++) if (this.hits(k, n)) return k;
    return null;
  }
}

/** Refuses a rule whose spec does not fit a leaf it matches, in Python's words. */
export function checkRuleFits(rule: Rule, mesh: MeshShape, shape: readonly number[], path: string): void {
  try {
    checkSpec(mesh, rule.spec, shape);
  } catch (err) {
    if (err instanceof LayoutError) {
      throw new LayoutError(`line ${rule.line}: ${rule.glob} matches leaf ${pyRepr(path)}: ${err.message}`);
    }
    throw err;
  }
}

/**
 * A rule that sets no leaf is a mistake: says whether an earlier line took its
 * leaves or it matches none. `winner` maps an array leaf (by its place among
 * the array leaves) to the rule that set it.
 */
export function checkEveryRuleSetsSomething(
  rules: readonly Rule[],
  matchedCounts: readonly number[],
  matcher: RuleMatcher,
  winner: ReadonlyMap<number, number>,
): void {
  rules.forEach((rule, k) => {
    if (matchedCounts[k] > 0) return;
    const taken = new Set<number>();
    matcher.paths.forEach((_, n) => {
      const w = winner.get(n);
      if (w !== undefined && matcher.hits(k, n)) taken.add(rules[w].line);
    });
    if (taken.size > 0) {
      const lines = [...taken].sort((a, b) => a - b).join(", ");
      throw new LayoutError(
        `line ${rule.line}: every leaf ${rule.glob} matches is taken first by line ${lines}, so this rule sets nothing`,
      );
    }
    throw new LayoutError(`line ${rule.line}: ${rule.glob} matches no array leaf${pathHint(matcher.paths)}`);
  });
}

/** What the paths look like, in both forms, so a pattern written for another form can be fixed. */
function pathHint(paths: readonly string[]): string {
  if (paths.length === 0) return " (the tree has no array leaves)";
  const shown = paths.find((p) => p.includes(".")) ?? paths[0];
  return `; paths read like ${pyRepr(shown)}, or ${pyRepr(shown.replaceAll(".", SLASH))} in a pattern with a slash`;
}

/** `3 leaves re-sharded by 2 rules (1 already laid out so).`: only leaves whose sharding changed count. */
export function rulesNotice(changed: number, matched: number, rules: number): string {
  let text = `${changed} ${changed === 1 ? "leaf" : "leaves"} re-sharded by ${rules} ${rules === 1 ? "rule" : "rules"}`;
  if (matched > changed) text += ` (${matched - changed} already laid out so)`;
  return `${text}.`;
}
