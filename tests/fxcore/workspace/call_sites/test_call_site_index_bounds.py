"""The host's index of a workspace's constructor calls (``fxcore.workspace.call_sites``) reads
within one bound per pass (``reading_budget``): a workspace of many large test files dense
with calls of a class neither holds up the check nor costs its verdicts, the documents and
tests are read before the other files, and what was left out is said in one line. Through the
real CLI on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import fx_lsp

NETS = '''import torch
from torch import nn


class Widths(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, 4)

    def forward(self, x):
        return self.linear(x)


class Depths(Widths):
    def __init__(self, depth: int):
        super().__init__(depth * 2)
'''

#: The only call of Depths, in a document whose path sorts after every test file.
USAGE = "# Usage\n\n```python\nfrom nets import Depths\n\nmodel = Depths(depth=12)\n```\n"


def dense_test(size: int = 380_000) -> str:
    """About ``size`` bytes of literal calls of Widths, each read, bound and kept: several
    seconds of CPU per file for a search without bounds."""
    lines = ["from nets import Widths", "", "def test_many():"]
    number = 0
    while sum(map(len, lines)) < size:
        lines.append(f"    model_{number} = Widths(width={number % 50 + 100})")
        number += 1
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_many_large_test_files_dense_with_calls_are_read_within_bounds(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "nets"\n')
    (root / "nets.py").write_text(NETS)
    (root / "zoo").mkdir()
    (root / "zoo" / "usage.md").write_text(USAGE)
    (root / "tests").mkdir()
    text = dense_test()
    # 45 MB: over the bytes of a pass, and minutes of CPU to read whole.
    for number in range(120):
        (root / "tests" / f"test_dense_{number:03}.py").write_text(text)
    done = fx_lsp("check", "--output-format", "json", "--no-cache", "nets.py", cwd=root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["diagnostics"] == []
    widths, depths = sorted(report["modules"], key=lambda module: module["class"],
                            reverse=True)
    assert widths["status"] == depths["status"] == "traceable"
    # Built from a call of the tests the pass read (the first by path).
    assert widths["arguments"]["site"] == "tests/test_dense_000.py:4"
    assert widths["arguments"]["kwargs"] == {"width": "100"}
    # Documents are read before tests: the call of Depths is found.
    assert depths["arguments"]["site"] == "zoo/usage.md:6"
    assert depths["arguments"]["kwargs"] == {"depth": "12"}
    [line] = [line for line in done.stderr.splitlines() if "constructor calls" in line]
    assert line.startswith("fx-lsp left ") and f"of the 122 files of {root}" in line
    assert "at most 16 MiB and 10 s of CPU time" in line
