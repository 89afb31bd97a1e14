/**
 * What the last edit of an array cost to move the data there, as Python
 * worked it out (the `move` trait: the collectives of
 * `jax.jit(lambda a: a, out_shardings=new)` on the previous array): bytes
 * each device sent and over which mesh axes, the copy between device and
 * host memory of a memory-kind change, or why no single program moves it
 * (onto other devices, say), and what each device lacked of its new block,
 * read from the two layouts (the least any program could move). Past
 * XLA:CPU's 2,048 devices of one process it says XLA compiled the move in a
 * separate process, and where XLA warned of an involuntary full
 * rematerialization while compiling the move, says so. Nothing is shown
 * before the first edit.
 */

import type { MemoryMove, MoveChild, MoveCollective, MoveNeeds, MoveSummary } from "../payload/move";
import { h } from "../util/dom";
import { formatBytes } from "../util/ranges";
import { axisMark } from "./axisText";

export function renderMove(move: MoveSummary | undefined, axisNames: readonly string[]): HTMLElement | null {
  if (!move || !("collectives" in move || "error" in move)) return null;
  const needs = move.needs ? needsLine(move.needs) : null;
  if ("error" in move) {
    return h("div", { class: "sv-move", "data-role": "move" }, [
      `This move is no single program, so XLA's collectives are not counted: ${move.error}.`,
      ...(needs ? [" ", needs] : []),
    ]);
  }
  const memory = move.memory ? memoryLine(move.memory) : null;
  const child = [
    ...(move.child ? [" ", childLine(move.child)] : []),
    ...(move.rematerializations ?? []).map((r) =>
      h("div", { class: "sv-warning", "data-role": "move-remat", "data-bytes": r.full_bytes }, [
        `XLA warned of an ${r.text}.`,
      ]),
    ),
  ];
  if (move.collectives.length === 0) {
    return h("div", { class: "sv-move", "data-role": "move", "data-bytes": move.wire_bytes }, [
      memory ??
        "Moving the array to this layout needed no collective: each device could make its new block from what it held.",
      ...child,
    ]);
  }
  const items = move.collectives.map((c) => collectiveItem(c, axisNames));
  return h("div", { class: "sv-move", "data-role": "move", "data-bytes": move.wire_bytes }, [
    memory ? `${memory} ` : "",
    `Moving the array to this layout sent ${formatBytes(move.wire_bytes)} per device:`,
    h("ul", { class: "sv-move-list" }, items),
    ...(needs ? [needs] : []),
    ...child,
  ]);
}

/** What the two layouts say each device lacked: the least any program could have moved. */
function needsLine(needs: MoveNeeds): HTMLElement {
  const text =
    needs.receiving === 0
      ? "Read from the two layouts, every device already held its new block."
      : `Read from the two layouts, ${needs.receiving} of ${needs.devices} devices lacked part of their new block, ` +
        `at most ${formatBytes(needs.most_bytes)} each: no program could move less.`;
  return h("span", { "data-role": "move-needs", "data-bytes": needs.most_bytes }, [text]);
}

function childLine(child: MoveChild): string {
  return (
    `XLA compiled this move in a separate process with ${child.devices} CPU devices (in ${child.seconds} s): ` +
    "XLA:CPU compiles for at most 2,048 devices in one process."
  );
}

/** A memory-kind change is a host transfer: no collective, but every device copies its whole block. */
function memoryLine(memory: MemoryMove): string {
  const direction =
    memory.to === "device"
      ? `from ${memory.from} back to device memory`
      : `from ${memory.from === "device" ? "device memory" : memory.from} to ${memory.to}`;
  return `A host transfer: each device copies its ${formatBytes(memory.bytes)} block ${direction} (no collective).`;
}

function collectiveItem(c: MoveCollective, axisNames: readonly string[]): HTMLElement {
  const item = h("li", { "data-role": "move-collective", "data-kind": c.kind }, [
    h("span", { class: "sv-coll-kind" }, [c.kind]),
    " ",
  ]);
  const permute = c.kind === "collective-permute";
  if (c.axes === null) item.append(permute ? "between devices" : `in groups of ${c.group_size} devices`);
  else if (c.axes.length === 0) item.append("within each device");
  else {
    item.append(permute ? "between devices along " : "over ");
    c.axes.forEach((axis, i) => {
      item.append(...(i > 0 ? [", "] : []), axisMark(axis, axisNames.indexOf(axis)));
    });
  }
  const runs = c.count > 1 ? ` in ${c.count} runs` : "";
  if (permute) {
    // A permute has no groups that share data: each device sends its block to one partner.
    const pairs = c.pairs !== undefined ? ` (${c.pairs} sender\u2192receiver pairs)` : "";
    item.append(`: each device sends ${formatBytes(c.wire_bytes)} to one other device${runs}${pairs}`);
  } else {
    const groups = c.axes === null ? "" : ` (groups of ${c.group_size})`;
    item.append(`: ${formatBytes(c.wire_bytes)} per device${runs}${groups}`);
  }
  return item;
}
