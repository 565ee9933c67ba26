"""An editor's trace of a file in stages: ``fx`` first, since its verdicts come in a fraction
of a second, then the slower capture modes (export, compile), whose results are merged with
the first's.

Each phase is one job, so one child. The later stage's modes run in one phase, or each in a
phase of its own beside the others (``side_by_side``: the engine decides, with two workers
or more and cores that stood idle, ``fxcore.host.engine.Engine.side_by_side``): export and
compile then take as long as the slower of the two rather than both, for the work of one more
child's start-up.

The CLI runs one job of every mode; a server publishes after each phase, so the FX
diagnostics of a save arrive as fast as with ``fx`` alone.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.job_spec import TraceJob
from fxcore.model.results import Failure, FileResult, ModuleResult

#: The mode whose verdicts are published before the others'.
FIRST_MODE = "fx"


def mode_stages(modes: tuple[str, ...], side_by_side: bool = False
                ) -> list[list[tuple[str, ...]]]:
    """The stages of a trace, in order, each a list of its phases' modes: ``fx`` alone, then
    the rest (one stage when ``fx`` is not configured or is the only mode). The rest are one
    phase, or with ``side_by_side`` a phase per mode."""
    if FIRST_MODE in modes and len(modes) > 1:
        first: list[list[tuple[str, ...]]] = [[(FIRST_MODE,)]]
        rest = tuple(mode for mode in modes if mode != FIRST_MODE)
    else:
        first, rest = [], modes
    return [*first, [(mode,) for mode in rest] if side_by_side else [rest]]


def stage_jobs(job: TraceJob, stage: int, side_by_side: bool = False) -> list[TraceJob]:
    """A job per phase of stage ``stage``, each ``job`` restricted to its modes; none when
    there is no such stage."""
    stages = mode_stages(job.config.modes, side_by_side)
    if stage >= len(stages):
        return []
    return [dataclasses.replace(job, config=dataclasses.replace(job.config, modes=modes))
            for modes in stages[stage]]


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
    """One file's result from two of its phases (``later`` after ``first`` in phase order),
    traced from the same texts. File-level errors (a syntax or import error) that both phases
    met are kept once."""
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
        loop_seconds=first.loop_seconds + later.loop_seconds,
        from_cache=first.from_cache and later.from_cache,
    )
