"""A baseline file fx-lsp cannot use stops ``fx-lsp check`` with one line and exit status 2,
before anything is traced, and is left as it was: one nested too deep, one in a merge
conflict, one over the size limit (``--write-baseline`` never rewrites a baseline it could
not read, which would drop every entry of the files the run did not check), and a
``--baseline`` path that goes through a linked folder, which ``--output-file`` refuses too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fxcore.reporting import baseline

from cli_support import fx_lsp
from engine_support import USES_LEN_AND_FINE

BASELINE = ".fx-lsp-baseline.json"
#: The most bytes of a baseline fx-lsp reads (docs/cli.md).
BASELINE_LIMIT = 64 * 1024 * 1024


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    for name in ("a.py", "b.py"):
        (root / name).write_text(USES_LEN_AND_FINE)
    return root


def refused(root: Path, *arguments: str) -> str:
    """The one line ``fx-lsp check ARGUMENTS`` refuses with (exit status 2)."""
    completed = fx_lsp("check", *arguments, cwd=root)
    assert completed.returncode == 2, completed
    lines = completed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fx-lsp check: "), completed.stderr
    assert completed.stdout == ""
    return lines[0]


def test_a_baseline_nested_too_deep_is_one_line(workspace: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    (workspace / BASELINE).write_text(deep)
    for arguments in (["a.py"], ["a.py", "--write-baseline"], [".", "--write-baseline"]):
        line = refused(workspace, *arguments)
        assert BASELINE in line and "nested more than 64 levels deep" in line, line
        assert (workspace / BASELINE).read_text() == deep


def test_the_baseline_s_depth_is_read_before_it_is_parsed() -> None:
    """The reader's bound is the one every JSON reader of fx-lsp's has (64 levels, the bracket
    scan of ``json_nesting``), checked before Python's parser recurses: a baseline 65 deep,
    which ``json.loads`` parses, is refused as deep as one 100,000 deep, which it cannot, and
    its entries are not read as some."""
    entry = {"file": "a.py", "code": "FX403", "mode": "fx", "class_name": "A",
             "fingerprint": "0"}
    # 65 deep: the object, then 64 arrays beside the entries.
    text = json.dumps({"version": baseline.BASELINE_VERSION, "problems": [entry],
                       "note": "@"}).replace('"@"', "[" * 64 + "]" * 64)
    assert json.loads(text)["problems"] == [entry]
    with pytest.raises(baseline.BaselineError, match="nested more than 64 levels deep"):
        baseline.loads(text)
    with pytest.raises(baseline.BaselineError, match="nested more than 64 levels deep"):
        baseline.loads("[" * 100_000 + "]" * 100_000)


def test_an_unreadable_baseline_is_not_rewritten(workspace: Path) -> None:
    written = fx_lsp("check", ".", "--write-baseline", cwd=workspace)
    assert written.returncode == 0, written.stderr
    whole = (workspace / BASELINE).read_text()
    files = {entry["file"] for entry in json.loads(whole)["problems"]}
    assert files == {"a.py", "b.py"}
    lines = whole.splitlines(keepends=True)
    conflict = "".join(["<<<<<<< ours\n", *lines, "=======\n", *lines, ">>>>>>> theirs\n"])
    # Valid, but larger than fx-lsp reads: its entries padded out with spaces.
    large = whole + " " * (BASELINE_LIMIT + 1 - len(whole))
    for text in (conflict, large):
        (workspace / BASELINE).write_text(text)
        line = refused(workspace, "a.py", "--write-baseline")
        assert "baseline" in line and "--write-baseline" in line, line
        assert (workspace / BASELINE).read_text() == text


def test_baseline_writes_only_where_output_file_may(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "linked")
    report = refused(workspace, "a.py", "--output-file", "linked/report.json")
    assert "symbolic link" in report, report
    line = refused(workspace, "a.py", "--write-baseline", "--baseline", "linked/base.json")
    assert "symbolic link" in line and "linked/base.json" in line, line
    assert list(outside.iterdir()) == []
