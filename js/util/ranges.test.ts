import { describe, expect, it } from "vitest";
import { loadPythonAnswers } from "../test/fixtures";
import { compressIds, formatBytes, formatIndex, formatSeconds } from "./ranges";

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
  it("writes times as Python's format_seconds does: the unit that fits, three figures, ties to even", () => {
    const cases = loadPythonAnswers().format_seconds;
    expect(cases.map(([seconds]) => [seconds, formatSeconds(seconds)])).toEqual(cases);
    // By hand: 1.39e-10 s is 139 ps; 999.96 µs rounds to 1000 µs, so it is 1 ms; 2.125 s is a tie, to even.
    expect(formatSeconds(1.3887884267631104e-10)).toBe("139 ps");
    expect(formatSeconds(999.96e-6)).toBe("1 ms");
    expect(formatSeconds(2.125)).toBe("2.12 s");
    expect(formatSeconds(52e-6)).toBe("52 \u00b5s");
    // Python's str() of the floats JSON cannot carry.
    expect([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY].map(formatSeconds)).toEqual([
      "nan",
      "inf",
      "-inf",
    ]);
  });
  it("writes byte counts", () => {
    expect(formatBytes(16)).toBe("16 B");
    expect(formatBytes(4096)).toBe("4.0 KiB");
    expect(formatBytes(3 * 1024 * 1024)).toBe("3.0 MiB");
    expect(formatBytes(5 * 1024 ** 3)).toBe("5.0 GiB");
    expect(formatBytes(3 * 1024 ** 4)).toBe("3.0 TiB");
  });
});
