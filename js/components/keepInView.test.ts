import { describe, expect, it } from "vitest";
import { sideOffset } from "./keepInView";

describe("where the map and the inspector go while the pictures scroll", () => {
  // Pictures from y=-600 to y=900 (scrolled past their top), the window showing 90..1070.
  const frame = { top: -600, bottom: 900 };
  const band = { top: 90, bottom: 1070 };

  it("beside a tall grid: down to the top of what shows, never past the pictures' end", () => {
    expect(sideOffset(frame, { top: -600, bottom: -200 }, band, true)).toBe(690);
    expect(sideOffset({ top: -1200, bottom: 300 }, { top: -1200, bottom: -800 }, band, true)).toBe(1100);
    // Its own place in view: it stays there.
    expect(sideOffset({ top: 200, bottom: 1700 }, { top: 200, bottom: 600 }, band, true)).toBe(0);
  });

  it("under the grid: up to the bottom of what shows, never above the pictures' top", () => {
    // Its place is below the window: raised so that its bottom meets the window's.
    expect(sideOffset({ top: 100, bottom: 1600 }, { top: 1200, bottom: 1600 }, band, false)).toBe(-530);
    // Raised at most to the pictures' top.
    expect(sideOffset({ top: 100, bottom: 600 }, { top: 300, bottom: 600 }, { top: 0, bottom: 200 }, false)).toBe(-200);
    // Its place is in view: it stays there.
    expect(sideOffset({ top: -900, bottom: 600 }, { top: 200, bottom: 600 }, band, false)).toBe(0);
  });
});
