"""``jupyter nbconvert --to shardviz notebook.ipynb``: the course export as an nbconvert exporter.

Registered as the ``shardviz`` entry point of ``nbconvert.exporters``
(pyproject.toml), so any tool that runs nbconvert (a book or site build, a
CI step) makes the same offline pages as ``make course``: every shardviz
widget of the notebook's saved widget state becomes an inline picture drawn
with no kernel and no network, an array's editable in the page
(docs/nbconvert.md).
Pages are made by :func:`shardviz.export.course.prepare_page` and its
template; this module only adapts them to nbconvert's exporter interface.

nbconvert is needed here only (the ``docs`` and ``test`` extras).
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters import HTMLExporter

from .course import TEMPLATE, prepare_page


class ShardvizExporter(HTMLExporter):
    """HTML with shardviz pictures drawn and edited offline (``--to shardviz``).

    A notebook needs its widget state: save it from JupyterLab with widget
    state (Settings > Save Widget State Automatically), or run it during the
    conversion with ``--execute``.
    """

    export_from_notebook = "shardviz offline page"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("template_name", "lab")
        kwargs.setdefault("raw_template", TEMPLATE)
        super().__init__(**kwargs)

    def _preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        # After the preprocessors: --execute has run the notebook and saved its widget state.
        nb, resources = super()._preprocess(nb, resources)
        name = str((resources or {}).get("metadata", {}).get("name") or "shardviz")
        page_nb, page_resources = prepare_page(nb, title=nb.metadata.get("title"), fallback_title=name)
        return page_nb, {**(resources or {}), **page_resources}
