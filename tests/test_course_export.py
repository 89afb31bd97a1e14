"""The course export: pages that draw their pictures with no widget manager
and no network. Checked on the HTML itself; the browser test of an exported
page lives with the browser tests."""

from __future__ import annotations

import html.parser
import json
import pathlib
import re
import shutil

import nbclient  # noqa: F401  test dependencies (the test extra): a missing one fails here, never skips
import nbconvert  # noqa: F401
import nbformat
import pytest

from shardviz.export import course
from shardviz.export.page import bundle_assets

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOK = NOTEBOOK_DIR / "02-jit-propagation.ipynb"
WIDGET_VIEW = course.WIDGET_VIEW
kernel = pytest.mark.notebooks  # these run a notebook in a fresh kernel


class Scripts(html.parser.HTMLParser):
    """Every <script> and <link> of a page: attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.links: list[dict[str, str | None]] = []
        self.metas: list[dict[str, str | None]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []
        self._previous_start: dict[str, str | None] | None = None
        self.roots_before_payload = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script":
            if "data-shardviz-payload" in attributes and self._previous_start is not None:
                self.roots_before_payload += "data-shardviz-root" in self._previous_start
            self._open, self._text = attributes, []
        elif tag == "link":
            self.links.append(attributes)
        elif tag == "meta":
            self.metas.append(attributes)
        self._previous_start = attributes

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def parse(page: str) -> Scripts:
    parser = Scripts()
    parser.feed(page)
    return parser


@pytest.fixture(scope="module")
def executed():
    """The notebook run once, with its widget state (the slow part)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return course.execute_notebook(nb, cwd=NOTEBOOK_DIR, timeout=60)


def widget_outputs(nb) -> list[dict]:
    return [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if WIDGET_VIEW in out.get("data", {})
    ]


@kernel
def test_page_draws_every_widget_from_an_inline_payload(executed):
    views = widget_outputs(executed)
    models = course.widget_models(executed)
    expected = [models[view.data[WIDGET_VIEW]["model_id"]]["answer"]["payload"] for view in views]
    assert len(expected) >= 3

    page = course.to_html(executed)
    parsed = parse(page)
    payloads = [json.loads(text) for attrs, text in parsed.scripts if "data-shardviz-payload" in attrs]
    assert payloads == expected, "one payload script per widget output, in order, equal to the widget's payload"
    assert parsed.roots_before_payload == len(payloads), "each payload needs its root element just before it"
    assert [p["type_str"] for p in payloads[:3]] == ["float32[4,8]", "float32[4,8]", "float32[8]"]
    # the executed notebook itself is left as it was
    assert len(widget_outputs(executed)) == len(views) and "widgets" in executed.metadata


@kernel
def test_page_loads_nothing_from_the_network(executed):
    page = course.to_html(executed)
    parsed = parse(page)
    with_src = [attrs.get("src") for attrs, _ in parsed.scripts if attrs.get("src") is not None]
    assert with_src == [], f"scripts loaded from elsewhere: {with_src}"
    assert not [link for link in parsed.links if re.match(r"(https?:)?//", link.get("href") or "")]
    for marker in ("widget-state+json", "widget-view+json", "embed-amd", "html-manager", "require.min.js", "mathjax"):
        assert marker not in page.lower(), f"{marker!r} left in the page"
    assert not re.search(r"@import\s+url\(\s*['\"]?(https?:)?//", page)
    policy = [
        m.get("content") for m in parsed.metas if (m.get("http-equiv") or "").lower() == "content-security-policy"
    ]
    assert policy and "default-src 'none'" in policy[0]


@kernel
def test_page_inlines_the_bundle_and_style_once(executed):
    page = course.to_html(executed)
    script, style = bundle_assets()
    assert page.count(script) == 1
    assert page.count(style) == 1
    inline = [text for attrs, text in parse(page).scripts if not attrs]
    assert inline == [script], "the bundle is the page's one executable script"


@kernel
def test_export_notebook_and_cli_write_the_course(tmp_path, capsys):
    source = tmp_path / "notebooks"
    source.mkdir()
    shutil.copy(NOTEBOOK, source / NOTEBOOK.name)
    assert course.main([str(source), str(tmp_path / "site"), "--timeout", "60"]) == 0
    page = (tmp_path / "site" / f"{NOTEBOOK.stem}.html").read_text(encoding="utf-8")
    assert sum("data-shardviz-payload" in attrs for attrs, _ in parse(page).scripts) == 4
    assert "<title>2. How jit carries a sharding through a computation</title>" in page
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert f'href="{NOTEBOOK.stem}.html">2. How <code>jit</code> carries' in index
    assert "<script" not in index


@kernel
def test_export_fails_loudly_on_a_failing_notebook(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise ValueError('broken on purpose')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(course.CourseExportError, match="broken on purpose"):
        course.export_notebook(path, tmp_path / "broken.html", timeout=30)
    assert not (tmp_path / "broken.html").exists()


# ----------------------------------------------------------------------
# the preprocessing alone, on hand-made notebooks (no kernel)


def _view(model_id: str) -> dict:
    return nbformat.v4.new_output(
        "display_data",
        data={WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": model_id}, "text/plain": "W"},
    )


def _notebook_with_state(state: dict, outputs: list) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("w")
    cell.outputs = outputs
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["widgets"] = {
        course.WIDGET_STATE: {
            "version_major": 2,
            "version_minor": 0,
            "state": {k: {"model_name": "x", "model_module": "y", "state": v} for k, v in state.items()},
        }
    }
    return nb


def _payload(type_str: str) -> dict:
    return {"kind": "array", "version": 3, "type_str": type_str, "devices": {"count": 1}, "note": "</script><b>"}


def test_inline_widgets_draws_boxes_and_leaves_other_widgets_as_text():
    nb = _notebook_with_state(
        {
            "a": {"answer": {"payload": _payload("f32[2]")}},
            "b": {"answer": {"payload": _payload("f32[4]")}},
            "box": {"_model_name": "HBoxModel", "children": ["IPY_MODEL_a", "IPY_MODEL_b"]},
            "slider": {"_model_name": "IntSliderModel", "value": 3},
        },
        [_view("box"), _view("slider"), _view("missing")],
    )
    assert course.inline_widgets(nb) == 2
    box, slider, missing = nb.cells[0].outputs
    assert WIDGET_VIEW not in box.data and box.data["text/html"].count("data-shardviz-payload") == 2
    assert 'data-direction="row"' in box.data["text/html"]
    assert "</script><b>" not in box.data["text/html"], "payload text must not end its script element"
    for other in (slider, missing):
        assert WIDGET_VIEW not in other.data and "live kernel" in other.data["text/html"]
        assert other.data["text/plain"] == "W"
    assert "widgets" not in nb.metadata
