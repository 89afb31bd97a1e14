import { describe, expect, it } from "vitest";
import { dtypePrefix, formatTypeStr } from "./typeStr";

describe("the type string's parts", () => {
  it("takes the dtype as what precedes the dimensions, less a <host> mark", () => {
    expect(dtypePrefix("float32[8@x,8]")).toBe("float32");
    expect(dtypePrefix("~float32<host>[8]")).toBe("~float32");
    expect(dtypePrefix("float32")).toBe("float32"); // no dimensions: the whole text
    expect(dtypePrefix("[8]")).toBe("");
  });

  it("leaves the dimensions a short spec does not name whole, as jax.typeof prints P('x') on a matrix", () => {
    expect(formatTypeStr("float32", "device", [8, 16], [["x"]], ["x"], ["Explicit"])).toBe("float32[8@x,16]");
    expect(formatTypeStr("bf16", "pinned_host", [8], [["x", "y"]], ["x", "y"], ["Explicit", "Auto"])).toBe(
      "bf16<host>[8@x]",
    );
  });
});
