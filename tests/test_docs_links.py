"""Every relative link in README.md and docs/**/*.md resolves: the file or folder exists, and a
`#anchor` (alone, or after a Markdown file) names a heading of that file, as GitHub makes a
heading's anchor. Links are read as a CommonMark parser sees them, so a link written inside a
code block or a code span is not one."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from core_fixtures import REPO_ROOT
from markdown_it import MarkdownIt

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text: lower case, every character but letters,
    digits, `_`, `-` and spaces dropped, each space a `-`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def tokens_of(markdown: str):
    return MarkdownIt("commonmark").parse(markdown)


def anchors_of(markdown: str) -> set[str]:
    """The anchors of a Markdown text's headings; a repeated one gets -1, -2, ... as on GitHub."""
    tokens = tokens_of(markdown)
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[index + 1]
        text = "".join(
            child.content if child.type in ("text", "code_inline") else " " if "break" in child.type else ""
            for child in inline.children or []
        )
        slug = github_slug(text)
        if slug in seen:
            seen[slug] += 1
            anchors.add(f"{slug}-{seen[slug]}")
        else:
            seen[slug] = 0
            anchors.add(slug)
    return anchors


def links_of(markdown: str) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a Markdown text."""
    links = []
    for token in tokens_of(markdown):
        for child in token.children or []:
            target = child.attrGet("href") if child.type == "link_open" else child.attrGet("src") if child.type == "image" else None
            if target is not None:
                links.append((token.map[0] + 1 if token.map else 0, str(target)))
    return links


def broken_links(page: Path) -> list[str]:
    """What is wrong with each relative link of `page`, one line each."""
    problems = []
    for line, target in links_of(page.read_text()):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:  # https:, mailto:, //host: not ours to check
            continue
        path, anchor = unquote(parts.path), unquote(parts.fragment)
        where = f"{page.relative_to(REPO_ROOT) if page.is_relative_to(REPO_ROOT) else page} line {line}: ({target})"
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{where}: {path} does not exist")
            continue
        if anchor and linked.suffix == ".md" and linked.is_file() and anchor not in anchors_of(linked.read_text()):
            problems.append(f"{where}: {linked.name} has no heading whose anchor is #{anchor}")
    return problems


def test_the_pages_are_found() -> None:
    names = {page.relative_to(REPO_ROOT).as_posix() for page in PAGES}
    assert {"README.md", "docs/README.md", "docs/sql-reference.md", "docs/client.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO_ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    problems = broken_links(page)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_a_missing_file_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Time: `taskpool_now()`\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n"
        "[fine](other.md#time-taskpool_now) [fine](other.md#twice-1) [fine](#a-page) [fine](https://x.org/y)\n"
        "[gone](nowhere.md) [bad anchor](other.md#time) [bad here](#no-such)\n\n"
        "    [in a code block](nowhere-else.md)\n"
    )
    assert [problem.split(": ", 1)[1] for problem in broken_links(page)] == [
        "(nowhere.md): nowhere.md does not exist",
        "(other.md#time): other.md has no heading whose anchor is #time",
        "(#no-such): page.md has no heading whose anchor is #no-such",
    ]


def test_github_slugs() -> None:
    assert github_slug("Wake-ups: LISTEN/NOTIFY at commit") == "wake-ups-listennotify-at-commit"
    assert github_slug("The crawler's data") == "the-crawlers-data"
    assert github_slug("The reference crawler and make demo") == "the-reference-crawler-and-make-demo"


def test_the_readme_is_a_front_page_that_links_every_page() -> None:
    """At most 250 lines, and one hop from it to every page of docs/."""
    readme = REPO_ROOT / "README.md"
    text = readme.read_text()
    assert len(text.splitlines()) <= 250, "README.md is the front page: at most 250 lines; move the rest into docs/"
    linked = {(readme.parent / unquote(urlsplit(target).path)).resolve() for _, target in links_of(text)}
    unlinked = [page.name for page in sorted((REPO_ROOT / "docs").glob("*.md")) if page.resolve() not in linked]
    assert unlinked == [], f"README.md's table of contents lacks {unlinked}"
