"""JupyterLab's painted edits at 512 devices under CSS variants, in turn in one session (a diagnostic).

    .venv/bin/python benchmarks/lab_css.py [--rounds 4] [--edits 5] [--variants FILE.json] [--trace DIR]

One JupyterLab notebook (the one ``local_engine.py`` measures: an array on 512
devices and a model's tree) takes each variant's extra style sheet in turn, round
after round, and each variant gets the same typed spec edits and rules edits
(``local_engine.py``'s measure: keydown to the task after the frame that follows
the first change) and JupyterLab's own frame. Variants measured side by side in
one page share its load, so their difference is what the CSS changes, where
two runs of ``local_engine.py`` a minute apart differ by more. ``--variants``
names a JSON object of name to CSS; ``--trace DIR`` writes Chromium's trace of
each variant's last round there (open it in chrome://tracing or Perfetto).
Nothing is asserted; it prints one table of medians.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import sys
import tempfile
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "browser"))
from browser_support import (  # noqa: E402
    launch_chromium,
    server_only_context,
    start_jupyter_lab,
    stop_jupyter_lab,
    write_notebook,
)

import local_engine as engine  # noqa: E402

DEVICES = 512
# Containment on the widget's root, and on JupyterLab's output area around it.
VARIANTS = {
    "as built": "",
    "root contained": ".shardviz { contain: layout paint style; }",
    "output contained": ".jp-OutputArea-output:has(.shardviz), .shardviz { contain: layout paint style; }",
}
SET_STYLE_JS = """(css) => {
    let sheet = document.getElementById('sv-css-variant');
    if (!sheet) {
        sheet = document.createElement('style');
        sheet.id = 'sv-css-variant';
        document.head.appendChild(sheet);
    }
    sheet.textContent = css;
}"""
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink", "cc"]


def measure(variants: dict[str, str], *, rounds: int, edits: int, trace: pathlib.Path | None) -> dict[str, Any]:
    found: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
    with launch_chromium() as browser, tempfile.TemporaryDirectory(prefix="shardviz-lab-css-") as tmp:
        lab = start_jupyter_lab(pathlib.Path(tmp), kernel_devices=None, start_s=120)
        try:
            notebook = f"local-{DEVICES}.ipynb"
            cells = [engine._setup_cell(DEVICES, lab.root_dir / f"kernel-{DEVICES}.pid"), engine.TREE_CELL]
            write_notebook(lab.root_dir / notebook, cells)
            context, _ = server_only_context(lab, browser)
            context.set_default_timeout(60_000)
            context.add_init_script(engine.ANSWER_SPY_JS)
            try:
                page = context.new_page()
                engine.open_and_run_all(page, lab, notebook)
                array = page.locator(".jp-OutputArea-output").filter(has=page.locator("[data-device-count]")).first
                tree = page.locator(".jp-OutputArea-output").filter(has=page.locator('[data-view="tree"]')).first
                array.wait_for(timeout=180_000)
                tree.wait_for(timeout=180_000)
                _rounds(page, browser, array, tree, variants, found, rounds=rounds, edits=edits, trace=trace)
            finally:
                context.close()
        finally:
            stop_jupyter_lab(lab)
    return {"variants": found, "load_after": os.getloadavg()[0]}


def _rounds(
    page: Any,
    browser: Any,
    array: Any,
    tree: Any,
    variants: dict[str, str],
    found: dict[str, dict[str, list[float]]],
    *,
    rounds: int,
    edits: int,
    trace: pathlib.Path | None,
) -> None:
    specs, rules = engine.SPECS[DEVICES], engine.LAB_RULES
    count = {"spec": 0, "rules": 0}  # each edit alternates its two texts: none repeats the one in force

    def edit(kind: str) -> dict[str, Any]:
        k = count[kind] = count[kind] + 1
        if kind == "spec":
            array.evaluate(engine.LAB_ARM_JS, "spec-input")
            field, text, key = array.locator('[data-role="spec-input"]'), specs[k % 2], "Enter"
        else:
            tree.evaluate(engine.RULES_ARM_JS)
            field, text, key = tree.locator('[data-role="rules-input"]'), rules[k % 2], "Control+Enter"
        field.fill(text)
        field.press(key)
        return dict(page.evaluate("window.__sv"))

    for _ in range(2):  # warm-up
        edit("spec")
        edit("rules")
    for r in range(rounds):
        for name, css in variants.items():
            page.evaluate(SET_STYLE_JS, css)
            edit("spec")  # the first edit under a new sheet restyles the whole page: not counted
            traced = trace is not None and r == rounds - 1
            if traced:
                browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
            figures = found[name]
            for _ in range(edits):
                for kind in ("spec", "rules"):
                    sample = edit(kind)
                    figures.setdefault(f"{kind} painted", []).append(round(sample["first_painted_ms"], 1))
                    figures.setdefault(f"{kind} DOM", []).append(round(sample["first_redraw_ms"], 1))
            if traced and trace is not None:
                file_name = re.sub(r"\W+", "-", name)
                (trace / f"lab-css-{file_name}.json").write_bytes(browser.stop_tracing())
            floor = [array.evaluate(engine.LAB_FLOOR_JS) for _ in range(edits)]
            figures.setdefault("JupyterLab's frame", []).extend(round(f, 1) for f in floor)


def table(result: dict[str, Any]) -> str:
    variants = result["variants"]
    columns = list(next(iter(variants.values())))
    rows = ["| variant | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns)]
    for name, figures in variants.items():
        rows.append(f"| {name} | " + " | ".join(f"{statistics.median(figures[c]):.1f} ms" for c in columns) + " |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--edits", type=int, default=5, help="spec and rules edits per variant per round")
    parser.add_argument("--variants", type=pathlib.Path, help="a JSON object: variant name -> extra CSS")
    parser.add_argument("--trace", type=pathlib.Path, help="a folder for Chromium's trace of each variant")
    args = parser.parse_args()
    variants = json.loads(args.variants.read_text()) if args.variants else VARIANTS
    load = os.getloadavg()[0]
    result = measure(variants, rounds=args.rounds, edits=args.edits, trace=args.trace)
    print(f"JupyterLab, {DEVICES} devices, medians of {args.rounds * args.edits} edits of each kind per variant, ")
    print(f"variants in turn; load average {load:.2f} before, {result['load_after']:.2f} after\n")
    print(table(result))
    print("BENCH-JSON " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
