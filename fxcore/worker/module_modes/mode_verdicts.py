"""One verdict from a class's verdicts of one capture mode in several ``nn.Module`` modes
(``fxcore.worker.module_modes.judging``): what each mode met, each failure met in one mode
only marked with it (``Failure.module_mode`` and its message), and each mode's graph count.

A mode the class could not be checked in (its train mode needs arguments fx-lsp cannot make,
as torchvision's detection models want their targets) leaves the verdict to the other, with a
note saying so: not a "not checkable" verdict where one mode is checkable.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.module_modes import EVAL, TRAIN
from fxcore.model.results import Failure, ModuleResult


def _canonical(modes: list[str]) -> list[str]:
    return [mode for mode in (TRAIN, EVAL) if mode in modes]


def _key(failure: Failure) -> tuple[str, str, int, int, str]:
    return (failure.code, failure.path, failure.line, failure.column, failure.message)


def _unchecked(results: list[tuple[str, ModuleResult]]) -> ModuleResult:
    """The verdict when some mode could not check the class: the first mode's that could,
    noting why the others could not (the first mode's, noting the others' reasons, when none
    could)."""
    checked = [(mode, result) for mode, result in results if result.status != "not-traced"]
    kept_mode, kept = (checked or results)[0]
    kept.module_modes = [kept_mode] if checked else _canonical([mode for mode, _ in results])
    for mode, other in results:
        if other is kept or (not checked and other.reason == kept.reason):
            continue
        if checked:
            kept.capture_notes.append(f"Judged in {kept_mode} mode only: in {mode} mode "
                                      f"(model.{mode}()) it could not be checked: "
                                      f"{other.reason}")
        else:
            kept.capture_notes.append(f"In {mode} mode (model.{mode}()): {other.reason}")
    return kept


def merged(results: list[tuple[str, ModuleResult]]) -> ModuleResult:
    """One verdict from ``results``, (module mode, verdict) in the order they ran."""
    if any(result.status == "not-traced" for _, result in results):
        return _unchecked(results)
    met = {mode: {_key(failure) for failure in result.failures} for mode, result in results}
    failures: list[Failure] = []
    seen: set[tuple[str, str, int, int, str]] = set()
    for mode, result in results:
        for failure in result.failures:
            key = _key(failure)
            if key in seen:
                continue
            seen.add(key)
            if not all(key in keys for keys in met.values()):
                failure = dataclasses.replace(
                    failure, module_mode=mode,
                    message=f"{failure.message} (in {mode} mode only)")
            failures.append(failure)
    base = results[0][1]
    counts = {mode: result.graph_count for mode, result in results
              if result.graph_count is not None}
    return dataclasses.replace(
        base,
        status="failed" if any(result.status == "failed" for _, result in results)
        else base.status,
        failures=failures,
        # A recompilation the loop of calls found in both modes is one.
        hints=list({(hint.code, hint.path, hint.line, hint.column, hint.member): hint
                    for _, result in results for hint in result.hints}.values()),
        capture_notes=list(dict.fromkeys(
            note for _, result in results for note in result.capture_notes)),
        trace_seconds=sum(result.trace_seconds for _, result in results),
        loop_seconds=sum(result.loop_seconds for _, result in results),
        graph_count=max(counts.values()) if counts else None,
        graph_counts={mode: counts[mode] for mode in _canonical(list(counts))},
        module_modes=_canonical([mode for mode, _ in results]),
    )
