/**
 * Chips for what a program's lines make: a value (name, operation, type with
 * its axes coloured and, where the type hides them, its spec), a collective
 * (kind, axes, bytes per call), and a family of either (a loop's passes or a
 * layer's scopes on one line: one chip with their count, which opens into
 * one chip each, named by scope and pass). Axes are drawn whole: a piece of
 * an axis (`y[sub 2 of 4, stride 2]`) never breaks across lines.
 */

import type { Program, ProgramCollective } from "../payload/program";
import { plural, valueLabel } from "../payload/program";
import type { CollectiveFamily, ValueFamily } from "../payload/programSource";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { axisMark, renderAxisText, renderSpec } from "./axisText";
import { axesPieces, bytesText, originText } from "./programText";

/** True when types leave some mesh axes out (Auto axes): the spec is shown beside them. */
export function typeHidesAxes(program: Program): boolean {
  return program.payload.mesh?.types.some((t) => t !== "Explicit") ?? false;
}

/** Why a value's layout is not known, in a user's words (Python's note says the details). */
export function unknownText(note: string): string {
  const why = note ? ` (${note})` : "";
  return `shardviz could not tell how this value is laid out over the devices${why}; it shows nothing rather than guess`;
}

/**
 * A collective's axes as text that never breaks inside a piece: `over`, then each whole axis or
 * piece of one (`y[sub 2 of 4, stride 2]`) in its own unbreakable span, the axis name coloured.
 */
export function renderAxes(c: ProgramCollective, axisNames: readonly string[], lead = "over "): HTMLElement {
  const pieces = axesPieces(c);
  const box = h("span", { class: "sv-axes", "data-role": "axes" });
  if (pieces === null) {
    box.append(h("span", { class: "sv-muted" }, ["over device groups no mesh axis or piece of one makes"]));
    return box;
  }
  if (pieces.length === 0) {
    box.append(h("span", { class: "sv-muted" }, ["within each device"]));
    return box;
  }
  if (lead) box.append(lead);
  pieces.forEach((piece, k) => {
    if (k > 0) box.append(", ");
    const name = axisNames
      .filter((n) => n !== "" && piece.startsWith(n) && (piece.length === n.length || piece[n.length] === "["))
      .sort((a, b) => b.length - a.length)[0];
    const span = h("span", { class: "sv-axis-piece" });
    if (name === undefined) span.append(piece);
    else span.append(axisMark(name, axisNames.indexOf(name)), piece.slice(name.length));
    box.append(span);
  });
  return box;
}

/** Scope and loop pass of a value (`layers_2`, `pass 3 of 4`), "" for neither. */
export function valueWhere(program: Program, i: number): string {
  const { values } = program.payload;
  const parts: string[] = [];
  const scope = values.scope?.[i] ?? "";
  if (scope) parts.push(scope);
  const pass = values.pass?.[i];
  const passes = values.passes?.[i];
  if (pass != null) parts.push(passes != null ? `pass ${pass} of ${passes}` : `pass ${pass}`);
  return parts.join(", ");
}

/** A value as a chip: name, what made it, its type (axes coloured) and, where the type hides it, its spec. */
export function valueChip(program: Program, i: number, showWhere = false): HTMLElement {
  const { values, types, primitives, roles, mesh } = program.payload;
  const row = types[values.type[i]];
  const names = mesh?.names ?? [];
  const made = values.primitive[i] >= 0 ? primitives[values.primitive[i]] : roles[values.role[i]];
  const where = valueWhere(program, i);
  const chip = h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-value-chip",
      "data-role": "value",
      "data-value": i,
      "aria-pressed": "false",
      title: `${valueLabel(program.payload, i)} (${values.name[i]} in the jaxpr)${where ? `, ${where}` : ""}: sharding from ${originText(program, i)}`,
    },
    [
      showWhere && where ? h("span", { class: "sv-where", "data-role": "where" }, [where]) : null,
      h("span", { class: "sv-value-name" }, [valueLabel(program.payload, i)]),
      h("span", { class: "sv-prim sv-muted" }, [made]),
    ],
  );
  chip.append(renderAxisText(row.type_str, names));
  if (row.spec === null) {
    const origin = program.payload.origins[values.from[i]];
    const unknown = h("span", { class: "sv-unknown sv-muted" }, [
      origin === "manual" ? "per device" : origin === "dead" ? "unused" : "layout not known",
    ]);
    unknown.title = unknownText(program.payload.notes[values.note[i]] ?? "");
    chip.append(unknown);
  } else if (typeHidesAxes(program)) {
    chip.append(renderSpec(row.spec, names));
  }
  return chip;
}

/** Where a collective (or one operand of a combined one) runs: its scope, pass or the array it lays out. */
export function collectiveWhere(c: ProgramCollective, part: number | null): string {
  if (part !== null) return c.parts?.[part]?.where_label ?? "";
  return c.where_label ?? "";
}

/**
 * A collective as a chip: kind, axes, bytes per device per call. With `part`, one operand of a
 * combined collective: its own bytes, and which collective it travels in.
 */
export function collectiveChip(program: Program, c: number, part: number | null = null, showWhere = true): HTMLElement {
  const collective = program.payload.collectives[c];
  const operands = collective.parts?.length ?? 0;
  const where = collectiveWhere(collective, part);
  const together =
    part === null
      ? null
      : h("span", { class: "sv-muted", "data-role": "combined" }, [`${part + 1} of ${operands} in ${collective.name}`]);
  const chip = h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-coll-chip",
      "data-role": "line-collective",
      "data-collective": c,
      "data-kind": collective.kind,
      "aria-pressed": "false",
      title:
        part === null
          ? collective.op_name
          : `one of ${operands} operands XLA combined into ${collective.name}: they travel together`,
    },
    [
      showWhere && where ? h("span", { class: "sv-where", "data-role": "where" }, [where]) : null,
      h("span", { class: "sv-coll-kind" }, [collective.kind]),
      renderAxes(collective, program.payload.mesh?.names ?? []),
      h("span", { class: "sv-coll-bytes" }, [bytesText(collective, part ?? undefined)]),
      together,
    ],
  );
  if (part !== null) chip.setAttribute("data-part", String(part));
  return chip;
}

/**
 * What tells a family's members apart, in a few words: `passes 1-4 of 4`, `layers_0 … layers_3`
 * (first and last, in the program's order), or the one or two there are.
 */
export function familySpan(labels: readonly string[]): string {
  const distinct = Array.from(new Set(labels.filter((l) => l !== "")));
  if (distinct.length === 0) return "";
  const passes = distinct.map((l) => /^pass (\d+) of (\d+)$/.exec(l));
  if (distinct.length > 1 && passes.every((m) => m !== null && m[2] === passes[0]?.[2])) {
    const numbers = passes.map((m) => Number(m?.[1]));
    const low = Math.min(...numbers);
    const high = Math.max(...numbers);
    const of = passes[0]?.[2];
    if (high - low + 1 === numbers.length) return `passes ${low}\u2013${high} of ${of}`;
    if (numbers.length <= 4) return `passes ${numbers.join(", ")} of ${of}`;
    const sorted = [...numbers].sort((a, b) => a - b);
    return `${numbers.length} passes: ${sorted[0]}, ${sorted[1]}, \u2026 ${sorted[sorted.length - 1]} of ${of}`;
  }
  if (distinct.length <= 2) return distinct.join(", ");
  return `${distinct[0]} \u2026 ${distinct[distinct.length - 1]}`;
}

/**
 * A family of values as one chip that opens into its members: `×4 h relu float32[32,256]`. It holds
 * `data-values` (the members) and `aria-expanded`; the view opens it.
 */
export function valueFamilyChip(program: Program, family: ValueFamily): HTMLElement {
  const { types, mesh } = program.payload;
  const names = mesh?.names ?? [];
  const row = types[family.type];
  const span = familySpan(family.values.map((i) => valueWhere(program, i)));
  const chip = h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-value-chip sv-family",
      "data-role": "value-family",
      "data-values": family.values.join(","),
      "aria-expanded": "false",
      title: `${plural(family.values.length, "value")} of this line${span ? ` (${span})` : ""}: open to see each`,
    },
    [
      h("span", { class: "sv-count" }, [`\u00d7${family.values.length}`]),
      family.name === "%" ? null : h("span", { class: "sv-value-name" }, [family.name]),
      h("span", { class: "sv-prim sv-muted" }, [family.primitive]),
      renderAxisText(row.type_str, names),
    ],
  );
  if (row.spec !== null && typeHidesAxes(program)) chip.append(renderSpec(row.spec, names));
  if (span) chip.append(h("span", { class: "sv-where sv-muted" }, [span]));
  return chip;
}

/** A family of collectives as one chip: `×4 all-reduce over model 24 KiB`, opening into one chip each. */
export function collectiveFamilyChip(program: Program, family: CollectiveFamily): HTMLElement {
  const { collectives, mesh } = program.payload;
  const first = family.items[0];
  const c = collectives[first.collective];
  const span = familySpan(family.items.map((item) => collectiveWhere(collectives[item.collective], item.part)));
  const owner = first.part !== null ? ` operands of ${c.name}` : "";
  return h(
    "button",
    {
      type: "button",
      class: "sv-chip sv-coll-chip sv-family",
      "data-role": "collective-family",
      "data-collectives": family.items.map((item) => item.collective).join(","),
      "data-kind": family.kind,
      "data-bytes": family.bytes,
      "aria-expanded": "false",
      title: `${plural(family.items.length, "collective")}${owner} on this line${span ? ` (${span})` : ""}: open to see each`,
    },
    [
      h("span", { class: "sv-count" }, [`\u00d7${family.items.length}`]),
      h("span", { class: "sv-coll-kind" }, [family.kind]),
      renderAxes(c, mesh?.names ?? []),
      h("span", { class: "sv-coll-bytes" }, [formatBytes(family.bytes)]),
      first.part !== null ? h("span", { class: "sv-muted", "data-role": "combined" }, [`in ${c.name}`]) : null,
      span ? h("span", { class: "sv-where sv-muted" }, [span]) : null,
    ],
  );
}
