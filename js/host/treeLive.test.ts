/**
 * The tree widget over a live model: a rules edit is drawn from the browser's
 * own answer before Python says anything, and Python's answer (real JAX
 * objects) is what stays. Answers are the parity fixture's (Python's
 * `TreeState.with_rules` on the same tree and text).
 */

import { describe, expect, it } from "vitest";
import type { TreePayload } from "../payload/tree";
import { fakeFramesAndMutedWarnings, query, sendWaitingEdits } from "../test/render";
import { renderTree } from "../test/renderTree";
import { loadJson, loadTreeFixture, type RulesErrorFixture } from "../test/treeFixtures";
import type { TreeTraits } from "../traits/tree";
import { RENDER_MEASURE } from "../util/measure";

interface ParityFile {
  cases: {
    name: string;
    original: TreePayload;
    edits: { rules_text: string; status: string; payload?: TreePayload; notice?: string; message?: string }[];
  }[];
}

const parity = loadJson<ParityFile>("tree_rules_parity");
const concrete = parity.cases.find((c) => c.name === "concrete") as ParityFile["cases"][number];
const renders = (): number => performance.getEntriesByName(RENDER_MEASURE).length;

function commit(el: HTMLElement, text: string): void {
  const input = query<HTMLTextAreaElement>(el, '[data-role="rules-input"]');
  input.value = text;
  input.dispatchEvent(new Event("input"));
  input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true }));
  // An edit the browser answered goes to the kernel once its frame is drawn.
  sendWaitingEdits();
}

const notice = (el: HTMLElement): string | null => query(el, '[data-role="notice"]').textContent;
const alertText = (el: HTMLElement): string | null | undefined => el.querySelector('[role="alert"]')?.textContent;
const audit = (el: HTMLElement): string | null | undefined => el.querySelector('[data-role="audit"]')?.textContent;

/** Python's published traits after an applied edit. */
function applied(edit: ParityFile["cases"][number]["edits"][number]): Partial<TreeTraits> {
  return {
    payload: edit.payload as TreePayload,
    rules_text: edit.rules_text,
    error: "",
    error_source: "",
    notice: edit.notice as string,
  };
}

describe("a live tree widget: rules answered in the browser first, the kernel's answer last", () => {
  const muted = fakeFramesAndMutedWarnings();

  const edit = concrete.edits.find((e) => e.status === "applied" && e.notice?.match(/^[1-9]/));
  if (!edit) throw new Error("the parity fixture has no applied edit on the concrete tree");

  it("draws a rules edit in the same task as the keystroke and keeps Python's equal answer without redrawing", () => {
    const { el, model, answer } = renderTree(concrete.original);
    commit(el, edit.rules_text);
    // No message from Python yet: the browser's own answer, equal to what Python will say.
    expect(notice(el)).toBe(edit.notice);
    const drawn = audit(el);
    const after = renders();
    expect(model.saved).toEqual([{ rules_text: edit.rules_text }]);
    answer(model.editSeqs[0], applied(edit));
    expect(renders()).toBe(after);
    expect(audit(el)).toBe(drawn);
    expect(muted.warn).not.toHaveBeenCalled();
  });

  it("shows a refusal at once, in Python's words, and keeps the picture and the refused text", () => {
    const error = loadJson<RulesErrorFixture>("tree_rules_error");
    const { el, model, answer } = renderTree(concrete.original);
    const before = audit(el);
    commit(el, error.rules_text);
    expect(alertText(el)).toBe(error.error);
    expect(query(el, '[role="alert"]').getAttribute("data-source")).toBe("rules");
    expect(query<HTMLTextAreaElement>(el, '[data-role="rules-input"]').value).toBe(error.rules_text);
    expect(audit(el)).toBe(before);
    // Python puts the rules in force (none) back in the trait beside its error.
    answer(model.editSeqs[0], { rules_text: "", error: error.error, error_source: error.error_source });
    expect(query<HTMLTextAreaElement>(el, '[data-role="rules-input"]').value).toBe(error.rules_text);
    expect(alertText(el)).toBe(error.error);
    expect(muted.warn).not.toHaveBeenCalled();
  });

  it("takes Python's answer where the two differ, and says so on the console", () => {
    const { el, model, answer } = renderTree(concrete.original);
    commit(el, edit.rules_text);
    answer(model.editSeqs[0], { ...applied(edit), notice: "the kernel says otherwise." });
    expect(notice(el)).toBe("the kernel says otherwise.");
    expect(muted.warn).toHaveBeenCalledTimes(1);
  });

  it("waits for Python when it does not know the tree the rules apply to (a widget made with rules)", () => {
    const ruled = loadTreeFixture("tree_concrete");
    const { el, model, answer } = renderTree(ruled);
    const before = notice(el);
    commit(el, edit.rules_text);
    expect(notice(el)).toBe(before);
    answer(model.editSeqs[0], applied(edit));
    expect(notice(el)).toBe(edit.notice);
  });

  it("sends rules equal to the kernel's while a later rules edit is unanswered", () => {
    const ruled = loadTreeFixture("tree_concrete");
    const inForce = ruled.rules_text ?? "";
    const other = concrete.edits.find((e) => e.status === "applied" && e.rules_text !== inForce)?.rules_text;
    if (!inForce || !other) throw new Error("the fixtures lack two different rule sets for the concrete tree");
    const { el, model, answer } = renderTree(ruled);
    commit(el, other);
    commit(el, inForce);
    // Python answers the first edit: its rules are `other` now, and the edit back is on its way.
    answer(model.editSeqs[0], { rules_text: other });
    commit(el, other); // must reach the kernel, or it would end at the edit before
    expect(model.saved).toEqual([{ rules_text: other }, { rules_text: inForce }, { rules_text: other }]);
    answer(model.editSeqs[2], { rules_text: other });
    commit(el, other); // nothing in flight now: the rules in force again change nothing
    expect(model.saved).toHaveLength(3);
  });

  it("clears the rules locally, back to the tree as given", () => {
    const { el, model, answer } = renderTree(concrete.original);
    const plain = audit(el);
    commit(el, edit.rules_text);
    answer(model.editSeqs[0], applied(edit));
    commit(el, "");
    expect(audit(el)).toBe(plain);
    expect(notice(el)).toBe("");
  });
});
