"""The library benchmark's causes of a missing verdict (benchmarks/fidelity/no_verdict_causes.py,
which says why a class has none), on the report of a real ``fx-lsp check`` of a small workspace: a
class whose constructor imports a package that is not installed, and a file whose import does, are
"optional package missing" under the package's name (counted apart from the 5% target, the file's
classes read from its source since the report lists none); a class with a verdict has no cause; a
constructor that fetches weights is told from rejected arguments."""

from __future__ import annotations

import sys

from fx_lsp.cli.output_formats.json_report import parse_report

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.no_verdict_causes import (
    CONSTRUCTOR_ARGUMENTS,
    diagnostic_messages,
    no_verdict_cause,
    unimported_files,
)

BLOCKS = """
    import torch
    from torch import nn


    class NeedsMissing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            import not_installed_package_46  # noqa: F401
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)


    class Fine(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)
"""
TOP_LEVEL = """
    import torch
    from torch import nn
    import another_missing_package_46  # noqa: F401


    class Top(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1


    class Helper:
        pass
"""


def test_missing_packages_and_rejected_arguments_are_told_apart(tmp_path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("pkg/blocks.py", BLOCKS)
    workspace.write("pkg/top.py", TOP_LEVEL)
    completed = fx_lsp("check", "--no-cache", "--mode", "fx,export", "--output-format", "json",
                       "pkg", cwd=tmp_path)
    report = parse_report(completed.stdout)
    diagnostics = diagnostic_messages(report)
    causes = {}
    for module in report["modules"]:
        found = diagnostics.get((module["mode"], module["path"], module["class"]), [])
        if module["status"] != "traceable":
            causes[(module["class"], module["mode"])] = no_verdict_cause(module, found)
    assert causes[("NeedsMissing", "fx")] == "optional package missing: not_installed_package_46"
    assert causes[("NeedsMissing", "export")] == causes[("NeedsMissing", "fx")]
    assert ("Fine", "fx") not in causes and ("Fine", "export") not in causes
    assert unimported_files(report, str(tmp_path)) == [
        ("pkg/top.py", ["Top"], "another_missing_package_46")]


def test_a_rejected_guess_is_constructor_arguments() -> None:
    module = {"status": "not-traced", "failures": [],
              "reason": "The constructor needs arguments: in_channels. Guessed arguments were "
                        "rejected (ValueError: in_channels must be even)."}
    assert no_verdict_cause(module, []) == CONSTRUCTOR_ARGUMENTS
    failed = {"status": "failed", "reason": None,
              "failures": [{"code": "FX101", "kind": "constructor"}]}
    assert no_verdict_cause(failed, ["Building X failed: ValueError: bad"]) == \
        CONSTRUCTOR_ARGUMENTS
    assert no_verdict_cause(failed, ["Building X failed: LocalEntryNotFoundError: ... the Hub"]) \
        == "constructor downloads weights"
    rejected = {**module, "reason": "The constructor needs arguments: dim. Guessed arguments "
                "were rejected (ImportError: HyenaND operators require the optional "
                "'nvsubquadratic' package (Python >= 3.10).)"}
    assert no_verdict_cause(rejected, []) == "optional package missing: nvsubquadratic"


def test_a_function_another_package_no_longer_has_is_its_own_cause() -> None:
    failed = {"status": "failed", "reason": None,
              "failures": [{"code": "FX101", "kind": "constructor"}]}
    assert no_verdict_cause(failed, [
        "Building CFP failed: AttributeError: module 'scipy.signal' has no attribute "
        "'blackmanharris'"]) == "installed scipy lacks scipy.signal.blackmanharris"
    assert no_verdict_cause(failed, [
        "Building X failed: AttributeError: 'X' object has no attribute 'w'"]) == \
        CONSTRUCTOR_ARGUMENTS
