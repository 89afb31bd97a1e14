/**
 * A text editor after a refusal (issue 19.2): its status line and
 * `aria-invalid` judge the text in the box now, not the text Python refused.
 */

import { describe, expect, it } from "vitest";
import { TextEditor } from "./textEditor";

function editor(): { box: TextEditor; sent: string[] } {
  const sent: string[] = [];
  const box = new TextEditor({
    role: "spec-input",
    source: "spec",
    label: "spec",
    placeholder: "",
    disabled: false,
    current: () => "x, y",
    send: (text) => sent.push(text),
    signal: new AbortController().signal,
  });
  document.body.append(box.field, box.status);
  return { box, sent };
}

const type = (input: HTMLInputElement, text: string): void => {
  input.value = text;
  input.dispatchEvent(new Event("input"));
};
const press = (input: HTMLInputElement, key: string): void => {
  input.dispatchEvent(new KeyboardEvent("keydown", { key }));
};

describe("a text editor after a refusal", () => {
  it("shows the error only while the box holds the refused text", () => {
    const { box, sent } = editor();
    const alert = () => box.status.querySelector('[role="alert"]');
    box.input.focus();
    type(box.input, "zz");
    press(box.input, "Enter");
    expect(sent).toEqual(["zz"]);
    box.sync({ error: "Cannot read the spec 'zz'", notice: "" });
    expect(alert()?.textContent).toBe("Cannot read the spec 'zz'");
    expect(box.input.getAttribute("aria-invalid")).toBe("true");

    type(box.input, "None, x");
    expect(alert()).toBeNull();
    expect(box.input.hasAttribute("aria-invalid")).toBe(false);
    // The hint under the fix says what was refused and what Esc goes back to, not only the keys.
    expect(box.status.querySelector('[data-role="draft-hint"]')?.textContent).toBe(
      `"zz" was refused: Cannot read the spec 'zz' \u00b7 Enter applies, Esc reverts to "x, y"`,
    );
    box.sync({ error: "Cannot read the spec 'zz'", notice: "" }); // another trait change, same answer
    expect(alert()).toBeNull();

    type(box.input, "zz");
    expect(alert()).not.toBeNull();
    press(box.input, "Escape");
    expect(box.input.value).toBe("x, y");
    expect(alert()).toBeNull();
    expect(box.input.hasAttribute("aria-invalid")).toBe(false);
    box.sync({ error: "Cannot read the spec 'zz'", notice: "" });
    expect(alert()).toBeNull();
  });
});
