import { describe, expect, it } from "vitest";
import { loadFixture } from "./test/fixtures";
import { query, renderWidget } from "./test/render";

const HOSTILE = ["<img src=x onerror=alert(1)>", "</script>"];

describe("hostile strings reach the DOM as text only", () => {
  it("draws hostile axis names as text and creates no element from them", () => {
    const { el } = renderWidget(loadFixture("hostile_names"));
    query(el, '[data-device-id="5"]').dispatchEvent(new Event("pointerover", { bubbles: true }));
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector("script")).toBeNull();
    expect(query(el, '[data-role="type"]').textContent).toBe(`float32[4@${HOSTILE[0]},8@${HOSTILE[1]}]`);
    const text = el.textContent ?? "";
    for (const name of HOSTILE) expect(text).toContain(name);
    expect(query<HTMLInputElement>(el, '[data-role="mesh-input"]').value).toBe(
      "'<img src=x onerror=alert(1)>'=2, </script>=4",
    );
    // Attributes carry the names verbatim (setAttribute escapes nothing because nothing is parsed).
    expect(el.querySelector(".sv-cell")?.getAttribute("aria-label")).toContain(`${HOSTILE[0]}=0 ${HOSTILE[1]}=0`);
  });

  it("shows hostile error text and device kinds as text", () => {
    const payload = loadFixture("mesh2x4_xy");
    payload.kinds = [{ platform: "<svg onload=alert(1)>", device_kind: "</script><script>alert(1)</script>" }];
    const { el, model } = renderWidget(payload);
    model.fromPython({ error: "<img src=x onerror=alert(2)>", error_source: "spec" });
    query(el, '[data-device-id="0"]').click();
    expect(el.querySelector("img, svg, script")).toBeNull();
    expect(query(el, '[role="alert"]').textContent).toBe("<img src=x onerror=alert(2)>");
    expect(query(el, '[data-role="inspector"]').textContent).toContain("</script><script>alert(1)</script>");
  });
});
