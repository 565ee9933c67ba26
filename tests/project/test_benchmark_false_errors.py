"""The library benchmark's false errors (``benchmarks/fidelity/false_errors.py``):
which verdicts are errors (severity "error" on the report's diagnostics, not graph breaks,
not FX1xx), each against its eager run on the CPU (runs; FX408/FX509 raising as said; false:
its inputs or constructor fail), and "does not fit" rows that run, on report rows and real
outcomes made for the test (no torch is run)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity import false_errors
from benchmarks.fidelity.false_errors import (
    FalseErrors,
    count_error,
    count_not_fitting,
    eager_request,
    error_verdicts,
    judge_false_errors,
)
from benchmarks.fidelity.library_judging import has_verdict


def _failure(code: str, line: int, kind: str = "export-error") -> dict[str, Any]:
    return {"code": code, "kind": kind, "path": "lib/a.py", "line": line, "column": 9,
            "frames": []}


def _module(name: str, mode: str, status: str, *failures: dict[str, Any],
            arguments: Any = None, tensors: Any = None) -> dict[str, Any]:
    return {"qualified_name": f"lib.a:{name}", "class": name, "mode": mode, "status": status,
            "path": "lib/a.py", "relative_path": "lib/a.py", "failures": list(failures),
            "reason": None, "arguments": arguments or {"from": "defaults"},
            "inputs": {"tensors": tensors if tensors is not None else {"x": "f32[2, 4]"}},
            "module_modes": ["eval"]}


def _diagnostic(code: str, line: int, severity: str, mode: str, *classes: str) -> dict:
    return {"code": code, "severity": severity, "mode": mode, "path": "lib/a.py",
            "line": line, "column": 9, "classes": list(classes), "message": f"{code} here"}


REPORT = {
    "modules": [
        _module("DataDependent", "export", "failed", _failure("FX401", 10)),
        _module("Breaks", "compile", "failed", _failure("GB0001", 20, "graph-break-gb0001")),
        _module("Raises", "export", "failed",
                _failure("FX408", 30, "export-raises-everywhere")),
        _module("Unbuilt", "export", "failed", _failure("FX101", 40, "constructor")),
        _module("Loose", "export", "not-traced",
                _failure("FX406", 50, "export-does-not-fit")),
        _module("Fine", "export", "traceable"),
    ],
    "diagnostics": [
        _diagnostic("FX401", 10, "error", "export", "DataDependent"),
        _diagnostic("GB0001", 20, "warning", "compile", "Breaks"),
        _diagnostic("FX408", 30, "error", "export", "Raises"),
        _diagnostic("FX101", 40, "error", "export", "Unbuilt"),
        _diagnostic("FX406", 50, "hint", "export", "Loose"),
    ],
}


def test_errors_are_the_verdicts_the_report_marks_with_severity_error() -> None:
    # A graph break is a warning; a constructor's FX101 is no verdict; "does not fit" a hint.
    assert error_verdicts(REPORT, has_verdict) == {("lib.a:DataDependent", "export"): ["FX401"],
                                                   ("lib.a:Raises", "export"): ["FX408"]}
    # A diagnostic of another mode, or another class at the same place, is not this one's.
    other = {**REPORT, "diagnostics": [
        _diagnostic("FX401", 10, "error", "compile", "DataDependent"),
        _diagnostic("FX401", 10, "error", "export", "SomeoneElse")]}
    assert error_verdicts(other, has_verdict) == {}


def _eager_error(line: int, exception: str = "RuntimeError") -> dict[str, Any]:
    return {"exception": exception, "message": "boom",
            "innermost_frame": {"path": "lib/a.py", "line": line}}


def test_each_error_verdict_is_run_raised_as_said_or_false() -> None:
    figures = FalseErrors()
    error = _module("DataDependent", "export", "failed", _failure("FX401", 10))
    count_error(figures, "lib.a:DataDependent", error, ["FX401"], [], {"eager": None})
    # An FX401 whose inputs fail the module itself: false, named with its place.
    count_error(figures, "lib.a:Own", error, ["FX401"], [], {"eager": _eager_error(12)})
    raises = _module("Raises", "export", "failed",
                     _failure("FX408", 30, "export-raises-everywhere"))
    messages = ["... cannot run it here either: RuntimeError: boom"]
    count_error(figures, "lib.a:Raises", raises, ["FX408"], messages,
                {"eager": _eager_error(30)})
    # The same verdict where real torch runs the class, or raises elsewhere: false.
    count_error(figures, "lib.a:RaisesNot", raises, ["FX408"], messages, {"eager": None})
    count_error(figures, "lib.a:RaisesElsewhere", raises, ["FX408"], messages,
                {"eager": _eager_error(31)})
    count_error(figures, "lib.a:NoBuild", error, ["FX401"], [],
                {"build": {"exception": "TypeError"}})
    count_error(figures, "lib.a:NotRun", error, ["FX401"], [], None)
    assert (figures.errors["export"], figures.runs["export"], figures.raised_as_said["export"],
            figures.false["export"], figures.unrun["export"]) == (7, 1, 1, 4, 1)
    assert [line.split(":")[1].split(" ")[0] for line in figures.false_lines] == [
        "Own", "RaisesNot", "RaisesElsewhere", "NoBuild"]
    assert figures.false_lines[0] == ("export lib.a:Own (FX401): its inputs fail eagerly: "
                                      "RuntimeError at lib/a.py:12")
    assert "real torch runs it" in figures.false_lines[1]
    assert figures.false_lines[3].endswith("the constructor raises on the CPU: TypeError")
    assert figures.cell("export") == ("7: 1 run, 1 raise as said, 4 false, 1 not run; "
                                      "does not fit 0: 0 run")
    assert figures.cell("fx") == "-"


def test_a_does_not_fit_row_that_runs_eagerly_is_listed() -> None:
    figures = FalseErrors()
    count_not_fitting(figures, "lib.a:Loose", "export", {"eager": None})
    count_not_fitting(figures, "lib.a:Tight", "export", {"eager": _eager_error(50)})
    count_not_fitting(figures, "lib.a:NoBuild", "compile", {"build": {"exception": "X"}})
    assert figures.not_fitting_lines == ["export lib.a:Loose"]
    assert figures.cell("compile") == "0: 0 run, 0 raise as said, 0 false; does not fit 1: 0 run"


def test_a_mode_on_other_inputs_than_export_gets_its_own_eager_request() -> None:
    same = {"export": _module("A", "export", "failed"), "compile": _module("A", "compile",
                                                                          "failed")}
    assert eager_request(same, "compile", sent=True) is None
    assert eager_request(same, "compile", sent=False)["eager_only"] is True
    other = {**same, "compile": _module("A", "compile", "failed", tensors={"x": "f32[1, 4]"})}
    assert eager_request(other, "compile", sent=True)["inputs"] == {"x": "f32[1, 4]"}


def test_every_row_is_judged_on_its_own_eager_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The export request's outcome serves both modes where they share instance and inputs;
    a compile row on other inputs, and a "does not fit" row no export request was sent for,
    get eager-only requests."""
    asked: list[list[dict[str, Any]]] = []

    def fake_outcomes(root: str, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        asked.append(requests)
        return [{"eager": None} for _ in requests]

    monkeypatch.setattr(false_errors, "real_outcomes", fake_outcomes)
    rows = {
        "lib.a:Both": {
            "export": _module("Both", "export", "failed", _failure("FX401", 10)),
            "compile": _module("Both", "compile", "failed", _failure("FX502", 11),
                               tensors={"x": "f32[1, 4]"})},
        "lib.a:Loose": {
            "export": _module("Loose", "export", "not-traced",
                              _failure("FX406", 50, "export-does-not-fit")),
            "compile": _module("Loose", "compile", "traceable")},
    }
    errors = {("lib.a:Both", "export"): ["FX401"], ("lib.a:Both", "compile"): ["FX502"]}
    figures = FalseErrors()
    outcomes = {"lib.a:Both": {"eager": _eager_error(10)}}
    judge_false_errors(figures, "/root", rows, outcomes, errors, {})
    assert [[(request["module"]["qualified_name"], request["module"]["mode"])
             for request in requests] for requests in asked] == [
        [("lib.a:Both", "compile"), ("lib.a:Loose", "export")]]
    # Export's own run raised (false); compile's inputs run (allowed); Loose runs (listed).
    assert (figures.false["export"], figures.runs["compile"]) == (1, 1)
    assert figures.not_fitting_lines == ["export lib.a:Loose"]
