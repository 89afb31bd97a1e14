import { describe, expect, it } from "vitest";
import { loadFixture } from "../test/fixtures";
import { renderWidget } from "../test/render";
import { renderTree } from "../test/renderTree";
import { loadTreeFixture } from "../test/treeFixtures";
import { h, SUPPRESS_SHORTCUTS } from "./dom";

describe("text boxes keep their keys from the notebook's shortcuts", () => {
  it("marks every input and textarea, and nothing else", () => {
    expect(h("input").getAttribute(SUPPRESS_SHORTCUTS)).toBe("true");
    expect(h("textarea").getAttribute(SUPPRESS_SHORTCUTS)).toBe("true");
    expect(h("div").hasAttribute(SUPPRESS_SHORTCUTS)).toBe(false);
    expect(h("button").hasAttribute(SUPPRESS_SHORTCUTS)).toBe(false);
  });

  it("stops a key typed in a box at the box, except Escape", () => {
    const outer = h("div");
    const box = h("textarea");
    outer.append(box);
    const reached: string[] = [];
    outer.addEventListener("keydown", (event) => reached.push(event.key));
    for (const key of ["Enter", "a", "Escape"]) box.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
    expect(reached).toEqual(["Escape"]);
  });

  it("leaves no box of the array and tree views unmarked", () => {
    const array = renderWidget(loadFixture("mesh2x4_xy"));
    const tree = renderTree(loadTreeFixture("tree_concrete_plain"));
    for (const el of [array.el, tree.el]) {
      const boxes = Array.from(el.querySelectorAll("input, textarea"));
      expect(boxes.length).toBeGreaterThan(0);
      for (const box of boxes) expect(box.getAttribute(SUPPRESS_SHORTCUTS)).toBe("true");
    }
    array.cleanup();
    tree.cleanup();
  });
});
