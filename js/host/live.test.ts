import { describe, expect, it, vi } from "vitest";
import type { Payload } from "../payload/array";
import { loadFixture } from "../test/fixtures";
import { findCase } from "../test/parity";
import { fakeFramesAndMutedWarnings, query, renderWidget, sendWaitingEdits, sent } from "../test/render";
import { payloadTraits, type SyncedTraits } from "../traits/array";
import { RENDER_MEASURE } from "../util/measure";
import { arrayEngine } from "./engines";

const renders = (): number => performance.getEntriesByName(RENDER_MEASURE).length;

/** The traits Python publishes with a payload it accepted. */
function accepted(payload: Payload, notice = ""): Partial<SyncedTraits> {
  return {
    spec_text: payload.spec_text,
    mesh_text: payload.mesh_text,
    memory_kind: payload.memory_kind,
    payload,
    error: "",
    error_source: "",
    notice,
  };
}

function commitText(el: HTMLElement, role: "spec-input" | "mesh-input", text: string): void {
  const input = query<HTMLInputElement>(el, `[data-role="${role}"]`);
  input.focus();
  input.value = text;
  input.dispatchEvent(new Event("input"));
  input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
}

/** The kernel's answer to `text` from `start`, where it agrees with the browser's. */
function agreeing(start: Payload, text: string, code?: string): Partial<SyncedTraits> {
  const answer = arrayEngine(true).answer(payloadTraits(start), "spec_text", text) as SyncedTraits;
  return code === undefined ? answer : { ...answer, payload: { ...(answer.payload as Payload), code } };
}

const typeLine = (el: HTMLElement): string | null => query(el, '[data-role="type"]').textContent;

describe("a live widget: the local answer first, the kernel's last", () => {
  const muted = fakeFramesAndMutedWarnings();

  it("draws an edit in the same task as the keystroke and keeps the kernel's equal answer without redrawing", () => {
    const {
      case: c,
      start,
      answer,
    } = findCase(
      (c, s) =>
        c.kernel_only === null &&
        "payload" in c.python &&
        Object.keys(c.edit).join() === "spec_text" &&
        c.edit.spec_text !== s.spec_text && // an unchanged text is no edit to send
        s.has_array &&
        s.devices.count === 8,
    );
    const after = answer as Payload;
    const { el, model } = renderWidget(start);
    const before = renders();
    commitText(el, "spec-input", c.edit.spec_text as string);
    // No message from Python yet: this is the browser's own answer.
    expect(typeLine(el)).toBe(after.type_str);
    expect(el.querySelectorAll("[data-device-id]")).toHaveLength(8);
    expect(query(el, '[data-role="code"]').textContent).toBe(after.code);
    expect(model.saved).toEqual([]); // sent once the frame is drawn
    expect(sent(model)).toEqual([{ spec_text: c.edit.spec_text }]);
    expect(model.editSeqs).toEqual([1]);
    expect(renders()).toBe(before + 1);

    model.answer(1, accepted(after, "notice" in c.python ? c.python.notice : ""));
    expect(muted.warn).not.toHaveBeenCalled();
    expect(renders()).toBe(before + 1); // the same picture: nothing redrawn
    expect(typeLine(el)).toBe(after.type_str);
  });

  it("shows a refusal beside its control at once, in the kernel's words", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    commitText(el, "spec-input", "x, x");
    const alert = query(el, '[role="alert"]');
    expect(alert.getAttribute("data-source")).toBe("spec");
    expect(alert.textContent).toBe(
      "axis 'x' is used twice, by dimension 0 and dimension 1; each mesh axis can split at most one dimension",
    );
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
    model.answer(1, { spec_text: "x, y", error: alert.textContent ?? "", error_source: "spec" });
    expect(muted.warn).not.toHaveBeenCalled();
    // The same alert element: not drawn again (it would be announced again).
    expect(query(el, '[role="alert"]')).toBe(alert);
  });

  it("logs a disagreement with both answers, and shows the kernel's", () => {
    const start = loadFixture("mesh2x4_xy");
    const { el, model } = renderWidget(start);
    commitText(el, "spec-input", "y, x");
    expect(typeLine(el)).toBe("float32[4@y,8@x]");
    // A kernel that refused (say, the array was deleted meanwhile).
    model.answer(1, {
      spec_text: "x, y",
      error: "the array behind this widget has been deleted",
      error_source: "spec",
    });
    expect(muted.warn).toHaveBeenCalledTimes(1);
    const [text, detail] = muted.warn.mock.calls[0] as [string, { browser: SyncedTraits; kernel: SyncedTraits }];
    expect(text).toContain("the kernel's answer stays");
    expect((detail.browser.payload as Payload).type_str).toBe("float32[4@y,8@x]");
    expect(detail.kernel.error).toBe("the array behind this widget has been deleted");
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
    expect(query(el, '[role="alert"]').textContent).toBe("the array behind this widget has been deleted");
  });

  it("waits for the kernel on an edit only it can judge, and on every edit after it", () => {
    const start = loadFixture("mesh2x4_xy"); // a real array: moving its memory is the kernel's to do
    const { el, model } = renderWidget(start);
    const select = query<HTMLSelectElement>(el, '[data-role="memory-kind"]');
    select.value = "pinned_host";
    select.dispatchEvent(new Event("change"));
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
    commitText(el, "spec-input", "y, x");
    expect(typeLine(el)).toBe("float32[4@x,8@y]"); // its starting point is the kernel's answer, not known yet
    expect(sent(model)).toEqual([{ memory_kind: "pinned_host" }, { spec_text: "y, x" }]);
    model.answer(1, accepted({ ...start, memory_kind: "pinned_host", type_str: "float32<host>[4@x,8@y]" }));
    expect(typeLine(el)).toBe("float32<host>[4@x,8@y]");
    model.answer(2, accepted({ ...start, memory_kind: "pinned_host", type_str: "float32<host>[4@y,8@x]" }));
    expect(typeLine(el)).toBe("float32<host>[4@y,8@x]");
    expect(muted.warn).not.toHaveBeenCalled();
  });

  it("starts an edit from the local answer to the one before, and shows its notice", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    commitText(el, "mesh-input", "a=2, b=4");
    expect(query(el, '[data-role="notice"]').textContent).toBe(
      "The spec changed with the mesh: dimension 0: axis 'x' is now 'a'; dimension 1: axis 'y' is now 'b'.",
    );
    expect(typeLine(el)).toBe("float32[4@a,8@b]");
    commitText(el, "spec-input", "b");
    expect(typeLine(el)).toBe("float32[4@b,8]");
    expect(el.querySelector('[data-role="notice"]')).toBeNull();
    sendWaitingEdits();
    expect(model.editSeqs).toEqual([1, 2]);
  });

  it("sends an edit it answered once its frame is drawn, and edits in the order they were made", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    commitText(el, "spec-input", "y, x");
    expect(typeLine(el)).toBe("float32[4@y,8@x]");
    expect(model.saved).toEqual([]);
    vi.advanceTimersByTime(20); // the next frame, then the task after it
    expect(model.saved).toEqual([{ spec_text: "y, x" }]);
    commitText(el, "spec-input", "x");
    // A second edit before the first one's frame sends the first at once, then waits itself.
    commitText(el, "spec-input", "y");
    expect(model.saved).toEqual([{ spec_text: "y, x" }, { spec_text: "x" }]);
    expect(sent(model)).toEqual([{ spec_text: "y, x" }, { spec_text: "x" }, { spec_text: "y" }]);
    expect(model.editSeqs).toEqual([1, 2, 3]);
    // An edit the kernel alone can judge goes at once: nothing is drawn before its answer.
    const select = query<HTMLSelectElement>(el, '[data-role="memory-kind"]');
    select.value = "pinned_host";
    select.dispatchEvent(new Event("change"));
    expect(model.saved).toHaveLength(4);
  });

  it("keeps the newest prediction in front of a late answer to an older edit, then takes the kernel's", () => {
    const start = loadFixture("mesh2x4_xy");
    const { el, model } = renderWidget(start);
    commitText(el, "spec-input", "y, x");
    commitText(el, "spec-input", "y");
    expect(typeLine(el)).toBe("float32[4@y,8]");
    const first = agreeing(start, "y, x");
    model.answer(1, first);
    expect(typeLine(el)).toBe("float32[4@y,8]"); // edit 2 is still the kernel's to answer
    model.answer(2, agreeing(first.payload as Payload, "y", "(the kernel's code)"));
    expect(query(el, '[data-role="code"]').textContent).toBe("(the kernel's code)");
  });

  it("keeps a rename drawn while the kernel answers the edits before it (the Lab's flaky rename)", () => {
    const start = loadFixture("mesh2x4_xy");
    const { el, model } = renderWidget(start);
    commitText(el, "spec-input", "y, x");
    commitText(el, "spec-input", "x, y");
    commitText(el, "mesh-input", "x=2, model=4");
    expect(typeLine(el)).toBe("float32[4@x,8@model]");
    const first = agreeing(start, "y, x");
    model.answer(1, first);
    model.answer(2, agreeing(first.payload as Payload, "x, y"));
    expect(typeLine(el)).toBe("float32[4@x,8@model]"); // the rename is still the kernel's to answer
    const renamed = arrayEngine(true).answer(payloadTraits(start), "mesh_text", "x=2, model=4") as SyncedTraits;
    model.answer(3, renamed);
    expect(typeLine(el)).toBe("float32[4@x,8@model]");
    expect(muted.warn).not.toHaveBeenCalled();
  });

  it("keeps a prediction in front of a cell's change until the kernel answers the edit", () => {
    const start = loadFixture("mesh2x4_xy");
    const { el, model } = renderWidget(start);
    commitText(el, "spec-input", "y, x");
    model.fromPython(accepted({ ...start, spec_text: "x", type_str: "float32[4@x,8]" })); // a cell, seq unchanged
    expect(typeLine(el)).toBe("float32[4@y,8@x]");
    model.answer(1, accepted({ ...start, spec_text: "y, x", type_str: "float32[4@y,8@x]", code: "(kernel)" }));
    expect(query(el, '[data-role="code"]').textContent).toBe("(kernel)");
  });

  it("sends a burst of 200 edits as 200 numbered messages in order, and shows the last answer", () => {
    const start = loadFixture("mesh2x4_xy");
    const { el, model } = renderWidget(start);
    const texts = ["None, x", "y, x", "x, y"];
    for (let i = 0; i < 200; i++) commitText(el, "spec-input", texts[i % 3]);
    sendWaitingEdits();
    expect(model.editSeqs).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(model.saved.map((edit) => edit.spec_text)).toEqual(Array.from({ length: 200 }, (_, i) => texts[i % 3]));
    expect(typeLine(el)).toBe("float32[4@y,8@x]"); // edit 200 is "y, x", drawn at once
    let shown = start;
    for (let i = 0; i < 199; i++) {
      const answer = agreeing(shown, texts[i % 3]);
      model.answer(i + 1, answer);
      shown = answer.payload as Payload;
      expect(typeLine(el)).toBe("float32[4@y,8@x]"); // the newest prediction stays in front
    }
    const last = agreeing(shown, texts[199 % 3]).payload as Payload;
    model.answer(200, agreeing(shown, texts[199 % 3]));
    expect(typeLine(el)).toBe(last.type_str);
    expect(query(el, '[data-role="code"]').textContent).toBe(last.code);
    expect(muted.warn).not.toHaveBeenCalled();
  }, 60_000);

  it("sends a refused text again as a new edit, and keeps the refusal shown", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    const refusal = { spec_text: "x, y", error: "axis 'q' is not in the mesh", error_source: "spec" as const };
    commitText(el, "spec-input", "q");
    sendWaitingEdits();
    model.answer(1, refusal);
    commitText(el, "spec-input", "q");
    sendWaitingEdits();
    expect(model.edits.map((e) => [e.seq, e.text])).toEqual([
      [1, "q"],
      [2, "q"],
    ]);
    model.answer(2, refusal);
    expect(query(el, '[role="alert"]').textContent).toBe("axis 'q' is not in the mesh");
    expect(typeLine(el)).toBe("float32[4@x,8@y]");
  });
});
