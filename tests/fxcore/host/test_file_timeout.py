"""A file of thousands of classes ends within its ``file-timeout``: the classes judged by then
keep their verdicts, each the one it has alone, and the others are said as not reached
(information, FX103), never as an error. Through the real CLI on a real file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import fx_lsp

#: Far more classes than a worker judges in the file's time (a trivial class takes about a
#: tenth of a second; all of these would take minutes).
CLASSES = 2000


def many_classes() -> str:
    parts = ["import torch", "from torch import nn", ""]
    for number in range(CLASSES):
        parts.append(f"class Net{number:04}(nn.Module):\n"
                     f"    def forward(self, x):\n"
                     f"        return x + {number}\n")
    return "\n".join(parts)


@pytest.mark.slow
def test_a_file_of_thousands_of_classes_ends_within_its_file_timeout(tmp_path: Path) -> None:
    # One second for all the classes (ten under the tests' time-out scale).
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "many"\n\n[tool.fx-lsp]\nfile-timeout = 1\n')
    (tmp_path / "many.py").write_text(many_classes())
    done = fx_lsp("check", "--output-format", "json", "--no-cache", "many.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["diagnostics"] == []
    modules = sorted(report["modules"], key=lambda module: module["class"])
    assert [module["class"] for module in modules] == [f"Net{n:04}" for n in range(CLASSES)]
    judged = [module for module in modules if module["status"] != "not-traced"]
    not_reached = modules[len(judged):]
    # The classes are judged in the file's order, and those judged keep their verdicts.
    assert judged and not_reached
    assert judged == modules[:len(judged)]
    for module in judged:
        assert module["status"] == "traceable", module
        assert [node["op"] for node in module["nodes"]] == ["call_function"]
    for module in not_reached:
        assert module["reason"] == (
            "not reached: the file's `file-timeout` (1 s for all its classes) ran out before "
            f"it was judged; {len(judged)} of its classes were. Raise `file-timeout` under "
            "[tool.fx-lsp] to judge them all, or split the file.")
