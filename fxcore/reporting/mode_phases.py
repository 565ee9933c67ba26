"""An editor's trace of a file in stages: ``fx`` first, since its verdicts come in a fraction
of a second, then the slower capture modes (export, compile) with one call each, and beside
them compile mode's loop of calls (``recompile_loop``: seconds of recompilations), each
stage's results merged with the earlier ones'.

Each phase is one job, so one child. The single-call stage's modes run in one phase, or each
in a phase of its own beside the others (``side_by_side``: the engine decides, with two
workers or more and cores that stood idle, ``fxcore.host.engine.Engine.side_by_side``):
export and compile then take as long as the slower of the two rather than both, for the work
of one more child's start-up. The loop of calls is a phase of the same stage, started with
the single calls on a core of its own (the longest phase, so it starts as early as it may
without delaying fx's), and ``held``: its results are published only once every other phase
of its stage is, so the single calls' diagnostics never wait for it and it never comes
before them. The loop needs the compiled model of its own first call, so it repeats that
call (the CPU of one compile, on the other core: a child's verdict is one message at its
end, and a single call taken out of the loop's job would wait for the loop); its verdicts
replace the single call's (``merge_phases``), so that the merged result is the one a job of
every mode gives. Where the single calls run a phase per mode, the loop needs one more
worker than they take, else the single calls run in one phase beside it.

The CLI runs one job of every mode; a server publishes after each phase, so the FX
diagnostics of a save arrive as fast as with ``fx`` alone, and every mode's single-call
diagnostics do not wait for the loop.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.job_spec import TraceJob
from fxcore.model.results import Failure, FileResult, ModuleResult

#: The mode whose verdicts are published before the others'.
FIRST_MODE = "fx"
#: The mode with a loop of calls, whose findings are published after its single call's.
LOOP_MODE = "compile"
#: How a stage still to come names the loop of calls (``phase_names``).
LOOP_NAME = f"{LOOP_MODE}-loop"


@dataclasses.dataclass(frozen=True)
class Phase:
    """One job of a stage: its capture modes, whether compile's loop of calls runs, and
    whether its results wait for every other phase of its stage to be published (``held``)."""

    modes: tuple[str, ...]
    loop_of_calls: bool = True
    held: bool = False


def mode_stages(modes: tuple[str, ...], side_by_side: bool = False,
                workers: int = 2) -> list[list[Phase]]:
    """The stages of a trace, in order, each a list of its phases: ``fx`` alone (when other
    modes follow), then the rest with one call each, in one phase or with ``side_by_side`` a
    phase per mode (where ``workers`` run them all at once, the loop's included), and, with
    compile among them, compile with its loop of calls beside them (``held``)."""
    if FIRST_MODE in modes and len(modes) > 1:
        stages = [[Phase((FIRST_MODE,))]]
        rest = tuple(mode for mode in modes if mode != FIRST_MODE)
    else:
        stages, rest = [], modes
    looped = LOOP_MODE in rest
    apart = side_by_side and workers >= len(rest) + looped
    groups = [(mode,) for mode in rest] if apart else [rest]
    # Only a phase with compile runs without its loop: another's job (and cache entry) is
    # the same as in a trace of every mode at once.
    single = [Phase(group, not (looped and LOOP_MODE in group)) for group in groups]
    stages.append([*single, *([Phase((LOOP_MODE,), held=True)] if looped else [])])
    return stages


def phase_names(phase: Phase) -> list[str]:
    """What a phase still to publish is called (a pull's ``pending``): its modes, or for
    compile with its loop beside a single call, ``compile-loop``."""
    return [LOOP_NAME] if phase.modes == (LOOP_MODE,) and phase.loop_of_calls else \
        list(phase.modes)


def stage_jobs(job: TraceJob, stage: int, side_by_side: bool = False, workers: int = 2
               ) -> list[tuple[TraceJob, Phase]]:
    """A job per phase of stage ``stage``, each ``job`` restricted to its modes (and loop),
    with its phase; none when there is no such stage."""
    stages = mode_stages(job.config.modes, side_by_side, workers)
    if stage >= len(stages):
        return []
    return [(dataclasses.replace(job, config=dataclasses.replace(job.config, modes=phase.modes),
                                 loop_of_calls=phase.loop_of_calls), phase)
            for phase in stages[stage]]


def later_names(modes: tuple[str, ...], stage: int) -> list[str]:
    """The names of the phases of the stages after ``stage``."""
    return [name for phases in mode_stages(modes)[stage + 1:] for phase in phases
            for name in phase_names(phase)]


def _by_class(modules: list[ModuleResult], later: list[ModuleResult]) -> list[ModuleResult]:
    """Each class's verdicts together, in the first phase's class order, its modes in phase
    order (the first verdict of a class is the one views show); a mode ``later`` gives a
    class again (compile's loop after its single call) replaces the earlier verdicts in
    their place."""
    def key(module: ModuleResult) -> tuple[str, str, str]:
        return module.path, module.class_name, module.mode

    again: dict[tuple[str, str, str], list[ModuleResult]] = {}
    for module in later:
        again.setdefault(key(module), []).append(module)
    placed: set[tuple[str, str, str]] = set()
    merged: dict[tuple[str, str], list[ModuleResult]] = {}
    for module in modules:
        if key(module) not in again:
            merged.setdefault((module.path, module.class_name), []).append(module)
        elif key(module) not in placed:  # a submodule's several instances: all at once
            placed.add(key(module))
            merged.setdefault((module.path, module.class_name), []).extend(again[key(module)])
    for module in later:
        if key(module) not in placed:
            merged.setdefault((module.path, module.class_name), []).append(module)
    return [module for verdicts in merged.values() for module in verdicts]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _failure_key(failure: Failure) -> tuple[str, int, int, str]:
    return (failure.code, failure.line, failure.column, failure.message)


def merge_phases(first: FileResult, later: FileResult) -> FileResult:
    """One file's result from two of its phases (``later`` after ``first`` in phase order),
    traced from the same texts: ``later``'s verdicts in a mode ``first`` has too replace
    those. File-level errors (a syntax or import error) that both phases met are kept once."""
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
