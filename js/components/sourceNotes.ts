/**
 * A source line's chips for one pass: its collectives, then its values,
 * each family (a loop's passes, a layer's scopes) as one chip that opens
 * into its members, and past the first few a "more" button. What a family
 * opens into and what "more" shows are kept beside the elements (not in
 * the DOM) and made when asked for.
 */

import type { Program } from "../payload/program";
import type { CollectiveFamily, PassNotes, ValueFamily } from "../payload/programSource";
import { h } from "../util/dom";
import { collectiveChip, collectiveFamilyChip, valueChip, valueFamilyChip } from "./programChips";

/** Chips (families) shown per pass of a line before a "more" button. */
export const FAMILIES_SHOWN = 6;

/** What a family chip opens into, and what a "more" button shows. */
export const familyMembers = new WeakMap<HTMLElement, () => HTMLElement[]>();
export const moreFamilies = new WeakMap<HTMLElement, (CollectiveFamily | ValueFamily)[]>();

/** One pass's chips: collectives first, then values; families past the first few behind "more". */
export function passElement(
  program: Program,
  notes: PassNotes,
  pass: "forward" | "backward",
  tagged: boolean,
): HTMLElement | null {
  const families: (CollectiveFamily | ValueFamily)[] = [...notes.collectives, ...notes.values];
  if (families.length === 0) return null;
  const row = h("div", { class: `sv-pass sv-pass-${pass}`, "data-role": "pass-notes", "data-pass": pass }, [
    tagged
      ? h("span", { class: "sv-pass-tag", title: pass === "forward" ? "forward pass" : "backward pass (gradients)" }, [
          pass === "forward" ? "fwd" : "bwd",
        ])
      : null,
  ]);
  for (const family of families.slice(0, FAMILIES_SHOWN)) row.append(familyElement(program, family));
  const rest = families.length - FAMILIES_SHOWN;
  if (rest > 0) {
    const more = h("button", { type: "button", class: "sv-button sv-more", "data-role": "more-notes" }, [
      `+${rest} more`,
    ]);
    moreFamilies.set(more, families.slice(FAMILIES_SHOWN));
    row.append(more);
  }
  return row;
}

/** A family of one as its one chip, a larger one as a family chip that opens into its members. */
export function familyElement(program: Program, family: CollectiveFamily | ValueFamily): HTMLElement {
  if ("items" in family) {
    if (family.items.length === 1) {
      const item = family.items[0];
      return collectiveChip(program, item.collective, item.part);
    }
    const chip = collectiveFamilyChip(program, family);
    familyMembers.set(chip, () => family.items.map((item) => collectiveChip(program, item.collective, item.part)));
    return chip;
  }
  if (family.values.length === 1) return valueChip(program, family.values[0], true);
  const chip = valueFamilyChip(program, family);
  familyMembers.set(chip, () => family.values.map((i) => valueChip(program, i, true)));
  return chip;
}
