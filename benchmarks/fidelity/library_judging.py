"""How the library benchmark (``pt2_library_coverage.py``) judges fx-lsp's verdicts: which
are verdicts, each class's against real torch on the CPU (export as
``tests/thirdparty/export_compare`` judges, compile as ``tests/thirdparty/compile_agreement``,
fx against plain ``torch.fx.symbolic_trace``), and one library's figures."""

from __future__ import annotations

import collections
import copy
import os
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fidelity.false_errors import FalseErrors
from benchmarks.fidelity.no_verdict_causes import LACKS_API, OPTIONAL_PACKAGE, no_verdict_cause
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts
from benchmarks.fidelity.repo_coverage import has_tracing_verdict
from benchmarks.fidelity.verdicts_apart import (
    RaisedFigures,
    TimeFigures,
    judge_raised,
    judge_unbuilt,
    raises_everywhere,
)
from benchmarks.paths import use_thirdparty_helpers

use_thirdparty_helpers()

from compile_agreement import compare as compare_compile  # noqa: E402
from export_compare import compare as compare_export  # noqa: E402

#: Modes fx-lsp checks; export and compile are compared with real torch on the CPU, fx with plain
#: ``torch.fx.symbolic_trace`` on the same instance (``plain_fx_check.py``).
MODES = ("fx", "export", "compile")
PT2_MODES = ("export", "compile")

#: The error code of each mode that an own choice must never be reported as.
ERROR_CODES = {"export": "FX499", "compile": "FX502"}


def has_verdict(module: dict[str, Any]) -> bool:
    """fx: traceable, or failed while tracing (``repo_coverage.has_tracing_verdict``, as the
    coverage's fx figures count). Export: exports or fails under export; compile: compiles whole,
    with breaks or with an error. Not a verdict: not checked (no inputs, no instance, does not
    fit, needs real data) or a failure before the capture (FX100 import, FX101 constructor,
    FX102 time-out)."""
    if module["mode"] == "fx":
        return has_tracing_verdict(module)
    if module["status"] == "traceable":
        return True
    return module["status"] == "failed" and not module["failures"][0]["code"].startswith("FX1")


def absolute_paths(module: dict[str, Any], root: str) -> dict[str, Any]:
    """The JSON module with every path absolute and real (the CLI prints those under its
    working folder relative to it), as both comparisons read them."""
    module = copy.deepcopy(module)
    for item in [module, *module["failures"],
                 *(frame for failure in module["failures"] for frame in failure["frames"])]:
        if item.get("path") and not item["path"].startswith("<"):
            item["path"] = os.path.realpath(os.path.join(root, item["path"]))
    return module


@dataclass
class Figures:
    """One library's figures."""

    name: str
    classes: int = 0
    bases: int = 0
    seconds: float = 0.0
    #: fx-lsp's seconds on the same folders at ``--baseline-ref`` in the same run, if asked.
    baseline_seconds: float | None = None
    baseline_ref: str | None = None
    #: Classes whose code needs an optional package that is not installed, by package: apart
    #: from the target's share.
    optional: collections.Counter[str] = field(default_factory=collections.Counter)
    without: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    causes: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: {mode: collections.Counter() for mode in MODES})
    reasons: collections.Counter[str] = field(default_factory=collections.Counter)
    own_choices: list[str] = field(default_factory=list)
    tried: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    agree: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    exact_breaks: int = 0
    disagreements: list[str] = field(default_factory=list)
    #: "forward raises on every input tried", apart (``verdicts_apart``).
    raised: RaisedFigures = field(default_factory=RaisedFigures)
    time: TimeFigures = field(default_factory=TimeFigures)
    #: Classes whose constructor raises in every mode on what an installed package lacks,
    #: with their causes by mode, waiting for real torch's build (``judge_unbuilt_class``).
    unbuilt: list[tuple[str, dict[str, dict], dict[str, str]]] = field(default_factory=list)
    #: (class, mode) pairs with a verdict at the baseline commit and none now.
    lost: list[str] = field(default_factory=list)
    #: Error verdicts and "does not fit" rows against their eager runs (``false_errors``).
    false_errors: FalseErrors = field(default_factory=FalseErrors)


def own_choice(module: dict[str, Any], mode: str, eager: dict[str, Any] | None) -> bool:
    """An FX499/FX502 whose error the module raises eagerly too, at a line of its chain."""
    failure = next((f for f in module["failures"] if f["code"] == ERROR_CODES[mode]), None)
    frame = (eager or {}).get("innermost_frame")
    if failure is None or frame is None:
        return False
    chain = {(f["path"], f["line"]) for f in [failure, *failure["frames"]]}
    return (frame["path"], frame["line"]) in chain


def judge(figures: Figures, name: str, by_mode: dict[str, dict], real: dict[str, Any],
          messages: dict[str, list[str]] | None = None) -> None:
    """Add one class's real outcomes to ``figures``; ``messages``: its diagnostics' by mode.
    A mode's "forward raises on every input tried" is judged apart (``verdicts_apart``)."""
    if "build" in real:
        for mode in PT2_MODES:
            figures.tried[mode] += 1
        figures.disagreements.append(f"{name}: does not build on the CPU: "
                                     f"{real['build']['exception']}")
        return
    for mode in PT2_MODES:
        if own_choice(by_mode[mode], mode, real["eager"]):
            figures.own_choices.append(f"{ERROR_CODES[mode]} {name}: "
                                       f"{real['eager']['exception']} "
                                       f"{real['eager']['message'][:100]}")
    # Counted as verdicts too: agreeing where real torch raises the same at the same line.
    judged = [mode for mode in PT2_MODES if raises_everywhere(by_mode[mode])]
    for mode in judged:
        problem = judge_raised(figures.raised, name, by_mode[mode],
                               (messages or {}).get(mode, []), real["eager"])
        figures.tried[mode] += 1
        figures.agree[mode] += problem is None
        figures.exact_breaks += mode == "compile" and problem is None
        figures.disagreements += [problem] if problem else []
    module_name, _, class_name = name.partition(":")
    if "export" not in judged:
        judge_export(figures, name, by_mode, real, module_name, class_name)
    if "compile" not in judged:
        judge_compile(figures, name, by_mode, real, class_name)


def judge_export(figures: Figures, name: str, by_mode: dict[str, dict], real: dict[str, Any],
                 module_name: str, class_name: str) -> None:
    export = compare_export(by_mode["export"], {"module": module_name, "class": class_name,
                                                **real["export"]})
    figures.tried["export"] += 1
    figures.agree["export"] += bool(export.agree)
    if not export.agree:
        figures.disagreements.append(f"export {name}: real {export.real}; fx-lsp "
                                     f"{export.fx_lsp}: {export.why}")


def judge_compile(figures: Figures, name: str, by_mode: dict[str, dict], real: dict[str, Any],
                  class_name: str) -> None:
    # A row per nn.Module mode fx-lsp compiled the class in: it agrees when every mode does.
    rows = [compare_compile({"path": by_mode["compile"]["path"], "class": class_name, **row},
                            by_mode["compile"]) for row in real["compile"]]
    figures.tried["compile"] += 1
    figures.agree["compile"] += all(compiled.agrees for compiled in rows)
    figures.exact_breaks += all(compiled.exact for compiled in rows)
    for compiled in rows:
        if not compiled.agrees or not compiled.exact:
            figures.disagreements.append(
                f"compile {name} ({compiled.module_mode}): real {compiled.real_verdict} "
                f"{compiled.real[:3]} {compiled.real_error[:80]}; fx-lsp "
                f"{compiled.lsp_verdict} {compiled.lsp[:3]} {compiled.lsp_error[:80]}")


def count_verdicts(figures: Figures, by_mode: dict[str, dict],
                   diagnostics: dict[tuple[str, str, str], list[str]]) -> bool:
    """A class's verdicts and causes; a class that needs a missing optional package in any
    mode is counted apart, under the package's name, and not among the classes (False)."""
    causes = {mode: no_verdict_cause(module, diagnostics.get(
                  (mode, module["relative_path"], module["class"]), []))
              for mode, module in by_mode.items() if not has_verdict(module)}
    optional = next((cause for cause in causes.values()
                     if cause.startswith(OPTIONAL_PACKAGE)), None)
    if optional:
        figures.optional[optional.partition(": ")[2]] += 1
        return False
    figures.classes += 1
    if len(causes) == len(by_mode) and all(cause.startswith(LACKS_API)
                                           for cause in causes.values()):
        figures.unbuilt.append((by_mode["fx"]["qualified_name"], by_mode, causes))
        return True
    for mode, cause in causes.items():
        count_without(figures, by_mode[mode], cause, diagnostics)
    return True


def count_without(figures: Figures, module: dict[str, Any], cause: str,
                  diagnostics: dict[tuple[str, str, str], list[str]]) -> None:
    """One mode of a class without a verdict, under ``cause``."""
    mode = module["mode"]
    figures.without[mode] += 1
    figures.causes[mode][cause] += 1
    detail = (diagnostics.get((mode, module["relative_path"], module["class"]), [""])[0]
              if module["status"] == "failed" else module["reason"]) or ""
    figures.reasons[f"{mode}: {cause}: {module['qualified_name']}: "
                    f"{' '.join(detail.split()[:14])}"] += 1


def judge_unbuilt_class(figures: Figures, name: str, by_mode: dict[str, dict],
                        causes: dict[str, str], real: dict[str, Any],
                        diagnostics: dict[tuple[str, str, str], list[str]]) -> None:
    """A class whose constructor raises here on what an installed package lacks: a verdict in
    every mode, agreeing, where real torch's build raises the same (``judge_unbuilt``); else
    a class without a verdict under its cause."""
    problem = judge_unbuilt(figures.raised, name, by_mode["fx"], real)
    for mode, module in by_mode.items():
        if problem is None:
            figures.tried[mode] += 1
            figures.agree[mode] += 1
            figures.exact_breaks += mode == "compile"
        else:
            count_without(figures, module, causes[mode], diagnostics)
    figures.disagreements += [problem] if problem else []


def check_fx(figures: Figures, root: str, fx_modules: list[dict[str, Any]]) -> None:
    """fx verdicts against plain ``torch.fx.symbolic_trace`` on the same instance, one child
    process per file, as ``repo_coverage`` checks them."""
    by_file: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for module in fx_modules:
        arguments = module.get("arguments") or {}
        by_file[arguments.get("parent") or module["qualified_name"].partition(":")[0]].append(
            module)
    for modules in by_file.values():
        for module, plain in zip(modules, plain_verdicts(root, modules, cwd=root, timeout=600),
                                 strict=True):
            figures.tried["fx"] += 1
            problem = disagreement(module, plain, root)
            figures.agree["fx"] += problem is None
            if problem is not None:
                figures.disagreements.append(f"fx {module['qualified_name']}: {problem}")


