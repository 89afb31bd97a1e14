/** Renders the widget entry with a fake model holding the tree view's traits. */

import type { AnyModel } from "@anywidget/types";
import type { TreePayload } from "../payload/tree";
import type { SyncedTraits } from "../traits/array";
import type { TreeTraits } from "../traits/tree";
import widget from "../widget";
import { FakeModel } from "./fakeModel";
import { sent } from "./render";

export interface RenderedTree {
  el: HTMLElement;
  model: FakeModel;
  cleanup: () => void;
  /** Python changes tree traits (set them all, then one change event each). */
  fromPython: (changes: Partial<TreeTraits>) => void;
  /** The rules edits the front end saved. */
  saved: () => Partial<TreeTraits>[];
  /** Python answers edit `seq`: one write of its answer. */
  answer: (seq: number, changes: Partial<TreeTraits>) => void;
}

export function renderTree(
  payload: TreePayload | Record<string, never>,
  traits: Partial<TreeTraits> = {},
): RenderedTree {
  const el = document.createElement("div");
  document.body.append(el);
  const rules = (payload as Partial<TreePayload>).rules_text ?? "";
  const model = new FakeModel(
    payload as unknown as SyncedTraits["payload"],
    {
      rules_text: rules,
      ...traits,
    } as unknown as Partial<SyncedTraits>,
  );
  const cleanup = widget.render({ model: model as unknown as AnyModel<never>, el });
  return {
    el,
    model,
    cleanup,
    fromPython: (changes) => model.fromPython(changes as unknown as Partial<SyncedTraits>),
    saved: () => sent(model) as unknown as Partial<TreeTraits>[],
    answer: (seq, changes) => model.answer(seq, changes as unknown as Partial<SyncedTraits>),
  };
}
