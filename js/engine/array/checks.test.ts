import { describe, expect, it } from "vitest";
import { checkSpec, specRepr } from "./checks";

describe("checkSpec", () => {
  const mesh = { names: ["x", "y"], sizes: [2, 4] };

  // Issue 30.5. JAX refuses P(('x', 'y'), 'x') for its duplicate `x` when the NamedSharding is
  // built, before any shape is known (tests/test_engine_errors.py checks that against JAX).
  it("names an axis used twice before a dimension it cannot split", () => {
    expect(() => checkSpec(mesh, [["x", "y"], ["x"]], [4, 8])).toThrow(
      /^axis 'x' is used twice, by dimension 0 and dimension 1; each mesh axis can split at most one dimension$/,
    );
  });

  it("names an axis not in the mesh before a dimension it cannot split", () => {
    expect(() => checkSpec(mesh, [["x", "y"], ["z"]], [4, 8])).toThrow(/^dimension 1: axis 'z' is not in the mesh/);
  });

  it("still names an indivisible dimension when every axis is sound", () => {
    expect(() => checkSpec(mesh, [["x", "y"], null], [4, 8])).toThrow(
      /^dimension 0 has size 4, which x=2 × y=4 cannot split evenly into 8 blocks/,
    );
    expect(() => checkSpec(mesh, [["x"], ["y"]], [4, 6])).toThrow(/^dimension 1 has size 6/);
    expect(() => checkSpec(mesh, [["x"], ["y"]], [4, 8])).not.toThrow();
  });
});

describe("specRepr", () => {
  // As Python's checks write PartitionSpec(None, 'y') and PartitionSpec(('x', 'y'),): an unsplit dimension,
  // null or empty, is None, and a lone axis is a str, not a 1-tuple.
  it("writes an unsplit dimension as None however it is held", () => {
    expect(specRepr([[], ["y"]])).toBe("P(None, 'y')");
    expect(specRepr([null, ["x", "y"]])).toBe("P(None, ('x', 'y'))");
  });
});
