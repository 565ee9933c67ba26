"""Adding a code touches the registry and the module that detects it, nothing else: a code
registered here (in this process, in place of a new ``Rule`` in a family of ``fxcore.rules``)
and found by a capture mode of this test's own flows through the worker's pipeline, the
report, the editor's diagnostics, the CLI's JSON and SARIF, ``fx-lsp explain`` and the
documentation site's code pages, each with the registry's title, severity and documentation."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types

from fx_lsp.cli.main import main
from fx_lsp.cli.output_formats.sarif import sarif
from fx_lsp.features import diagnostics
from fx_lsp.features.initialization_options import Options
from fxcore import rules
from fxcore.model.job_spec import ReportConfig, TraceJob
from fxcore.model.results import CODES, FileResult, Hint
from fxcore.protocol.worker_messages import Verdict, WorkerMessage
from fxcore.reporting.json_report import json_report
from fxcore.reporting.report import Selection, collect
from fxcore.reporting.shown import show
from fxcore.reporting.verdict_counts import Summary
from fxcore.rules import Rule
from fxcore.rules.documentation import code_pages, help_url
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.job import Job
from fxcore.workspace.paths import split_lines

#: The new code, as a family module of ``fxcore.rules`` would declare it.
RETURNS_INPUT = Rule(
    code="FX299",
    kinds=("returns-input",),
    severity="warning",
    docs="""\
**A `forward` that returns its input unchanged**: the traced graph computes nothing.

Fix: return what the layers compute.
""",
)

MODEL = textwrap.dedent('''
    from torch import nn


    class Passthrough(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            self.fc(x)
            return x


    class Computes(nn.Module):
        def forward(self, x):
            return x + 1
    ''').lstrip("\n")


class FindsReturnedInputs(FxCapture):
    """The module that detects the new code: the fx capture, whose checks of a complete
    graph also find an output that is an input."""

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        found = super().hints(context, target, inputs, record)
        output = next(node for node in record.graph.nodes if node.op == "output") \
            if record.graph is not None else None
        if output is not None and getattr(output.args[0], "op", None) == "placeholder":
            found.append(Hint(**target.source.name_span.at(context.path),
                              code=CODES["returns-input"], kind="returns-input",
                              message=f"{target.source.name}.forward returns its input."))
        return found


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with the new code, as ``fxcore.rules`` builds it from its families."""
    monkeypatch.setattr(rules, "RULES", (*rules.RULES, RETURNS_INPUT))
    monkeypatch.setitem(rules.BY_CODE, RETURNS_INPUT.code, RETURNS_INPUT)
    for kind in RETURNS_INPUT.kinds:
        monkeypatch.setitem(rules.CODE_OF_KIND, kind, RETURNS_INPUT.code)


@pytest.fixture
def model(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "seam_model.py"
    path.write_text(MODEL)
    sys.path.insert(0, str(tmp_path))
    yield path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("seam_model", None)


def traced(path: Path) -> FileResult:
    """The file's result from the worker's pipeline, in this process."""
    sent: list[WorkerMessage] = []
    Job(TraceJob(path=str(path), workspace_root=str(path.parent)), sent.append,
        [FindsReturnedInputs()]).run()
    modules = [message.module for message in sent if isinstance(message, Verdict)]
    return FileResult(path=str(path), modules=modules)


def test_a_new_code_reaches_every_output(registered: None, model: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    result = traced(model)
    report = collect([result], lambda path: Path(path).read_text(),
                     lambda path: Selection(ReportConfig(), str(model.parent)))
    (problem,) = [p for p in report.problems if p.code == "FX299"]
    assert (problem.classes, problem.severity) == (["Passthrough"], "warning")
    assert problem.line == MODEL.splitlines().index("class Passthrough(nn.Module):") + 1

    # The editor: one diagnostic of it, with the registry's severity and documentation link.
    entries = diagnostics.build(str(model), report, lambda p: split_lines(Path(p).read_text()),
                                Options(), "utf-16")
    (shown,) = [e.diagnostic for e in entries if e.diagnostic.code == "FX299"]
    assert shown.severity == types.DiagnosticSeverity.Warning
    assert shown.message == "Passthrough.forward returns its input."
    assert shown.code_description.href == help_url("FX299")

    # The CLI's JSON and SARIF: the result, and a rule with the registry's title and docs.
    run = show([result], report, Summary(), lambda path: False)
    assert {d["code"] for d in json_report(run)["diagnostics"]} == {"FX299"}
    (sarif_run,) = sarif(run)["runs"]
    rule_list = sarif_run["tool"]["driver"]["rules"]
    (sarif_result,) = sarif_run["results"]
    assert (sarif_result["ruleId"], sarif_result["level"]) == ("FX299", "warning")
    rule = rule_list[sarif_result["ruleIndex"]]
    assert rule["id"] == "FX299"
    assert rule["shortDescription"]["text"] == \
        "A `forward` that returns its input unchanged."
    assert rule["fullDescription"]["text"] == RETURNS_INPUT.docs

    # `fx-lsp explain` and the documentation site's page of the code, listed in the index.
    assert main(["explain", "fx299"]) == 0
    assert "returns its input unchanged" in capsys.readouterr().out
    pages = code_pages()
    assert "returns its input unchanged" in pages["codes/FX299.md"]
    assert "Return what the layers compute." in pages["codes/FX299.md"]
    assert "[FX299](FX299.md)" in pages["codes/index.md"]
