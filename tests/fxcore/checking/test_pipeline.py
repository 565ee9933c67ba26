"""The checking pipeline's own steps (``fxcore.checking``), without workers: a job prepared with
the workspace's call sites and builders, which files reach the engine at all, the cache in front
of it, cancelling, and parent verdicts the same whether given all at once or one at a time.

The engine here is a stand-in that answers from a table: what children do is the engine's
tests' business; the CLI and server tests run the whole pipeline on the real one.
"""

from __future__ import annotations

import textwrap
import threading
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from fxcore.checking.parent_verdicts import ParentVerdicts, with_parent_verdicts
from fxcore.checking.pipeline import Pipeline
from fxcore.checking.preparation import prepare, with_builders, with_call_sites
from fxcore.host.trace_handle import TraceHandle, VerdictListener
from fxcore.model.job_spec import MAX_OTHER_CALL_SITES, Builder, CallSite, TraceJob
from fxcore.model.results import Arguments, Failure, FileResult, ModuleResult
from fxcore.reporting.report import Selection
from fxcore.workspace.call_sites import CallSiteIndexes
from fxcore.workspace.discovery import ParsedFile

NET = """
    from torch import nn


    class Net(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(width, width)

        def forward(self, x):
            return self.fc(x)


    def small_net():
        return Net(2)
"""


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# -- preparing a job ---------------------------------------------------------------------------


def test_the_first_call_site_builds_the_class_the_others_only_its_submodules() -> None:
    job = TraceJob(path="/ws/net.py", workspace_root="/ws")
    first, second, third = (CallSite(f"use.py:{line}", (str(line),)) for line in (1, 2, 3))
    enriched = with_call_sites(job, {"Net": (first, second, third), "Head": (first,)})
    assert enriched.call_sites == {"Net": first, "Head": first}
    assert enriched.other_call_sites == {"Net": (second, third)}
    assert with_call_sites(job, {}) is job


def test_builders_are_set_only_when_found() -> None:
    job = TraceJob(path="/ws/net.py", workspace_root="/ws")
    assert with_builders(job, {}) is job
    found = {"Net": (Builder("small_net", 12),)}
    assert with_builders(job, found).builders == found


def test_prepare_gives_a_job_its_classes_call_sites_and_builders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "net.py", NET)
    write(tmp_path, "use.py", "from net import Net\n\nnet = Net(3)\nwide = Net(width=5)\n")
    monkeypatch.chdir(tmp_path)
    prepared = prepare(TraceJob(path="net.py", workspace_root="."), CallSiteIndexes())
    job = prepared.job
    assert (job.path, job.workspace_root) == (str(tmp_path / "net.py"), str(tmp_path))
    # Every literal call, the builder's own included, in the index's order.
    found = CallSiteIndexes().calls(str(tmp_path), ["Net"], 1 + MAX_OTHER_CALL_SITES)["Net"]
    assert {site.site for site in found} == {"net.py:14", "use.py:3", "use.py:4"}
    assert job.call_sites == {"Net": found[0]} and job.other_call_sites == {"Net": found[1:]}
    assert [builder.function for builder in job.builders["Net"]] == ["small_net"]
    assert prepared.parsed.path == job.path and "Net" in prepared.parsed.classes
    assert prepared.runs


@pytest.mark.parametrize(("text", "runs"), [
    ("import torch\nprint(torch.ones(2))\n", False),  # a script: never imported
    ("if True:\n    class Net:\n        pass\n", True),
    ("class Net(:\n", True),  # the worker says why it does not parse
    (None, True),  # nor can be read
])
def test_only_a_file_that_may_define_a_module_class_is_run(
        tmp_path: Path, text: str | None, runs: bool) -> None:
    path = tmp_path / "file.py"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    prepared = prepare(TraceJob(path=str(path), workspace_root=str(tmp_path)), CallSiteIndexes())
    assert prepared.runs is runs


# -- parent verdicts ---------------------------------------------------------------------------


def verdict(path: str, class_name: str, status: str,
            arguments: Arguments | None = None) -> ModuleResult:
    return ModuleResult(path=path, class_name=class_name, qualified_name=f"m:{class_name}",
                        line=1, column=1, end_line=1, end_column=2, status=status,
                        arguments=arguments)


BLOCK = "/ws/block.py"
ROOT = "/ws/root.py"


def block_result() -> FileResult:
    return FileResult(path=BLOCK, modules=[verdict(BLOCK, "Block", "not-traced")])


def root_result(derived: bool = True) -> FileResult:
    built = verdict(BLOCK, "Block", "traceable",
                    Arguments(origin="parent", parent="root:Root", path="block",
                              parent_origin="defaults"))
    return FileResult(path=ROOT, modules=[verdict(ROOT, "Root", "traceable")],
                      derived_modules=[built] if derived else [])


def test_parent_verdicts_at_once_are_in_path_order() -> None:
    block, root = with_parent_verdicts([root_result(), block_result()])
    assert (block.path, root.path) == (BLOCK, ROOT)
    assert block.modules[0].status == "traceable"
    assert block.modules[0].qualified_name == "m:Block"


def test_parent_verdicts_one_result_at_a_time_match_those_at_once() -> None:
    verdicts = ParentVerdicts()
    # The class's file first: no root has built it yet.
    assert verdicts.apply(block_result()).modules[0].status == "not-traced"
    root = verdicts.apply(root_result())
    block = verdicts.apply(block_result())
    assert [root, block] == with_parent_verdicts([block_result(), root_result()])[::-1]
    # The root's file traced again without building it: its old verdicts are forgotten.
    verdicts.apply(root_result(derived=False))
    assert verdicts.apply(block_result()).modules[0].status == "not-traced"


# -- the pipeline around an engine ---------------------------------------------------------------


class TableEngine:
    """Answers each job from ``answers`` by path, or never (``None``: the test ends it)."""

    workers = 2

    def __init__(self, answers: dict[str, FileResult | None]) -> None:
        self.answers = answers
        self.submitted: list[tuple[TraceJob, ParsedFile | None]] = []
        self.handles: list[TraceHandle] = []
        self.lock = threading.Lock()

    def submit(self, job: TraceJob, parsed: ParsedFile | None = None,
               listener: VerdictListener | None = None) -> TraceHandle:
        handle = TraceHandle(job, parsed, listener)
        with self.lock:
            self.submitted.append((job, parsed))
            self.handles.append(handle)
        answer = self.answers[job.path]
        if answer is not None:
            handle.future.set_result(answer)
        return handle


class TableCache:
    """A results cache that holds what the test puts in it, by path."""

    def __init__(self, held: dict[str, FileResult]) -> None:
        self.held = held
        self.stored: list[tuple[str, str | None]] = []

    def get(self, job: TraceJob, key: str | None = None) -> FileResult | None:
        return self.held.get(job.path)

    @staticmethod
    def key(job: TraceJob) -> str | None:
        return f"key of {job.path}"

    def put(self, job: TraceJob, result: FileResult, key: str | None = None) -> None:
        self.stored.append((job.path, key))


def pipeline_over(engine: TableEngine, cache: TableCache | None = None) -> Pipeline:
    return Pipeline(engine, cache)  # type: ignore[arg-type]


def test_a_job_reaches_the_engine_prepared_and_with_its_parse(tmp_path: Path) -> None:
    path = str(write(tmp_path, "net.py", NET))
    answer = FileResult(path=path, modules=[verdict(path, "Net", "traceable")])
    engine = TableEngine({path: answer})
    cache = TableCache({})
    pipeline = pipeline_over(engine, cache)
    try:
        assert pipeline.result_of(TraceJob(path=path, workspace_root=str(tmp_path))) is answer
    finally:
        pipeline.close()
    [(job, parsed)] = engine.submitted
    assert job.call_sites["Net"].args == ("2",) and "Net" in job.builders  # small_net's
    assert parsed is not None and parsed.path == path
    assert cache.stored == [(path, f"key of {path}")]  # the key taken before the run


def test_neither_a_script_nor_a_cached_file_reaches_the_engine(tmp_path: Path) -> None:
    script = str(write(tmp_path, "train.py", "print('training')\n"))
    cached_path = str(write(tmp_path, "net.py", NET))
    cached = FileResult(path=cached_path, from_cache=True)
    engine = TableEngine({})
    cache = TableCache({cached_path: cached})
    pipeline = pipeline_over(engine, cache)
    try:
        not_run = pipeline.result_of(TraceJob(path=script, workspace_root=str(tmp_path)))
        assert pipeline.result_of(TraceJob(path=cached_path,
                                           workspace_root=str(tmp_path))) is cached
    finally:
        pipeline.close()
    assert engine.submitted == []
    assert (not_run.path, not_run.modules, not_run.errors) == (script, [], [])
    assert cache.stored == [(script, f"key of {script}")]  # the cached one is not stored again


def test_cancelling_a_job_cancels_its_run_on_the_engine(tmp_path: Path) -> None:
    path = str(write(tmp_path, "net.py", NET))
    engine = TableEngine({path: None})
    pipeline = pipeline_over(engine)
    try:
        handle = pipeline.submit(TraceJob(path=path, workspace_root=str(tmp_path)))
        while not engine.handles:  # prepared, and handed to the engine
            threading.Event().wait(0.01)
        handle.cancel()
        with pytest.raises(CancelledError):
            handle.future.result(timeout=10)
        assert engine.handles[0].cancelled and engine.handles[0].future.cancelled()
    finally:
        pipeline.close()


def test_closing_the_pipeline_ends_the_jobs_it_runs(tmp_path: Path) -> None:
    path = str(write(tmp_path, "net.py", NET))
    pipeline = pipeline_over(TableEngine({path: None}))
    handle = pipeline.submit(TraceJob(path=path, workspace_root=str(tmp_path)))
    pipeline.close()
    with pytest.raises(CancelledError):
        handle.future.result(timeout=10)
    with pytest.raises(RuntimeError):
        pipeline.submit(TraceJob(path=path, workspace_root=str(tmp_path)))


def test_a_whole_run_gives_parent_verdicts_and_the_report(tmp_path: Path) -> None:
    block_path = str(write(tmp_path, "block.py", NET.replace("Net", "Block")))
    root_path = str(write(tmp_path, "root.py", NET.replace("Net", "Root")))
    built = verdict(block_path, "Block", "failed",
                    Arguments(origin="parent", parent="root:Root", path="block",
                              parent_origin="defaults"))
    built.failures = [Failure(code="FX002", kind="len", message="len() of a Proxy",
                              path=block_path, line=9, column=16, end_line=9, end_column=22)]
    answers: dict[str, FileResult | None] = {
        block_path: FileResult(path=block_path,
                               modules=[verdict(block_path, "Block", "not-traced")]),
        root_path: FileResult(path=root_path, modules=[verdict(root_path, "Root", "traceable")],
                              derived_modules=[built]),
    }
    advanced: list[None] = []
    pipeline = pipeline_over(TableEngine(answers))
    try:
        checked = pipeline.check(
            [TraceJob(path=path, workspace_root=str(tmp_path)) for path in (root_path, block_path)],
            lambda path: Path(path).read_text(encoding="utf-8"),
            lambda path: Selection(root=str(tmp_path)),
            lambda: advanced.append(None))
    finally:
        pipeline.close()
    assert len(advanced) == 2
    assert [result.path for result in checked.results] == [block_path, root_path]
    assert checked.results[0].modules[0].status == "failed"  # the root's instance's verdict
    [problem] = checked.report.problems
    assert (problem.code, problem.path, problem.line) == ("FX002", block_path, 9)
