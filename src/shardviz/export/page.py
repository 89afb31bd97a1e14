"""One self-contained HTML page per picture: bundle and payload inline.

The page makes no network request at all, so course material opened from
disk, offline or behind a firewall still shows the picture.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any

from ..api import as_result
from ..assets import bundle_path
from ..kinds import page_title
from ..widgets.base import ViewWidget

# The page may run only its own inline code and load nothing at all (images
# and fonts only from data: URLs).
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:"


def payload_script(payload: dict[str, Any]) -> str:
    """The payload as an inert JSON script element, safe against `</script>`."""
    text = json.dumps(payload, separators=(",", ":"))
    # Inside <script>, only "</" can end the element early; escaping every
    # angle bracket and ampersand keeps the JSON identical once parsed.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<div data-shardviz-root></div><script type="application/json" data-shardviz-payload>{text}</script>'


def bundle_assets() -> tuple[str, str]:
    """The standalone script and the stylesheet, as text.

    Put the style in ``<style id="shardviz-style">``: the script then finds
    it and does not add the stylesheet a second time.
    """
    script = bundle_path("standalone.js").read_text(encoding="utf-8")
    style = bundle_path("widget.css").read_text(encoding="utf-8")
    # A literal "</script" inside the bundle would end the inline element.
    return script.replace("</script", "<\\/script"), style.replace("</style", "<\\/style")


def html_document(title: str, head: str, body: str) -> str:
    """A complete page under the no-network CSP; ``head`` and ``body`` are trusted HTML."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{html.escape(title)}</title>
{head}
</head>
<body>
{body}
</body>
</html>
"""


def page_html(payloads: list[dict[str, Any]], title: str) -> str:
    script, style = bundle_assets()
    pictures = "\n".join(payload_script(p) for p in payloads)
    return html_document(title, f'<style id="shardviz-style">{style}</style>', f"{pictures}\n<script>{script}</script>")


def save_html(x: Any, path: str | os.PathLike[str], **describe_kwargs: Any) -> str:
    """Write one self-contained HTML page showing ``x``; return the path.

    ``x`` is a shardviz widget (its current picture), a Layout or TreeLayout,
    anything :func:`shardviz.describe` accepts (with ``describe_kwargs``
    passed on), or a pytree of arrays.
    """
    payload = payload_of(x, **describe_kwargs)
    document = page_html([payload], f"shardviz: {page_title(payload)}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(document)
    return os.fspath(path)


def payload_of(x: Any, **describe_kwargs: Any) -> dict[str, Any]:
    """The payload that draws ``x``: a widget's current one, or a fresh one."""
    if isinstance(x, ViewWidget):
        if describe_kwargs:
            raise TypeError("shape= and dtype= go with an array or sharding, not with a widget")
        return dict(x.payload)
    return as_result(x, **describe_kwargs).to_json()
