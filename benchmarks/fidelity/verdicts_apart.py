"""Two kinds of verdict the library benchmark (``pt2_library_coverage.py``) lists apart:

- "forward raises on every input tried" (FX408 under export, FX509 under compile): the class
  cannot run here on any input fx-lsp tried. It agrees with real torch only where the module,
  rebuilt on the CPU and called eagerly on the first of those inputs (the report's
  ``inputs``, ``pt2_real_check.py``), raises an error of the same type at the same line (the
  innermost workspace line of fx-lsp's failure, or a line of its chain); where real torch runs
  the class it is a false alarm, and either way it is not judged as an export or compile
  verdict;
- the time per verdict: fx-lsp's seconds over its verdicts (every mode's), beside the
  baseline commit's, and the same without compile mode's loop of calls (the check's seconds
  less the files' ``loop_seconds``, summed: every capture's loop, the submodules' judged
  inside a class included; exact with one worker, which runs the jobs one after another); the
  classes that get a verdict in some mode for the first time (none
  in that mode at the baseline) measured apart, by the job seconds of the files that hold
  them (the report's ``files``: a worker checks one file's classes in one job), their median
  and worst;
- the time of each class that had a verdict at the baseline, against its time then: its
  capture seconds without the loop of calls (the report's ``trace_seconds`` less its
  ``loop_seconds``; the inputs search and the hints after the capture are not in either),
  summed over the modes in which it has a verdict at both, each class bound to 1.5x its
  time then; a class judged now on other arguments or inputs than then (another instance,
  another graph) is named as such, with its graph's nodes now and then;
- the loop of calls, apart: compile mode calls a class again as a training loop does, to find
  the recompilations (FX505-FX510) that no class had a verdict for at the baseline, which had
  no such loop. Its seconds are new work, measured apart as first verdicts are: the classes
  whose capture ran it, their median and worst seconds (``loop_seconds``, summed over the
  modes) and the sum, then the sum over the files' jobs, which adds the loops of the
  submodule instances judged inside their parents. A baseline report without
  ``loop_seconds`` counts 0 for it.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The code of each mode's "forward raises on every input tried".
RAISES_CODES = {"export": "FX408", "compile": "FX509"}
_RAISED_TYPE = re.compile(r"cannot run it here either: ([\w.]+)")


def raises_everywhere(module: dict[str, Any]) -> dict[str, Any] | None:
    """The module's "forward raises on every input tried" failure, or None."""
    return next((failure for failure in module["failures"]
                 if failure["code"] == RAISES_CODES.get(module["mode"])), None)


@dataclass
class RaisedFigures:
    """Per mode: the classes reported as raising on every input, and those real torch
    agrees with."""

    reported: dict[str, int] = field(default_factory=dict)
    agree: dict[str, int] = field(default_factory=dict)
    #: Classes whose constructor raises here on what an installed package lacks, and those
    #: real torch raises the same for (every mode's verdict).
    unbuilt: int = 0
    unbuilt_agree: int = 0

    def cell(self, mode: str) -> str:
        unbuilt = (f"; constructor: {self.unbuilt} ({self.unbuilt_agree} agree)"
                   if self.unbuilt else "")
        if mode not in RAISES_CODES:
            return unbuilt[2:] or "-"
        return f"{self.reported.get(mode, 0)} ({self.agree.get(mode, 0)} agree){unbuilt}"


def judge_raised(figures: RaisedFigures, name: str, module: dict[str, Any],
                 messages: list[str], eager: dict[str, Any] | None) -> str | None:
    """Compare one mode's "raises on every input" verdict with real torch's eager call:
    None when they agree, else what differs."""
    failure = raises_everywhere(module)
    assert failure is not None
    mode = module["mode"]
    figures.reported[mode] = figures.reported.get(mode, 0) + 1
    if eager is None:
        return f"{mode} {name}: raises on every input (fx-lsp), real torch runs it: a false alarm"
    raised = next((found[1] for found in map(_RAISED_TYPE.search, messages) if found), None)
    chain = {(frame["path"], frame["line"]) for frame in [failure, *failure["frames"]]}
    frame = eager.get("innermost_frame") or {}
    same_type = raised is None or raised.rpartition(".")[2] == str(
        eager.get("exception", "")).rpartition(".")[2]
    if same_type and (frame.get("path"), frame.get("line")) in chain:
        figures.agree[mode] = figures.agree.get(mode, 0) + 1
        return None
    return (f"{mode} {name}: raises on every input: fx-lsp {raised} at line {failure['line']}, "
            f"real torch {eager.get('exception')} at {frame.get('path')}:{frame.get('line')}")


def judge_unbuilt(figures: RaisedFigures, name: str, module: dict[str, Any],
                  real: dict[str, Any]) -> str | None:
    """Compare a constructor's error that no arguments get past here (FX101, ``module``: any
    mode's, paths absolute) with real torch's build from the same arguments: None when real
    torch raises an AttributeError at a line of its chain, else what differs."""
    figures.unbuilt += 1
    failure = module["failures"][0]
    chain = {(frame["path"], frame["line"]) for frame in [failure, *failure["frames"]]}
    built = real.get("build")
    if built is None:
        return f"{name}: the constructor raises here (fx-lsp), real torch builds it"
    frame = built.get("innermost_frame") or {}
    if built.get("exception") == "AttributeError" \
            and (frame.get("path"), frame.get("line")) in chain:
        figures.unbuilt_agree += 1
        return None
    return (f"{name}: the constructor raises AttributeError at line {failure['line']} "
            f"(fx-lsp), real torch {built.get('exception')} at "
            f"{frame.get('path')}:{frame.get('line')}")


def _verdicts(report: dict[str, Any], has_verdict: Callable[[dict[str, Any]], bool]
              ) -> dict[tuple[str, str], dict[str, Any]]:
    """A report's modules with a verdict, by (qualified name, mode)."""
    return {(module["qualified_name"], module["mode"]): module
            for module in report["modules"] if has_verdict(module)}


def verdict_count(report: dict[str, Any], has_verdict: Callable[[dict[str, Any]], bool]
                  ) -> int:
    """How many (class, mode) verdicts a report holds."""
    return sum(has_verdict(module) for module in report["modules"])


def first_verdict_files(report: dict[str, Any], baseline: dict[str, Any],
                        has_verdict: Callable[[dict[str, Any]], bool]) -> dict[str, float]:
    """The classes with a verdict in some mode that had none in it at the baseline, by
    qualified name, each with its file job's seconds."""
    before = _verdicts(baseline, has_verdict)
    seconds = {item["path"]: item["seconds"] for item in report.get("files", [])}
    return {module["qualified_name"]: seconds.get(module["path"], 0.0)
            for module in report["modules"]
            if has_verdict(module) and (module["qualified_name"], module["mode"]) not in before}


def lost_verdicts(report: dict[str, Any], baseline: dict[str, Any],
                  has_verdict: Callable[[dict[str, Any]], bool]) -> list[str]:
    """``class (mode)`` for each class with a verdict in a mode at the baseline and none now."""
    now = _verdicts(report, has_verdict)
    return sorted(f"{name} ({mode})" for name, mode in _verdicts(baseline, has_verdict)
                  if (name, mode) not in now)


#: The most a class that had a verdict at the baseline may take, in multiples of its time then.
CLASS_BOUND = 1.5


def capture_seconds(module: dict[str, Any]) -> float:
    """A verdict's capture seconds without compile mode's loop of calls."""
    return (module.get("trace_seconds") or 0.0) - (module.get("loop_seconds") or 0.0)


def kept_verdict_seconds(report: dict[str, Any], baseline: dict[str, Any],
                         has_verdict: Callable[[dict[str, Any]], bool]
                         ) -> dict[str, tuple[float, float]]:
    """Per class with a verdict at the baseline and now in some mode: its capture seconds
    without the loop of calls now and then (``capture_seconds``), summed over those modes."""
    before = _verdicts(baseline, has_verdict)
    seconds: dict[str, tuple[float, float]] = {}
    for key, module in _verdicts(report, has_verdict).items():
        if key in before:
            now, then = seconds.get(key[0], (0.0, 0.0))
            seconds[key[0]] = (now + capture_seconds(module), then + capture_seconds(before[key]))
    return seconds


def _judged_on(module: dict[str, Any]) -> tuple[Any, Any]:
    """What a verdict was judged on: the constructor's arguments and the input tensors."""
    return module.get("arguments"), (module.get("inputs") or {}).get("tensors")


def judged_otherwise(report: dict[str, Any], baseline: dict[str, Any],
                     has_verdict: Callable[[dict[str, Any]], bool]) -> dict[str, tuple[int, int]]:
    """The classes with a verdict at both that were judged, in some mode they share, on other
    arguments or inputs than at the baseline (another instance: a parent's block where a
    guess stood, say), each with its graph's nodes now and then in that mode: their capture
    seconds time other work."""
    before = _verdicts(baseline, has_verdict)
    otherwise: dict[str, tuple[int, int]] = {}
    for key, module in _verdicts(report, has_verdict).items():
        then = before.get(key)
        if then is not None and _judged_on(module) != _judged_on(then):
            otherwise.setdefault(module["qualified_name"],
                                 (module.get("node_count") or 0, then.get("node_count") or 0))
    return otherwise


def jobs_loop_seconds(report: dict[str, Any]) -> float:
    """The loop of calls' seconds of every file's job: every capture's, the submodule
    instances' judged inside their parents included (which the report's modules may not
    show)."""
    return sum(item.get("loop_seconds") or 0.0 for item in report.get("files", []))


def loop_seconds(report: dict[str, Any]) -> dict[str, float]:
    """Per class whose capture ran the loop of calls: its seconds, summed over the modes."""
    seconds: dict[str, float] = {}
    for module in report["modules"]:
        if module.get("loop_seconds"):
            name = module["qualified_name"]
            seconds[name] = seconds.get(name, 0.0) + module["loop_seconds"]
    return seconds


@dataclass
class TimeFigures:
    """The seconds per verdict of this tree and the baseline, and the first verdicts'."""

    verdicts: int = 0
    baseline_verdicts: int = 0
    first_verdicts: dict[str, float] = field(default_factory=dict)
    #: Per class with a verdict at both: its capture seconds, without the loop of calls,
    #: now and at the baseline.
    kept: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The kept classes judged on other arguments or inputs than then: nodes now and then.
    otherwise: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Per class whose capture ran the loop of calls now: its seconds (new work, apart).
    loops: dict[str, float] = field(default_factory=dict)
    #: The loop's seconds over every file's job, submodules judged inside a parent included.
    jobs_loops: float = 0.0

    def per_verdict(self, seconds: float, baseline_seconds: float | None) -> str:
        """Seconds per verdict (and against the baseline's), and where the loop of calls ran,
        the same without its seconds."""
        figures = [seconds, *([seconds - self.jobs_loops] if self.jobs_loops else [])]
        if not baseline_seconds or not self.baseline_verdicts:
            cells = [f"{each / max(self.verdicts, 1):.2f}" for each in figures]
        else:
            theirs = baseline_seconds / self.baseline_verdicts
            cells = [f"{each / max(self.verdicts, 1):.2f} "
                     f"({each / max(self.verdicts, 1) / theirs:.2f}x {theirs:.2f})"
                     for each in figures]
        return "; without the loop of calls ".join(cells)

    def first(self) -> str:
        if not self.first_verdicts:
            return "-"
        values = list(self.first_verdicts.values())
        return (f"{len(values)}: median {statistics.median(values):.1f}, "
                f"worst {max(values):.1f}")

    def loop(self) -> str:
        """The loop of calls, apart: its classes, their median and worst seconds, the sum."""
        if not self.loops:
            return "-"
        worst = max(self.loops, key=self.loops.__getitem__)
        return (f"{len(self.loops)}: median {statistics.median(self.loops.values()):.2f}, "
                f"worst {self.loops[worst]:.2f} ({worst.rpartition(':')[2]}); "
                f"all {sum(self.loops.values()):.1f} s" + (
                    f"; with the submodules judged inside them {self.jobs_loops:.1f} s"
                    if self.jobs_loops else ""))

    def over_bound(self) -> list[tuple[str, float, float]]:
        """The classes with a verdict at both that take more than ``CLASS_BOUND`` times
        their capture seconds then, the slowest first: (class, now, then)."""
        over = [(name, now, then) for name, (now, then) in self.kept.items()
                if now > CLASS_BOUND * then]
        return sorted(over, key=lambda item: item[1] / max(item[2], 1e-9), reverse=True)

    def kept_classes(self) -> str:
        if not self.kept:
            return "-"
        ratios = {name: now / max(then, 1e-9) for name, (now, then) in self.kept.items()}
        worst = max(ratios, key=ratios.__getitem__)
        now = sum(pair[0] for pair in self.kept.values())
        then = sum(pair[1] for pair in self.kept.values())
        over = self.over_bound()
        elsewhere = sum(name in self.otherwise for name, _, _ in over)
        return (f"{len(self.kept) - len(over)}/{len(self.kept)} within "
                f"{CLASS_BOUND}x; worst {ratios[worst]:.2f}x ({worst.rpartition(':')[2]}); "
                f"all {now:.1f} s against {then:.1f}" + (
                    f"; {elsewhere} of the {len(over)} over it judged on other arguments or "
                    "inputs than then" if elsewhere else ""))
