"""One verdict of a capture mode from its captures on several input sets (``InputsDecision.
alternatives``): a dict argument whose keys ``forward`` reads only where present, captured
with them given and left out, as a user's calls may come either way. A problem met with
either set is the class's, reported once at its line (by code, file and line), marked with
the set it was met with where the other did not meet it; the report's inputs are those of
the first set that met a problem (its graph and shapes go with them), else the first set's,
and a note names every set captured."""

from __future__ import annotations

import dataclasses

from fxcore.model.results import Failure, ModuleResult
from fxcore.worker.job.inputs_decision import InputsDecision


def _key(failure: Failure) -> tuple[str, str, int]:
    return (failure.code, failure.path, failure.line)


def _spelled(inputs: InputsDecision) -> str:
    return ", ".join(f"{name}: {spec}" for name, spec in (inputs.specs or {}).items())


def merged_key_sets(results: list[tuple[InputsDecision, ModuleResult]]) -> ModuleResult:
    """One verdict from ``results`` (input set, its verdict), the first set first."""
    checked = [(inputs, result) for inputs, result in results if result.status != "not-traced"]
    if not checked:
        return results[0][1]
    failed = [(inputs, result) for inputs, result in checked if result.status == "failed"]
    base = (failed or checked)[0][1]
    met = [{_key(failure) for failure in result.failures} for _, result in checked]
    failures: list[Failure] = []
    seen: set[tuple[str, str, int]] = set()
    # The base's problems first: its first is the one its inputs reproduce.
    for inputs, result in sorted(checked, key=lambda pair: pair[1] is not base):
        for failure in result.failures:
            key = _key(failure)
            if key in seen:
                continue
            seen.add(key)
            if not all(key in keys for keys in met):
                failure = dataclasses.replace(
                    failure, message=f"{failure.message} (only {inputs.key_set})")
            failures.append(failure)
    sets = "; ".join(f"{inputs.key_set} ({_spelled(inputs)})" for inputs, _ in results)
    notes = [f"Captured on {len(results)} sets of inputs, as forward reads some keys of a dict "
             f"argument only where they are present: {sets}; a problem met with one set alone "
             f"says which"]
    notes += [f"{inputs.key_set}, it could not be checked: {result.reason}"
              for inputs, result in results if result.status == "not-traced"]
    counts = [result.graph_count for _, result in checked if result.graph_count is not None]
    return dataclasses.replace(
        base,
        failures=failures,
        hints=list({(hint.code, hint.path, hint.line, hint.column, hint.member): hint
                    for _, result in checked for hint in result.hints}.values()),
        capture_notes=list(dict.fromkeys(
            [*(note for _, result in checked for note in result.capture_notes), *notes])),
        trace_seconds=sum(result.trace_seconds for _, result in results),
        loop_seconds=sum(result.loop_seconds for _, result in results),
        graph_count=max(counts) if counts else None)
