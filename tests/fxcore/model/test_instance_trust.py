"""How much each verdict can be trusted: verdicts on guessed instances counted apart in the
summary, the guessed call shown under their problems, a shape problem on one only a hint that
says so, and the classes not traced folded into one line of the ``full`` format."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from fx_lsp.cli.output_formats.full import full
from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.api.check import CheckRun, Projects
from fxcore.model.instance_trust import guessed_instance, on_guessed_arguments
from fxcore.model.job_spec import ReportConfig
from fxcore.model.results import (
    ArgumentOrigin,
    Arguments,
    ExampleInputs,
    Failure,
    FileResult,
    ModuleResult,
)
from fxcore.reporting.json_report import json_report
from fxcore.reporting.report import Report, Selection, collect, severity
from fxcore.reporting.verdict_counts import Summary
from fxcore.workspace.config import ProjectConfig

from cli_support import fx_lsp
from engine_support import line_of

GUESSED = Arguments(origin="guessed", kwargs={"in_dim": "64", "out_dim": "64"})
#: A source added after this code (builder functions): whatever it is, it is not a guess.
BUILDER = cast(ArgumentOrigin, "builder")


def parent(parent_origin: ArgumentOrigin | None) -> Arguments:
    return Arguments(origin="parent", kwargs={"dim": "64"}, parent="models.vit:ViT",
                     path="blocks.0", parent_origin=parent_origin)


@pytest.mark.parametrize(("arguments", "guessed"), [
    (Arguments(origin="config", kwargs={"dim": "8"}), False),
    (Arguments(origin="defaults"), False),
    (Arguments(origin=BUILDER), False),
    (Arguments(origin="call-site", site="README.md:3", args=["8"]), False),
    (Arguments(origin="config-class", kwargs={"config": "Config()"}), False),
    (GUESSED, True),
    (parent("defaults"), False),
    (parent(BUILDER), False),
    (parent("guessed"), True),
    (parent(None), False),
    (None, False),
])
def test_only_made_up_arguments_make_a_guessed_instance(arguments: Arguments | None,
                                                       guessed: bool) -> None:
    assert on_guessed_arguments(arguments) is guessed
    assert (guessed_instance("Net", arguments) is not None) is guessed


def test_the_guessed_instance_is_python_that_rebuilds_it() -> None:
    assert guessed_instance("Net", GUESSED) == "Net(in_dim=64, out_dim=64)"
    assert guessed_instance("Block", parent("guessed")) == "ViT(dim=64).blocks.0"
    positional = Arguments(origin="guessed", args=["3"], kwargs={"p": "0.0"})
    assert guessed_instance("Net", positional) == "Net(3, p=0.0)"


def module(name: str, status: str = "traceable", arguments: Arguments | None = None,
           mode: str = "fx", line: int = 1, **fields: Any) -> ModuleResult:
    return ModuleResult(path="/ws/models.py", line=line, column=7, end_line=line,
                        end_column=7 + len(name), class_name=name,
                        qualified_name=f"models:{name}", status=status,  # type: ignore[arg-type]
                        arguments=arguments, mode=mode, **fields)


def failure(code: str, kind: str, message: str = "It fails.") -> Failure:
    return Failure(path="/ws/models.py", line=9, column=9, end_line=9, end_column=12,
                   code=code, kind=kind, message=message)


def summary_of(*modules: ModuleResult) -> Summary:
    summary = Summary()
    summary.add(FileResult(path="/ws/models.py", modules=list(modules)))
    return summary


def test_the_summary_line_is_unchanged_without_guessed_verdicts() -> None:
    summary = summary_of(module("Net", arguments=Arguments(origin="defaults")),
                         module("Block", "failed", parent("defaults"),
                                failures=[failure("FX002", "len")]),
                         module("Spare", "not-traced"))
    assert summary.line() == ("Checked 1 file: 2 modules traced, 1 traceable, 1 failed, "
                              "1 not traced.")
    assert (summary.real, summary.guessed) == (2, 0)


def test_the_summary_counts_verdicts_on_guessed_instances_apart() -> None:
    summary = summary_of(
        module("Net", arguments=GUESSED),
        module("Block", "failed", parent("guessed"), failures=[failure("FX002", "len")]),
        module("Real", arguments=Arguments(origin=BUILDER)),
        # Neither built nor traced: no verdict to trust or not.
        module("Broken", "failed", GUESSED, failures=[failure("FX101", "constructor")]),
        module("Spare", "not-traced"),
    )
    assert summary.line(suppressed=2) == (
        "Checked 1 file: 3 modules traced, 2 traceable, 1 failed, 1 could not be built, "
        "1 not traced; 2 on guessed arguments; 2 suppressed.")
    run = CheckRun([], summary, Report(), {})
    counts = json_report(run.shown())["summary"]
    assert (counts["on_real_instances"], counts["on_guessed_arguments"]) == (1, 2)
    assert {key: counts["modes"]["fx"][key]
            for key in ("on_real_instances", "on_guessed_arguments")} == {
        "on_real_instances": 1, "on_guessed_arguments": 2}


def test_each_mode_counts_its_own_guessed_verdicts() -> None:
    summary = summary_of(module("Net", arguments=GUESSED),
                         module("Net", "not-traced", GUESSED, mode="export"),
                         module("Real", arguments=Arguments(origin="defaults")),
                         module("Real", arguments=Arguments(origin="defaults"), mode="export"))
    assert summary.line() == (
        "Checked 1 file: 2 classes; fx: 2 traced, 2 traceable, 0 failed, 0 not traced, "
        "1 on guessed arguments; export: 1 traced, 1 traceable, 0 failed, 1 not traced.")


def shape_error(module_result: ModuleResult) -> Failure:
    error = failure("FX300", "shape", "Shapes do not fit.")
    module_result.shape_errors.append(error)
    return error


@pytest.mark.parametrize(("arguments", "inputs", "expected"), [
    (Arguments(origin="defaults"), "inferred", "warning"),
    (Arguments(origin="defaults"), "config", "error"),
    (GUESSED, "inferred", "hint"),
    (GUESSED, "config", "hint"),
    (parent("guessed"), "config", "hint"),
    (parent(BUILDER), "config", "error"),
])
def test_a_shape_problem_on_a_guessed_instance_is_a_hint(
        arguments: Arguments, inputs: str, expected: str) -> None:
    found = module("Net", arguments=arguments,
                   inputs=ExampleInputs(origin=inputs, tensors={"x": "float32[2, 8]"}))  # type: ignore[arg-type]
    assert severity(shape_error(found), found) == expected
    # Other codes keep their rule's severity on any instance.
    assert severity(failure("FX002", "len"), found) == "error"


def test_a_problem_a_real_instance_also_reached_keeps_its_severity() -> None:
    """The highest of the traces that reached it: one guessed instance does not lower a
    problem a real one found too."""
    guessed = module("Net", arguments=GUESSED)
    real = module("Other", arguments=Arguments(origin="defaults"), line=20)
    shape_error(guessed), shape_error(real)
    selection = Selection(ReportConfig(), "/ws")
    found = collect([FileResult("/ws/models.py", [guessed, real])], lambda path: None,
                    lambda path: selection)
    (problem,) = found.problems
    assert (problem.classes, problem.severity) == (["Net", "Other"], "warning")
    found = collect([FileResult("/ws/models.py", [guessed])], lambda path: None,
                    lambda path: selection)
    assert [problem.severity for problem in found.problems] == ["hint"]


def full_output(run: CheckRun, show_not_traced: bool | None) -> list[str]:
    stream = io.StringIO()
    full(run.shown(show_not_traced), stream, lambda problem: None)
    return stream.getvalue().splitlines()


def test_the_full_format_folds_the_classes_not_traced_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = str(tmp_path / "models.py")
    results = [FileResult(path, [
        ModuleResult(path=path, line=line, column=7, end_line=line, end_column=10,
                     class_name=name, qualified_name=f"models:{name}", status="not-traced",
                     reason=f"{name} needs arguments.", mode=mode)
        for line, name in ((3, "One"), (9, "Two")) for mode in ("fx", "export")])]
    summary = summary_of(*results[0].modules)
    found = collect(results, lambda path: None,
                    lambda path: Selection(ReportConfig(), str(tmp_path)))
    unset = CheckRun(results, summary, found, {str(tmp_path): ProjectConfig()})
    shown = CheckRun(results, summary, found,
                     {str(tmp_path): ProjectConfig(table={"show-not-traced": True})})
    folded = "note: 2 classes not traced (--show-not-traced lists them)"
    for run, option in ((unset, None), (shown, False)):
        lines = full_output(run, option)
        assert folded in lines and not any("was not traced" in line for line in lines)
    for run, option in ((shown, None), (unset, True)):
        lines = full_output(run, option)
        assert folded not in lines
        assert [line.split(": note: ")[1] for line in lines if ": note: " in line] == [
            "FX103 One was not traced. One needs arguments.",
            "FX103 Two was not traced. Two needs arguments."]


def test_a_show_not_traced_that_is_not_a_boolean_is_a_config_problem(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'ws'\n[tool.fx-lsp]\nshow-not-traced = \"yes\"\n")
    summary = Summary()
    project = Projects(None, summary)(str(tmp_path))
    assert summary.config_problems == [
        f"{tmp_path / 'pyproject.toml'} [tool.fx-lsp]: 'show-not-traced' must be true or "
        "false; ignored"]
    run = CheckRun([], summary, Report(), {str(tmp_path): project})
    assert not run.shows_not_traced(str(tmp_path / "models.py"))


# -- the command line over real files ---------------------------------------------------------

MODELS = '''
import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.a = nn.Linear(dim, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h)


class Fixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h)  # real


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * len(x)


class Stack(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.gate = Gate(width)

    def forward(self, x):
        return self.gate(x)


class Plain(nn.Module):
    def forward(self, x):
        return x * len(x)  # plain


class Skipped(nn.Module):  # fx-lsp: skip
    def forward(self, x):
        return x


class Picky(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        assert isinstance(name, str)

    def forward(self, x):
        return x
'''


def check(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", *arguments, ".", cwd=root, env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trust")
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")
    (root / "models.py").write_text(MODELS.lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def report(workspace: Path) -> dict[str, Any]:
    return cast(dict[str, Any], parse_report(
        check(workspace, "--no-cache", "--output-format", "json").stdout))


@pytest.fixture(scope="module")
def full_lines(workspace: Path, report: dict[str, Any]) -> list[str]:
    """The ``full`` format of the same results (from the cache the JSON run filled)."""
    return check(workspace, "--output-format", "full").stdout.splitlines()


def test_the_summary_says_how_many_verdicts_rest_on_guessed_arguments(
        workspace: Path, report: dict[str, Any]) -> None:
    modules = {m["class"]: m for m in report["modules"]}
    assert modules["Gate"]["arguments"]["parent_from"] == "guessed"
    assert {key: report["summary"][key] for key in ("traced", "on_real_instances",
                                                    "on_guessed_arguments")} == {
        "traced": 5, "on_real_instances": 2, "on_guessed_arguments": 3}
    concise = check(workspace, "--output-format", "concise").stdout.splitlines()
    assert concise[-1] == ("Checked 1 file: 5 modules traced, 2 traceable, 3 failed, "
                           "2 not traced; 3 on guessed arguments.")


def test_a_shape_problem_on_a_guessed_instance_is_a_hint_that_says_so(
        report: dict[str, Any]) -> None:
    """On the guessed Mixer, a hint naming the instance; on the real Fixed, the warning it
    always was."""
    shapes = {d["classes"][0]: d for d in report["diagnostics"] if d["code"] == "FX300"}
    assert shapes["Mixer"]["severity"] == "hint"
    assert ("The instance, Mixer(dim=64), was built with guessed arguments"
            in shapes["Mixer"]["message"])
    assert shapes["Fixed"]["severity"] == "warning"
    assert "guessed" not in shapes["Fixed"]["message"]


def problem_block(lines: list[str], start: str) -> list[str]:
    """The lines of the problem whose heading starts with ``start``, up to the blank line."""
    first = next(index for index, line in enumerate(lines) if line.startswith(start))
    return lines[first:lines.index("", first)]


def test_the_full_format_notes_the_guessed_instance_of_each_problem(
        workspace: Path, full_lines: list[str]) -> None:
    models = workspace / "models.py"
    mixer = problem_block(full_lines, f"models.py:{line_of(models, 'return self.b(h)')}:")
    assert "  = note: traced with guessed arguments Mixer(dim=64)" in mixer
    gate = problem_block(full_lines, f"models.py:{line_of(models, 'len(x)')}:")
    assert gate[0].split(": ", 1)[1].startswith("FX002 [Gate; also reached from Stack]")
    assert [line for line in gate if "= note" in line] == [
        "  = note: traced as Stack(width=16).gate, built with guessed arguments",
        "  = note: traced with guessed arguments Stack(width=16)"]
    # The notes come before the fix, as rustc and ruff print them.
    assert gate.index("  = note: traced with guessed arguments Stack(width=16)") < \
        next(index for index, line in enumerate(gate) if line.startswith("  = help"))
    for real in ("# real", "# plain"):
        block = problem_block(full_lines, f"models.py:{line_of(models, real)}:")
        assert not any("= note" in line for line in block), block


def test_the_full_format_counts_the_classes_not_traced_unless_asked(
        workspace: Path, full_lines: list[str]) -> None:
    models = workspace / "models.py"
    assert "note: 2 classes not traced (--show-not-traced lists them)" in full_lines
    assert not any("was not traced" in line for line in full_lines)
    listed = check(workspace, "--output-format", "full", "--show-not-traced").stdout
    assert f"models.py:{line_of(models, 'class Skipped')}:7: note: FX103 Skipped was not traced." \
        in listed
    assert f"models.py:{line_of(models, 'class Picky')}:7: note: FX103 Picky was not traced." \
        in listed
    assert "classes not traced (--show-not-traced" not in listed
