/**
 * The self-contained HTML export: every
 * `<script type="application/json" data-shardviz-payload>` is drawn into the
 * `<div data-shardviz-root>` just before it. No network, no kernel: an array
 * layout is edited in the page by the local engine (PageHost); a tree is
 * drawn whole (its table, heat map, audit and the leaves' layouts on meshes)
 * with the rules in force shown read-only; a program is drawn whole (listing,
 * collectives, totals, values' layouts and groups) with its input specs
 * read-only, since tracing again needs a kernel; anything else is shown read-only.
 * Which view and host a payload gets is js/host/kinds.ts's to say.
 */

import type { MountedView } from "../views/index";
import { mountSaved } from "./kinds";

/** Draws every exported payload on the page; returns the views (for tests). */
export function renderAllExports(doc: Document = document): MountedView[] {
  const views: MountedView[] = [];
  for (const script of Array.from(doc.querySelectorAll<HTMLScriptElement>("script[data-shardviz-payload]"))) {
    const target = script.previousElementSibling;
    if (!(target instanceof HTMLElement) || !target.hasAttribute("data-shardviz-root")) continue;
    if (target.hasAttribute("data-shardviz-rendered")) continue;
    target.setAttribute("data-shardviz-rendered", "");
    try {
      views.push(mountSaved(target, JSON.parse(script.textContent ?? "null")));
    } catch (error) {
      const message = document.createElement("p");
      message.setAttribute("role", "alert");
      message.textContent = `shardviz could not draw this layout: ${error instanceof Error ? error.message : String(error)}`;
      target.append(message);
    }
  }
  return views;
}
