"""fx-lsp's export and compile verdicts on a small library, each compared with real
torch.export (non-strict) and torch.compile on the CPU in the same run, as the benchmark of
libraries fx-lsp was not tuned on compares them (benchmarks/fidelity/pt2_library_coverage.py,
benchmarks/fidelity/pt2_real_check.py). Shared by the tests of inputs and instances found for
such libraries' classes (tests/fxcore/worker/inputs/, tests/fxcore/worker/building/)."""

from __future__ import annotations

import sys
from pathlib import Path

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.library_judging import Figures, absolute_paths, has_verdict, judge
from benchmarks.fidelity.pt2_real_check import real_outcomes


def checked_against_real_torch(root: Path, files: list[str],
                               not_fitting: frozenset[str] = frozenset()
                               ) -> dict[str, dict[str, dict]]:
    """fx-lsp's export and compile verdicts per class, and each compared with real torch
    on the CPU in the same run: every class but those ``not_fitting`` (whose instance fx-lsp
    made does not fit them) must have a verdict of each mode, and every one agrees."""
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", *files, cwd=root)
    report = parse_report(completed.stdout)
    classes: dict[str, dict[str, dict]] = {}
    for module in report["modules"]:
        classes.setdefault(module["class"], {})[module["mode"]] = absolute_paths(
            module, str(root))
    for name, by_mode in classes.items():
        assert all(has_verdict(module) != (name in not_fitting)
                   for module in by_mode.values()), (name, by_mode)
    names = list(classes)
    real = real_outcomes(str(root), [{"module": classes[name]["export"],
                                      "compile": classes[name]["compile"],
                                      "inputs": classes[name]["export"]["inputs"]["tensors"]}
                                     for name in names])
    figures = Figures("reproduction")
    for name, outcome in zip(names, real, strict=True):
        judge(figures, classes[name]["export"]["qualified_name"], classes[name], outcome)
    assert figures.disagreements == [] and figures.own_choices == []
    # The benchmark's figures count fx too, which this check does not run.
    checked = ("export", "compile")
    assert {mode: figures.agree[mode] for mode in checked} == {
        mode: figures.tried[mode] for mode in checked} == dict.fromkeys(checked, len(names))
    assert figures.exact_breaks == len(names)
    return classes
