"""A class's verdicts, one per capture mode: all of them (which one a view shows when it shows
one is ``fxcore.model.results.first_verdicts``), and the one line that names them all."""

from __future__ import annotations

from collections.abc import Iterable

from fxcore.model.results import ModuleResult
from fxcore.rules.compile import is_graph_break


def verdicts_of(modules: Iterable[ModuleResult], module: ModuleResult) -> list[ModuleResult]:
    """Every verdict of ``module``'s class, one per mode."""
    return [other for other in modules
            if (other.path, other.class_name) == (module.path, module.class_name)]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def verdict_word(module: ModuleResult) -> str:
    """``traceable``, ``not traced``, ``2 failures``, or for a mode of several graphs
    (compile) ``2 graph breaks, 3 graphs``."""
    if module.status == "not-traced":
        return "not traced"
    if module.graph_count is not None:
        breaks = sum(is_graph_break(failure.code) for failure in module.failures)
        errors = len(module.failures) - breaks
        words = [_count(breaks, "graph break")] if breaks or not errors else []
        words += [_count(errors, "error")] if errors else []
        return ", ".join([*words, _count(module.graph_count, "graph")])
    if module.status == "traceable":
        return "traceable"
    return _count(len(module.failures), "failure")


def modes_line(verdicts: list[ModuleResult]) -> str:
    """``fx: traceable · export: 2 failures``."""
    return " · ".join(f"{module.mode}: {verdict_word(module)}" for module in verdicts)
