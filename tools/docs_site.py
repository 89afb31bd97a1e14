"""Build the docs site (``make docs``): the guides of docs/, an API reference of every public name, and
the course's offline pages, with mkdocs-material and mkdocstrings, warnings as errors.

::

    python tools/docs_site.py build _site/docs [--course _site/course-pages]

The site's sources are put together in a folder beside the output (``<out>-src``): docs/ as it is, the
README as the home page, one reference page per public module (each public name as a ``:::`` block that
mkdocstrings fills from its docstring), and the course pages that ``python -m shardviz.export.course``
wrote, which draw their pictures with the inlined standalone bundle and need no kernel. A link from a
guide to a file outside docs/ (``../js/README.md``) points at the repository instead, so no link breaks.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
# modules whose public names the reference documents, each on a page of its own
REFERENCE_PAGES = {
    "shardviz": "The package: every name in `shardviz.__all__`.",
    "shardviz.testing": "Assertions for CI, snapshots of collectives, and the pytest plugin.",
    "shardviz.compare": "Tracing one step under several layouts and ranking them.",
}


def source_url() -> str:
    """The repository's address (pyproject's project.urls Source), for links to files outside docs/."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["urls"]["Source"]).rstrip("/")


def public_names(module: str) -> list[str]:
    """A module's ``__all__``, imported from this checkout."""
    sys.path.insert(0, str(REPO / "src"))
    try:
        imported = __import__(module, fromlist=["__all__"])
    finally:
        sys.path.pop(0)
    return sorted(imported.__all__)


def reference_page(module: str, summary: str) -> str:
    blocks = [f"# `{module}`\n\n{summary}\n"]
    for name in public_names(module):
        blocks.append(f"## `{module}.{name}`\n\n::: {module}.{name}\n")
    return "\n".join(blocks)


def relink(text: str, page: Path, placed_at: Path, repository: str) -> str:
    """The links of ``page`` for its copy at ``placed_at`` (a path inside docs/): a link to a file inside
    docs/ is made relative to ``placed_at``, any other points at the repository."""
    site_root = (REPO / "docs").resolve()

    def swap(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("/"):
            return match.group(0)
        resolved = (page.parent / target).resolve()
        if resolved.is_relative_to(site_root):
            moved = Path(os.path.relpath(resolved, placed_at.parent.resolve())).as_posix()
            return f"{match.group(1)}{moved}{match.group(3) or ''}{match.group(4)}"
        inside_repo = resolved.relative_to(REPO.resolve()).as_posix()
        kind = "tree" if (REPO / inside_repo).is_dir() else "blob"
        return f"{match.group(1)}{repository}/{kind}/main/{inside_repo}{match.group(3) or ''}{match.group(4)}"

    return LINK.sub(swap, text)


def course_page(pages: Sequence[Path]) -> str:
    lines = [
        "# The course",
        "",
        "The notebooks of notebooks/, run and saved as pages whose pictures are live widgets: edit a spec",
        "or a mesh in a picture and it redraws in the page, with no kernel and no network.",
        "",
    ]
    for page in pages:
        found = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8"), re.S)
        title = html.unescape(found.group(1)).strip() if found else page.stem
        lines.append(f"- [{title}](course/{page.name})")
    return "\n".join(lines) + "\n"


def config(src: Path, out: Path, repository: str, nav: list[object]) -> str:
    """The mkdocs config, as JSON (which YAML reads)."""
    return json.dumps(
        {
            "site_name": "shardviz",
            "site_description": "See and edit how JAX lays arrays out on devices.",
            "repo_url": repository,
            "docs_dir": str(src),
            "site_dir": str(out),
            "use_directory_urls": False,  # pages open from disk as well as from a server
            "strict": True,
            "theme": {"name": "material", "features": ["navigation.sections", "content.code.copy"]},
            "markdown_extensions": ["admonition", "tables", "toc", "pymdownx.superfences"],
            "plugins": [
                "search",
                {
                    "mkdocstrings": {
                        "handlers": {
                            "python": {
                                "paths": [str(REPO / "src")],
                                "options": {
                                    "docstring_style": None,
                                    "show_root_heading": False,
                                    "show_source": False,
                                    "members_order": "source",
                                    "show_if_no_docstring": True,
                                },
                            }
                        }
                    }
                },
            ],
            "nav": nav,
            "validation": {"links": {"absolute_links": "warn", "unrecognized_links": "warn", "anchors": "warn"}},
        },
        indent=1,
    )


def assemble(out: Path, course: Path | None) -> Path:
    """The site's sources and its mkdocs config, in ``<out>-src``; the config's path."""
    src = out.parent / f"{out.name}-src"
    shutil.rmtree(src, ignore_errors=True)
    repository = source_url()
    shutil.copytree(REPO / "docs", src)
    for page in src.rglob("*.md"):
        original = REPO / "docs" / page.relative_to(src)
        page.write_text(relink(page.read_text(encoding="utf-8"), original, original, repository), "utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    home = relink(readme, REPO / "README.md", REPO / "docs" / "index.md", repository)
    (src / "index.md").write_text(home, "utf-8")
    (src / "reference").mkdir()
    reference_nav: list[object] = []
    for module, summary in REFERENCE_PAGES.items():
        (src / "reference" / f"{module}.md").write_text(reference_page(module, summary), "utf-8")
        reference_nav.append({module: f"reference/{module}.md"})
    guides = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    nav: list[object] = [{"Home": "index.md"}, {"Guides": guides}, {"API reference": reference_nav}]
    if course is not None:
        pages = sorted(course.glob("[0-9]*.html"))
        if not pages:
            raise SystemExit(f"no course pages in {course}: run python -m shardviz.export.course first")
        (src / "course").mkdir()
        for page in pages:
            shutil.copy2(page, src / "course" / page.name)
        (src / "course.md").write_text(course_page(pages), "utf-8")
        nav.append({"Course": "course.md"})
    cfg = out.parent / f"{out.name}-mkdocs.yml"
    cfg.write_text(config(src, out.resolve(), repository, nav), "utf-8")
    return cfg


def build(out: Path, course: Path | None) -> int:
    cfg = assemble(out, course)
    # the theme's notice of its end of life is printed as a warning on every build: it says nothing of ours
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", str(cfg)], env=env)
    return done.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build"])
    parser.add_argument("out", type=Path, help="the site's folder, e.g. _site/docs")
    parser.add_argument("--course", type=Path, default=None, help="the exported course pages to include")
    args = parser.parse_args(argv)
    return build(args.out.resolve(), args.course.resolve() if args.course else None)


if __name__ == "__main__":
    raise SystemExit(main())
