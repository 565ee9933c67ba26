"""The engine's API (``fxcore.api``), which the command line prints and ``fx-lsp mcp`` returns:
its check gives the report ``fx-lsp check --output-format json`` prints, its graph, fixes,
explain and diff the data the MCP tools return, on the test process's warm engine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fxcore.api import baselines, fixes
from fxcore.api.check import CheckRun
from fxcore.api.explain import explain, known_codes
from fxcore.api.git_revisions import GitError
from fxcore.api.graph import GraphTargetError, find_class, graph_json
from fxcore.api.revision_diff import diff_json
from fxcore.api.session import EngineSession
from fxcore.host.engine import Engine
from fxcore.reporting.json_report import json_report

from cli_support import fx_lsp, process_state
from engine_support import USES_LEN_AND_FINE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (tmp_path / "models.py").write_text(USES_LEN_AND_FINE)
    return tmp_path


def _checked(project: Path, engine: Engine) -> CheckRun:
    with process_state(project, None), EngineSession(engine=engine) as session:
        return session.check(["models.py"])


def _uncached(report: dict[str, Any]) -> dict[str, Any]:
    return {**report, "summary": {**report["summary"], "cached": None}}


def test_check_gives_the_report_the_command_line_prints(project: Path, engine: Engine) -> None:
    printed = fx_lsp("check", "models.py", "--output-format", "json", cwd=project)
    assert printed.returncode == 1, printed.stderr
    run = _checked(project, engine)
    with process_state(project, None):  # paths shown relative to where the command runs
        baselines.subtract(run.report, run.results,
                           baselines.locate([str(project / "models.py")], None))
        report = json.loads(json.dumps(json_report(run.shown())))
    # One cache: the run was answered from what the command line traced.
    assert report["summary"]["cached"] == report["summary"]["files"] == 1
    assert _uncached(report) == _uncached(json.loads(printed.stdout))
    assert "FX002" in {problem["code"] for problem in report["diagnostics"]}


def test_graph_fix_and_explain_return_data(project: Path, engine: Engine) -> None:
    run = _checked(project, engine)
    shown = graph_json(find_class(run.results, "Fine"))
    assert shown["class"] == "Fine" and shown["status"] == "traceable"
    assert any(node["line"] == 16 and node["target"].endswith("relu")
               for node in shown["nodes"]), shown["nodes"]
    with pytest.raises(GraphTargetError, match="no class Nope"):
        find_class(run.results, "Nope")

    chosen = fixes.select_problems(run.report.problems, "fx002", None)
    assert [problem.code for problem in chosen] == ["FX002"]
    plan = fixes.plan_fixes(chosen, unsafe=False)
    path = str(project / "models.py")
    assert list(plan.edits.files) == [path] and plan.refusals == []
    assert plan.without_fix(chosen) == []
    assert (project / "models.py").read_text() == USES_LEN_AND_FINE  # planned, not written
    fixes.write_edits(plan.edits)
    assert 'torch.fx.wrap("len")' in (project / "models.py").read_text()

    found = explain(" fx002 ")
    assert found is not None and found.code == "FX002" and "len()" in found.text
    assert explain("FX999") is None and "FX002" in known_codes()


def test_diff_of_revisions_without_a_changed_file(project: Path, engine: Engine) -> None:
    with pytest.raises(GitError):
        EngineSession(engine=engine).diff(str(project), "HEAD", None)
    for arguments in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                    "commit", "-qm", "base"]):
        subprocess.run(["git", *arguments], cwd=project, check=True, capture_output=True)
    diff = EngineSession(engine=engine).diff(str(project), "HEAD", None)
    assert (diff.changes, diff.checked, diff.regressed) == ([], [], False)
    assert diff_json("HEAD", None, diff.changes) == {"base": "HEAD", "head": None,
                                                      "changes": [], "regressions": 0,
                                                      "refused": []}
