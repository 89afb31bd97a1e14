import { describe, expect, it } from "vitest";
import { loadParity } from "../../test/parity";
import { pyRepr, pyStrip, pyTuple, withThousands } from "./pytext";

// Python's own answers, written by tests/make_engine_parity_fixtures.py.
const python = loadParity().python_text;

describe("Python's text forms", () => {
  it("writes repr() of every character and string Python wrote", () => {
    expect(python.repr.length).toBeGreaterThan(600);
    const wrong = python.repr.filter(([text, repr]) => pyRepr(text) !== repr);
    expect(wrong.map(([text, repr]) => `${JSON.stringify(text)}: ${pyRepr(text)} != ${repr}`)).toEqual([]);
  });

  it("strips what str.strip() strips", () => {
    const wrong = python.strip.filter(([text, stripped]) => pyStrip(text) !== stripped);
    expect(wrong.map(([text]) => JSON.stringify(text))).toEqual([]);
  });

  it("writes tuples and thousands as Python does", () => {
    expect([pyTuple([]), pyTuple(["1"]), pyTuple(["1", "2"])]).toEqual(["()", "(1,)", "(1, 2)"]);
    expect([withThousands(999), withThousands(1_048_577), withThousands(10n ** 22n)]).toEqual([
      "999",
      "1,048,577",
      "10,000,000,000,000,000,000,000",
    ]);
    // f"{n:,}" of zero and of negatives, as Python writes them.
    expect([withThousands(0), withThousands(-5), withThousands(-1_234_567), withThousands(-(10n ** 6n))]).toEqual([
      "0",
      "-5",
      "-1,234,567",
      "-1,000,000",
    ]);
  });

  it("escapes the last code point of the basic plane as repr() does, and keeps printable ones", () => {
    // repr("\uffff") == "'\\uffff'" (a noncharacter); repr("\u0100") == "'\u0100'"; repr("\x7f") == "'\\x7f'".
    expect([pyRepr("\uffff"), pyRepr("\u0100"), pyRepr("\x7f"), pyRepr("\x01")]).toEqual([
      "'\\uffff'",
      "'\u0100'",
      "'\\x7f'",
      "'\\x01'",
    ]);
  });
});
