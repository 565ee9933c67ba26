"""The JSON report gives, beside each verdict's capture seconds (``trace_seconds``), the part of
them that compile mode's loop of calls took (``loop_seconds``), and beside each file's job
seconds the part of them the loop took in every capture of the job, the submodules judged
inside its classes included: the benchmarks hold a class's capture without the loop to its
earlier time, and measure the loop apart. Real CLI, real worker, on small classes that
compile mode judges with its loop."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fxcore.model.results import ModuleResult
from fxcore.worker.capture.compile import recompile_loop
from fxcore.worker.inputs.eager_runs.key_sets import merged_key_sets
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.module_modes.mode_verdicts import merged

from cli_support import fx_lsp

NO_HOOK = pytest.mark.skipif(not recompile_loop.can_observe(),
                             reason="this torch reports no guard failures to a hook")

MODEL = """\
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).relu()
"""


#: A class that holds a block whose width only it gives: the block is judged inside it too,
#: as the instance it built.
PARENT = """\
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x).relu()


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.small = Block(8)

    def forward(self, x):
        return self.small(x) * 2
"""


def report(root: Path, modes: str, path: str, env: dict[str, str] | None = None
           ) -> dict[str, Any]:
    completed = fx_lsp("check", "--no-cache", "--mode", modes, "--output-format", "json", path,
                       cwd=root, env=env)
    return json.loads(completed.stdout)


def verdicts(root: Path, modes: str,
             env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Small's verdict in each of ``modes``, from the JSON report."""
    data = report(root, modes, "small.py", env)
    modules = data["modules"]
    assert {module["class"] for module in modules} == {"Small"}, data
    # The file's job made no other capture.
    (file,) = data["files"]
    assert file["loop_seconds"] == pytest.approx(sum(module["loop_seconds"]
                                                     for module in modules), abs=1e-3)
    return {module["mode"]: module for module in modules}


@NO_HOOK
def test_the_loop_of_calls_seconds_are_a_part_of_compiles_capture(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(MODEL, encoding="utf-8")
    # The switch that turns the loop off reaches the worker as a workspace passes variables.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp]\npass-env = ["FX_LSP_NO_RECOMPILE_LOOP"]\n'
        '[tool.fx-lsp.modules."small:Small"]\ninputs = {x = "float32[2, 8]"}\n',
        encoding="utf-8")
    looped = verdicts(tmp_path, "fx,export,compile")
    assert {mode: module["status"] for mode, module in looped.items()} == {
        "fx": "traceable", "export": "traceable", "compile": "traceable"}
    compiled = looped["compile"]
    assert 0 < compiled["loop_seconds"] <= compiled["trace_seconds"]
    # fx and export make one capture, no loop of calls
    assert looped["fx"]["loop_seconds"] == looped["export"]["loop_seconds"] == 0

    alone = verdicts(tmp_path, "compile", {**os.environ, "FX_LSP_NO_RECOMPILE_LOOP": "1"})
    assert alone["compile"]["status"] == "traceable"
    assert alone["compile"]["loop_seconds"] == 0 < alone["compile"]["trace_seconds"]


@NO_HOOK
def test_a_files_loop_seconds_hold_those_of_the_submodules_judged_inside_its_classes(
        tmp_path: Path) -> None:
    (tmp_path / "parent.py").write_text(PARENT, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."parent:Parent"]\ninputs = {x = "float32[2, 8]"}\n',
        encoding="utf-8")
    data = report(tmp_path, "compile", "parent.py")
    (parent,) = [module for module in data["modules"] if module["class"] == "Parent"]
    assert parent["status"] == "traceable"
    assert 0 < parent["loop_seconds"] <= parent["trace_seconds"]
    (block,) = [module for module in data["modules"] if module["class"] == "Block"]
    # Block was compiled twice, its loop of calls too: on guessed arguments and as the
    # instance Parent built; the report shows one of them, the file's job seconds hold both.
    assert block["arguments"]["from"] == "parent" and block["loop_seconds"] > 0
    (file,) = data["files"]
    assert file["loop_seconds"] > parent["loop_seconds"] + block["loop_seconds"] + 1e-3


def _compiled(trace_seconds: float, loop_seconds: float) -> ModuleResult:
    return ModuleResult(path="/ws/small.py", line=4, column=7, end_line=4, end_column=12,
                        class_name="Small", qualified_name="small:Small", status="traceable",
                        mode="compile", trace_seconds=trace_seconds, loop_seconds=loop_seconds)


def test_a_verdict_of_several_captures_sums_their_loops_as_their_seconds() -> None:
    # compiled in train and eval mode: one verdict, both captures' seconds
    both_modes = merged([("train", _compiled(1.0, 0.5)), ("eval", _compiled(2.0, 1.25))])
    assert (both_modes.trace_seconds, both_modes.loop_seconds) == (3.0, 1.75)
    # captured on two sets of inputs (a dict's optional key given and left out)
    key_sets = merged_key_sets([(InputsDecision(specs={}, key_set="with mask"),
                                 _compiled(1.5, 1.0)),
                                (InputsDecision(specs={}, key_set="without mask"),
                                 _compiled(0.5, 0.25))])
    assert (key_sets.trace_seconds, key_sets.loop_seconds) == (2.0, 1.25)
