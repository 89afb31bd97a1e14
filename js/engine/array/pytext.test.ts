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
  });
});
