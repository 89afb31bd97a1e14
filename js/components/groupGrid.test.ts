import { describe, expect, it } from "vitest";
import { fitScale, memberList } from "./groupGrid";

/** The ids a legend's list names, read back as a reader would. */
function readBack(text: string): number[] {
  const stepped = /^(\d+), (\d+), (\d+), \u2026, (\d+) \(step (\d+)\)$/.exec(text);
  if (stepped) {
    const [first, , , last, step] = stepped.slice(1).map(Number);
    return Array.from({ length: (last - first) / step + 1 }, (_, i) => first + i * step);
  }
  return text.split(", ").flatMap((part) => {
    const [a, b] = part.split("-").map(Number);
    return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
}

describe("a group's device list in the legend", () => {
  it("writes an evenly spaced group by its first ids and its last, with the step (issue 30.3)", () => {
    const group = Array.from({ length: 16 }, (_, i) => 3 + 16 * i);
    expect(memberList(group)).toBe("3, 19, 35, \u2026, 243 (step 16)");
  });

  it("writes runs and single ids with spaces, so the line can wrap", () => {
    expect(memberList([8, 9, 10, 11, 0, 1, 2, 3])).toBe("0-3, 8-11");
    expect(memberList([4, 0])).toBe("0, 4");
    expect(memberList([0, 2, 4])).toBe("0, 2, 4"); // three are shorter listed
    expect(memberList([6, 0, 4, 2])).toBe("0, 2, 4, 6"); // four too: "0, 2, 4, …, 6" hid nothing
  });

  it("names exactly the group's devices, whatever they are", () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let trial = 0; trial < 300; trial++) {
      const size = 1 + random(20);
      const step = 1 + random(5);
      const even = random(2) === 0;
      const ids = even
        ? Array.from({ length: size }, (_, i) => random(4) + i * step)
        : Array.from({ length: size }, () => random(64));
      const group = even ? ids.map((_, i) => ids[0] + i * step) : ids;
      const expected = Array.from(new Set(group)).sort((a, b) => a - b);
      expect(readBack(memberList(group))).toEqual(expected);
    }
  });
});

describe("the group grid's fit", () => {
  it("scales a wide grid down to its column and never past it", () => {
    expect(fitScale(380, 470)).toBe(0.808);
    expect(470 * fitScale(380, 470)).toBeLessThanOrEqual(380);
    expect(fitScale(300, 300)).toBe(1);
  });
});
