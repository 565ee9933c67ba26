"""The stages of an editor's trace (fxcore.reporting.mode_phases): fx alone first, the other capture
modes' single calls after, in one phase or side by side, with compile's loop of calls beside them
(held until they are published), and the merge of the results of one file."""

from __future__ import annotations

import dataclasses

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import Failure, FileResult, ModuleResult
from fxcore.reporting.mode_phases import (
    Phase,
    later_names,
    merge_phases,
    mode_stages,
    phase_names,
    stage_jobs,
)

SINGLE = False  # compile's loop of calls off: its single call alone


LOOP = Phase(("compile",), held=True)  # the loop of calls, published after the single calls


def test_fx_then_single_calls_with_compiles_loop_beside_them() -> None:
    assert mode_stages(("fx", "export", "compile")) == [
        [Phase(("fx",))], [Phase(("export", "compile"), SINGLE), LOOP]]
    assert mode_stages(("fx",)) == [[Phase(("fx",))]]
    assert mode_stages(("fx", "export")) == [[Phase(("fx",))], [Phase(("export",))]]
    assert mode_stages(("export", "compile")) == [[Phase(("export", "compile"), SINGLE), LOOP]]


def test_side_by_side_each_single_call_mode_is_a_phase_of_its_own_with_a_worker_each() -> None:
    assert mode_stages(("fx", "export", "compile"), side_by_side=True, workers=3) == [
        [Phase(("fx",))], [Phase(("export",)), Phase(("compile",), SINGLE), LOOP]]
    assert mode_stages(("fx",), side_by_side=True) == [[Phase(("fx",))]]
    assert mode_stages(("compile", "export"), side_by_side=True, workers=4) == [
        [Phase(("compile",), SINGLE), Phase(("export",)), LOOP]]
    # Two workers: the single calls in one job, the loop's on the other.
    assert mode_stages(("fx", "export", "compile"), side_by_side=True, workers=2) == [
        [Phase(("fx",))], [Phase(("export", "compile"), SINGLE), LOOP]]
    # Without a loop, two single calls take the two workers.
    assert mode_stages(("fx", "export", "onnx"), side_by_side=True, workers=2) == [
        [Phase(("fx",))], [Phase(("export",)), Phase(("onnx",))]]


def test_the_stages_still_to_come_are_named_by_mode_and_the_loop_as_compile_loop() -> None:
    modes = ("fx", "export", "compile")
    assert later_names(modes, 0) == ["export", "compile", "compile-loop"]
    assert later_names(modes, 1) == []
    assert phase_names(Phase(("export", "compile"), SINGLE)) == ["export", "compile"]
    assert phase_names(LOOP) == ["compile-loop"]


def test_a_stage_job_keeps_everything_but_the_modes_and_the_loop() -> None:
    job = TraceJob(path="/w/a.py", workspace_root="/w", overlays={"/w/a.py": "x = 1\n"},
                   config=EngineConfig(modes=("fx", "compile")))
    [(first, _)], [(single, _), (looped, loop)] = (stage_jobs(job, stage) for stage in range(2))
    assert first.config.modes == ("fx",) and first.loop_of_calls
    assert single.config.modes == ("compile",) and not single.loop_of_calls
    assert looped.config.modes == ("compile",) and looped.loop_of_calls and loop.held
    assert looped.overlays == job.overlays and looped.config.timeout == job.config.timeout
    assert stage_jobs(job, 2) == []
    job = dataclasses.replace(job, config=EngineConfig(modes=("fx", "export", "compile")))
    phases = [phase for phase, _ in stage_jobs(job, 1, side_by_side=True, workers=3)]
    # export's job is the one a trace of every mode runs: its cache entry is shared.
    assert [(phase.config.modes, phase.loop_of_calls) for phase in phases] == [
        (("export",), True), (("compile",), False), (("compile",), True)]


def verdict(class_name: str, mode: str) -> ModuleResult:
    return ModuleResult(path="/w/a.py", class_name=class_name, qualified_name=f"a:{class_name}",
                        line=1, column=1, end_line=1, end_column=2, status="traceable",
                        mode=mode)


def import_error() -> Failure:
    return Failure(code="FX100", kind="import", message="No module named 'x'",
                   path="/w/a.py", line=1, column=1, end_line=1, end_column=9)


def test_merged_verdicts_stay_by_class_in_mode_order_and_file_errors_once() -> None:
    first = FileResult(path="/w/a.py", modules=[verdict("A", "fx"), verdict("B", "fx")],
                       errors=[import_error()], imported_files=["/w/a.py"], output="fx out",
                       seconds=0.5, from_cache=True)
    later = FileResult(path="/w/a.py",
                       modules=[verdict("A", "export"), verdict("B", "export"),
                                verdict("A", "compile"), verdict("B", "compile")],
                       errors=[import_error()], imported_files=["/w/a.py", "/w/b.py"],
                       output="export out", seconds=2.0, loop_seconds=0.75)
    merged = merge_phases(first, later)
    assert [(m.class_name, m.mode) for m in merged.modules] == [
        ("A", "fx"), ("A", "export"), ("A", "compile"),
        ("B", "fx"), ("B", "export"), ("B", "compile")]
    assert len(merged.errors) == 1
    assert merged.imported_files == ["/w/a.py", "/w/b.py"]
    assert merged.output == "fx out\nexport out" and merged.seconds == 2.5
    assert merged.loop_seconds == 0.75  # the compile phase's loop of calls
    assert not merged.from_cache


def test_the_loops_verdicts_replace_the_single_calls_in_their_place() -> None:
    single = FileResult(path="/w/a.py", modules=[
        verdict("A", "fx"), verdict("A", "export"), verdict("A", "compile"),
        verdict("B", "fx"), verdict("B", "export"), verdict("B", "compile")],
        derived_modules=[verdict("Sub", "compile"), verdict("Sub", "compile")], seconds=1.0)
    looped = FileResult(path="/w/a.py", modules=[verdict("A", "compile"), verdict("B", "compile")],
                        derived_modules=[verdict("Sub", "compile")], seconds=3.0,
                        loop_seconds=2.0)
    merged = merge_phases(single, looped)
    assert [(m.class_name, m.mode) for m in merged.modules] == [
        ("A", "fx"), ("A", "export"), ("A", "compile"),
        ("B", "fx"), ("B", "export"), ("B", "compile")]
    assert merged.modules[2] is looped.modules[0] and merged.modules[5] is looped.modules[1]
    assert merged.derived_modules == looped.derived_modules
    assert merged.loop_seconds == 2.0
