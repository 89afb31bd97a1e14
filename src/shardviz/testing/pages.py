"""The page ``--shardviz-html`` writes for a failed assertion: the difference first, then the pictures.

At the top: which check failed in which test, the budget against the figure,
and a table whose marked rows break it (the collectives over budget or
changed since the snapshot, on their lines; the leaves laid out otherwise),
then the failure's own message. Below: the expected and the actual layout
side by side where the check compared layouts, else the view of what the
check read (the program, the tree). Every text is escaped; the page loads
nothing from the network.
"""

from __future__ import annotations

import html

from ..export.page import bundle_assets, html_document, payload_of, payload_script
from .errors import FailurePage, ShardvizAssertionError

__all__ = ["failure_page"]

STYLE = """
.sv-failure { font: 14px/1.4 system-ui, sans-serif; margin: 12px 16px; }
.sv-failure h1 { font-size: 18px; margin: 0 0 4px; }
.sv-failure dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
.sv-failure dt { font-weight: 600; }
.sv-failure table { border-collapse: collapse; margin: 8px 0; }
.sv-failure th, .sv-failure td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
.sv-failure tr.sv-marked td { background: #fde2e1; font-weight: 600; }
.sv-failure code, .sv-failure pre { font-family: ui-monospace, monospace; white-space: pre-wrap; }
.sv-sides { display: flex; flex-wrap: wrap; gap: 16px; }
.sv-sides > section { flex: 1 1 420px; min-width: 0; }
"""


def _table(page: FailurePage) -> str:
    if not page.rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ("", *page.columns))
    rows = []
    for row, marked in zip(page.rows, page.marked):
        mark = "&#x2717;" if marked else ""  # a cross, so the marked rows read without colour too
        cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
        rows.append(f"<tr{' class=sv-marked data-marked' if marked else ''}><td>{mark}</td>{cells}</tr>")
    return f"<table data-role=differences><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _pictures(error: ShardvizAssertionError) -> str:
    subject = payload_script(payload_of(error.subject))
    expected = error.expected
    if expected is None:
        return subject
    if isinstance(expected, str):  # why the expected layout cannot be drawn
        drawn = f"<p>{html.escape(expected)}</p>"
    else:
        drawn = payload_script(payload_of(expected))
    return (
        "<div class=sv-sides>"
        f"<section data-role=expected><h2>expected</h2>{drawn}</section>"
        f"<section data-role=actual><h2>actual</h2>{subject}</section>"
        "</div>"
    )


def failure_page(error: ShardvizAssertionError, test_id: str) -> str:
    """The whole page (HTML text) for ``error`` raised in the test ``test_id``."""
    page = error.page
    summary = ""
    if page is not None:
        summary = (
            f"<dl><dt>budget</dt><dd data-role=budget>{html.escape(page.budget)}</dd>"
            f"<dt>figure</dt><dd data-role=figure>{html.escape(page.figure)}</dd></dl>{_table(page)}"
        )
    body = (
        "<div class=sv-failure>"
        f"<h1>{html.escape(error.check)} failed</h1>"
        f"<p>in <code>{html.escape(test_id)}</code></p>"
        f"{summary}"
        f"<details open><summary>the failure</summary><pre data-role=message>{html.escape(str(error))}</pre></details>"
        "</div>"
        f"{_pictures(error)}"
    )
    script, style = bundle_assets()
    head = f'<style id="shardviz-style">{style}</style><style>{STYLE}</style>'
    return html_document(f"shardviz: {error.check} failed in {test_id}", head, f"{body}\n<script>{script}</script>")
