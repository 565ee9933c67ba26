"""The ``nn.Module`` mode a class is judged in (``module-mode``), through the real CLI, each
verdict compared with real torch on the CPU in that mode, computed in this run
(scripts/{compile,export}_ground_truth.py, tests/support/real_torch_answers.py):

- compile judges a class in train and in eval mode where its code (or a submodule's, or a
  helper it hands itself to) reads ``training``, and its verdict says which breaks each mode
  meets, with each mode's graphs; a class where nothing but torch's own layers (dropout, batch
  norm) reads it is compiled once, in train mode, its verdict holding for both, with a note;
- export judges a class in eval mode, as deployment does: a class that fails export only in
  train mode gets eval's verdict;
- ``module-mode = "train"`` or ``"eval"`` judges both modes in that one.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from mode_judging import modes_judged
from real_torch_answers import compile_answers, export_answers

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.results import ModuleResult
from fxcore.worker.module_modes.judging import ONE_CAPTURE_NOTE, judged

from cli_support import fx_lsp

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).parents[3] / "corpus"
COMPILE = compile_answers()
EXPORT = export_answers()
COMPILE_FILE = "train_eval.py"
EXPORT_FILE = "export_train_mode.py"
PLAIN = '''from torch import nn


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        print("no mode here")
        return self.linear(x).relu()
'''


def checked(folder: Path, corpus: str, file: str, mode: str, setting: str | None = None
            ) -> list[dict[str, Any]]:
    """The JSON verdicts of ``fx-lsp check --mode MODE`` on a workspace holding the corpus
    file (and ``Plain``), every class given float32[2, 8] inputs as the ground truth is."""
    shutil.copy(CORPUS / corpus / file, folder / file)
    (folder / "plain.py").write_text(PLAIN, encoding="utf-8")
    stem = Path(file).stem
    classes = [line.split("(")[0].removeprefix("class ")
               for line in (folder / file).read_text(encoding="utf-8").splitlines()
               if line.startswith("class ")]
    table = "".join(f'[tool.fx-lsp.modules."{stem}:{name}"]\ninputs = {{x = "float32[2, 8]"}}\n'
                    for name in classes)
    setting_line = f'module-mode = "{setting}"\n' if setting else ""
    (folder / "pyproject.toml").write_text(
        f"[tool.fx-lsp]\n{setting_line}\n"
        f'[tool.fx-lsp.modules."plain:Plain"]\ninputs = {{x = "float32[2, 8]"}}\n{table}',
        encoding="utf-8")
    completed = fx_lsp("check", "--no-cache", "--mode", mode, "--format", "json", ".",
                       cwd=folder)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    assert not report["config_problems"]
    return report["modules"]


def breaks_in(module: dict[str, Any], mode: str) -> list[list[Any]]:
    """(line, code) of the breaks a verdict says ``mode`` meets: those of every mode and
    those marked with ``mode``."""
    return sorted([failure["line"], failure["code"]] for failure in module["failures"]
                  if failure.get("module_mode") in (None, mode))


@pytest.mark.slow
def test_compile_judges_each_mode_as_real_torch_compiles_it(tmp_path: Path) -> None:
    modules = checked(tmp_path, "compile", COMPILE_FILE, "compile")
    by_class = {module["class"]: module for module in modules}
    for key in (key for key in COMPILE if key.startswith(f"{COMPILE_FILE}:")):
        truth = COMPILE[key]["modes"]
        module = by_class[key.split(":")[1]]
        assert module["module_modes"] == ["train", "eval"], key
        once = "graph_counts" not in module  # compiled once, in train mode
        for mode in ("train", "eval"):
            assert breaks_in(module, mode) == truth[mode]["breaks"], (key, mode)
            graphs = module["graph_count"] if once else module["graph_counts"][mode]
            assert graphs == truth[mode]["graphs"], (key, mode)
        for failure in module["failures"]:
            # A break of one mode says so in its message; one of both modes does not.
            marked = failure.get("module_mode")
            assert failure["message"].endswith(f" (in {marked} mode only)") == bool(marked)
    # The real answers hold breaks that differ between the modes, both ways, and one met only
    # through a helper the class hands itself to.
    assert COMPILE[f"{COMPILE_FILE}:TrainOnlyBreak"]["modes"]["eval"]["breaks"] == []
    assert COMPILE[f"{COMPILE_FILE}:EvalOnlyBreak"]["modes"]["train"]["breaks"] == []
    assert COMPILE[f"{COMPILE_FILE}:HelperReadsTraining"]["modes"]["eval"]["breaks"] == []
    # Where nothing but torch's own layers (or nothing at all) reads `training`: one compile,
    # in train mode, whose verdict holds for both modes, and a note that says so.
    for name in ("SameInBoth", "Plain"):
        once = by_class[name]
        assert once["module_modes"] == ["train", "eval"] and "graph_counts" not in once
        assert ONE_CAPTURE_NOTE in once["capture_notes"], name
        assert [failure.get("module_mode") for failure in once["failures"]] == [None]
    assert "graph_counts" in by_class["HelperReadsTraining"]
    # An override that sets what forward reads: both modes; `training` read only by a
    # `predict` and a `train` no call runs: once.
    assert COMPILE[f"{COMPILE_FILE}:NoisyWhenTraining"]["modes"]["eval"]["breaks"] == []
    assert "graph_counts" in by_class["NoisyWhenTraining"]
    assert "graph_counts" not in by_class["PredictSwitch"]
    assert "`PredictSwitch.predict`, `PredictSwitch.train`" in " ".join(
        by_class["PredictSwitch"]["capture_notes"])


def test_module_mode_eval_compiles_in_eval_mode_alone(tmp_path: Path) -> None:
    modules = checked(tmp_path, "compile", COMPILE_FILE, "compile", setting="eval")
    for module in modules:
        if module["class"] == "Plain":
            continue
        truth = COMPILE[f"{COMPILE_FILE}:{module['class']}"]["modes"]["eval"]
        assert module["module_modes"] == ["eval"]
        assert breaks_in(module, "eval") == truth["breaks"]
        assert module["graph_count"] == truth["graphs"]


def test_export_judges_a_class_in_eval_mode_as_real_export_in_eval_mode(tmp_path: Path
                                                                         ) -> None:
    truth = EXPORT[f"{EXPORT_FILE}:TrainOnlyGuard"]
    assert (truth["verdict"], truth["train"]["verdict"]) == ("ok", "failed")
    module = next(module for module in checked(tmp_path, "export", EXPORT_FILE, "export")
                  if module["class"] == "TrainOnlyGuard")
    assert (module["status"], module["failures"]) == ("traceable", [])
    assert module["module_modes"] == ["eval"]
    assert any(note.startswith("Judged in eval mode (model.eval())")
               for note in module["capture_notes"])


def test_module_mode_train_exports_in_train_mode_as_real_export_does(tmp_path: Path) -> None:
    truth = EXPORT[f"{EXPORT_FILE}:TrainOnlyGuard"]["train"]
    module = next(module for module in checked(tmp_path, "export", EXPORT_FILE, "export",
                                               setting="train")
                  if module["class"] == "TrainOnlyGuard")
    assert module["status"] == "failed" and module["module_modes"] == ["train"]
    assert module["failures"][0]["line"] == truth["first_line"]
    assert not module["capture_notes"]


class ReadsTraining(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if self.training else x


def scale_in_training(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return x * 2 if module.training else x


class HandsItselfToAHelper(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_in_training(self, x)


class OwnBatchNorm(torch.nn.BatchNorm1d):
    """A library's subclass of a torch layer, with a forward of its own."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) if self.training else x


def test_torch_layers_alone_are_compiled_once_in_train_mode_with_a_note() -> None:
    layers = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8),
                                 torch.nn.Dropout(0.1), torch.nn.LSTM(8, 8, dropout=0.1,
                                                                      num_layers=2))
    seen, result = modes_judged(layers)
    assert seen == [True] and result.module_modes == ["train", "eval"]
    assert result.capture_notes == [ONE_CAPTURE_NOTE]
    assert "the eval graph (model.eval()) was not captured because nothing differs" in \
        ONE_CAPTURE_NOTE


@pytest.mark.parametrize("reader", [ReadsTraining, HandsItselfToAHelper,
                                    lambda: OwnBatchNorm(8)])
def test_code_outside_torchs_layers_that_reads_training_is_compiled_in_both_modes(
        reader: Any) -> None:
    seen, result = modes_judged(torch.nn.Sequential(torch.nn.Linear(8, 8), reader()))
    assert seen == [False, True] and result.module_modes == ["train", "eval"]
    assert ONE_CAPTURE_NOTE not in result.capture_notes


def test_a_second_mode_that_would_outlast_the_time_out_is_left_out() -> None:
    """The engine counts a class's time-out from the last message: compile's second mode is
    left out, with a note, when the first took over half of it (in the worker's CPU time:
    ``budget_clock``)."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), ReadsTraining())
    seen: list[bool] = []

    def verdict(loop: bool) -> ModuleResult:
        seen.append(model[1].training)
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return ModuleResult(path="m.py", line=1, column=1, end_line=1, end_column=2,
                            class_name="Net", qualified_name="m:Net", status="traceable",
                            mode="compile")

    result = judged("auto", "compile", model, verdict, seconds=0.5)
    assert seen == [False] and model[1].training  # eval mode only, then put back
    assert result.module_modes == ["eval"]
    assert result.capture_notes == [
        "Judged in eval mode only: judging it in train mode (model.train()) as well would "
        "take longer than the class's time-out (0.5 s)"]
    seen.clear()
    assert judged("auto", "compile", model, verdict, seconds=5).module_modes == ["train",
                                                                                 "eval"]
    assert seen == [False, True]
