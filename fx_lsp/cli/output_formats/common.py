"""What the terminal and CI formats share: a problem's heading and place at the start of a log
line, and the notes on the classes not traced."""

from __future__ import annotations

from fx_lsp.escaping import log_line_start, terminal
from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.results import CODES
from fxcore.reporting.report import Problem
from fxcore.reporting.shown import NotTraced, Place


def heading(problem: Problem) -> str:
    """``FX002 [MeanPool] len() is called ...``: the code, the classes and the message."""
    classes = f" [{problem.attribution}]" if problem.classes else ""
    return f"{problem.code}{classes}{mode_tag(problem)} {problem.message}"


def mode_tag(problem: Problem) -> str:
    """`` (export)`` for a problem of a capture mode other than ``fx``, else nothing."""
    return mode_label(problem.mode)


def mode_label(mode: str) -> str:
    return f" ({mode})" if mode != DEFAULT_MODE else ""


def terminal_location(place: Place) -> str:
    """``Place.words`` at the start of a terminal or CI log line."""
    return log_line_start(terminal(place.words))


def notes(shown: list[NotTraced]) -> list[tuple[str, str]]:
    """(location, text) of each of these classes not traced, for a terminal."""
    return [(terminal_location(note.place),
             terminal(f"{CODES['not-traced']} {note.module.class_name}"
                      f"{mode_label(note.module.mode)} was not traced. {note.module.reason}"))
            for note in shown]


def folded_notes(count: int) -> str:
    """``7 classes not traced (--show-not-traced lists them)``."""
    them = "them" if count != 1 else "it"
    return (f"{count} class{'es' * (count != 1)} not traced (--show-not-traced lists "
            f"{them})")
