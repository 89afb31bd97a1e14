"""Every relative link and picture in the README and docs/ points at a file that exists,
and every ``#anchor`` into a Markdown page names one of its headings (as GitHub makes them).

A page moved or renamed, or a screenshot never committed, otherwise shows as a broken
link only to a reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    ROOT / "js" / "README.md",
    ROOT / "notebooks" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
# Pages another change in flight writes; a link to one may land before the page does.
PAGES_TO_COME = {"docs/comparing.md"}

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def links(text: str) -> list[str]:
    """The targets of Markdown links and images outside code blocks."""
    return LINK.findall(FENCE.sub("", text))


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M)
    return {github_anchor(h) for h in headings}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            if not (dest.is_relative_to(ROOT) and dest.relative_to(ROOT).as_posix() in PAGES_TO_COME):
                broken.append(f"{target}: no such file")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading makes #{anchor}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_the_check_finds_a_missing_file_a_missing_picture_and_a_wrong_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading, with `code`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#a-heading-with-code) [web](https://example.com)\n"
        "[gone](gone.md) ![pic](images/none.png) [bad](other.md#nothing)\n"
        "```\n[in code](ignored.md)\n```\n"
    )
    assert broken_links(page) == [
        "gone.md: no such file",
        "images/none.png: no such file",
        "other.md#nothing: no heading makes #nothing",
    ]


def test_github_anchor_follows_githubs_rule() -> None:
    # As GitHub renders these headings (checked on docs/architecture.md and docs/planning.md).
    assert github_anchor("One edit, from keypress to picture") == "one-edit-from-keypress-to-picture"
    assert github_anchor("`Estimate.to_json()`") == "estimatetojson"
    assert github_anchor("Memory time: the program's own bytes (`shardviz.program.hlo.hbm`)") == (
        "memory-time-the-programs-own-bytes-shardvizprogramhlohbm"
    )
