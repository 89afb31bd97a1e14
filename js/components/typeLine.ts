/**
 * The type line: `jax.typeof` text with every `@axis` marked in its mesh
 * axis colour, plus the memory kind. On a mesh with Auto axes JAX leaves
 * those axes out of the type; the line says so and offers an explicit view.
 */

import type { MeshInfo, Payload } from "../payload/array";
import { h } from "../util/dom";
import { axisColor } from "../util/palette";

export type TypeSegment = { kind: "text"; text: string } | { kind: "axis"; name: string; axisIndex: number };

/**
 * Splits a type string such as `float32[8@(X,Y),6@Z]` into plain text and
 * axis references. Names are matched against the mesh's own axis names
 * (longest first), so names with brackets or commas in them still split right.
 */
export function splitTypeString(typeStr: string, axisNames: readonly string[]): TypeSegment[] {
  const byLength = axisNames
    .map((name, axisIndex) => ({ name, axisIndex }))
    .sort((a, b) => b.name.length - a.name.length);
  const segments: TypeSegment[] = [];
  let text = "";
  const pushText = (s: string): void => {
    text += s;
  };
  const pushAxis = (name: string, axisIndex: number): void => {
    if (text) segments.push({ kind: "text", text });
    text = "";
    segments.push({ kind: "axis", name, axisIndex });
  };
  const matchAxis = (at: number): number => {
    const known = byLength.find(({ name }) => name.length > 0 && typeStr.startsWith(name, at));
    if (known) {
      pushAxis(known.name, known.axisIndex);
      return at + known.name.length;
    }
    // An axis the mesh does not list (should not happen): take it up to the next separator.
    let end = at;
    while (end < typeStr.length && !",)]}".includes(typeStr[end])) end++;
    if (end > at) pushAxis(typeStr.slice(at, end), -1);
    return end;
  };

  let i = 0;
  while (i < typeStr.length) {
    const ch = typeStr[i];
    if (ch !== "@") {
      pushText(ch);
      i++;
      continue;
    }
    pushText("@");
    i++;
    if (typeStr[i] !== "(") {
      i = matchAxis(i);
      continue;
    }
    pushText("(");
    i++;
    while (i < typeStr.length && typeStr[i] !== ")") {
      const next = matchAxis(i);
      if (next === i) {
        pushText(typeStr[i]); // a separator between names
        i++;
      } else {
        i = next;
      }
    }
  }
  if (text) segments.push({ kind: "text", text });
  return segments;
}

/**
 * A layout with no array behind it is a what-if: say so first, and say when
 * its devices are the numbered stand-ins of an AbstractMesh.
 */
function whatIfChip(payload: Payload): HTMLElement | null {
  if (payload.has_array) return null;
  const virtual = payload.devices.virtual;
  const chip = h("span", { class: "sv-chip sv-what-if", "data-role": "what-if" }, [
    virtual ? "what-if \u00b7 virtual devices" : "what-if \u00b7 no array",
  ]);
  chip.title = virtual
    ? "A hypothetical layout on an AbstractMesh: the devices are numbered stand-ins, no data exists"
    : "A hypothetical layout: no array stands behind it, so nothing is placed and no values exist";
  return chip;
}

/** True when JAX leaves some mesh axes out of the type (Auto axes). */
export function meshHasAutoAxes(mesh: MeshInfo | null): boolean {
  return mesh?.types.includes("Auto") ?? false;
}

export interface TypeLineOptions {
  /** Called with mesh text in which every axis is Explicit; absent when read-only. */
  onExplicitView?: (() => void) | undefined;
  signal?: AbortSignal;
}

/** Builds the type line element (`data-role="type"` carries the type text itself). */
export function renderTypeLine(payload: Payload, options: TypeLineOptions = {}): HTMLElement {
  const names = payload.mesh?.names ?? [];
  const typeText = h("code", { class: "sv-type", "data-role": "type" });
  for (const segment of splitTypeString(payload.type_str, names)) {
    if (segment.kind === "text") {
      typeText.append(segment.text);
    } else {
      const mark = h("span", { class: "sv-axis-ref", title: `mesh axis ${segment.name}` }, [segment.name]);
      if (segment.axisIndex >= 0) mark.style.setProperty("--sv-axis", axisColor(segment.axisIndex));
      typeText.append(mark);
    }
  }
  const line = h("div", { class: "sv-typeline" }, [
    whatIfChip(payload),
    typeText,
    h("span", { class: "sv-chip", title: "memory kind" }, [`memory: ${payload.memory_kind}`]),
    h("span", { class: "sv-chip sv-muted", title: "sharding class" }, [payload.sharding]),
  ]);
  if (meshHasAutoAxes(payload.mesh) && payload.mesh) {
    const autoNames = payload.mesh.names.filter((_, i) => payload.mesh?.types[i] === "Auto");
    const note = h("span", { class: "sv-note" }, [
      `Auto ${autoNames.length === 1 ? "axis" : "axes"} ${autoNames.join(", ")}: the type does not show ${
        autoNames.length === 1 ? "it" : "them"
      }.`,
    ]);
    line.append(note);
    if (options.onExplicitView) {
      // An edit, and labelled as one: it changes the mesh and re-places the array.
      const button = h("button", { type: "button", class: "sv-button", "data-role": "explicit-view" }, [
        "Edit: make every axis Explicit",
      ]);
      button.title =
        "A mesh edit: sets every mesh axis to Explicit (the array is placed again), so the type names them";
      const onExplicitView = options.onExplicitView;
      button.addEventListener("click", () => onExplicitView(), { signal: options.signal });
      line.append(button);
    }
  }
  return line;
}
