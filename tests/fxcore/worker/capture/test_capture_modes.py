"""Capture modes: a class gets one verdict per configured mode. A toy mode
registered through ``FX_LSP_EXTRA_CAPTURES`` (``tests/support/plain_capture.py``) runs through the
forked workers, the engine, the report and the CLI's JSON without any change to the
orchestrator; unknown mode names stop the CLI with one line."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fxcore.model.capture_modes import known_modes
from fxcore.model.job_spec import ReportConfig
from fxcore.model.results import Failure, FileResult, ModuleResult
from fxcore.reporting.report import Selection, collect
from fxcore.worker.capture.modes import CAPTURES
from fxcore.workspace.config import parse_config

from engine_support import REPO_ROOT

SUPPORT = Path(__file__).parents[3] / "support"
TOY_CAPTURES = "plain=plain_capture:PlainSymbolicTrace,exits=plain_capture:ExitsOnCrash"

MODELS = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()


class Lengthy(nn.Module):
    def forward(self, x):
        return x * len(x)
"""


def _environment(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(SUPPORT)]), **extra)


def fx_lsp(cwd: Path, *arguments: str, toy: bool = True) -> subprocess.CompletedProcess[str]:
    environment = _environment(FX_LSP_EXTRA_CAPTURES=TOY_CAPTURES) if toy else _environment()
    if not toy:
        environment.pop("FX_LSP_EXTRA_CAPTURES", None)
    return subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=600)


def project(tmp_path: Path, models: str = MODELS, table: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'w'\n\n[tool.fx-lsp]\n{table}")
    (tmp_path / "models.py").write_text(models)
    return tmp_path


def check_json(cwd: Path, *arguments: str) -> dict[str, Any]:
    completed = fx_lsp(cwd, "check", "--output-format", "json", "--no-cache", *arguments,
                       "models.py")
    assert completed.returncode in (0, 1), completed.stderr[-3000:]
    return json.loads(completed.stdout)


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(module["class"], module["mode"]): module for module in report["modules"]}


@pytest.mark.slow
def test_the_hosts_mode_names_are_the_workers_captures() -> None:
    assert known_modes() == tuple(CAPTURES)
    # And with extra modes registered, in a fresh process as a worker would see them.
    script = ("from fxcore.model.capture_modes import known_modes\n"
              "from fxcore.worker.capture.modes import CAPTURES\n"
              "print(list(known_modes()) == list(CAPTURES), list(CAPTURES))\n")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               env=_environment(FX_LSP_EXTRA_CAPTURES=TOY_CAPTURES), timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "True ['fx', 'export', 'compile', 'onnx', 'plain', 'exits']"


@pytest.mark.slow
def test_each_class_gets_one_verdict_per_mode_in_the_cli_json(tmp_path: Path) -> None:
    report = check_json(project(tmp_path), "--mode", "plain,fx")
    found = verdicts(report)
    # fx first whatever the order given, then the toy mode; one verdict each.
    assert [(m["class"], m["mode"]) for m in report["modules"]] == [
        ("Net", "fx"), ("Net", "plain"), ("Lengthy", "fx"), ("Lengthy", "plain")]
    assert found["Net", "fx"]["status"] == found["Net", "plain"]["status"] == "traceable"
    assert found["Net", "plain"]["node_count"] == found["Net", "fx"]["node_count"]
    # The recovering fx tracer locates len(); plain symbolic_trace stops with one FX199.
    assert [f["code"] for f in found["Lengthy", "fx"]["failures"]] == ["FX002"]
    assert [f["code"] for f in found["Lengthy", "plain"]["failures"]] == ["FX199"]
    # Both modes' failures are problems of their own, each saying its mode.
    problems = {(p["code"], p["mode"]) for p in report["diagnostics"]}
    assert {("FX002", "fx"), ("FX199", "plain")} <= problems


def test_two_modes_failing_at_one_place_stay_two_problems(tmp_path: Path) -> None:
    """The report groups a failure reached from several classes; two modes' failures at the
    same place and code must not merge into one."""
    path = project(tmp_path) / "models.py"
    line = MODELS.splitlines().index("        return x * len(x)") + 1
    failure = Failure(path=str(path), line=line, column=20, end_line=line, end_column=26,
                      code="FX002", kind="len", message="len() is called on a traced value")
    verdict = ModuleResult(path=str(path), line=14, column=7, end_line=14, end_column=14,
                           class_name="Lengthy", qualified_name="models:Lengthy",
                           status="failed", failures=[failure])
    result = FileResult(path=str(path), modules=[
        verdict, dataclasses.replace(verdict, mode="plain")])
    report = collect([result], lambda file: Path(file).read_text(),
                     lambda file: Selection(ReportConfig(), str(tmp_path)))
    assert [(p.code, p.mode) for p in report.problems] == [("FX002", "fx"), ("FX002", "plain")]


def test_the_text_output_names_a_problems_mode_other_than_fx(tmp_path: Path) -> None:
    project(tmp_path, table='modes = ["fx", "plain"]\n')
    concise = fx_lsp(tmp_path, "check", "--output-format", "concise", "--no-cache",
                     "models.py")
    assert "FX199 [Lengthy] (plain) " in concise.stdout, concise.stdout
    assert "FX002 [Lengthy] len()" in concise.stdout, concise.stdout


@pytest.mark.slow
def test_only_fx_is_the_default_and_says_so(tmp_path: Path) -> None:
    report = check_json(project(tmp_path))
    assert [(m["class"], m["mode"]) for m in report["modules"]] == [("Net", "fx"),
                                                                    ("Lengthy", "fx")]
    assert {p["mode"] for p in report["diagnostics"]} == {"fx"}


@pytest.mark.slow
def test_a_worker_dying_in_one_mode_costs_only_that_modes_verdict(tmp_path: Path) -> None:
    models = MODELS + """

class Crash(nn.Module):
    def forward(self, x):
        return x + 1


class After(nn.Module):
    def forward(self, x):
        return x - 1
"""
    report = check_json(project(tmp_path, models), "--mode", "fx,exits")
    found = verdicts(report)
    assert len(report["modules"]) == 8, report["modules"]
    assert found["Crash", "fx"]["status"] == "traceable"
    assert found["Crash", "exits"]["status"] == "failed"
    assert [f["code"] for f in found["Crash", "exits"]["failures"]] == ["FX102"]
    # The classes after it are traced in a new child, in both modes.
    assert found["After", "fx"]["status"] == found["After", "exits"]["status"] == "traceable"


def test_an_unknown_mode_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    completed = fx_lsp(project(tmp_path), "check", "--mode", "fx,bogus", "models.py",
                       toy=False)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    assert completed.stderr.splitlines() == [
        "fx-lsp check: --mode fx,bogus: unknown capture mode 'bogus' (known: fx, export, "
        "compile, onnx)"]


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_graph_draws_the_verdict_of_the_mode_asked_for(tmp_path: Path) -> None:
    project(tmp_path)
    completed = fx_lsp(tmp_path, "graph", "--mode", "plain", "--no-cache", "models.py::Net",
                       "-o", "net.html")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "models:Net, traceable" in completed.stderr
    both = fx_lsp(tmp_path, "graph", "--mode", "fx,plain", "models.py::Net")
    assert both.returncode == 2 and "drawn for one mode" in both.stderr


def test_unknown_modes_in_pyproject_are_a_config_problem() -> None:
    config, problems = parse_config({"modes": ["fx", "bogus"]})
    assert config.modes == ("fx",)
    assert problems == ["[tool.fx-lsp]: 'modes' unknown capture mode 'bogus' (known: fx, "
                        "export, compile, onnx); ignored"]
    config, problems = parse_config({"modes": []})
    assert problems and config.modes == ("fx",)
