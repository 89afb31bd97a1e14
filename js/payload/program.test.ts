/**
 * Reading the program payload: every fixture (real compiles) decodes; each
 * collective's device groups, read through the payload's assignment and
 * device columns, are the groups JAX's own compiled module gives (device
 * ids, tests/program_js_fixtures.py `hlo_collectives`), including on a mesh
 * whose devices are not in id order; values inside a scan body belong under
 * the listing line that calls the scan. Malformed payloads are refused with
 * a message naming what is wrong.
 */

import { describe, expect, it } from "vitest";
import { loadProgram, PROGRAM_NAMES, programTruth, pythonValues } from "../test/programFixtures";
import { PayloadError } from "./array";
import { decodeProgram, decodeValueKeys, lineLabel, type ProgramPayload, specText } from "./program";

const sortedGroups = (groups: number[][]): string =>
  JSON.stringify(groups.map((g) => [...g].sort((a, b) => a - b)).sort((a, b) => a[0] - b[0]));

describe("decoding a program payload", () => {
  for (const name of PROGRAM_NAMES) {
    it(`places ${name}'s collective groups on the devices JAX's compiled module names`, () => {
      const program = decodeProgram(loadProgram(name));
      const truth = programTruth(name);
      const ours = program.payload.collectives.map((c) => {
        const groups = program.groupSets[c.groups];
        if (!groups) throw new Error(`no groups for ${c.name}`);
        const ids = (k: number) => program.ids[k];
        return groups.pairs.length > 0
          ? { kind: c.kind, pairs: JSON.stringify(groups.pairs.map(([s, t]) => [ids(s), ids(t)]).sort()) }
          : { kind: c.kind, groups: sortedGroups(groups.groups.map((g) => g.map(ids))) };
      });
      const theirs = truth.collectives.map((c) =>
        c.pairs
          ? { kind: c.kind, pairs: JSON.stringify([...c.pairs].sort()) }
          : { kind: c.kind, groups: sortedGroups(c.groups ?? []) },
      );
      const key = (x: object) => JSON.stringify(x);
      expect(ours.map(key).sort()).toEqual(theirs.map(key).sort());
      // Every device of the mesh is in exactly one group (or, for a permute, the groups are connected pairs).
      for (const set of program.groupSets) {
        expect(set).not.toBeNull();
        const seen = set?.groups.flat() ?? [];
        expect(new Set(seen).size).toBe(seen.length);
      }
    });
  }

  for (const name of PROGRAM_NAMES) {
    it(`reads back each of ${name}'s values as Python's Program.values holds it`, () => {
      const program = decodeProgram(loadProgram(name));
      const { values, types, lines, files, roles, origins } = program.payload;
      const decoded = program.valueKeys.map((key, i) => {
        const type = types[values.type[i]];
        const line = lines[values.line[i]];
        return {
          key,
          label: values.label?.[i],
          type_str: type.type_str,
          spec: type.spec,
          file: line.file === null ? null : (files[line.file].split(/[\\/]/).pop() ?? null),
          line: line.line,
          listing_line: program.valueListingLine[i],
          scope: values.scope?.[i],
          pass: values.pass?.[i],
          passes: values.passes?.[i],
          role: roles[values.role[i]],
          from: origins[values.from[i]],
        };
      });
      expect(decoded).toEqual(pythonValues(name));
      expect(new Set(program.valueKeys).size).toBe(program.valueCount);
    });
  }

  it("writes a stem's repeats with their number, and a value with a stem of its own as the stem", () => {
    // by hand: `a` three times, `b` once between, `c#1` is a stem of its own (no `c` before it)
    expect(decodeValueKeys(["a", "b", "c#1"], [0, 1, 0, 2, 0])).toEqual(["a", "b", "a#1", "c#1", "a#2"]);
    // the layers' Python loop: one line's values are one stem repeated, its later passes numbered
    const keys = decodeProgram(loadProgram("layers")).valueKeys;
    expect(keys.some((k) => /#[1-9]\d*$/.test(k))).toBe(true);
  });

  it("maps partition positions through the assignment: the permuted mesh's groups are its rows", () => {
    const program = decodeProgram(loadProgram("permuted"));
    const ids = Array.from(program.ids);
    expect(ids).toEqual([5, 2, 7, 0, 3, 6, 1, 4]); // the mesh's own order, not the ids' order
    const groups = program.groupSets[0]?.groups.map((g) => g.map((k) => ids[k]));
    expect(sortedGroups(groups ?? [])).toBe(sortedGroups([ids.slice(0, 4), ids.slice(4)]));
    expect(sortedGroups(groups ?? [])).toBe(sortedGroups(programTruth("permuted").collectives[0].groups ?? []));
  });

  it("puts values of a scan body under the listing line that calls the scan", () => {
    const program = decodeProgram(loadProgram("scan_grad"));
    const { values, bodies, source } = program.payload;
    expect(bodies.map((b) => [b.primitive, b.trip_count])).toEqual([["scan", 24]]);
    const inBody = values.name.map((_, i) => i).filter((i) => values.body[i] === 0);
    expect(inBody.length).toBeGreaterThan(5);
    const callLine = source?.lines.findIndex((text) => text.includes("lax.scan(")) ?? -1;
    expect(callLine).toBeGreaterThanOrEqual(0);
    for (const i of inBody) expect(program.valueListingLine[i]).toBe((source?.first_line ?? 0) + callLine);
    // So do the loop's collectives (their own frames already lead there).
    const loop = program.payload.collectives.filter((c) => c.count === 24);
    expect(loop.length).toBeGreaterThan(0);
    for (const c of loop)
      expect(program.collectiveListingLine[program.payload.collectives.indexOf(c)]).toBe(
        (source?.first_line ?? 0) + callLine,
      );
  });

  it("puts each scan's body values under its own line when one body function is scanned twice", () => {
    const program = decodeProgram(loadProgram("two_scans"));
    const { values, bodies, source } = program.payload;
    expect(bodies.map((b) => b.primitive)).toEqual(["scan", "scan"]);
    const lineOf = (needle: string) =>
      (source?.first_line ?? 0) + (source?.lines.findIndex((text) => text.includes(needle)) ?? -1);
    const calls = [lineOf("first, _ = jax.lax.scan("), lineOf("second, _ = jax.lax.scan(")];
    expect(bodies.map((b) => b.line)).toEqual(calls);
    bodies.forEach((_, b) => {
      const inside = values.name.map((_, i) => i).filter((i) => values.body[i] === b);
      expect(inside.length).toBeGreaterThan(0);
      for (const i of inside) expect(program.valueListingLine[i]).toBe(calls[b]);
    });
  });

  it("puts a shard_map body's values under the line that calls shard_map", () => {
    const program = decodeProgram(loadProgram("shard_map"));
    const { values, origins, source } = program.payload;
    const call = (source?.first_line ?? 0) + (source?.lines.findIndex((text) => text.includes("jax.shard_map(")) ?? -1);
    const manual = values.name.map((_, i) => i).filter((i) => origins[values.from[i]] === "manual");
    expect(manual.length).toBeGreaterThan(0);
    for (const i of manual) {
      expect(program.valueListingLine[i]).toBe(call);
    }
  });

  it("names source lines and writes specs as JAX prints them", () => {
    const payload = loadProgram("mlp");
    expect(lineLabel(payload, 0, 41)).toBe("program_js_fixtures.py:41");
    expect(lineLabel(payload, null, 3)).toBe("");
    expect(specText([["x"], []])).toBe("P(x)");
    expect(specText([[], ["x", "y"]])).toBe("P(None, (x, y))");
    expect(specText([[], []])).toBe("P()");
  });

  it("refuses malformed payloads, naming what is wrong", () => {
    const good = loadProgram("mlp");
    const broken = (patch: (p: ProgramPayload) => void): ProgramPayload => {
      const copy = JSON.parse(JSON.stringify(good)) as ProgramPayload;
      patch(copy);
      return copy;
    };
    const cases: [ProgramPayload, RegExp][] = [
      [broken((p) => Object.assign(p, { version: 1 })), /version 2, got 1/],
      [broken((p) => (p.values.key_stem[0] = 99)), /value key stem 99 is out of range/],
      [broken((p) => (p.values.line[0] = 99)), /value line 99 is out of range/],
      [broken((p) => (p.values.body[0] = 99)), /value body 99 is out of range/],
      [broken((p) => p.values.type.pop()), /column type/],
      [broken((p) => (p.values.type[0] = 99)), /value type 99 is out of range/],
      [broken((p) => (p.collectives[0].groups = 7)), /group set 7/],
      [broken((p) => (p.lines[2].collectives = [])), /on no source line/],
      [broken((p) => (p.assignment = [[0, 1, 7]])), /group names partition 7/],
      [broken((p) => p.mesh?.sizes.splice(0, 1, 3)), /mesh holds 12 devices but the payload lists 8/],
    ];
    for (const [payload, message] of cases) {
      expect(() => decodeProgram(payload)).toThrow(PayloadError);
      expect(() => decodeProgram(payload)).toThrow(message);
    }
  });
});
