"""The stages of an editor's trace (fxcore.reporting.mode_phases): fx alone first, the other capture
modes after, in one phase or side by side, and the merge of the results of one file."""

from __future__ import annotations

import dataclasses

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import Failure, FileResult, ModuleResult
from fxcore.reporting.mode_phases import merge_phases, mode_stages, stage_jobs


def test_fx_is_a_stage_of_its_own_when_other_modes_follow() -> None:
    assert mode_stages(("fx", "export", "compile")) == [[("fx",)], [("export", "compile")]]
    assert mode_stages(("fx",)) == [[("fx",)]]
    assert mode_stages(("export", "compile")) == [[("export", "compile")]]


def test_side_by_side_each_later_mode_is_a_phase_of_its_own() -> None:
    assert mode_stages(("fx", "export", "compile"), side_by_side=True) == [
        [("fx",)], [("export",), ("compile",)]]
    assert mode_stages(("fx",), side_by_side=True) == [[("fx",)]]
    assert mode_stages(("compile", "export"), side_by_side=True) == [
        [("compile",), ("export",)]]


def test_a_stage_job_keeps_everything_but_the_modes() -> None:
    job = TraceJob(path="/w/a.py", workspace_root="/w", overlays={"/w/a.py": "x = 1\n"},
                   config=EngineConfig(modes=("fx", "compile")))
    [first], [later] = stage_jobs(job, 0), stage_jobs(job, 1)
    assert first.config.modes == ("fx",) and later.config.modes == ("compile",)
    assert later.overlays == job.overlays and later.config.timeout == job.config.timeout
    assert stage_jobs(job, 2) == []
    job = dataclasses.replace(job, config=EngineConfig(modes=("fx", "export", "compile")))
    assert [phase.config.modes for phase in stage_jobs(job, 1, side_by_side=True)] == [
        ("export",), ("compile",)]


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
