"""README.md is the front page and docs/ the manual: no paragraph stands in both, so that an
edit of one cannot leave a stale copy in the other; and neither names an issue number, which
means nothing to a reader (docs/benchmarks/ is checked with the benchmarks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: Shorter blocks (a heading, a one-line command, a table's header) may well repeat.
MIN_PARAGRAPH_CHARACTERS = 120
#: "issue 46", "issues 12 and 13", "(#33)", "#12" (not an anchor such as "#fx002").
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|(?<![\w/&#])#\d+\b", re.IGNORECASE)


def paragraphs(text: str) -> set[str]:
    """The blocks of ``text`` between blank lines, whitespace collapsed, of at least
    ``MIN_PARAGRAPH_CHARACTERS``."""
    blocks = (" ".join(block.split()) for block in re.split(r"\n\s*\n", text))
    return {block for block in blocks if len(block) >= MIN_PARAGRAPH_CHARACTERS}


def issue_numbers(text: str) -> list[str]:
    return [match.group(0) for match in ISSUE_NUMBER.finditer(text)]


def pages() -> list[Path]:
    return sorted(path for path in DOCS.rglob("*.md")
                  if DOCS / "benchmarks" not in path.parents)


def test_the_checks_find_what_they_look_for() -> None:
    paragraph = "A paragraph long enough to count, " * 5
    assert paragraphs(f"# Title\n\n{paragraph}\n\nshort\n") == {paragraph.strip()}
    assert paragraphs(paragraph.replace(" ", "\n  ")) == {paragraph.strip()}
    assert issue_numbers("Fixed in issue 46 (issue 33), issues 12, #7; see [x](#fx002).") == [
        "issue 46", "issue 33", "issues 12", "#7"]
    assert issue_numbers("a colour &#160; and cli.md#fx-lsp-check") == []


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(DOCS)))
def test_no_readme_paragraph_stands_in_the_docs(page: Path) -> None:
    readme = paragraphs((REPO / "README.md").read_text(encoding="utf-8"))
    shared = readme & paragraphs(page.read_text(encoding="utf-8"))
    assert not shared, f"{page.name} repeats README.md: {sorted(shared)[0][:80]}..."


@pytest.mark.parametrize("path", [REPO / "README.md", *pages()],
                         ids=lambda path: str(path.relative_to(REPO)))
def test_no_issue_numbers(path: Path) -> None:
    assert issue_numbers(path.read_text(encoding="utf-8")) == [], path
