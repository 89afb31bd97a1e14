import { describe, expect, it } from "vitest";
import { loadPythonAnswers } from "../test/fixtures";
import { compressIds, formatBytes, formatIndex } from "./ranges";

describe("compressIds", () => {
  it.each([
    [[0, 1, 2, 3], "0-3"],
    [[0, 4], "0,4"],
    [[0, 1, 2, 3, 8, 9, 10, 11], "0-3,8-11"],
    [[11, 10, 9, 8, 3, 2, 1, 0], "0-3,8-11"],
    [[5], "5"],
    [[4, 5], "4,5"],
    [[0, 1, 2, 2, 7], "0-2,7"],
    [[], ""],
    [[0, 1, 2, 3, 2048, 2049, 2050, 2051], "0-3,2048-2051"],
  ])("%j -> %s", (ids, text) => {
    expect(compressIds(ids)).toBe(text);
  });
});

describe("formatting", () => {
  it("writes index blocks like Python slices", () => {
    expect(
      formatIndex([
        [0, 2],
        [4, 8],
      ]),
    ).toBe("[0:2, 4:8]");
    expect(formatIndex([])).toBe("[]");
  });
  it("rounds as Python's format_bytes does, ties to even", () => {
    const cases = loadPythonAnswers().format_bytes;
    expect(cases.map(([count]) => [count, formatBytes(count)])).toEqual(cases);
    expect(cases.some(([, text]) => text === "52 MiB")).toBe(true); // 52.5 MiB: toFixed alone says 53
  });
  it("writes byte counts", () => {
    expect(formatBytes(16)).toBe("16 B");
    expect(formatBytes(4096)).toBe("4.0 KiB");
    expect(formatBytes(3 * 1024 * 1024)).toBe("3.0 MiB");
  });
});
