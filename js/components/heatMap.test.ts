import { describe, expect, it } from "vitest";
import { deviceGridPayload } from "../engine/tree/leaf";
import { decodePayload } from "../payload/array";
import { decodeTreePayload } from "../payload/tree";
import { makePayload } from "../test/payloads";
import { loadJson, loadTreeFixture } from "../test/treeFixtures";
import { heatColour } from "../util/heat";
import { ALL_KINDS, deviceValues, MemoryHeatMap } from "./heatMap";
import { renderMeshGrid } from "./meshGrid";

const noEvents = { onHover: () => {}, onFocus: () => {}, onActivate: () => {} };

describe("the device grid under the heat map", () => {
  it("gives each device of the first mesh a tile of its own, in mesh order", () => {
    for (const name of ["tree_concrete_plain", "tree_multi_mesh", "tree_whatif_4096_plain"] as const) {
      const tree = decodeTreePayload(loadTreeFixture(name));
      const payload = deviceGridPayload(tree);
      if (!payload) throw new Error("no grid");
      const grid = decodePayload(payload);
      expect(Array.from(grid.tileOf)).toEqual(Array.from({ length: grid.deviceCount }, (_, k) => k));
      expect(Array.from(grid.ids)).toEqual(Array.from(tree.meshPositions[0], (p) => tree.ids[p]));
      expect(grid.payload.mesh?.names).toEqual(tree.payload.meshes[0].names);
    }
  });

  it("has no grid without a mesh", () => {
    expect(deviceGridPayload(decodeTreePayload(loadTreeFixture("tree_empty")))).toBeNull();
  });
});

describe("the mesh grid painted per device", () => {
  it("takes fills, ink, tags and labels from the painter, and repaints when its values change", () => {
    const tree = decodeTreePayload(loadTreeFixture("tree_concrete_plain"));
    const grid = decodePayload(deviceGridPayload(tree) as NonNullable<ReturnType<typeof deviceGridPayload>>);
    let scale = 1;
    const view = renderMeshGrid(grid, noEvents, new AbortController().signal, {
      fill: () => "#ff0000",
      label: "id",
      paint: {
        fill: (k) => (k * scale > 3 ? "#000000" : "#ffffff"),
        ink: (k) => (k * scale > 3 ? "#ffffff" : "#000000"),
        tag: (k) => `v${k * scale}`,
        label: (k) => `device at ${k}`,
      },
    });
    const cells = Array.from(view.element.querySelectorAll<HTMLElement>("[data-device-id]"));
    expect(cells.map((c) => c.getAttribute("aria-label"))).toEqual(cells.map((_, k) => `device at ${k}`));
    expect(cells[5].style.backgroundColor).toBe("rgb(0, 0, 0)");
    expect(cells[5].style.color).toBe("rgb(255, 255, 255)");
    expect(cells[1].querySelector(".sv-cell-tile")?.textContent).toBe("v1");
    expect(cells[0].hasAttribute("data-tile-of")).toBe(false);
    scale = 0;
    view.repaint?.();
    expect(cells[5].style.backgroundColor).toBe("rgb(255, 255, 255)");
    expect(cells[1].querySelector(".sv-cell-tile")?.textContent).toBe("v0");
  });

  it("past 64 devices says each painted fill on its cell (drawn on the canvas under it) and keeps the ink", () => {
    const grid = decodePayload(
      makePayload({ names: ["a", "b", "c"], sizes: [4, 8, 8], shape: [64, 64], spec: [["a"], ["b"]] }),
    );
    let scale = 1;
    const view = renderMeshGrid(grid, noEvents, new AbortController().signal, {
      fill: () => "#ff0000",
      label: "id",
      paint: {
        fill: (k) => (k * scale > 150 ? "#000000" : "#ffffff"),
        ink: (k) => (k * scale > 150 ? "#ffffff" : "#000000"),
        tag: (k) => `v${k}`,
        label: (k) => `device at ${k}`,
      },
    });
    expect(view.element.querySelector("canvas.sv-cell-fills")).not.toBeNull();
    const cells = Array.from(view.element.querySelectorAll<HTMLElement>("[data-device-id]"));
    expect(cells).toHaveLength(256);
    expect([cells[201].getAttribute("data-fill"), cells[201].style.backgroundColor]).toEqual(["#000000", ""]);
    expect(cells[201].style.color).toBe("rgb(255, 255, 255)");
    expect(cells[3].getAttribute("data-fill")).toBe("#ffffff");
    scale = 0;
    view.repaint?.();
    expect([cells[201].getAttribute("data-fill"), cells[201].style.color]).toEqual(["#ffffff", "rgb(0, 0, 0)"]);
  });
});

describe("the memory heat map", () => {
  interface Truth {
    device_bytes: Record<string, Record<string, number>>;
  }
  const truth = loadJson<Record<string, Truth>>("tree_truth");

  it("colours each device by the bytes JAX says it holds, per memory kind or all together", () => {
    const tree = decodeTreePayload(loadTreeFixture("tree_concrete_plain"));
    const grid = decodePayload(deviceGridPayload(tree) as NonNullable<ReturnType<typeof deviceGridPayload>>);
    const map = new MemoryHeatMap(noEvents, new AbortController().signal);
    document.body.append(map.element);
    map.setTree(tree, grid);
    const expected = truth.tree_concrete_plain.device_bytes;
    const all = Object.fromEntries(
      Object.entries(expected).map(([id, kinds]) => [id, Object.values(kinds).reduce((a, b) => a + b, 0)]),
    );
    const most = Math.max(...Object.values(all));
    for (const cell of map.element.querySelectorAll<HTMLElement>("[data-device-id]")) {
      const id = cell.getAttribute("data-device-id") as string;
      const probe = document.createElement("div");
      probe.style.backgroundColor = heatColour(all[id], 0, most).fill;
      expect(cell.style.backgroundColor).toBe(probe.style.backgroundColor);
    }
    expect(Array.from(deviceValues(tree, ALL_KINDS))).toEqual(Array.from(tree.ids, (id) => all[String(id)]));
    const select = map.element.querySelector<HTMLSelectElement>('[data-role="memory-view"]');
    expect(Array.from(select?.options ?? []).map((o) => o.value)).toEqual([ALL_KINDS, "device", "pinned_host"]);
    if (!select) throw new Error("no kind picker");
    select.value = "pinned_host";
    select.dispatchEvent(new Event("change"));
    const pinned = Object.fromEntries(Object.entries(expected).map(([id, kinds]) => [id, kinds.pinned_host ?? 0]));
    for (const cell of map.element.querySelectorAll<HTMLElement>("[data-device-id]")) {
      const id = cell.getAttribute("data-device-id") as string;
      expect(cell.querySelector(".sv-cell-tile")?.textContent).toBe(`${pinned[id]}B`);
    }
    expect(map.element.querySelector('[data-role="heat-legend"]')?.textContent).toContain("pinned_host");
  });

  it("lists devices off the first mesh as cells of their own", () => {
    const tree = decodeTreePayload(loadTreeFixture("tree_multi_mesh"));
    const grid = decodePayload(deviceGridPayload(tree) as NonNullable<ReturnType<typeof deviceGridPayload>>);
    const map = new MemoryHeatMap(noEvents, new AbortController().signal);
    map.setTree(tree, grid);
    const extra = Array.from(map.element.querySelectorAll(".sv-extra-cell")).map((c) =>
      c.getAttribute("data-device-id"),
    );
    expect(extra).toEqual(["8", "9", "10", "11"]);
    expect(map.element.querySelectorAll(".sv-mesh [data-device-id]")).toHaveLength(8);
  });
});
