/**
 * Type and spec text with every mesh axis marked in its axis colour, as the
 * array widget's type line marks them: `float32[16@x,8]`, a shard_map
 * value's `float32[4,4]{V:x}` (the axes it varies over), and a spec
 * `P(x, None)`. Names are matched against the mesh's own axis names
 * (longest first), so names with brackets or commas in them split right.
 */

import { h } from "../util/dom";
import { axisColor } from "../util/palette";
import type { TypeSegment } from "./typeLine";

/** Splits a type string at its axis names: after `@` (one name or a parenthesised list) and in `{V:...}`/`{U:...}`. */
export function splitAxisText(text: string, axisNames: readonly string[]): TypeSegment[] {
  const byLength = axisNames
    .map((name, axisIndex) => ({ name, axisIndex }))
    .filter(({ name }) => name.length > 0)
    .sort((a, b) => b.name.length - a.name.length);
  const segments: TypeSegment[] = [];
  let plain = "";
  const flush = (): void => {
    if (plain) segments.push({ kind: "text", text: plain });
    plain = "";
  };
  /** Reads one axis name at `at` (a known one, else up to a separator); returns where it ends. */
  const axisAt = (at: number, stops: string): number => {
    const known = byLength.find(({ name }) => text.startsWith(name, at));
    let end = at;
    if (known) end = at + known.name.length;
    else while (end < text.length && !stops.includes(text[end])) end++;
    if (end > at) {
      flush();
      segments.push({ kind: "axis", name: text.slice(at, end), axisIndex: known ? known.axisIndex : -1 });
    }
    return end;
  };
  /** A list of names up to `close` (not consumed), separated by commas and spaces. */
  const listUntil = (at: number, close: string): number => {
    let i = at;
    while (i < text.length && text[i] !== close) {
      if (text[i] === "," || text[i] === " " || text[i] === "(" || text[i] === ")") {
        plain += text[i];
        i++;
        continue;
      }
      const end = axisAt(i, `,() ${close}`);
      if (end === i) {
        plain += text[i];
        i++;
      } else {
        i = end;
      }
    }
    return i;
  };
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("{V:", i) || text.startsWith("{U:", i)) {
      plain += text.slice(i, i + 3);
      i = listUntil(i + 3, "}");
    } else if (text[i] === "@") {
      plain += "@";
      i++;
      if (text[i] === "(") {
        plain += "(";
        i = listUntil(i + 1, ")");
      } else {
        i = axisAt(i, ",]}");
      }
    } else {
      plain += text[i];
      i++;
    }
  }
  flush();
  return segments;
}

/** A `<code>` of the text with its axis names marked (class `sv-axis-ref`, coloured by mesh axis). */
export function renderAxisText(text: string, axisNames: readonly string[], className = "sv-type-text"): HTMLElement {
  const code = h("code", { class: className });
  for (const segment of splitAxisText(text, axisNames)) {
    if (segment.kind === "text") code.append(segment.text);
    else code.append(axisMark(segment.name, segment.axisIndex));
  }
  return code;
}

/** `P(x, (y, z))` with the axes marked; `P()` for a replicated value. */
export function renderSpec(spec: readonly (readonly string[])[], axisNames: readonly string[]): HTMLElement {
  let end = spec.length;
  while (end > 0 && spec[end - 1].length === 0) end--;
  const code = h("code", { class: "sv-spec-text" }, ["P("]);
  spec.slice(0, end).forEach((axes, d) => {
    if (d > 0) code.append(", ");
    if (axes.length === 0) code.append("None");
    if (axes.length > 1) code.append("(");
    axes.forEach((name, j) => {
      if (j > 0) code.append(", ");
      code.append(axisMark(name, axisNames.indexOf(name)));
    });
    if (axes.length > 1) code.append(")");
  });
  code.append(")");
  return code;
}

export function axisMark(name: string, axisIndex: number): HTMLElement {
  const mark = h("span", { class: "sv-axis-ref", title: `mesh axis ${name}` }, [name]);
  if (axisIndex >= 0) mark.style.setProperty("--sv-axis", axisColor(axisIndex));
  return mark;
}
