"""``--fix`` keeps a fix of compile mode only where the check after it finds its class meeting
fewer graph breaks and no code more often than before (``fix_trials``): a fix that replaces one
break by another is taken out of its file again, the round's other fixes there made again, and
not made in a later round; a class that had several fixes in the round has each tried again
alone. Real torch's side: an ``.item()`` whose number goes to ``math.exp`` in a helper (which
the planner does not follow), whose option moves the break to ``math.exp`` (FX501), left as it
was by ``fx-lsp check --fix --unsafe-fixes``, its file's other class fixed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fxcore.fixing import fix_trials
from fxcore.model.results import Failure, ModuleResult
from fxcore.reporting.report import Problem, Reach
from fxcore.rules.compile import graph_break_kind

from cli_support import fx_lsp


def _problem(code: str, line: int, class_name: str = "Reads", mode: str = "compile"
             ) -> Problem:
    kind = graph_break_kind(code) if code.startswith("GB") else "compile-error"
    failure = Failure(code=code, kind=kind, message="", path="/w/m.py", line=line, column=9,
                      end_line=line, end_column=20)
    module = ModuleResult(path="/w/m.py", line=5, column=7, end_line=5, end_column=12,
                          class_name=class_name, qualified_name=f"m:{class_name}",
                          status="failed")
    return Problem(**failure.span(), code=code, message="", severity="error",
                   reached=[Reach("/w/m.py", module, failure)], mode=mode)


def test_a_fix_whose_class_meets_a_new_code_or_no_fewer_breaks_is_undone() -> None:
    fixed, other = _problem("GB0124", 7), _problem("GB0124", 7, "Other")
    round_ = [(fixed, "Keep it a tensor")]
    # The break gone, nothing new: kept.
    assert fix_trials.judged(round_, [fixed, other], [other]).undone == []
    # The break moved (FX501): undone.
    (undone,) = fix_trials.judged(round_, [fixed, other], [_problem("FX501", 9), other]).undone
    assert (undone.code, undone.classes, undone.title) == ("GB0124", ("Reads",),
                                                           "Keep it a tensor")
    assert "newly met FX501" in undone.said()
    # A code the class met before, met more often: a break replaced by one of the same code.
    known = _problem("FX501", 3)
    (more,) = fix_trials.judged(round_, [fixed, known], [known, _problem("FX501", 9)]).undone
    assert "FX501 2 times (1 before)" in more.worse
    # No fewer breaks: the same code at another line.
    (same,) = fix_trials.judged(round_, [fixed], [_problem("GB0124", 9)]).undone
    assert same.worse == "met no fewer graph breaks"
    # Not planned again; another class's problem of the same code still is.
    assert fix_trials.to_fix([fixed, other], [undone], set()) == [other]


def test_a_fixable_problem_at_the_fixed_line_is_the_next_step_of_the_fix() -> None:
    # ``(x.mean() > 0).item()`` as a condition kept a tensor: the branch on it (GB0170, at the
    # same line) is torch.where's to fix next round.
    fixed, branch = _problem("GB0124", 7), _problem("GB0170", 7)
    assert fix_trials.judged([(fixed, "a")], [fixed], [branch], lambda _: True).undone == []
    assert fix_trials.judged([(fixed, "a")], [fixed], [branch]).undone  # no fix for it: undone
    moved = _problem("GB0170", 9)  # elsewhere: a break of its own, whatever fits it
    assert fix_trials.judged([(fixed, "a")], [fixed], [moved], lambda _: True).undone


def test_a_recompilation_fix_may_trade_for_a_break_but_not_for_a_failing_compile() -> None:
    swap = _problem("FX510", 7)
    assert fix_trials.judged([(swap, "a")], [swap], [_problem("GB0099", 8)]).undone == []
    (undone,) = fix_trials.judged([(swap, "a")], [swap], [_problem("FX502", 8)]).undone
    assert undone.worse == "newly met FX502"


def test_export_mode_problems_are_not_judged() -> None:
    fixed = _problem("FX401", 7, mode="export")
    after = [_problem("FX402", 9, mode="export")]  # the next failure export meets: no regression
    assert fix_trials.judged([(fixed, "Insert torch._check")], [fixed], after) == \
        fix_trials.Verdict([], [])


def test_a_class_with_several_fixes_has_each_tried_again_alone() -> None:
    first, second = _problem("GB0124", 7), _problem("GB0036", 9)
    verdict = fix_trials.judged([(first, "a"), (second, "b")], [first, second],
                                [_problem("FX501", 7)])
    assert verdict.undone == [] and verdict.retried == [first, second]
    other = _problem("GB0124", 7, "Other")
    assert fix_trials.to_fix([first, second, other], [], {"Reads"}) == [first, other]


SOURCE = """\
import math

import torch
from torch import nn


def gain(scale):
    return math.exp(scale)


class ExpAndKeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        scale = x.mean().item()
        return self.proj(x) * gain(scale)


class ScaleByItem(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=x.mean().item())
"""


@pytest.mark.slow
@pytest.mark.timeout(900)  # three checks of the file, with real torch.compile on meta tensors
def test_a_fix_that_moves_the_break_is_taken_back_by_fix_all(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."model:ExpAndKeep"]\ninputs = {x = "float32[4, 8]"}\n'
        '[tool.fx-lsp.modules."model:ScaleByItem"]\ninputs = {x = "float32[4, 8]"}\n')
    done = fx_lsp("check", "--mode", "compile", "--fix", "--unsafe-fixes", "--no-cache", ".",
                  cwd=tmp_path)
    log = done.stdout + done.stderr
    assert "Undid" in log and "ExpAndKeep newly met FX501" in log, log
    fixed = path.read_text()
    # ExpAndKeep as it was: neither its forward's decorators nor a process-wide flip.
    assert fixed[:fixed.index("class ScaleByItem")] == SOURCE[:SOURCE.index("class ScaleByItem")]
    assert "capture_scalar_outputs = True" not in fixed
    # The other class's fix, made in the same round, kept.
    assert fixed.count("@torch.compiler.disable(recursive=False)") == 1
    # Still reported, on its line (its column is the call's on one torch series, the
    # receiver's on another).
    assert re.search(r"model\.py:17:\d+: GB0124", done.stdout), done.stdout
