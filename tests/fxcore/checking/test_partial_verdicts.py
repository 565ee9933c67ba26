"""A running job's verdicts so far (``fxcore.checking.partial_verdicts``), fed as the engine's
reading thread feeds them: a class once every mode judged it, with the first verdict of each
mode as the engine keeps, never one a parent's verdict may still replace, the kept ones with
them in the file's class order, and the editor woken once per snapshot, not once per class."""

from __future__ import annotations

from pathlib import Path

from fxcore.checking.partial_verdicts import PartialVerdicts
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import ModuleResult

#: Each class's line in the file.
LINES = {"Kept": 1, "A": 5, "B": 9, "C": 13}


def _verdict(path: str, name: str, mode: str, status: str = "traceable") -> ModuleResult:
    line = LINES[name]
    return ModuleResult(path=path, class_name=name, qualified_name=f"m:{name}", line=line,
                        column=7, end_line=line, end_column=7 + len(name), status=status,
                        mode=mode)


def _partial(tmp_path: Path, kept: dict[str, list[ModuleResult]] | None = None
             ) -> tuple[PartialVerdicts, list[None], str]:
    path = str(tmp_path / "m.py")
    job = TraceJob(path=path, workspace_root=str(tmp_path),
                   config=EngineConfig(modes=("fx", "export")))
    woken: list[None] = []
    return PartialVerdicts(job, kept or {}, lambda: woken.append(None)), woken, path


def test_a_class_is_given_once_every_mode_judged_it_with_each_first_verdict(
        tmp_path: Path) -> None:
    partial, woken, path = _partial(tmp_path)
    partial.announced(["A", "B", "C"])
    first = _verdict(path, "A", "fx")
    partial.judged(first)
    assert woken == [] and partial.snapshot().result.modules == []
    partial.judged(_verdict(path, "A", "export"))
    partial.judged(_verdict(path, "A", "fx", "failed"))  # a retried child's: not kept
    partial.judged(_verdict(path, "B", "fx"))
    snapshot = partial.snapshot()
    assert [(m.class_name, m.mode) for m in snapshot.result.modules] == [("A", "fx"),
                                                                        ("A", "export")]
    assert snapshot.result.modules[0] is first
    assert snapshot.unjudged == 2


def test_the_editor_is_woken_once_until_it_takes_what_came(tmp_path: Path) -> None:
    partial, woken, path = _partial(tmp_path)
    partial.announced(["A", "B", "C"])
    for name in ("A", "B"):
        for mode in ("fx", "export"):
            partial.judged(_verdict(path, name, mode))
    assert len(woken) == 1
    partial.snapshot()
    partial.judged(_verdict(path, "C", "fx"))
    partial.judged(_verdict(path, "C", "export"))
    assert len(woken) == 2


def test_a_verdict_a_parent_may_replace_waits_for_the_result(tmp_path: Path) -> None:
    partial, _, path = _partial(tmp_path)
    partial.announced(["A", "B"])
    for mode in ("fx", "export"):
        partial.judged(_verdict(path, "A", mode, "not-traced"))  # wants arguments
        partial.judged(_verdict(path, "B", mode))
    snapshot = partial.snapshot()
    assert {m.class_name for m in snapshot.result.modules} == {"B"}
    assert snapshot.unjudged == 1


def test_kept_verdicts_come_with_the_new_ones_in_class_order(tmp_path: Path) -> None:
    path = str(tmp_path / "m.py")
    kept = [_verdict(path, "Kept", mode) for mode in ("fx", "export")]
    partial, _, _ = _partial(tmp_path, {"Kept": kept})
    partial.announced(["A", "B"])
    for mode in ("fx", "export"):
        partial.judged(_verdict(path, "B", mode))
    snapshot = partial.snapshot()
    assert [m.class_name for m in snapshot.result.modules] == ["Kept", "Kept", "B", "B"]
    assert snapshot.unjudged == 1  # A
