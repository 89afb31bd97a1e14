"""The failure page's own parts: the table of differences and the summary, as HTML text.

The pictures and the bundled script (shardviz.export.page) are replaced by
markers, so only what pages.py writes is checked, tag by tag.
"""

from __future__ import annotations

import shardviz.testing.pages as pages
from shardviz.testing.errors import FailurePage, LayoutMismatch


def test_a_table_marks_its_marked_rows_with_a_cross_and_escapes_every_cell():
    page = FailurePage("b", "f", ("line", "code"), (("m.py:1", "x < y"), ("m.py:2", "z")), (True, False))
    assert pages._table(page) == (
        "<table data-role=differences><thead><tr><th></th><th>line</th><th>code</th></tr></thead><tbody>"
        "<tr class=sv-marked data-marked><td>&#x2717;</td><td>m.py:1</td><td>x &lt; y</td></tr>"
        "<tr><td></td><td>m.py:2</td><td>z</td></tr>"
        "</tbody></table>"
    )
    assert pages._table(FailurePage("b", "f")) == ""


def test_a_page_without_a_budget_goes_from_the_test_to_the_failure(monkeypatch):
    monkeypatch.setattr(pages, "payload_of", lambda subject: {"subject": subject})
    monkeypatch.setattr(pages, "payload_script", lambda payload: f"[{payload['subject']}]")
    monkeypatch.setattr(pages, "bundle_assets", lambda: ("SCRIPT", "STYLE"))
    text = pages.failure_page(LayoutMismatch("a < b", subject="S"), "t.py::test_<x>")
    assert (
        "<div class=sv-failure><h1>assert_layout failed</h1><p>in <code>t.py::test_&lt;x&gt;</code></p>"
        "<details open><summary>the failure</summary><pre data-role=message>a &lt; b</pre></details></div>[S]"
    ) in text
    with_page = pages.failure_page(
        LayoutMismatch("m", subject="S", expected="why not", page=FailurePage("<b>", "<f>")), "t"
    )
    assert (
        "<p>in <code>t</code></p><dl><dt>budget</dt><dd data-role=budget>&lt;b&gt;</dd>"
        "<dt>figure</dt><dd data-role=figure>&lt;f&gt;</dd></dl><details open>"
    ) in with_page
    assert (
        "<div class=sv-sides><section data-role=expected><h2>expected</h2><p>why not</p></section>"
        "<section data-role=actual><h2>actual</h2>[S]</section></div>"
    ) in with_page
