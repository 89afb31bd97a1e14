import { describe, expect, it } from "vitest";
import { loadFixture } from "../test/fixtures";
import { renderAllExports } from "./exportPage";
import { LOCAL_NOTE } from "./kinds";

function exportedPage(...payloads: unknown[]): void {
  for (const payload of payloads) {
    const root = document.createElement("div");
    root.setAttribute("data-shardviz-root", "");
    const script = document.createElement("script");
    script.type = "application/json";
    script.setAttribute("data-shardviz-payload", "");
    // As save_html writes it: "</" escaped so the JSON cannot close the script element.
    script.textContent = JSON.stringify(payload).replace(/<\//g, "<\\/");
    document.body.append(root, script);
  }
}

describe("standalone export", () => {
  it("draws every exported payload into the root before it", () => {
    exportedPage(loadFixture("mesh2x4_xy"), loadFixture("mesh3axis"));
    const views = renderAllExports(document);
    expect(views).toHaveLength(2);
    const roots = document.querySelectorAll("[data-shardviz-root]");
    expect(roots[0].querySelectorAll("[data-device-id]")).toHaveLength(8);
    expect(roots[1].querySelectorAll(".sv-block")).toHaveLength(2);
    expect(renderAllExports(document)).toHaveLength(0); // idempotent
  });

  it("edits in the page, and says that it computes there", () => {
    exportedPage(loadFixture("auto_mesh"));
    renderAllExports(document);
    for (const role of ["mesh-input", "spec-input", "memory-kind"]) {
      expect(document.querySelector(`[data-role="${role}"]`)?.hasAttribute("disabled")).toBe(false);
    }
    expect(document.querySelector('[data-role="local-note"]')?.textContent).toBe(LOCAL_NOTE);
    expect(document.querySelector('[data-role="read-only-note"]')).toBeNull();
    expect(document.querySelector('[data-role="preview"]')).toBeNull();
    // The Auto mesh's explicit view is an edit the page answers itself.
    (document.querySelector('[data-role="explicit-view"]') as HTMLElement).click();
    expect(document.querySelector('[data-role="type"]')?.textContent).toBe("float32[4@x,8@y]");
    const spec = document.querySelector('[data-role="spec-input"]') as HTMLInputElement;
    spec.value = "q";
    spec.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    const alert = document.querySelector('[role="alert"][data-source="spec"]');
    expect(alert?.textContent).toBe("dimension 0: axis 'q' is not in the mesh, whose axes are 'x', 'y'");
    expect(document.querySelector('[data-role="type"]')?.textContent).toBe("float32[4@x,8@y]");
    expect(document.querySelector('[data-role="code"]')?.textContent).toContain("P('x', 'y')");
  });

  it("shows a payload the engine does not read without editors", () => {
    exportedPage({ ...loadFixture("mesh2x4_xy"), version: 2 });
    renderAllExports(document);
    expect(document.querySelector('[data-role="read-only-note"]')?.textContent).toBe("Editing needs a live kernel.");
  });

  it("keeps hostile names inert", () => {
    exportedPage(loadFixture("hostile_names"));
    renderAllExports(document);
    const root = document.querySelector("[data-shardviz-root]") as HTMLElement;
    expect(root.querySelector("img")).toBeNull();
    expect(root.textContent).toContain("</script>");
  });
});
