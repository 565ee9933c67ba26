"""False errors of the library benchmark (``pt2_library_coverage.py``): the export and compile
verdicts fx-lsp reports as errors, each checked against the class's own eager run on the CPU.

An error verdict says "this class cannot be captured"; it may say so only of a class that
runs. So every error verdict's instance and inputs (the report's ``arguments`` and
``inputs``, rebuilt by ``pt2_real_check.py``) are called eagerly, and per mode:

- error verdicts: a class with a verdict in the mode (``has_verdict``) one of whose failures
  a diagnostic of severity ``"error"`` reports (the JSON marks severity on its
  ``diagnostics``, matched here by mode, place, code and class): FX401-FX405, FX499, FX502
  and the "forward raises on every input tried" FX408/FX509; graph breaks and recompilations
  are warnings, and FX1xx (import, constructor, time-out) are not verdicts;
- run eagerly: an ordinary error verdict whose instance and inputs run: the only kind
  allowed to be an error (capture fails where the module runs, up to that failure);
- raise as said: an FX408/FX509 that real torch confirms, the module raising the same error
  at a line of fx-lsp's chain (``verdicts_apart.judge_raised``): raising eagerly is its claim;
- false (target 0), listed by name: an ordinary error verdict whose eager call raises (an
  own choice of the module, which must be the "does not fit" hint instead), an FX408/FX509
  real torch does not confirm (it runs, or raises another error or elsewhere), and any
  error verdict whose constructor raises on the CPU from the report's arguments;
- "does not fit" (FX406/FX504, kind ``*-does-not-fit``, status ``not-traced``): a hint that
  the instance or inputs fail the module itself, so one whose eager call runs is wrong
  (target 0), listed by name.

Each mode is run on its own instance and inputs: the benchmark's export request serves a
compile row only where compile's arguments, inputs and first module mode are export's; else
(or where no export request was sent: export has no inputs) an eager-only request of that
mode's module is run (``eager_request``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fidelity.pt2_real_check import real_outcomes
from benchmarks.fidelity.verdicts_apart import RaisedFigures, judge_raised, raises_everywhere

PT2_MODES = ("export", "compile")
#: A class's (qualified name, mode).
Key = tuple[str, str]


def error_verdicts(report: dict[str, Any], has_verdict: Callable[[dict[str, Any]], bool]
                   ) -> dict[Key, list[str]]:
    """Each export or compile verdict with a failure reported at severity "error": the codes
    of those failures. Read on the report as parsed (paths relative, as its diagnostics')."""
    errors: set[tuple[Any, ...]] = set()
    for diagnostic in report["diagnostics"]:
        if diagnostic["severity"] == "error":
            for name in diagnostic.get("classes") or []:
                errors.add((diagnostic.get("mode"), diagnostic["path"], diagnostic["line"],
                            diagnostic["column"], diagnostic["code"], name))
    found: dict[Key, list[str]] = {}
    for module in report["modules"]:
        if module["mode"] not in PT2_MODES or not has_verdict(module):
            continue
        codes = [failure["code"] for failure in module["failures"]
                 if (module["mode"], failure["path"], failure["line"], failure["column"],
                     failure["code"], module["class"]) in errors]
        if codes:
            found[module["qualified_name"], module["mode"]] = codes
    return found


def does_not_fit(module: dict[str, Any]) -> bool:
    """The "does not fit" hint (FX406/FX504): the instance or inputs fail the module itself."""
    return module["status"] == "not-traced" and any(
        failure.get("kind", "").endswith("does-not-fit") for failure in module["failures"])


def _run_on(module: dict[str, Any]) -> tuple[Any, ...]:
    """What an eager call of the module is made of: its arguments, inputs and module mode."""
    inputs = module.get("inputs") or {}
    return (module.get("arguments"), inputs.get("tensors"), inputs.get("values"),
            (module.get("module_modes") or ["train"])[0])


def eager_request(by_mode: dict[str, dict], mode: str, sent: bool) -> dict[str, Any] | None:
    """The eager-only ``pt2_real_check`` request a mode's row needs, or None where the
    export request (``sent``) was made of the same instance and inputs, or where the mode's
    module has no inputs to call it on."""
    module = by_mode[mode]
    if sent and _run_on(module) == _run_on(by_mode["export"]):
        return None
    tensors = (module.get("inputs") or {}).get("tensors")
    if tensors is None:
        return None
    return {"module": module, "inputs": tensors, "eager_only": True}


@dataclass
class FalseErrors:
    """Per mode: error verdicts and how they stand against the eager run, and the "does not
    fit" rows that run eagerly; the false ones listed."""

    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    runs: collections.Counter[str] = field(default_factory=collections.Counter)
    raised_as_said: collections.Counter[str] = field(default_factory=collections.Counter)
    false: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Error verdicts no eager run was made for (no inputs in the report): not judged.
    unrun: collections.Counter[str] = field(default_factory=collections.Counter)
    not_fitting: collections.Counter[str] = field(default_factory=collections.Counter)
    not_fitting_runs: collections.Counter[str] = field(default_factory=collections.Counter)
    #: "mode class (codes): why" for each false error; "mode class" for each "does not fit"
    #: row that runs.
    false_lines: list[str] = field(default_factory=list)
    not_fitting_lines: list[str] = field(default_factory=list)

    def cell(self, mode: str) -> str:
        if mode not in PT2_MODES:
            return "-"
        unrun = f", {self.unrun[mode]} not run" if self.unrun[mode] else ""
        return (f"{self.errors[mode]}: {self.runs[mode]} run, {self.raised_as_said[mode]} "
                f"raise as said, {self.false[mode]} false{unrun}; does not fit "
                f"{self.not_fitting[mode]}: {self.not_fitting_runs[mode]} run")


def count_error(figures: FalseErrors, name: str, module: dict[str, Any], codes: list[str],
                messages: list[str], real: dict[str, Any] | None) -> None:
    """One error verdict (``module``: its mode's, paths absolute; ``codes``: its error
    codes; ``messages``: its diagnostics') against the eager outcome of its instance and
    inputs (``pt2_real_check``: ``{"build": error}`` or ``{"eager": None or error}``)."""
    mode = module["mode"]
    figures.errors[mode] += 1
    if real is None:
        figures.unrun[mode] += 1
        return
    label = f"{mode} {name} ({', '.join(codes)})"
    if "build" in real:
        why = f"the constructor raises on the CPU: {real['build'].get('exception')}"
    elif raises_everywhere(module):
        # Raising eagerly is this verdict's claim: real torch must raise the same, there.
        problem = judge_raised(RaisedFigures(), name, module, messages, real["eager"])
        if problem is None:
            figures.raised_as_said[mode] += 1
            return
        why = problem.partition(": ")[2]
    elif real["eager"] is None:
        figures.runs[mode] += 1
        return
    else:
        eager = real["eager"]
        frame = eager.get("innermost_frame") or {}
        why = (f"its inputs fail eagerly: {eager.get('exception')} at "
               f"{frame.get('path')}:{frame.get('line')}")
    figures.false[mode] += 1
    figures.false_lines.append(f"{label}: {why}")


def count_not_fitting(figures: FalseErrors, name: str, mode: str,
                      real: dict[str, Any] | None) -> None:
    """One "does not fit" row against the eager outcome of its instance and inputs."""
    figures.not_fitting[mode] += 1
    if real is not None and "build" not in real and real["eager"] is None:
        figures.not_fitting_runs[mode] += 1
        figures.not_fitting_lines.append(f"{mode} {name}")


def judge_false_errors(figures: FalseErrors, root: str, rows: dict[str, dict[str, dict]],
                       outcomes: dict[str, dict[str, Any]], errors: dict[Key, list[str]],
                       diagnostics: dict[tuple[str, str, str], list[str]]) -> None:
    """Count every error verdict and "does not fit" row of ``rows`` (the classes measured,
    by name, their modules by mode, paths absolute, ``relative_path`` beside) against its
    eager run: the export request's (``outcomes``, by class, where one was sent) or its own
    eager-only request's, one child process per file as the benchmark's others."""
    pending: list[tuple[str, str, dict[str, Any] | None]] = []
    for name, by_mode in rows.items():
        for mode in PT2_MODES:
            if (name, mode) in errors or does_not_fit(by_mode[mode]):
                pending.append((name, mode, eager_request(by_mode, mode, name in outcomes)))
    by_file: dict[str, list[tuple[str, str, dict[str, Any]]]] = collections.defaultdict(list)
    for name, mode, request in pending:
        if request is not None:
            by_file[request["module"]["path"]].append((name, mode, request))
    eager: dict[Key, dict[str, Any]] = {}
    for items in by_file.values():
        for (name, mode, _), real in zip(
                items, real_outcomes(root, [request for _, _, request in items]), strict=True):
            eager[name, mode] = real
    for name, mode, request in pending:
        real = eager.get((name, mode)) if request is not None else outcomes.get(name)
        module = rows[name][mode]
        if (name, mode) in errors:
            count_error(figures, name, module, errors[name, mode], diagnostics.get(
                (mode, module["relative_path"], module["class"]), []), real)
        else:
            count_not_fitting(figures, name, mode, real)
