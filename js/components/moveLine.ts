/**
 * What the last edit of an array cost to move the data there, as Python
 * worked it out (the `move` trait: the collectives of
 * `jax.jit(lambda a: a, out_shardings=new)` on the previous array): bytes
 * each device sent and over which mesh axes, or why no single program moves
 * it (onto other devices, say). Nothing is shown before the first edit.
 */

import type { MoveSummary } from "../traits/array";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { axisMark } from "./axisText";

export function renderMove(move: MoveSummary | undefined, axisNames: readonly string[]): HTMLElement | null {
  if (!move || !("collectives" in move || "error" in move)) return null;
  if ("error" in move) {
    return h("div", { class: "sv-move", "data-role": "move" }, [
      `No single program moves the array to this layout, so its cost is not known: ${move.error}`,
    ]);
  }
  if (move.collectives.length === 0) {
    return h("div", { class: "sv-move", "data-role": "move" }, [
      "Moving the array to this layout needed no collective: each device could make its new block from what it held.",
    ]);
  }
  const items = move.collectives.map((c) => {
    const item = h("li", { "data-role": "move-collective", "data-kind": c.kind }, [
      h("span", { class: "sv-coll-kind" }, [c.kind]),
      " ",
    ]);
    if (c.axes === null) item.append("over groups that are no set of whole mesh axes");
    else if (c.axes.length === 0) item.append("within each device");
    else {
      item.append("over ");
      c.axes.forEach((axis, i) => {
        item.append(...(i > 0 ? [", "] : []), axisMark(axis, axisNames.indexOf(axis)));
      });
    }
    item.append(
      `: ${formatBytes(c.wire_bytes)} per device${c.count > 1 ? ` in ${c.count} runs` : ""} (groups of ${c.group_size})`,
    );
    return item;
  });
  return h("div", { class: "sv-move", "data-role": "move", "data-bytes": move.wire_bytes }, [
    `Moving the array to this layout sent ${formatBytes(move.wire_bytes)} per device:`,
    h("ul", { class: "sv-move-list" }, items),
  ]);
}
