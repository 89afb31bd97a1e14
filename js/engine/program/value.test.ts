/**
 * Parity with Python, byte for byte: every value of the fixture programs
 * (real compiles: Auto and Explicit axes, a scan and its gradient, a
 * shard_map, a mesh whose devices are not in id order, hostile axis names)
 * that has a known sharding is laid out in the browser exactly as Python's
 * `describe` lays out an array of that shape, dtype and sharding
 * (js/fixtures/program_value_parity.json, tests/program_js_fixtures.py).
 * Values whose sharding is unknown say so with Python's reason.
 */

import { describe, expect, it } from "vitest";
import type { Payload } from "../../payload/array";
import { decodeProgram, type ProgramPayload } from "../../payload/program";
import { loadJson } from "../../test/treeFixtures";
import { programDeviceGrid, valueLayout } from "./value";

const NAMES = [
  "mlp",
  "scan_grad",
  "two_scans",
  "shard_map",
  "explicit",
  "permuted",
  "single_device",
  "hostile",
] as const;
const parity = loadJson<Record<string, (Payload | null)[]>>("program_value_parity");

describe("a program value's layout from the program payload", () => {
  for (const name of NAMES) {
    it(`equals Python's describe for every value of ${name} with a known sharding`, () => {
      const program = decodeProgram(loadJson<ProgramPayload>(`program_${name}`));
      const expected = parity[name];
      expect(expected).toHaveLength(program.valueCount);
      let local = 0;
      expected.forEach((want, i) => {
        const got = valueLayout(program, i);
        if (want !== null) {
          expect(got.status, `value ${program.payload.values.name[i]}`).toBe("local");
          if (got.status === "local") expect(JSON.stringify(got.payload)).toBe(JSON.stringify(want));
          local++;
        } else {
          expect(got.status).not.toBe("local");
        }
      });
      if (name !== "single_device") expect(local).toBeGreaterThan(0);
    });
  }

  it("says why a value's sharding is unknown, in Python's words", () => {
    const program = decodeProgram(loadJson<ProgramPayload>("program_shard_map"));
    const manual = program.payload.origins.indexOf("manual");
    const i = program.payload.values.from.indexOf(manual);
    const got = valueLayout(program, i);
    expect(got).toEqual({ status: "unknown", reason: program.payload.notes[program.payload.values.note[i]] });
    expect(got.status === "unknown" && got.reason).toContain("shard_map");
  });

  it("names the device of a program without a mesh instead of drawing a mesh", () => {
    const program = decodeProgram(loadJson<ProgramPayload>("program_single_device"));
    expect(program.payload.mesh).toBeNull();
    expect(programDeviceGrid(program)).toBeNull();
    const got = valueLayout(program, 0);
    expect(got).toEqual({ status: "no-mesh", deviceIds: [3] });
  });

  it("lays the mesh's devices out one block each, in the mesh's own device order", () => {
    const program = decodeProgram(loadJson<ProgramPayload>("program_permuted"));
    const grid = programDeviceGrid(program);
    expect(grid?.devices.tile).toEqual([[0, 1, 8]]);
    expect(grid?.devices.id).toEqual(program.payload.devices?.id);
    expect(grid?.mesh?.names).toEqual(["x", "y"]);
  });
});
