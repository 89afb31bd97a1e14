/**
 * The anywidget entry: the only module that touches the model. It mounts
 * the view the payload's kind asks for (js/views/index.ts) over a host of
 * the model: LiveHost for the array view (edits are drawn from the local
 * engine at once, then from the kernel's answer), plain model hosts for the
 * tree view (rules are applied by the kernel) and the program view (an input
 * spec edit is traced and compiled again by the kernel). It forwards trait changes and
 * custom messages to the view, and returns a cleanup that removes every
 * listener it added.
 */

import type { AnyModel, RenderProps } from "@anywidget/types";
import { EDIT_ANSWERED, LiveHost, type LiveModel } from "./host/liveHost";
import { modelProgramHost, type ProgramModel } from "./host/programHost";
import { modelTreeHost } from "./host/treeHost";
import type { SyncedTraits } from "./traits/array";
import { TRAIT_NAMES } from "./traits/array";
import { PROGRAM_TRAIT_NAMES } from "./traits/program";
import { TREE_TRAIT_NAMES, type TreeTraits } from "./traits/tree";
import { ShardvizView } from "./views/array";
import { type MountedView, type ViewFactories, ViewSwitch } from "./views/index";
import { ProgramView } from "./views/program";
import { TreeView } from "./views/tree";

/** The array view over a LiveHost: model changes go through the host, which says what the view redraws. */
function arrayView(el: HTMLElement, model: LiveModel): MountedView {
  const host = new LiveHost(model);
  const view = new ShardvizView(el, host);
  host.onChange((keys) => view.update(keys));
  const traits = new Set<string>(TRAIT_NAMES);
  return {
    update: (changed) => {
      for (const name of changed) {
        if (name === EDIT_ANSWERED) host.answered(model.get(EDIT_ANSWERED));
        else if (traits.has(name)) host.modelChanged(name as keyof SyncedTraits);
      }
    },
    receive: (message) => view.receive(message),
    destroy: () => view.destroy(),
  };
}

function render({ model, el }: Pick<RenderProps<SyncedTraits>, "model" | "el">): () => void {
  const factories: ViewFactories = {
    array: (target) => arrayView(target, model as unknown as LiveModel),
    tree: (target) => new TreeView(target, modelTreeHost(model as unknown as AnyModel<TreeTraits>)),
    program: (target) => new ProgramView(target, modelProgramHost(model as unknown as ProgramModel)),
  };
  const view = new ViewSwitch(el, () => model.get("payload"), factories);
  const names = Array.from(
    new Set<string>([...TRAIT_NAMES, ...TREE_TRAIT_NAMES, ...PROGRAM_TRAIT_NAMES, EDIT_ANSWERED]),
  );
  const handlers: [string, () => void][] = names.map((name) => [
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
