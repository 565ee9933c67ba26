"""What the terminal and CI formats share: a problem's heading and location, the notes on the
classes not traced and on the instance a problem was found on, and the summary line."""

from __future__ import annotations

from fx_lsp.check import CheckRun, shown_location
from fx_lsp.escaping import log_line_start, terminal
from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.instance_trust import DOES_NOT_FIT_CODES, guessed_instance
from fxcore.model.results import CODES, ModuleResult
from fxcore.reporting.parent_arguments import traced_instance
from fxcore.reporting.report import Problem


def heading(problem: Problem) -> str:
    """``FX002 [MeanPool] len() is called ...``: the code, the classes and the message."""
    classes = f" [{problem.attribution}]" if problem.classes else ""
    return f"{problem.code}{classes}{mode_tag(problem)} {problem.message}"


def mode_tag(problem: Problem) -> str:
    """`` (export)`` for a problem of a capture mode other than ``fx``, else nothing."""
    return mode_label(problem.mode)


def mode_label(mode: str) -> str:
    return f" ({mode})" if mode != DEFAULT_MODE else ""


def location(path: str, line: int, column: int) -> str:
    return shown_location(path, line, column)


def terminal_location(path: str, line: int, column: int) -> str:
    """``_location`` at the start of a terminal or CI log line."""
    return log_line_start(terminal(location(path, line, column)))


def not_traced(run: CheckRun) -> list[ModuleResult]:
    """Each class that was not traced, once per reason, whose FX103 the selection takes as a
    note (``Report.not_traced``: not ignored, not silenced by a ``noqa``, not reported as a
    problem); none for a class whose instance does not fit it where its FX105 is reported,
    which says so."""
    reported = {(p.path, p.line, p.code) for p in run.report.problems}
    return [note.module for note in run.report.not_traced if note.module is not None
            and not any((f.path, f.line, f.code) in reported for f in note.module.failures
                        if f.code in DOES_NOT_FIT_CODES)]


def notes(modules: list[ModuleResult]) -> list[tuple[str, str]]:
    """(location, text) of each of these classes not traced, for a terminal."""
    return [(terminal_location(m.path, m.line, m.column),
             terminal(f"{CODES['not-traced']} {m.class_name}{mode_label(m.mode)} was not "
                      f"traced. {m.reason}"))
            for m in modules]


def folded_notes(count: int) -> str:
    """``7 classes not traced (--show-not-traced lists them)``."""
    them = "them" if count != 1 else "it"
    return (f"{count} class{'es' * (count != 1)} not traced (--show-not-traced lists "
            f"{them})")


def instance_notes(problem: Problem) -> list[str]:
    """What the problem was found on, one note per class that reached it: the guessed
    instance, named, or the instance a builder, a parent, a call site or configuration
    classes built; none for a class as configured or built with its defaults."""
    notes = []
    for module in (reach.module for reach in problem.reached if reach.module is not None):
        instance = guessed_instance(module.class_name, module.arguments)
        if instance is None:
            found = instance_note(module)
            if found is not None:
                notes.append(found)
            continue
        assert module.arguments is not None
        notes.append(f"traced with guessed arguments {instance}"
                     if module.arguments.origin != "parent" else
                     f"traced as {instance}, built with guessed arguments")
    return list(dict.fromkeys(notes))


def instance_note(module: ModuleResult | None) -> str | None:
    """Which instance a problem was found on, when it is not the class as configured or
    built with its defaults: built by a traced parent, by a builder function, or with found
    or guessed arguments (the verdict holds for that instance)."""
    found = traced_instance(module) if module is not None else None
    if module is None or found is None:
        return None
    by_parent, words = found
    return f"{module.class_name} was traced {'as built by' if by_parent else 'with'} {words}"


def tail(run: CheckRun) -> str:
    return run.summary.line(run.report.suppressed, run.report.baselined)
