"""A class whose constructor calls what an installed package lacks cannot be built here with any
arguments: fx-lsp reports the constructor's error at its line in every mode (FX101), and the
library benchmark counts that as the class's verdict in every mode, apart, only where real
torch's build from the report's arguments raises the same at the same line
(``benchmarks/fidelity/verdicts_apart.judge_unbuilt``). Compared here with real torch in the
same run, on a small class written for it."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import fx_lsp
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.library_judging import (
    MODES,
    Figures,
    absolute_paths,
    count_verdicts,
    judge_unbuilt_class,
)
from benchmarks.fidelity.no_verdict_causes import diagnostic_messages
from benchmarks.fidelity.pt2_real_check import real_outcomes

WORKSPACE = '''
import math

from torch import nn


class Windowed(nn.Module):
    """Makes its window with a function the installed math module lacks."""

    def __init__(self, size: int = 8):
        super().__init__()
        self.window = math.blackmanharris(size)

    def forward(self, x):
        return x * self.window
'''
#: The line of ``math.blackmanharris``'s call.
RAISING_LINE = 11


def _classes(tmp_path: Path) -> tuple[dict[str, dict], dict]:
    (tmp_path / "windows.py").write_text(textwrap.dedent(WORKSPACE).lstrip())
    completed = fx_lsp("check", "--no-cache", "--mode", ",".join(MODES), "--output-format",
                       "json", "windows.py", cwd=tmp_path)
    report = json.loads(completed.stdout)
    by_mode = {module["mode"]: {**absolute_paths(module, str(tmp_path)),
                                "relative_path": module["path"]}
               for module in report["modules"] if module["class"] == "Windowed"}
    return by_mode, report


@pytest.mark.slow  # fx-lsp's check and real torch's child process: 33 s at load 18
def test_real_torch_raising_the_same_makes_it_a_verdict_in_every_mode(tmp_path: Path) -> None:
    by_mode, report = _classes(tmp_path)
    assert sorted(by_mode) == sorted(MODES)
    for module in by_mode.values():
        assert [(f["code"], f["line"]) for f in module["failures"]] == [("FX101", RAISING_LINE)]
    diagnostics = diagnostic_messages(report)
    figures = Figures("windows")
    count_verdicts(figures, by_mode, diagnostics)
    assert figures.classes == 1 and [entry[0] for entry in figures.unbuilt] == ["windows:Windowed"]
    assert figures.without == dict.fromkeys(MODES, 0)
    (name, pending, causes), = figures.unbuilt
    assert set(causes.values()) == {"installed math lacks math.blackmanharris"}
    (real,) = real_outcomes(str(tmp_path), [{"module": pending["export"], "inputs": {}}])
    judge_unbuilt_class(figures, name, pending, causes, real, diagnostics)
    assert figures.disagreements == []
    assert figures.tried == figures.agree == dict.fromkeys(MODES, 1)
    assert (figures.raised.unbuilt, figures.raised.unbuilt_agree) == (1, 1)

    # Where real torch builds the class, it stays without a verdict, under its cause.
    built = Figures("windows")
    judge_unbuilt_class(built, name, pending, causes, {"eager": None}, diagnostics)
    assert built.agree == dict.fromkeys(MODES, 0)
    assert built.without == dict.fromkeys(MODES, 1)
    assert built.disagreements == ["windows:Windowed: the constructor raises here (fx-lsp), "
                                   "real torch builds it"]
