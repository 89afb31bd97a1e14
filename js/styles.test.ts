/**
 * The stylesheet against notebook hosts. jsdom does not cascade by
 * specificity, so these tests weigh the selectors themselves: every rule of
 * the widget that styles a bare element must outweigh the host rules that
 * style the same element (browser checks confirm the computed result).
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** Tests run from the repository root (npm test, vitest.config.ts). */
const css = readFileSync(join(process.cwd(), "js", "widget.css"), "utf8");

function styleRules(): CSSStyleRule[] {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  const rules: CSSStyleRule[] = [];
  const walk = (list: CSSRuleList): void => {
    for (const rule of Array.from(list)) {
      if ("selectorText" in rule) rules.push(rule as CSSStyleRule);
      else if ("cssRules" in rule) walk((rule as CSSMediaRule).cssRules);
    }
  };
  walk((style.sheet as CSSStyleSheet).cssRules);
  style.remove();
  return rules;
}

/** Splits at top-level commas (not those inside :is(), :where(), :not()). */
function splitList(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")") depth--;
    else if (text[i] === "," && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

type Weight = [number, number, number];

const heavier = (a: Weight, b: Weight): boolean => compare(a, b) > 0;

function compare(a: Weight, b: Weight): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** Selectors level 4 specificity of one complex selector (enough for this stylesheet and host rules). */
function specificity(selector: string): Weight {
  const weight: Weight = [0, 0, 0];
  let i = 0;
  while (i < selector.length) {
    const c = selector[i];
    if (c === "#") {
      weight[0]++;
      i = skipName(selector, i + 1);
    } else if (c === ".") {
      weight[1]++;
      i = skipName(selector, i + 1);
    } else if (c === "[") {
      weight[1]++;
      i = selector.indexOf("]", i) + 1;
    } else if (c === ":") {
      const element = selector[i + 1] === ":";
      const end = skipName(selector, i + (element ? 2 : 1));
      const name = selector.slice(i, end);
      if (selector[end] === "(") {
        const close = matching(selector, end);
        const inner = selector.slice(end + 1, close);
        if (name === ":is" || name === ":not" || name === ":has") {
          const max = splitList(inner)
            .map(specificity)
            .reduce((a, b) => (compare(a, b) >= 0 ? a : b));
          for (let k = 0; k < 3; k++) weight[k] += max[k];
        } else if (name !== ":where") {
          weight[1]++;
        }
        i = close + 1;
      } else {
        weight[element ? 2 : 1]++;
        i = end;
      }
    } else if (/[a-zA-Z*]/.test(c)) {
      const end = skipName(selector, i);
      if (c !== "*") weight[2]++;
      i = Math.max(end, i + 1);
    } else {
      i++;
    }
  }
  return weight;
}

function skipName(text: string, from: number): number {
  let i = from;
  while (i < text.length && /[\w-]/.test(text[i])) i++;
  return i;
}

function matching(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i;
  }
  return text.length;
}

/** The last compound selector of a complex one: what the rule styles. */
function subject(selector: string): string {
  let depth = 0;
  for (let i = selector.length - 1; i >= 0; i--) {
    const c = selector[i];
    if (c === ")") depth++;
    else if (c === "(") depth--;
    else if (depth === 0 && (c === " " || c === ">" || c === "+" || c === "~")) return selector.slice(i + 1);
  }
  return selector;
}

const ELEMENTS = ["h3", "p", "dl", "dt", "dd", "table", "caption", "tr", "th", "td", "pre", "code", "select", "input"];

describe("stylesheet specificity", () => {
  it("weighs selectors the way browsers do", () => {
    expect(specificity(".jp-RenderedHTMLCommon h3:first-child")).toEqual([0, 2, 1]);
    expect(specificity(".jp-RenderedHTMLCommon tbody tr:nth-child(odd)")).toEqual([0, 2, 2]);
    expect(specificity(".a .b :not(pre) > code")).toEqual([0, 2, 2]);
    expect(specificity(".shardviz.shardviz :where(h3, p)")).toEqual([0, 2, 0]);
    expect(specificity(".shardviz.shardviz :is(.sv-input, select)")).toEqual([0, 3, 0]);
    expect(specificity('.shardviz .sv-input[data-role="spec-input"]')).toEqual([0, 3, 0]);
    expect(heavier([0, 2, 0], [0, 1, 1])).toBe(true);
    expect(heavier([0, 2, 1], [0, 2, 1])).toBe(false);
  });

  it("styles bare elements only above the weight of host element rules", () => {
    // `.jp-RenderedHTMLCommon h3`, `.jp-OutputArea-output dt`, `.rendered_html table`: one class, one element.
    const host: Weight = [0, 1, 1];
    const light: string[] = [];
    for (const rule of styleRules()) {
      for (const selector of splitList(rule.selectorText)) {
        const target = subject(selector).replace(/:(where|is)\(([^)]*)\)/g, " $2 ");
        const names = target.split(/[^\w-]+/).filter((w) => ELEMENTS.includes(w));
        const bare = names.length > 0 && !/\.[\w-]/.test(subject(selector));
        if (bare && !heavier(specificity(selector), host)) light.push(selector);
      }
    }
    expect(light).toEqual([]);
  });

  it("outweighs JupyterLab's heavier rules on the widget's headings, rows and code", () => {
    const selectors = styleRules().flatMap((r) => splitList(r.selectorText));
    const weightOf = (needle: string) =>
      selectors
        .filter((s) => s.includes(needle))
        .map(specificity)
        .reduce((a, b) => (compare(a, b) >= 0 ? a : b), [0, 0, 0] as Weight);
    const pairs: [string, string][] = [
      [".jp-RenderedHTMLCommon h3:first-child", ".sv-panel-title"],
      [".jp-RenderedHTMLCommon h3:first-child", ".sv-inspector-title"],
      [".jp-RenderedHTMLCommon tbody tr:nth-child(odd)", ".sv-values tr"],
      [".jp-ThemedContainer .jp-RenderedHTMLCommon :not(pre) > code", ".sv-type"],
      [".jp-ThemedContainer .jp-RenderedHTMLCommon pre", ".sv-code"],
      [".jp-ThemedContainer .jp-RenderedHTMLCommon code", ".sv-code code"],
    ];
    for (const [host, ours] of pairs) {
      expect([host, ours, heavier(weightOf(ours), specificity(host))]).toEqual([host, ours, true]);
    }
  });

  it("wins without !important", () => {
    expect(css).not.toMatch(/!\s*important/);
  });
});

describe("stylesheet details", () => {
  const declarations = (selector: string): CSSStyleDeclaration[] =>
    styleRules()
      .filter((r) => splitList(r.selectorText).includes(selector))
      .map((r) => r.style);

  it("marks axis names on the block-end side, so vertical titles get the mark beside the text", () => {
    const [ref] = declarations(".shardviz .sv-axis-ref");
    expect(ref.getPropertyValue("border-block-end")).toContain("3px solid");
    expect(ref.getPropertyValue("border-bottom")).toBe("");
    const vertical = declarations(".shardviz .sv-map-frame > .sv-dim-title.sv-vertical")[0];
    expect(vertical.getPropertyValue("writing-mode")).toBe("vertical-lr"); // block-end on the right, by the map
  });

  it("keeps inspector terms on one line", () => {
    const [dt] = declarations(".shardviz .sv-inspector dt");
    expect(dt.getPropertyValue("white-space")).toBe("nowrap");
    expect(dt.getPropertyValue("float")).toBe("none");
    expect(dt.getPropertyValue("width")).toBe("auto");
  });
});
