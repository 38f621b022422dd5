"""The manual holds together: every relative link in README.md and docs/*.md reaches a file (and, for a
Markdown page, a heading), the README stays a short manual, and every docs page is reachable from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", flags=re.M | re.S)
INDENTED = re.compile(r"^(?: {4}|\t).*$", flags=re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", flags=re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", flags=re.M)


def _prose(text: str) -> str:
    """The text of a page without its code: fenced blocks, indented blocks and code spans."""
    text = FENCE.sub("", text)
    text = INDENTED.sub("", text)
    return CODE_SPAN.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a Markdown page's headings make, with GitHub's -1, -2 ... for repeated ones."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for _, heading in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(heading)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text()))


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of a page that lead nowhere, each with the reason."""
    problems = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ... are not checked here
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            problems.append(f"{target}: no such file {dest.relative_to(root) if dest.is_relative_to(root) else dest}")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no heading in {dest.relative_to(root)} makes #{anchor}")
    return problems


def test_the_manual_has_its_pages():
    names = {page.name for page in PAGES}
    pages = "params cli verdict-and-gate outputs tau2 models domains mlflow ci benchmarks architecture experiments"
    for name in pages.split():
        assert f"{name}.md" in names, name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page):
    assert broken(page) == []


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_readme_keeps_its_two_commands_and_the_quick_loop():
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/setup.sh && dvc repro" in readme
    assert 'python -m pytest -m "not gpu and not api"' in readme
    assert 'python -m pytest -m "not slow and not gpu and not api"' in readme
    assert "dvc exp run -S loop.iteration=2 -S baseline.source=champion" in readme


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md")}
    for page in PAGES[1:]:
        assert page.resolve() in linked, f"README.md does not link {page.relative_to(ROOT)}"


def test_the_checker_sees_a_broken_link_and_a_broken_anchor(tmp_path):
    (tmp_path / "a.md").write_text(
        "# A page\n\n## Two `words`: here\n\n[ok](#two-words-here) [file](b.md) [gone](c.md) [bad](b.md#nowhere)\n"
        "`[not a link](x.md)`\n\n```\n[not a link either](y.md)\n```\n"
    )
    (tmp_path / "b.md").write_text("# B\n\n## Same\n\n## Same\n")
    assert anchors(tmp_path / "b.md") == {"b", "same", "same-1"}
    assert broken(tmp_path / "a.md", root=tmp_path) == [
        "c.md: no such file c.md",
        "b.md#nowhere: no heading in b.md makes #nowhere",
    ]
