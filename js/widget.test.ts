import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { loadFixture } from "./test/fixtures";
import { makePayload } from "./test/payloads";
import { expectCleansUp, query, renderWidget, sent } from "./test/render";
import { RENDER_MEASURE } from "./util/measure";

const renders = () => performance.getEntriesByName(RENDER_MEASURE).length;
/** float32[4,8] on x=2, y=4 with P('y', 'x'), as Python would send it. */
const swapped = () => makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [4, 8], spec: [["y"], ["x"]] });

describe("widget entry", () => {
  beforeEach(() => performance.clearMeasures());

  it("renders both pictures, the type line and the editors from the payload", () => {
    const { el } = renderWidget(loadFixture("mesh2x4_xy"));
    expect(el.querySelectorAll("[data-device-id]")).toHaveLength(8);
    expect(el.querySelectorAll("[data-tile]")).toHaveLength(8);
    expect(query(el, '[data-role="type"]').textContent).toBe("float32[4@x,8@y]");
    expect(query<HTMLInputElement>(el, '[data-role="mesh-input"]').value).toBe("x=2, y=4");
    expect(query<HTMLInputElement>(el, '[data-role="spec-input"]').value).toBe("x, y");
    const kinds = query<HTMLSelectElement>(el, '[data-role="memory-kind"]');
    expect(Array.from(kinds.options).map((o) => o.value)).toEqual(["device", "pinned_host", "unpinned_host"]);
    expect(kinds.value).toBe("device");
    expect(query(el, '[data-role="code"]').textContent).toContain("NamedSharding(layout_mesh, P('x', 'y'))");
    expect(el.querySelector('[role="alert"]')).toBeNull();
  });

  it("says in drawn_seq which of its edits the kernel answered, once each, and nothing for a cell's change", () => {
    vi.useFakeTimers();
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
    input.focus();
    input.value = "y, x";
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(sent(model)).toEqual([{ spec_text: "y, x" }]);
    expect(model.drawnSeqs).toEqual([]);
    model.fromPython({ notice: "a cell changed it" }); // no edit of this page answered
    expect(model.drawnSeqs).toEqual([]);
    const seq = model.editSeqs[0];
    model.answer(seq, { spec_text: "y, x", payload: swapped() });
    expect(model.drawnSeqs).toEqual([seq]);
    model.fromPython({ notice: "" }); // the same answer number again
    expect(model.drawnSeqs).toEqual([seq]);
    model.answer(seq + 5); // a number this page never sent
    expect(model.drawnSeqs).toEqual([seq]);
  });

  it("shows a placeholder before Python sends a payload", () => {
    const { el, model } = renderWidget({});
    expect(el.textContent).toContain("Nothing to show yet");
    model.fromPython({ payload: loadFixture("mesh2x4_xy") });
    expect(el.querySelectorAll("[data-device-id]")).toHaveLength(8);
  });

  it("measures every render and skips a payload that did not change", () => {
    const { model } = renderWidget(loadFixture("mesh2x4_xy"));
    expect(renders()).toBe(1);
    model.fromPython({ payload: loadFixture("mesh2x4_xy") }); // equal content, new object
    expect(renders()).toBe(1);
    model.fromPython({ payload: loadFixture("pinned_host") });
    expect(renders()).toBe(2);
  });

  it("repaints the same cells when only the tiles move, and moves them into the blocks of a new mesh", () => {
    const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
    const before = el.querySelector('[data-device-id="4"]') as HTMLElement;
    model.fromPython({ payload: loadFixture("replicated_sum") });
    const after = el.querySelector('[data-device-id="4"]') as HTMLElement;
    expect(after).toBe(before);
    expect(after.getAttribute("data-tile-of")).toBe("0");
    expect(after.querySelector(".sv-cell-tile")?.textContent).toBe("t0");
    expect(after.style.backgroundColor).toBe(
      (el.querySelector('[data-device-id="0"]') as HTMLElement).style.backgroundColor,
    );
    expect(el.querySelectorAll("[data-tile]")).toHaveLength(4);
    model.fromPython({ payload: loadFixture("mesh3axis") });
    // The same eight devices on a 2x2x2 mesh: device 4 (a=1, b=0, c=0) is the same cell, in block a = 1.
    const moved = el.querySelector('[data-device-id="4"]') as HTMLElement;
    expect(moved).toBe(before);
    const grid = el.querySelector(`[aria-owns~="${moved.id}"]`);
    expect(grid?.closest(".sv-block")?.getAttribute("aria-label")).toBe("a = 1");
    expect(el.querySelectorAll(".sv-block")).toHaveLength(2);
    expect(el.querySelectorAll("[data-device-id]")).toHaveLength(8);
  });

  it("cleans up every listener it added", () => {
    expectCleansUp(renderWidget(loadFixture("mesh2x4_xy")));
  });

  describe("editing", () => {
    beforeEach(() => vi.useFakeTimers());
    afterEach(() => vi.useRealTimers());

    it("commits nothing while the user types, however long the pause", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.focus();
      for (const text of ["y", "y,", "y, N", "y, None", ""]) {
        input.value = text;
        input.dispatchEvent(new Event("input"));
        vi.advanceTimersByTime(5000);
      }
      input.dispatchEvent(new Event("change"));
      input.blur();
      vi.advanceTimersByTime(5000);
      expect(sent(model)).toEqual([]);
    });

    it("commits on Enter, once", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const input = query<HTMLInputElement>(el, '[data-role="mesh-input"]');
      input.value = "x=4, y=2";
      input.dispatchEvent(new Event("input"));
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toEqual([{ mesh_text: "x=4, y=2" }]);
      vi.advanceTimersByTime(5000);
      expect(sent(model)).toHaveLength(1);
    });

    it("reverts to Python's text on Escape without unpinning anything", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      query(el, '[data-device-id="3"]').click();
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.focus();
      input.value = "y, x";
      input.dispatchEvent(new Event("input"));
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
      expect(input.value).toBe("x, y");
      expect(sent(model)).toEqual([]);
      expect(query(el, '[data-role="pin-bar"]').textContent).toContain("Device 3");
    });

    it("says what a typed spec would give each device before it is sent", () => {
      const { el } = renderWidget(loadFixture("mesh2x4_xy")); // float32[4,8], 16 B per device
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.focus();
      input.value = "x";
      input.dispatchEvent(new Event("input"));
      expect(query(el, '[data-status-for="spec-input"]').textContent).toContain("per device: 64 B (now 16 B)");
      expect(el.querySelector('[role="alert"]')).toBeNull();
    });

    describe("an edit that would replicate a large array", () => {
      // float32[8192, 8192] over 2 x 4 devices: 32 MiB each now.
      const big = () => makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [8192, 8192], spec: [["x"], ["y"]] });
      const type = (el: HTMLElement, text: string) => {
        const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
        input.focus();
        input.value = text;
        input.dispatchEvent(new Event("input"));
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
        return input;
      };

      it("asks first, saying what each device would hold, and goes ahead on a second Enter", () => {
        const { el, model } = renderWidget(big());
        const input = type(el, ""); // replicate: 256 MiB on every device
        expect(sent(model)).toEqual([]);
        const confirm = query(el, '[data-role="confirm"]');
        expect(confirm.textContent).toContain("Each device would hold 256 MiB (now 32 MiB, 8\u00d7)");
        expect(query(el, '[data-role="spec-input"]').closest(".sv-editor")?.contains(confirm)).toBe(true);
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
        expect(sent(model)).toEqual([{ spec_text: "" }]);
      });

      it("goes ahead with the Apply button, and Escape cancels", () => {
        const { el, model } = renderWidget(big());
        const input = type(el, "x");
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
        expect(el.querySelector('[data-role="confirm"]')).toBeNull();
        expect(input.value).toBe("x, y");
        type(el, "x");
        query(el, '[data-role="confirm-edit"]').click();
        expect(sent(model)).toEqual([{ spec_text: "x" }]);
      });

      it("asks again when the text changes, and asks for structured edits too", () => {
        const { el, model } = renderWidget(big());
        const input = type(el, "x");
        input.value = "";
        input.dispatchEvent(new Event("input"));
        expect(el.querySelector('[data-role="confirm"]')).toBeNull();
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
        expect(sent(model)).toEqual([]);
        expect(query(el, '[data-role="confirm"]').textContent).toContain("256 MiB");
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
        query(el, '[aria-label="remove y from dim 1"]').click();
        expect(sent(model)).toEqual([]);
        expect(query(el, '[data-role="confirm"]').textContent).toContain("128 MiB");
        query(el, '[data-role="confirm-edit"]').click();
        expect(sent(model)).toEqual([{ spec_text: "x" }]);
      });

      it("does not ask for an edit that keeps the share, nor for a what-if", () => {
        const { el, model } = renderWidget(big());
        type(el, "y, x");
        expect(sent(model)).toEqual([{ spec_text: "y, x" }]);
        const whatIf = renderWidget({ ...big(), has_array: false });
        type(whatIf.el, "");
        expect(sent(whatIf.model)).toEqual([{ spec_text: "" }]);
      });
    });

    it("shows an error beside the control that caused it and keeps the last picture", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      model.fromPython({ error: "spec names axis 'q', which the mesh does not have", error_source: "spec" });
      const alert = query(el, '[role="alert"]');
      expect(alert.textContent).toBe("spec names axis 'q', which the mesh does not have");
      const specEditor = query(el, '[data-role="spec-input"]').closest(".sv-editor");
      expect(specEditor?.contains(alert)).toBe(true);
      expect(query(el, '[data-role="spec-input"]').getAttribute("aria-invalid")).toBe("true");
      expect(el.querySelectorAll("[data-device-id]")).toHaveLength(8);
      model.fromPython({ error: "", error_source: "" });
      expect(el.querySelector('[role="alert"]')).toBeNull();
    });

    it("puts a mesh error beside the mesh editor", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      model.fromPython({ error: "the mesh needs 8 devices", error_source: "mesh" });
      expect(
        query(el, '[data-role="mesh-input"]').closest(".sv-editor")?.querySelector('[role="alert"]'),
      ).not.toBeNull();
    });

    it("never saves from inside a change handler", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      model.fromPython({ spec_text: "y", payload: loadFixture("replicated_sum"), memory_kind: "pinned_host" });
      model.fromPython({ error: "bad", error_source: "memory_kind" });
      expect(model.savesInsideChangeHandlers).toBe(0);
      expect(sent(model)).toEqual([]);
      expect(query<HTMLInputElement>(el, '[data-role="spec-input"]').value).toBe("y");
    });

    it("takes Python's canonical text unless the user is still typing", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.focus();
      input.value = "P('y',";
      input.dispatchEvent(new Event("input"));
      model.fromPython({ payload: loadFixture("pinned_host") }); // another answer, same spec
      expect(input.value).toBe("P('y',");
      input.value = "P('y', 'x')";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      model.fromPython({ spec_text: "y, x", payload: swapped() });
      expect(input.value).toBe("y, x");
    });

    it("shows Python's kind beside the error of a kind it refused", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const kinds = query<HTMLSelectElement>(el, '[data-role="memory-kind"]');
      kinds.value = "pinned_host"; // a move only the kernel can make: no answer in the browser
      kinds.dispatchEvent(new Event("change"));
      expect(sent(model)).toEqual([{ memory_kind: "pinned_host" }]);
      model.answer(model.editSeqs[0], { error: "no pinned host here", error_source: "memory_kind" });
      expect(kinds.value).toBe("device");
      expect(query(el, '[data-source="memory_kind"]').textContent).toBe("no pinned host here");
    });

    it("keeps a refused typed text beside its error until it is fixed, reverted or replaced", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.focus();
      input.value = "z, x";
      input.dispatchEvent(new Event("input"));
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toEqual([{ spec_text: "z, x" }]);
      // The browser's engine answers at once, the kernel the same a moment later.
      const error = () => query(el, '[data-source="spec"]').textContent ?? "";
      expect(error()).toContain("axis 'z' is not in the mesh");
      expect(input.value).toBe("z, x");
      model.answer(model.editSeqs[0], { error: error(), error_source: "spec" });
      expect(input.value).toBe("z, x");
      expect(input.getAttribute("aria-invalid")).toBe("true");
      // Escape shows Python's text; the error stays until an edit succeeds.
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
      expect(input.value).toBe("x, y");
      input.value = "P('y', 'x')";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      model.answer(model.editSeqs[1], { spec_text: "y, x", payload: swapped(), error: "", error_source: "" });
      expect(input.value).toBe("y, x");
      expect(el.querySelector('[role="alert"]')).toBeNull();
    });

    it("shows Python's state in every editor after a refused structured edit", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const size = el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')[0];
      size.focus();
      size.value = "3";
      size.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toEqual([{ mesh_text: "x=3, y=4" }]);
      // 12 devices: only the kernel knows the machine's devices; it refuses.
      model.answer(model.editSeqs[0], { error: "the mesh x=3, y=4 needs 12 devices", error_source: "mesh" });
      const sizes = () =>
        Array.from(el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')).map((i) => i.value);
      expect(sizes()).toEqual(["2", "4"]); // the rows render from the payload
      expect(query<HTMLInputElement>(el, '[data-role="mesh-input"]').value).toBe("x=2, y=4");
      expect(query(el, '[data-source="mesh"]').textContent).toBe("the mesh x=3, y=4 needs 12 devices");
      expect(document.activeElement).toBe(el.querySelectorAll('[data-role="axis-size"]')[0]); // focus kept
      // The next structured edit composes from Python's mesh, not from the refused one.
      const types = el.querySelectorAll<HTMLSelectElement>('[data-role="axis-type"]');
      types[0].value = "Auto";
      types[0].dispatchEvent(new Event("change"));
      expect(sent(model)[1]).toEqual({ mesh_text: "x=2:auto, y=4" });
    });

    it("keeps the mesh's rows through a spec edit, showing the payload's values, and rebuilds them for a new mesh", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const names = () => Array.from(el.querySelectorAll<HTMLInputElement>('[data-role="axis-name"]'));
      const [first] = names();
      first.value = "typed, not committed";
      model.fromPython({ payload: loadFixture("replicated_sum") }); // the same mesh, another spec
      expect(names()[0]).toBe(first);
      expect(names().map((i) => i.value)).toEqual(["x", "y"]);
      expect(el.querySelectorAll('[data-role="spec-axis"]').length).toBeGreaterThan(0);
      model.fromPython({ payload: loadFixture("mesh3axis") });
      expect(names().map((i) => i.value)).toEqual(["a", "b", "c"]);
      expect(names()[0]).not.toBe(first);
    });

    it("leaves the row field being typed in alone when an answer about something else arrives", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const names = () => Array.from(el.querySelectorAll<HTMLInputElement>('[data-role="axis-name"]'));
      const second = names()[1];
      second.focus();
      second.value = "model";
      second.dispatchEvent(new Event("input"));
      // The kernel's late answer to an earlier spec edit: the same mesh, so the rows are kept.
      model.fromPython({ payload: loadFixture("replicated_sum"), notice: "" });
      expect(names()[1]).toBe(second);
      expect(second.value).toBe("model");
      expect(names()[0].value).toBe("x");
      // A new mesh rebuilds the rows; the field being typed in keeps its typing and its focus.
      model.fromPython({ payload: loadFixture("mesh3axis") });
      expect(names().map((i) => i.value)).toEqual(["a", "model", "c"]);
      expect(document.activeElement).toBe(names()[1]);
      names()[1].dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toEqual([{ mesh_text: "a=2, model=2, c=2" }]);
      // Committed: the next answer shows Python's mesh again, whatever became of the edit.
      model.answer(model.editSeqs[0], { error: "refused", error_source: "mesh" });
      expect(names().map((i) => i.value)).toEqual(["a", "b", "c"]);
    });

    it("puts a row field's typing back to Python's value on Escape, and forgets it when focus leaves", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const size = el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')[1];
      size.focus();
      size.value = "8";
      size.dispatchEvent(new Event("input"));
      size.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
      expect(size.value).toBe("4");
      size.value = "2";
      size.dispatchEvent(new Event("input"));
      size.blur(); // typing left behind is not kept: the rows show Python's state
      model.fromPython({ notice: "something else" });
      expect(size.value).toBe("4");
      expect(sent(model)).toEqual([]);
    });

    it("puts an axis type Python refused back, and a key other than Enter or Escape leaves typing as it is", () => {
      const { el, model } = renderWidget(loadFixture("auto_mesh"));
      const type = el.querySelectorAll<HTMLSelectElement>('[data-role="axis-type"]')[1];
      type.value = "Manual";
      type.dispatchEvent(new Event("change"));
      expect(sent(model)).toEqual([{ mesh_text: "x=2:auto, y=4:manual" }]);
      model.answer(model.editSeqs[0], { error: "refused", error_source: "mesh" });
      expect(el.querySelectorAll<HTMLSelectElement>('[data-role="axis-type"]')[1].value).toBe("Auto");
      const name = el.querySelectorAll<HTMLInputElement>('[data-role="axis-name"]')[0];
      name.focus();
      name.value = "rows";
      name.dispatchEvent(new Event("input"));
      name.dispatchEvent(new KeyboardEvent("keydown", { key: "Tab" }));
      model.fromPython({ notice: "an answer" });
      expect(name.value).toBe("rows");
      expect(sent(model)).toHaveLength(1);
    });

    it("keeps focus where it was when rows are rebuilt: a button off the rows, a row gone, another widget", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const other = renderWidget(loadFixture("mesh2x4_xy"));
      // Typing in the other widget's axis name is no reason to move focus into this one's rows.
      const elsewhere = other.el.querySelectorAll<HTMLInputElement>('[data-role="axis-name"]')[1];
      elsewhere.focus();
      elsewhere.value = "typed there";
      elsewhere.dispatchEvent(new Event("input"));
      model.fromPython({ payload: loadFixture("mesh3axis") });
      expect(document.activeElement).toBe(elsewhere);
      expect(el.querySelectorAll<HTMLInputElement>('[data-role="axis-name"]')[1].value).toBe("b");
      // "+ axis" sits below the rows, in no row of its own: it keeps focus through the rebuild.
      query<HTMLButtonElement>(el, '[data-role="axis-add"]').focus();
      model.fromPython({ payload: loadFixture("mesh2x4_xy") });
      expect(document.activeElement).toBe(query(el, '[data-role="axis-add"]'));
      // The third row's field had focus; the mesh that comes has two rows: nothing is focused, nothing breaks.
      model.fromPython({ payload: loadFixture("mesh3axis") });
      el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')[2].focus();
      model.fromPython({ payload: loadFixture("mesh2x4_xy") });
      expect(el.querySelectorAll('[data-role="axis-size"]')).toHaveLength(2);
      expect(el.contains(document.activeElement)).toBe(false);
      // A dimension's menu keeps focus when the spec's rows are rebuilt: the second dimension's, not the first's.
      const picker = () => el.querySelector<HTMLSelectElement>('[data-dim-row="1"] [data-role="spec-axis"]');
      const split = (spec: string[][]) => makePayload({ names: ["x", "y"], sizes: [2, 4], shape: [4, 8], spec });
      model.fromPython({ payload: split([["x"], []]) }); // y is free: both dimensions offer it
      picker()?.focus();
      model.fromPython({ payload: split([[], ["x"]]) });
      expect(picker()).not.toBeNull();
      expect(document.activeElement).toBe(picker());
    });

    it("sends Python's own text while an earlier edit is unanswered, so a burst ends in its last edit", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const size = el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')[0];
      size.value = "3";
      size.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); // 12 devices: the kernel's call
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      input.value = "y, x";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); // waits for the kernel too
      model.answer(model.editSeqs[0], { error: "the mesh x=3, y=4 needs 12 devices", error_source: "mesh" });
      // Python still holds "x, y", but the "y, x" edit is on its way: typing "x, y" again must go out.
      input.value = "x, y";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(model.saved.map((edit) => edit.spec_text ?? edit.mesh_text)).toEqual(["x=3, y=4", "y, x", "x, y"]);
      model.answer(model.editSeqs[2], { error: "", error_source: "" });
      input.value = "x, y";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toHaveLength(3); // nothing in flight: Python's own text changes nothing
    });

    it("states each edit's text, which the kernel's answer to an earlier edit may already have put in the model", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const input = query<HTMLInputElement>(el, '[data-role="spec-input"]');
      const commit = (text: string) => {
        input.value = text;
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      };
      commit("y, x");
      commit("x, y");
      // The answer to "y, x" arrives while "x, y" is on its way: the model's trait says "y, x" again.
      model.answer(model.editSeqs[0], { spec_text: "y, x" });
      commit("y, x"); // the model holds this text already, so the trait alone would not go out
      expect(model.saved.map((edit) => edit.spec_text)).toEqual(["y, x", "x, y", "y, x"]);
    });

    it("commits a per-axis size on Enter only, and Escape puts the payload's size back", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const size = el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]')[0];
      size.value = "4";
      size.dispatchEvent(new Event("input"));
      size.dispatchEvent(new Event("change"));
      size.dispatchEvent(new Event("blur"));
      expect(sent(model)).toEqual([]);
      size.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
      expect(size.value).toBe("2");
      size.value = "4";
      size.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      expect(sent(model)).toEqual([{ mesh_text: "x=4, y=4" }]);
    });

    it("shows Python's notice beside the mesh editor as a notice, not an alert", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const notice = "The spec changed with the mesh: dimension 1: dropped axis 'y', which the new mesh lacks.";
      model.fromPython({ mesh_text: "x=8", notice, payload: loadFixture("replicated_sum") });
      const shown = query(el, '[data-role="notice"]');
      expect(shown.textContent).toBe(notice);
      expect(shown.getAttribute("role")).toBe("status");
      expect(el.querySelector('[role="alert"]')).toBeNull();
      expect(query(el, '[data-role="mesh-input"]').closest(".sv-editor")?.contains(shown)).toBe(true);
      model.fromPython({ notice: "" });
      expect(el.querySelector('[data-role="notice"]')).toBeNull();
    });

    it("shows an error from a source no control owns below the editors", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      model.fromPython({ error: "shardviz failed on this edit", error_source: "internal" });
      const alert = query(el, '[role="alert"]');
      expect(alert.getAttribute("data-source")).toBe("internal");
      expect(alert.closest(".sv-editor")).toBeNull();
    });

    it("changes the memory kind", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const select = query<HTMLSelectElement>(el, '[data-role="memory-kind"]');
      select.value = "pinned_host";
      select.dispatchEvent(new Event("change"));
      expect(sent(model)).toEqual([{ memory_kind: "pinned_host" }]);
    });

    it("composes spec text from the per-dimension pickers", () => {
      const { el, model } = renderWidget(loadFixture("replicated_sum"));
      const picker = query<HTMLSelectElement>(el, '[data-role="spec-axis"][data-dim="0"]');
      expect(Array.from(picker.options).map((o) => o.value)).toEqual(["", "x"]);
      picker.value = "x";
      picker.dispatchEvent(new Event("change"));
      expect(sent(model)).toEqual([{ spec_text: "(y, x)" }]);
    });

    it("composes mesh text from the axis controls", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      const sizes = el.querySelectorAll<HTMLInputElement>('[data-role="axis-size"]');
      sizes[0].value = "4";
      sizes[0].dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      const types = el.querySelectorAll<HTMLSelectElement>('[data-role="axis-type"]');
      types[1].value = "Auto";
      types[1].dispatchEvent(new Event("change"));
      query(el, '[data-role="axis-add"]').click();
      // Each edit is drawn at once (16 devices, more than the machine's 12, are refused),
      // so the axis rows the next click acts on already show the edit before it.
      expect(sent(model)).toEqual([
        { mesh_text: "x=4, y=4" },
        { mesh_text: "x=2, y=4:auto" },
        { mesh_text: "x=2, y=4:auto, z=1" },
      ]);
    });

    it("labels the explicit view as the mesh edit it is", () => {
      const { el, model } = renderWidget(loadFixture("auto_mesh"));
      const button = query(el, '[data-role="explicit-view"]');
      expect(button.textContent).toMatch(/^Edit: /);
      button.click();
      expect(sent(model)).toEqual([{ mesh_text: "x=2, y=4" }]);
    });
  });

  describe("inspector", () => {
    it("shows a hovered device and lights up its partners in both views", () => {
      const { el } = renderWidget(loadFixture("replicated_sum"));
      query(el, '[data-device-id="4"]').dispatchEvent(new Event("pointerover", { bubbles: true }));
      const inspector = query(el, '[data-role="inspector"]');
      expect(inspector.querySelector("h3")?.textContent).toBe("Device 4");
      const text = inspector.textContent ?? "";
      // x=1: the second of the two copies over x
      for (const fact of ["cpu", "x=1 y=0", "t0 [0:2]", "(2,)", "8 B", "2 of 2 copies", "device"])
        expect(text).toContain(fact);
      const lit = Array.from(el.querySelectorAll(".sv-mesh .sv-partner")).map((c) => c.getAttribute("data-device-id"));
      expect(lit).toEqual(["0", "4"]);
      expect(el.querySelector(".sv-map .sv-partner")?.getAttribute("data-tile")).toBe("0");
    });

    it("shows a focused tile and its devices", () => {
      const { el } = renderWidget(loadFixture("replicated_sum"));
      query(el, '[data-tile="2"]').focus();
      const inspector = query(el, '[data-role="inspector"]');
      expect(inspector.querySelector("h3")?.textContent).toBe("Tile t2");
      expect(inspector.textContent).toContain("CPU 2,6");
      const lit = Array.from(el.querySelectorAll(".sv-mesh .sv-partner")).map((c) => c.getAttribute("data-device-id"));
      expect(lit).toEqual(["2", "6"]);
    });

    it("previews a device's values through a custom message", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      query(el, '[data-device-id="5"]').click();
      query(el, '[data-role="preview"]').click();
      expect(model.sent).toEqual([{ kind: "preview", device: 5, dims: [0, 1] }]);
      expect(el.textContent).toContain("Loading");
      model.message({
        kind: "preview",
        device: 5,
        values: [
          [10, 11],
          [18, 19],
        ],
        row_start: 2,
        col_start: 2,
        rows: 2,
        cols: 2,
        index: [
          [2, 4],
          [2, 4],
        ],
      });
      const table = query(el, '[data-role="preview-table"]');
      expect(Array.from(table.querySelectorAll("td")).map((td) => td.textContent)).toEqual(["10", "11", "18", "19"]);
      expect(Array.from(table.querySelectorAll("thead th")).map((th) => th.textContent)).toEqual(["", "2", "3"]);
    });

    it("shows a preview error", () => {
      const { el, model } = renderWidget(loadFixture("mesh2x4_xy"));
      query(el, '[data-device-id="1"]').click();
      query(el, '[data-role="preview"]').click();
      model.message({ kind: "preview", device: 1, error: "no array <b>here</b>" });
      expect(query(el, '[data-source="preview"]').textContent).toBe("no array <b>here</b>");
      expect(el.querySelector("b")).toBeNull();
    });

    it("offers no preview for a device another process holds", () => {
      const { el } = renderWidget(loadFixture("multiprocess"));
      query(el, '[data-device-id="2049"]').click();
      expect(el.querySelector('[data-role="preview"]')).toBeNull();
      expect(query(el, '[data-role="pin-bar"]').textContent).toContain("another process holds its values");
    });

    it("offers no preview without an array", () => {
      const { el } = renderWidget(loadFixture("abstract_4096"));
      const canvas = query(el, ".sv-mesh canvas");
      canvas.focus();
      canvas.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
      expect(query(el, '[data-role="pin-bar"]').textContent).toContain("nothing to preview");
      expect(el.querySelector('[data-role="preview"]')).toBeNull();
    });
  });
});
