/**
 * The anywidget entry: the only module that touches the model. It mounts
 * the view the payload's kind asks for (js/views/index.ts) over that kind's
 * live host (js/host/kinds.ts): LiveHost for the array view (edits are drawn
 * from the local engine at once, then from the kernel's answer), plain model
 * hosts for the tree view (rules are applied by the kernel) and the program
 * view (an input spec edit is traced and compiled again by the kernel). It
 * forwards trait changes and custom messages to the view, and returns a
 * cleanup that removes every listener it added.
 */

import type { AnyModel, RenderProps } from "@anywidget/types";
import { ALL_TRAIT_NAMES, KINDS, mountLive } from "./host/kinds";
import type { SyncedTraits } from "./traits/array";
import { type ViewFactories, ViewSwitch } from "./views/index";

function render({ model, el }: Pick<RenderProps<SyncedTraits>, "model" | "el">): () => void {
  const live = model as unknown as AnyModel;
  const factories = Object.fromEntries(
    Object.entries(KINDS).map(([name, kind]) => [name, (target: HTMLElement) => mountLive(kind, target, live)]),
  ) as ViewFactories;
  const view = new ViewSwitch(el, () => model.get("payload"), factories);
  const handlers: [string, () => void][] = ALL_TRAIT_NAMES.map((name) => [
    `change:${name}`,
    // Redraw only; no save_changes here: saving from a change handler would echo back to Python.
    () => view.update([name]),
  ]);
  for (const [event, handler] of handlers) model.on(event, handler);
  const onMessage = (message: unknown): void => view.receive(message);
  model.on("msg:custom", onMessage);
  return () => {
    for (const [event, handler] of handlers) model.off(event, handler);
    model.off("msg:custom", onMessage);
    view.destroy();
  };
}

export default { render };
