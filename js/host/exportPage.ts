/**
 * The self-contained HTML export: every
 * `<script type="application/json" data-shardviz-payload>` is drawn into the
 * `<div data-shardviz-root>` just before it. No network, no kernel: an array
 * layout is edited in the page by the local engine (PageHost); a tree is
 * drawn whole (its table, heat map, audit and the leaves' layouts on meshes)
 * with the rules in force shown read-only; a program is drawn whole (listing,
 * collectives, totals, values' layouts and groups) with its input specs
 * read-only, since tracing again needs a kernel; anything else is shown read-only.
 */

import { isPayload, PAYLOAD_VERSION, type Payload } from "../payload/array";
import { isProgramPayload } from "../payload/program";
import { isTreePayload } from "../payload/tree";
import { payloadTraits, type ViewHost } from "../traits/array";
import { ShardvizView } from "../views/array";
import type { MountedView } from "../views/index";
import { ProgramView } from "../views/program";
import { TreeView } from "../views/tree";
import { PageHost } from "./pageHost";
import { staticProgramHost } from "./programHost";
import { staticTreeHost } from "./treeHost";

/** A read-only stand-in for the model: it answers from the exported payload and ignores edits. */
export function staticHost(payload: Payload): ViewHost {
  const traits = payloadTraits(payload);
  return {
    readOnly: true,
    get: (key) => traits[key],
    edit: () => {},
  };
}

/** Draws every exported payload on the page; returns the views (for tests). */
export function renderAllExports(doc: Document = document): MountedView[] {
  const views: MountedView[] = [];
  for (const script of Array.from(doc.querySelectorAll<HTMLScriptElement>("script[data-shardviz-payload]"))) {
    const target = script.previousElementSibling;
    if (!(target instanceof HTMLElement) || !target.hasAttribute("data-shardviz-root")) continue;
    if (target.hasAttribute("data-shardviz-rendered")) continue;
    target.setAttribute("data-shardviz-rendered", "");
    try {
      views.push(drawExport(target, JSON.parse(script.textContent ?? "null")));
    } catch (error) {
      const message = document.createElement("p");
      message.setAttribute("role", "alert");
      message.textContent = `shardviz could not draw this layout: ${error instanceof Error ? error.message : String(error)}`;
      target.append(message);
    }
  }
  return views;
}

/** A view of one exported payload: editable in the page when the local engine reads it, else read-only. */
function drawExport(target: HTMLElement, payload: unknown): MountedView {
  if (isTreePayload(payload)) return new TreeView(target, staticTreeHost(payload));
  if (isProgramPayload(payload)) return new ProgramView(target, staticProgramHost(payload));
  if (isPayload(payload) && payload.version === PAYLOAD_VERSION) {
    const host = new PageHost(payload);
    const view = new ShardvizView(target, host);
    host.onChange((keys) => view.update(keys));
    return view;
  }
  return new ShardvizView(target, staticHost(payload as Payload));
}
