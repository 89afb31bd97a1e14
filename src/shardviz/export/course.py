"""Export the course notebooks to HTML pages that draw their pictures offline.

A standard nbconvert export keeps each widget as a view of a model in the
notebook's widget state and loads the widget manager from a CDN to draw it;
a reader offline or behind a firewall gets empty boxes. Here every output
that shows a shardviz widget (``ShardingWidget``, ``TreeWidget``,
``ProgramWidget``, or an ipywidgets box of them) is replaced by the same
inert payload script that :func:`shardviz.save_html` writes, the widget state is
dropped (so nbconvert emits no widget-manager loader), and the standalone
bundle is inlined once per page. The template also leaves out require.js,
MathJax and mermaid, and a Content-Security-Policy keeps the page from
reaching the network at all.

::

    python -m shardviz.export.course notebooks _site     # every *.ipynb plus index.html

nbclient, nbformat and nbconvert are needed here only (the ``docs`` and
``test`` extras), so they are imported inside the functions.
"""

from __future__ import annotations

import argparse
import copy
import html
import os
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any

from ..kinds import KINDS
from .page import CSP, bundle_assets, html_document, payload_script

__all__ = [
    "CourseExportError",
    "execute_notebook",
    "export_course",
    "export_notebook",
    "inline_widgets",
    "main",
    "prepare_page",
    "to_html",
]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MODEL_PREFIX = "IPY_MODEL_"
BOX_MODELS = {"HBoxModel": "row", "VBoxModel": "column", "BoxModel": "row", "GridBoxModel": "row"}


PAGE_STYLE = """
.shardviz-course-box { display: flex; gap: 1.5em; align-items: flex-start; }
.shardviz-course-box[data-direction="row"] { flex-flow: row wrap; }
.shardviz-course-box[data-direction="column"] { flex-flow: column nowrap; }
.shardviz-course-box > * { flex: 1 1 0; min-width: 0; }
.shardviz-course-missing { color: #a33; font-style: italic; }
"""

# Extends nbconvert's lab template: no require.js, no widget manager, no
# MathJax or mermaid from a CDN; the shardviz bundle and style inline instead,
# the style after the notebook's own so that it wins where both apply.
TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.shardviz.csp }}">
{%- endblock html_head_js -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
{%- if resources.shardviz.widgets -%}
<style id="shardviz-style">{{ resources.shardviz.style }}</style>
<style>{{ resources.shardviz.page_style }}</style>
{%- endif -%}
{%- endblock html_head_css -%}
{% block data_html scoped -%}
{%- if output.metadata and output.metadata.shardviz -%}
<div class="jp-OutputArea-output shardviz-course-output" data-mime-type="text/html">
{{ output.data['text/html'] }}
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock data_html %}
{% block footer_js %}
{%- if resources.shardviz.widgets -%}
<script>{{ resources.shardviz.script }}</script>
{%- endif -%}
{% endblock footer_js %}
"""


class CourseExportError(RuntimeError):
    """The course could not be exported (a missing tool, a failing notebook)."""


def _require_tools() -> tuple[Any, Any, Any]:
    try:
        import nbclient
        import nbconvert
        import nbformat
    except ImportError as err:
        raise CourseExportError(
            f"exporting the course needs nbclient, nbformat and nbconvert ({err.name} is missing); "
            "install them with: pip install 'shardviz[docs]' nbclient ipykernel"
        ) from None
    return nbclient, nbconvert, nbformat


# ----------------------------------------------------------------------
# executing


def execute_notebook(nb: Any, *, cwd: str | os.PathLike[str], timeout: int = 120, kernel_name: str = "python3") -> Any:
    """Run every cell in a fresh kernel, keeping the widget state; return ``nb``.

    A failing cell raises nbclient's ``CellExecutionError`` naming the cell.
    """
    nbclient, _, _ = _require_tools()
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        store_widget_state=True,
        resources={"metadata": {"path": os.fspath(cwd)}},
    )
    client.execute()
    return nb


# ----------------------------------------------------------------------
# replacing widget views


def widget_models(nb: Any) -> dict[str, dict[str, Any]]:
    """The widget models saved in the notebook, by model id, as their states."""
    saved = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {model_id: dict(entry.get("state", {})) for model_id, entry in saved.items()}


PAYLOAD_KINDS = tuple(KINDS)


def _is_payload(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in PAYLOAD_KINDS and "version" in value


def _model_html(model_id: str, models: dict[str, dict[str, Any]], depth: int = 0) -> tuple[str, int] | None:
    """Static HTML for a model and how many pictures it holds; None if it cannot be drawn."""
    state = models.get(model_id)
    if state is None or depth > 20:
        return None
    payload = (state.get("answer") or {}).get("payload")  # a shardviz widget's one trait (docs/payload.md)
    if isinstance(payload, dict) and _is_payload(payload):
        return payload_script(payload), 1
    direction = BOX_MODELS.get(str(state.get("_model_name", "")))
    if direction is None:
        return None
    parts, count = [], 0
    for child in state.get("children", []):
        if not isinstance(child, str) or not child.startswith(MODEL_PREFIX):
            return None
        drawn = _model_html(child[len(MODEL_PREFIX) :], models, depth + 1)
        if drawn is None:
            return None
        parts.append(f"<div>{drawn[0]}</div>")
        count += drawn[1]
    return f'<div class="shardviz-course-box" data-direction="{direction}">{"".join(parts)}</div>', count


def inline_widgets(nb: Any) -> int:
    """Make ``nb`` show its shardviz pictures without a widget manager.

    Every output showing a shardviz widget of any view (or a box of them)
    gets a ``text/html`` payload script in place of its widget view; a view of any
    other widget becomes a note that it needs a live kernel (plus its text).
    The notebook's widget state is
    removed, so the HTML exporter loads no widget manager. Returns the
    number of pictures inlined.
    """
    models = widget_models(nb)
    pictures = 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data")
            if not data or WIDGET_VIEW not in data:
                continue
            view = data[WIDGET_VIEW]
            model_id = view.get("model_id", "") if isinstance(view, dict) else ""
            drawn = _model_html(model_id, models)
            if drawn is None:
                text = data.get("text/plain", "")
                output["data"] = {
                    "text/html": '<p class="shardviz-course-missing">A widget that needs a live kernel.</p>',
                    **({"text/plain": text} if text else {}),
                }
            else:
                output["data"] = {"text/html": drawn[0]}
                # The template draws these outside nbconvert's rendered-HTML
                # wrapper, whose CSS would restyle the widget's headings.
                output.setdefault("metadata", {})["shardviz"] = {"pictures": drawn[1]}
                pictures += drawn[1]
    metadata = nb.get("metadata", {})
    metadata.pop("widgets", None)
    return pictures


# ----------------------------------------------------------------------
# converting


def notebook_title(nb: Any, fallback: str) -> str:
    """The first Markdown heading of the notebook, else ``fallback``."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        for line in str(cell.get("source", "")).splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip() or fallback
    return fallback


def prepare_page(nb: Any, *, title: str | None = None, fallback_title: str = "shardviz") -> tuple[Any, dict[str, Any]]:
    """A copy of ``nb`` ready for :data:`TEMPLATE`, and the resources the template reads.

    The copy shows its shardviz pictures inline (:func:`inline_widgets`) and is
    titled ``title``, else its first heading, else ``fallback_title``. The
    course export and the nbconvert exporter (:mod:`shardviz.export.nbconvert`)
    both make their pages with it.
    """
    nb = copy.deepcopy(nb)
    pictures = inline_widgets(nb)
    nb.metadata["title"] = title if title is not None else plain_text(notebook_title(nb, fallback_title))
    script, style = bundle_assets()
    resources = {
        "shardviz": {
            "script": script,
            "style": style,
            "page_style": PAGE_STYLE,
            "csp": CSP,
            "widgets": pictures,
        }
    }
    return nb, resources


def to_html(nb: Any, *, title: str | None = None) -> str:
    """The page for an executed notebook that still holds its widget views and
    state (``nb`` itself is left unchanged); ``title`` defaults to its first heading."""
    _, nbconvert, _ = _require_tools()
    page_nb, resources = prepare_page(nb, title=title)
    exporter = nbconvert.HTMLExporter(template_name="lab", raw_template=TEMPLATE)
    body, _ = exporter.from_notebook_node(page_nb, resources=resources)
    return str(body)


def export_notebook(
    path: str | os.PathLike[str],
    out_html: str | os.PathLike[str],
    *,
    execute: bool = True,
    timeout: int = 120,
) -> pathlib.Path:
    """Execute the notebook at ``path`` (unless ``execute=False``) and write
    its page to ``out_html``, pictures drawn offline; return the page's path.

    ``timeout`` is the limit per cell, in seconds.
    """
    _, _, nbformat = _require_tools()
    source = pathlib.Path(path)
    nb = nbformat.read(source, as_version=4)
    if execute:
        try:
            execute_notebook(nb, cwd=source.parent.resolve(), timeout=timeout)
        except Exception as err:  # nbclient's CellExecutionError names the cell and shows the traceback
            raise CourseExportError(f"{source} failed to run:\n{err}") from err
    page = to_html(nb, title=plain_text(notebook_title(nb, source.stem)))
    out = pathlib.Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


# ----------------------------------------------------------------------
# the whole course


def _inline_markdown(text: str) -> str:
    """Escaped HTML for one line of Markdown: `code` and *emphasis* only."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if len(part) >= 2 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*([^*\s][^*]*)\*", r"<em>\1</em>", html.escape(part)))
    return "".join(out)


def plain_text(markdown: str) -> str:
    """One line of Markdown without its `code` and *emphasis* marks."""
    return re.sub(r"\*([^*\s][^*]*)\*", r"\1", markdown.replace("`", ""))


def index_html(entries: Sequence[tuple[str, str, str]], title: str = "shardviz course") -> str:
    """A page linking the course's pages: entries are (href, title, summary), in Markdown."""
    items = "\n".join(
        f'<li><a href="{html.escape(href)}">{_inline_markdown(name)}</a>'
        + (f"<br><span>{_inline_markdown(summary)}</span>" if summary else "")
        + "</li>"
        for href, name, summary in entries
    )
    style = """<style>
body { font-family: system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.5; }
li { margin: 0.8em 0; } li span { color: #555; }
code { font-size: 0.95em; background: #f2f2f2; padding: 0 0.2em; border-radius: 3px; }
</style>"""
    body = f"""<h1>{html.escape(title)}</h1>
<p>Each page is a notebook run on simulated CPU devices, with its pictures drawn offline.
Run the notebooks yourself (<code>make lab</code>) to edit the layouts live.</p>
<ol>
{items}
</ol>"""
    return html_document(title, style, body)


def _summary(nb: Any) -> str:
    """The first paragraph after the title of the first Markdown cell."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        for paragraph in str(cell.get("source", "")).split("\n\n"):
            text = " ".join(paragraph.split())
            if text and not text.startswith("#"):
                return text if len(text) <= 240 else text[:237].rsplit(" ", 1)[0] + "..."
        return ""
    return ""


def export_course(
    notebook_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    execute: bool = True,
    timeout: int = 120,
) -> list[pathlib.Path]:
    """Export every ``*.ipynb`` in ``notebook_dir`` (sorted by name) to
    ``out_dir``, plus an ``index.html`` linking them; return the pages written.
    """
    _, _, nbformat = _require_tools()
    source = pathlib.Path(notebook_dir)
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        raise CourseExportError(f"no notebooks (*.ipynb) in {source}")
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pages, entries = [], []
    for path in notebooks:
        page = export_notebook(path, out / f"{path.stem}.html", execute=execute, timeout=timeout)
        nb = nbformat.read(path, as_version=4)
        entries.append((page.name, notebook_title(nb, path.stem), _summary(nb)))
        pages.append(page)
        print(f"wrote {page}", file=sys.stderr)
    index = out / "index.html"
    index.write_text(index_html(entries), encoding="utf-8")
    pages.append(index)
    return pages


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m shardviz.export.course",
        description="Execute the course notebooks and export them to HTML pages that draw their pictures offline.",
    )
    parser.add_argument("notebook_dir", help="folder holding the *.ipynb notebooks")
    parser.add_argument("out_dir", help="folder for the HTML pages and index.html")
    parser.add_argument("--no-execute", action="store_true", help="export the notebooks as saved, without running them")
    parser.add_argument("--timeout", type=int, default=120, help="seconds allowed per cell (default 120)")
    args = parser.parse_args(argv)
    try:
        export_course(args.notebook_dir, args.out_dir, execute=not args.no_execute, timeout=args.timeout)
    except CourseExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
