/**
 * The program view's input spec editors after a refusal (issue 19.2): the
 * status line and `aria-invalid` judge the text in the box now, so an error
 * goes once the box holds another text (typed, or Python's put back by Escape).
 */

import { afterEach, describe, expect, it } from "vitest";
import { loadProgram, programAnswers, type RenderedProgram, renderProgram } from "../test/programFixtures";
import { query } from "../test/render";
import type { SyncedTraits } from "../traits/array";

let shown: RenderedProgram | null = null;
afterEach(() => {
  shown?.cleanup();
  shown = null;
});

const type = (input: HTMLInputElement, text: string): void => {
  input.value = text;
  input.dispatchEvent(new Event("input"));
};
const key = (input: HTMLInputElement, name: string): void => {
  input.dispatchEvent(new KeyboardEvent("keydown", { key: name }));
};

describe("an input spec editor after a refusal", () => {
  it("drops the error once the box holds another text, and after Escape", () => {
    const answers = programAnswers();
    shown = renderProgram(loadProgram("mlp"));
    const view = shown;
    const w1 = query<HTMLInputElement>(view.el, '[data-role="input-spec"][data-input="1"]');
    const alert = () => view.el.querySelector('[role="alert"][data-source="input:1"]');
    const hint = () => view.el.querySelector('[data-status-for="input:1"] [data-role="draft-hint"]');
    type(w1, "q");
    key(w1, "Enter");
    view.model.answer(view.model.editSeqs[0], {
      error: answers.bad_spec.error,
      error_source: answers.bad_spec.error_source,
    } as Partial<SyncedTraits>);
    expect(alert()?.textContent).toBe(answers.bad_spec.error);
    expect(w1.getAttribute("aria-invalid")).toBe("true");

    type(w1, "None, x"); // a fix being typed: the line speaks of it, not of "q"
    expect(alert()).toBeNull();
    expect(w1.hasAttribute("aria-invalid")).toBe(false);
    expect(hint()).not.toBeNull();

    type(w1, "q"); // the refused text again
    expect(alert()).not.toBeNull();
    key(w1, "Escape");
    expect(w1.value).toBe(answers.start[1]);
    expect(alert()).toBeNull();
    expect(w1.hasAttribute("aria-invalid")).toBe(false);
  });
});

describe("a replicated input", () => {
  it("shows P() (which the grammar reads back as Python's text), not an empty box", () => {
    const payload = loadProgram("single_device");
    expect(payload.inputs[0].spec_text).toBe("");
    shown = renderProgram(payload);
    const box = query<HTMLInputElement>(shown.el, '[data-role="input-spec"][data-input="0"]');
    expect(box.value).toBe("P()");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(shown.saved()).toHaveLength(0); // Python's own spec: nothing to trace again
    expect(shown.el.querySelector('[data-status-for="input:0"] [data-role="draft-hint"]')).toBeNull();
  });
});

describe("a program that cannot be traced again", () => {
  const reason = "this program was not made by shardviz.trace in this session";

  it("shows its input editors read-only, with the payload's reason, and sends no edit", () => {
    const payload = { ...loadProgram("mlp"), retrace: false, retrace_reason: reason };
    shown = renderProgram(payload);
    const boxes = Array.from(shown.el.querySelectorAll<HTMLInputElement>('[data-role="input-spec"]'));
    expect(boxes.length).toBe(payload.inputs.length);
    expect(boxes.every((box) => box.disabled)).toBe(true);
    expect(shown.el.querySelector('[data-role="retrace-note"]')?.textContent).toBe(reason);
    type(boxes[1], "None, x");
    key(boxes[1], "Enter");
    expect(shown.saved()).toHaveLength(0);
  });

  it("keeps the editors open where the payload says it can be traced again (or says nothing)", () => {
    for (const retrace of [true, undefined]) {
      shown?.cleanup();
      shown = renderProgram({ ...loadProgram("mlp"), retrace, retrace_reason: "" });
      const box = query<HTMLInputElement>(shown.el, '[data-role="input-spec"][data-input="1"]');
      expect(box.disabled).toBe(false);
      expect(shown.el.querySelector<HTMLElement>('[data-role="retrace-note"]')?.hidden).toBe(true);
    }
  });
});
