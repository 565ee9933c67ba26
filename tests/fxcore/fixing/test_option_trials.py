"""``--fix`` keeps a config option only where the check after it finds no new failure in the
class it was for (``option_trials``): the planner records each option it sets, a class that
meets a new code with it has it taken out of its file again (the statement the fix added,
nothing else), and its problem is not planned again. Real torch's side (an option that makes
VOLO's compile fail) is the fix-all benchmark's."""

from __future__ import annotations

from pathlib import Path

from fxcore.fixing import option_trials, recompile_fixes
from fxcore.fixing.fix_apply import plan_edits
from fxcore.model.results import Failure, ModuleResult
from fxcore.reporting.report import Problem, Reach
from fxcore.rules.compile import graph_break_kind

SOURCE = """\
import torch
from torch import nn


class Reads(nn.Module):
    def forward(self, x):
        return x[:, : int(x.sum().item())]


class ReadsScale(Reads):
    pass
"""
OPTION = "torch._dynamo.config.capture_scalar_outputs"


def _problem(path: str, code: str, line: int, class_name: str = "ReadsScale") -> Problem:
    kind = graph_break_kind(code) if code.startswith("GB") else "compile-error"
    failure = Failure(code=code, kind=kind, message="", path=path, line=line, column=27,
                      end_line=line, end_column=44)
    module = ModuleResult(path=path, line=5, column=7, end_line=5, end_column=17,
                          class_name=class_name, qualified_name=f"model:{class_name}",
                          status="failed")
    return Problem(**failure.span(), code=code, message="", severity="error",
                   reached=[Reach(path, module, failure)])


def test_an_option_set_is_recorded_and_undone_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    edits = plan_edits([_problem(path, "GB0124", 7)], {path: SOURCE}.get,
                       lambda _: str(tmp_path), unsafe=True)
    (_, fixed), = edits.files.values()
    assert f"{OPTION} = True" in fixed
    assert [(path_, option) for _, path_, option in edits.options] == [(path, OPTION)]
    # ReadsScale has no forward of its own to scope the option to (``scoped_options``).
    assert recompile_fixes.unset_config_option(fixed, OPTION).split() == SOURCE.split()
    assert recompile_fixes.unset_config_option(SOURCE, OPTION) == SOURCE


def test_a_class_meeting_a_new_code_has_its_option_undone(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    fixed = _problem(path, "GB0124", 7)
    options = [(fixed, path, OPTION)]
    other = _problem(path, "GB0124", 7, class_name="Other")
    # The break gone, nothing new: kept.
    assert option_trials.undone(options, [fixed, other], [other]) == []
    # The compile now fails (FX502) or the break moved (FX501): undone, once per file.
    moved = _problem(path, "FX501", 9)
    (undone,) = option_trials.undone(options * 2, [fixed, other], [moved, other])
    assert (undone.path, undone.option, undone.new_codes) == (path, OPTION, ("FX501",))
    assert "Undid torch._dynamo.config.capture_scalar_outputs" in undone.said()
    # Not planned again; another class's problem of the same code still is.
    assert option_trials.still_to_fix([fixed, other], [undone]) == [other]
