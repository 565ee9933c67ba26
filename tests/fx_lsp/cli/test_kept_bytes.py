"""``fx-lsp check --fix`` and ``--add-noqa`` change the lines they fix and no other byte: Windows
line ends, mixed line ends (a line fx-lsp adds takes its neighbour's), a UTF-8 byte order
mark, an encoding cookie and a missing last line end are kept, each file's bytes compared
whole. A file with a byte order mark is checked like any other; a fix that cannot be written
is one line on stderr, exit status 2, the file as it was and no temporary left."""

from __future__ import annotations

import errno
import os
import pathlib
import subprocess
import sys

import pytest
from unwritable_files import unwritable

from cli_support import fx_lsp

REPO = pathlib.Path(__file__).parents[3]

#: A model with one FX002 (``len``) on line 8, as its lines (no line ends).
LINES = ["# -*- coding: utf-8 -*-", "import torch", "from torch import nn", "", "",
         "class UsesLen(nn.Module):", "    def forward(self, x):",
         "        return x * len(x)"]
#: Where ``--fix`` adds the FX002 fix's lines (after line 3), and what.
WRAP_AFTER, WRAP = 3, ["import torch.fx", "", 'torch.fx.wrap("len")']
NOQA = "  # noqa: FX002"
BOM = b"\xef\xbb\xbf"


def joined(lines: list[str], ends: list[str]) -> bytes:
    return "".join(line + end for line, end in zip(lines, ends, strict=True)).encode()


def project(tmp_path: pathlib.Path, data: bytes) -> pathlib.Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'kept'\n")
    (tmp_path / "models.py").write_bytes(data)
    return tmp_path / "models.py"


def files(folder: pathlib.Path) -> list[str]:
    """The files in ``folder`` but the cache's: no temporary of a write left."""
    return sorted(path.name for path in folder.iterdir() if path.name != ".fx-lsp-cache")


def fixed(lines: list[str]) -> list[str]:
    return [*lines[:WRAP_AFTER], *WRAP, *lines[WRAP_AFTER:]]


#: (file's line ends, what they are after --fix, a byte order mark): each line's own end
#: kept; the added lines take the end of the line before them; a last line without an end
#: keeps none; the mark stays.
MIXED = ["\r\n", "\r\n", "\r\n", "\n", "\n", "\n", "\r\n", ""]
CRLF, LF_NO_LAST_END = ["\r\n"] * 8, ["\n"] * 7 + [""]
CASES = {
    "crlf": (CRLF, ["\r\n"] * 11, b""),
    "crlf-bom": (CRLF, ["\r\n"] * 11, BOM),
    "mixed-no-last-end": (MIXED, [*MIXED[:3], "\r\n", "\r\n", "\r\n", *MIXED[3:]], b""),
    "mixed-no-last-end-bom": (MIXED, [*MIXED[:3], "\r\n", "\r\n", "\r\n", *MIXED[3:]], BOM),
    "lf-no-last-end-bom": (LF_NO_LAST_END, ["\n"] * 10 + [""], BOM),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fix_changes_only_the_fixed_lines(tmp_path: pathlib.Path, case: str) -> None:
    ends, fixed_ends, bom = CASES[case]
    models = project(tmp_path, bom + joined(LINES, ends))
    completed = fx_lsp("check", "--fix", ".", cwd=tmp_path)
    assert "Fixed 1 problem in 1 file." in completed.stderr, completed.stderr
    assert models.read_bytes() == bom + joined(fixed(LINES), fixed_ends)


@pytest.mark.parametrize("case", list(CASES))
def test_add_noqa_changes_only_the_commented_line(tmp_path: pathlib.Path, case: str) -> None:
    ends, _, bom = CASES[case]
    models = project(tmp_path, bom + joined(LINES, ends))
    completed = fx_lsp("check", "--add-noqa", ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "Added noqa comments for 1 problem in 1 file." in completed.stderr
    assert models.read_bytes() == bom + joined([*LINES[:-1], LINES[-1] + NOQA], ends)


def test_a_file_with_a_byte_order_mark_is_checked_where_its_lines_are(
        tmp_path: pathlib.Path) -> None:
    project(tmp_path, BOM + joined(LINES, ["\r\n"] * 8))
    completed = fx_lsp("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    line, summary = completed.stdout.splitlines()
    assert summary.startswith("Checked 1 file: 1 modules traced, 0 traceable, 1 failed"), summary
    # The column as an editor shows line 1 (no mark), and no FX100.
    assert line.startswith("models.py:8:20: FX002 [UsesLen] len() is called"), line


def test_a_fix_that_cannot_be_written_is_one_line_and_leaves_the_file(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk, simulated in the in-process command: renaming the written temporary over
    ``models.py`` fails with ENOSPC (other renames, the cache's, go ahead)."""
    original = joined(LINES, ["\r\n"] * 8)
    models = project(tmp_path, original)
    replace = os.replace

    def full_disk(source: str, target: str, **options: object) -> None:
        if str(target).endswith("models.py"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(source, target, **options)

    monkeypatch.setattr(os, "replace", full_disk)
    completed = fx_lsp("check", "--fix", ".", cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr == (f"fx-lsp check: cannot write models.py: "
                                f"{os.strerror(errno.ENOSPC)}; it is unchanged\n")
    assert models.read_bytes() == original
    assert files(tmp_path) == ["models.py", "pyproject.toml"]


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--fix", "--add-noqa"])
def test_an_unwritable_file_is_one_line_from_the_process(tmp_path: pathlib.Path,
                                                         option: str) -> None:
    """A real process on a file it may not replace (immutable as root, else in a read-only
    folder): no traceback."""
    original = joined(LINES, ["\r\n"] * 8)
    models = project(tmp_path, original)
    with unwritable(models) as reason:
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", option, "--no-cache", "."],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert models.read_bytes() == original
        assert files(tmp_path) == ["models.py", "pyproject.toml"]
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr == f"fx-lsp check: cannot write models.py: {reason}; it is unchanged\n"
