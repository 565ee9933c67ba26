"""An editor's trace of a file in phases: ``fx`` first, since its verdicts come in a fraction
of a second, then the slower capture modes (export, compile) in a second job, whose result is
merged with the first's.

The CLI runs one job of every mode; a server publishes after each phase, so the FX
diagnostics of a save arrive as fast as with ``fx`` alone.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.job_spec import TraceJob
from fxcore.model.results import Failure, FileResult, ModuleResult

#: The mode whose verdicts are published before the others'.
FIRST_MODE = "fx"


def mode_phases(modes: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The modes of each phase, in order: ``fx`` alone, then the rest (one phase when
    ``fx`` is not configured or is the only mode)."""
    if FIRST_MODE not in modes or len(modes) == 1:
        return [modes]
    return [(FIRST_MODE,), tuple(mode for mode in modes if mode != FIRST_MODE)]


def phase_job(job: TraceJob, phase: int) -> TraceJob | None:
    """``job`` restricted to the modes of phase ``phase``; None when there is no such phase."""
    phases = mode_phases(job.config.modes)
    if phase >= len(phases):
        return None
    config = dataclasses.replace(job.config, modes=phases[phase])
    return dataclasses.replace(job, config=config)


def _by_class(modules: list[ModuleResult], later: list[ModuleResult]) -> list[ModuleResult]:
    """Each class's verdicts together, in the first phase's class order, its modes in phase
    order (the first verdict of a class is the one views show)."""
    merged: dict[tuple[str, str], list[ModuleResult]] = {}
    for module in [*modules, *later]:
        merged.setdefault((module.path, module.class_name), []).append(module)
    return [module for verdicts in merged.values() for module in verdicts]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _failure_key(failure: Failure) -> tuple[str, int, int, str]:
    return (failure.code, failure.line, failure.column, failure.message)


def merge_phases(first: FileResult, later: FileResult) -> FileResult:
    """One file's result from its two phases, traced from the same texts. File-level errors
    (a syntax or import error) that both phases met are kept once."""
    seen = {_failure_key(failure) for failure in first.errors}
    return dataclasses.replace(
        first,
        modules=_by_class(first.modules, later.modules),
        derived_modules=_by_class(first.derived_modules, later.derived_modules),
        errors=[*first.errors,
                *(error for error in later.errors if _failure_key(error) not in seen)],
        imported_files=_unique([*first.imported_files, *later.imported_files]),
        third_party_packages=_unique([*first.third_party_packages, *later.third_party_packages]),
        imported_hashes={**first.imported_hashes, **later.imported_hashes},
        missing_modules={**first.missing_modules, **later.missing_modules},
        failed_assignments=first.failed_assignments or later.failed_assignments,
        output="\n".join(text for text in (first.output, later.output) if text),
        seconds=first.seconds + later.seconds,
        from_cache=first.from_cache and later.from_cache,
    )
