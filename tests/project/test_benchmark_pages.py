"""The benchmarks and their pages name what they measure, never an issue number: a number means
nothing to a reader of the documentation site or of the benchmarks' code."""

from __future__ import annotations

import re
from pathlib import Path

from engine_support import REPO_ROOT

#: "issue 46", "Issues 33 and 46", "issue #46", "(#46)"; across a line break too.
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|\(#\d+\)", re.IGNORECASE)
FOLDERS = (REPO_ROOT / "benchmarks", REPO_ROOT / "docs" / "benchmarks")


def issue_numbers(text: str) -> list[str]:
    return [match.group(0) for match in ISSUE_NUMBER.finditer(text)]


def text_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` that reads as text (a record's JSON included)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found.append(path)
    return found


def test_the_pattern_finds_issue_numbers_and_nothing_else() -> None:
    assert issue_numbers("Target (issue 20): export") == ["issue 20"]
    assert issue_numbers("Issues 33 and 46: real torch") == ["Issues 33"]
    assert issue_numbers("measured for issue\n46's libraries") == ["issue\n46"]
    assert issue_numbers("see issue #7, fixed (#123)") == ["issue #7", "(#123)"]
    assert issue_numbers("the issue's fx figures, FX407 and GB7000, run 1 of 2, #1 and (#a)") == []


def test_no_file_of_the_benchmarks_or_their_pages_names_an_issue_number() -> None:
    files = [path for folder in FOLDERS for path in text_files(folder)]
    assert {".md", ".py"} <= {path.suffix for path in files}
    named = {str(path.relative_to(REPO_ROOT)): found for path in files
             if (found := issue_numbers(path.read_text(encoding="utf-8")))}
    assert named == {}
