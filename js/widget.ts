/**
 * The anywidget entry, and the only module that touches the model: it reads
 * the `answer` trait, sends messages, numbers edits (per model, so two
 * views of one widget never share a number) and writes `drawn_seq` once an
 * edit's answer is drawn. It mounts the view of the
 * payload's kind over a live host (js/host/kinds.ts, js/host/live.ts), passes
 * it each new answer and each custom message, and returns a cleanup that
 * removes every listener it added.
 */

import type { AnyModel, RenderProps } from "@anywidget/types";
import { KINDS, kindOf, mountLive } from "./host/kinds";
import type { KernelLink } from "./host/live";
import type { Answer } from "./traits/host";
import { ViewSwitch } from "./views/index";

interface WidgetTraits {
  answer: Partial<Answer>;
  drawn_seq: number;
}

/** The last edit number each model's views sent (a module-level map: every view of a model shares it). */
const lastSent = new WeakMap<object, number>();
/** The last of those edits whose answer a view of the model has drawn. */
const drawn = new WeakMap<object, number>();

/**
 * Says that the kernel's answer to one of this model's edits is drawn, in the `drawn_seq` trait: the only
 * trait the front end writes. Python takes nothing from it; hosts that re-run code when a widget's value
 * changes (marimo's `mo.ui.anywidget`) see the edit through it, after the answer is in place.
 */
function acknowledge(model: AnyModel<WidgetTraits>, seq: number): void {
  if (seq <= (drawn.get(model) ?? 0) || seq > (lastSent.get(model) ?? 0)) return;
  drawn.set(model, seq);
  model.set("drawn_seq", seq);
  model.save_changes();
}

function kernelLink(model: AnyModel<WidgetTraits>): KernelLink {
  const answer = (): Partial<Answer> => model.get("answer") ?? {};
  return {
    answer,
    send: (message) => model.send(message),
    nextSeq: () => {
      // Above the kernel's count too: a reloaded page starts again from it.
      const next = Math.max(lastSent.get(model) ?? 0, Number(answer().seq ?? 0)) + 1;
      lastSent.set(model, next);
      return next;
    },
  };
}

function render({ model, el }: Pick<RenderProps<WidgetTraits>, "model" | "el">): () => void {
  const link = kernelLink(model);
  const view = new ViewSwitch(
    el,
    () => kindOf(link.answer().payload).name,
    (name, target) => mountLive(KINDS.find((kind) => kind.name === name) ?? kindOf(null), target, link),
  );
  // Redraw, then say which of this model's edits is answered; no edit is sent from a change handler.
  const onAnswer = (): void => {
    view.update(["answer"]);
    acknowledge(model, Number(link.answer().seq ?? 0));
  };
  const onMessage = (message: unknown): void => view.receive(message);
  model.on("change:answer", onAnswer);
  model.on("msg:custom", onMessage);
  return () => {
    model.off("change:answer", onAnswer);
    model.off("msg:custom", onMessage);
    view.destroy();
  };
}

export default { render };
