import { describe, expect, it } from "vitest";
import { decodePayload, unravel } from "../payload/array";
import { loadFixture } from "../test/fixtures";
import { makePayload } from "../test/payloads";
import { cellFill, query, renderWidget } from "../test/render";
import { rampColor, relativeLuminance, structureColor, tileColor } from "../util/palette";
import { colouring, DISTINGUISHABLE_TILES, defaultColourMode, renderColourLegend } from "./colouring";

const INK = relativeLuminance("#1b1b1b");
const contrast = (hex: string): number => (relativeLuminance(hex) + 0.05) / (INK + 0.05);

describe("colour by structure", () => {
  it("gives each tile its own colour while tiles can be told apart", () => {
    const layout = decodePayload(loadFixture("mesh2x4_xy"));
    expect(defaultColourMode(layout)).toEqual({ kind: "tile" });
    expect(colouring(layout, { kind: "tile" }).fill(5)).toBe(tileColor(5));
  });

  it("colours 4096 tiles by their block of the most split dim: dim 1, split by (b, c)", () => {
    const layout = decodePayload(loadFixture("abstract_4096")); // float32[256@a, 4096@(b,c)]
    expect(layout.tileCount).toBeGreaterThan(DISTINGUISHABLE_TILES);
    const mode = defaultColourMode(layout);
    expect(mode).toEqual({ kind: "dim", dim: 1 });
    const { fill } = colouring(layout, mode);
    // The same colour down every a, a different one for every (b, c): a does not split dim 1, b and c do.
    const fillAt = (a: number, b: number, c: number) => fill(layout.tileOf[(a * 16 + b) * 16 + c]);
    expect(new Set(Array.from({ length: 16 }, (_, a) => fillAt(a, 3, 5))).size).toBe(1);
    for (let b = 0; b < 16; b++)
      for (let c = 0; c < 16; c++) expect(fillAt(0, b, c)).toBe(structureColor(b * 16 + c, 256));
    // Sixteen clearly different colours along b (c = 0).
    expect(new Set(Array.from({ length: 16 }, (_, b) => fillAt(0, b, 0))).size).toBe(16);
    // Major first: a step of b changes the colour more than a step of c.
    const lum = (b: number, c: number) => relativeLuminance(fillAt(0, b, c));
    let alongB = 0;
    let alongC = 0;
    for (let b = 0; b < 15; b++) {
      for (let c = 0; c < 15; c++) {
        alongB += Math.abs(lum(b + 1, c) - lum(b, c));
        alongC += Math.abs(lum(b, c + 1) - lum(b, c));
      }
    }
    expect(alongB).toBeGreaterThan(alongC * 8);
    for (let t = 0; t < layout.tileCount; t += 97) {
      expect(fill(t)).toBe(structureColor(unravel(t, layout.tileCounts)[1], 256));
    }
  });

  it("colours each tile by its block of the chosen dim, whichever dim of three", () => {
    const payload = makePayload({
      names: ["a", "b", "c"],
      sizes: [2, 3, 4],
      shape: [8, 9, 16],
      spec: [["a"], ["b"], ["c"]],
    });
    const layout = decodePayload(payload);
    expect(layout.tileCounts).toEqual([2, 3, 4]);
    for (const dim of [0, 1, 2]) {
      const { fill } = colouring(layout, { kind: "dim", dim });
      for (let t = 0; t < layout.tileCount; t++) {
        expect(fill(t)).toBe(structureColor(unravel(t, layout.tileCounts)[dim], layout.tileCounts[dim]));
      }
    }
  });

  it("colours 256 devices of P('data', 'tensor') by tensor, one colour per column of the mesh", () => {
    const { el } = renderWidget(loadFixture("abstract_256"));
    expect(query<HTMLSelectElement>(el, '[data-role="colour-by"]').value).toBe("dim:1");
    const colourOf = (id: number) => cellFill(query(el, `[data-device-id="${id}"]`));
    // mesh (data=4, tensor=8, pipe=8): device id = (data * 8 + tensor) * 8 + pipe
    expect(colourOf(0)).not.toBe("");
    expect(colourOf(0)).toBe(colourOf(7)); // pipe does not split
    expect(colourOf(0)).toBe(colourOf(64)); // nor does data, for dim 1
    expect(colourOf(0)).not.toBe(colourOf(8)); // tensor does
    expect(query(el, '[data-role="colour-legend"]').textContent).toContain("split by tensor");
  });

  it("lets the user colour by tile or another dim, in both pictures", () => {
    const { el } = renderWidget(loadFixture("abstract_256"));
    const select = query<HTMLSelectElement>(el, '[data-role="colour-by"]');
    expect(Array.from(select.options).map((o) => o.value)).toEqual(["tile", "dim:0", "dim:1"]);
    select.value = "dim:0";
    select.dispatchEvent(new Event("change"));
    const colourOf = (id: number) => cellFill(query(el, `[data-device-id="${id}"]`));
    expect(colourOf(0)).not.toBe("");
    expect(colourOf(0)).toBe(colourOf(8));
    expect(colourOf(0)).not.toBe(colourOf(64));
    const tile = query(el, `[data-tile="${0}"]`);
    expect(tile.style.backgroundColor).toBe(colourOf(0));
    query<HTMLSelectElement>(el, '[data-role="colour-by"]').value = "tile";
    query<HTMLSelectElement>(el, '[data-role="colour-by"]').dispatchEvent(new Event("change"));
    expect(el.querySelector('[data-role="colour-legend"]')).toBeNull();
  });

  it("says which axes split the dim, major first", () => {
    const layout = decodePayload(loadFixture("abstract_4096"));
    const legend = renderColourLegend(layout, { kind: "dim", dim: 1 });
    expect(legend?.textContent).toContain("colour = block of dim 1: 0");
    expect(legend?.textContent).toContain("255, split by b\u00a0(16) then c\u00a0(16)");
  });
});

describe("the ramp", () => {
  it("keeps dark labels readable and falls in lightness step by step", () => {
    for (const count of [2, 8, 16, 256]) {
      let last = Number.POSITIVE_INFINITY;
      for (let i = 0; i < count; i++) {
        const colour = rampColor(i, count);
        expect(contrast(colour)).toBeGreaterThanOrEqual(4.5);
        const luminance = relativeLuminance(colour);
        // Strictly darker at every step a person would compare; within rounding of it at 256 steps.
        if (count <= 16) expect(luminance).toBeLessThan(last - 0.01);
        else expect(luminance).toBeLessThan(last + 0.002);
        last = luminance;
      }
      expect(relativeLuminance(rampColor(0, count)) - relativeLuminance(rampColor(count - 1, count))).toBeGreaterThan(
        0.4,
      );
    }
  });
});

describe("structural shades (issue 19.4)", () => {
  const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  const distance = (a: string, b: string) => Math.hypot(...rgb(a).map((v, i) => v - rgb(b)[i]));

  it("keeps any two neighbouring blocks visibly apart, and dark labels readable on each", () => {
    for (const count of [16, 64, 256]) {
      for (let i = 0; i < count; i++) {
        expect(contrast(structureColor(i, count))).toBeGreaterThanOrEqual(4.5);
        if (i + 1 < count) expect(distance(structureColor(i, count), structureColor(i + 1, count))).toBeGreaterThan(20);
      }
    }
  });

  it("colours neighbouring blocks of the 4096-device what-if apart, where the plain ramp made them one colour", () => {
    const layout = decodePayload(loadFixture("abstract_4096"));
    const { fill } = colouring(layout, { kind: "dim", dim: 1 });
    const fillAt = (b: number, c: number) => fill(layout.tileOf[b * 16 + c]);
    for (let c = 0; c < 15; c++) expect(distance(fillAt(3, c), fillAt(3, c + 1))).toBeGreaterThan(20);
    // Why: on the plain ramp neighbours are 1/255 of it apart, too close to tell.
    expect(distance(rampColor(50, 256), rampColor(51, 256))).toBeLessThan(5);
  });
});
