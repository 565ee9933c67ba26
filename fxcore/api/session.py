"""``EngineSession``: the one object through which the command line, the MCP server and the
language server use the engine. It holds what a workspace's runs share (the configuration
reader, the engine and its workers, the result cache and call-site index of a long-lived
session, the baseline) and has one method per use case (check, explain, graph, fix, diff,
baseline, and a server's staged ``submit``), each returning data that the front end renders.
The capture modes asked for are chosen (``choose_modes``), and a baseline taken out of a run
(``apply_baseline``), here only.

It owns its engine: made when first needed, its workers killed by ``close`` (or at the end of
a ``with`` block). A caller that hands it an engine (``engine=``: a test process's warm one)
keeps that engine, which ``close`` leaves running."""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fxcore.api import baselines, fixes
from fxcore.api.check import CheckRun, ConfigReader, Progress, check_jobs, run_jobs
from fxcore.api.explain import CodeDoc, explain
from fxcore.api.graph import find_class
from fxcore.api.revision_diff import RevisionDiff, diff_revisions
from fxcore.api.shards import select
from fxcore.checking.parent_verdicts import ParentVerdicts
from fxcore.checking.pipeline import CheckHandle, Pipeline, jobs_below
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.model.capture_modes import available_modes, modes_problem, ordered_modes
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import ModuleResult
from fxcore.reporting.report import Problem
from fxcore.workspace.config import read_project_config
from fxcore.workspace.paths import trace_jobs

__all__ = ["CheckHandle", "ChosenModes", "EngineSession", "ModeError", "ParentVerdicts",
           "choose_modes"]


class ModeError(Exception):
    """Capture modes that do not exist (or none): the caller's mistake, said in one line."""


@dataclass(frozen=True)
class ChosenModes:
    """The capture modes a run traces, in their order, and one line for each mode asked for
    that this machine cannot run (its packages are missing), left out."""

    modes: tuple[str, ...]
    left_out: list[str] = field(default_factory=list)


def choose_modes(asked: Sequence[str] | None) -> ChosenModes | None:
    """The modes of ``asked`` this machine runs (``ModeError`` for a name that is no mode, or
    none); None: nothing asked, each workspace's configured modes."""
    if asked is None:
        return None
    problem = modes_problem(list(asked))
    if problem is not None:
        raise ModeError(problem)
    kept, left_out = available_modes(ordered_modes(list(asked)))
    return ChosenModes(kept, left_out)


@dataclass
class FixOutcome:
    """The problems chosen to fix in a file and the plan fixing them (edits and refusals)."""

    chosen: list[Problem]
    plan: fixes.FixPlan
    #: The file's problems, to say what there is when none was chosen.
    problems: list[Problem]


class EngineSession:
    """A session of the engine: ``check``, ``graph``, ``fix``, ``diff``, ``explain`` and the
    baseline for the command line and the MCP server; ``submit`` for the language server,
    whose documents are traced in stages, each job on its own.

    ``keeps_workspace``: the result cache and call-site index live as long as the session
    (a server's, the index brought up to date before each use) rather than one run (a
    command's)."""

    def __init__(self, workers: int | None = None, *, keeps_workspace: bool = False,
                 read_config: ConfigReader = read_project_config,
                 engine: Engine | None = None) -> None:
        self.workers = workers
        self.keeps_workspace = keeps_workspace
        self.read_config = read_config
        #: False when the caller handed the session its engine: ``close`` leaves it running.
        self.owns_engine = engine is None
        self._engine = engine
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> EngineSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the engine -------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the engine was made (a trace ran, or ``warm_up``)."""
        return self._engine is not None

    @property
    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                self._engine = Engine(workers=self.workers)
            return self._engine

    @property
    def pipeline(self) -> Pipeline:
        """The session's own pipeline (``keeps_workspace``): its cache and call-site index."""
        engine = self.engine
        with self._lock:
            if self._pipeline is None:
                # Unchanged files (and their imports) are answered from .fx-lsp-cache/.
                self._pipeline = Pipeline(engine, ResultCache())
            return self._pipeline

    def warm_up(self) -> None:
        """Make the engine now (and a long-lived session's pipeline, so that ``interrupt``
        reaches a run about to start), its workers' zygote started in a thread: it imports
        torch (over a second). The zygote of an engine made earlier is left as it is."""
        made = self.started
        engine = self.engine
        if self.keeps_workspace:
            _ = self.pipeline
        if not made:
            threading.Thread(target=engine.warm_up, daemon=True).start()

    def interrupt(self) -> None:
        """Cancel every job running, and every job submitted until ``resume``."""
        with self._lock:
            pipeline, engine = self._pipeline, self._engine
        if pipeline is not None:
            pipeline.interrupt()
        if engine is not None:
            engine.interrupt()

    def resume(self) -> None:
        with self._lock:
            pipeline, engine = self._pipeline, self._engine
        if pipeline is not None:
            pipeline.resume()
        if engine is not None:
            engine.resume()

    def close(self) -> None:
        """Kill the workers (of an engine the session owns) and stop the pipeline's jobs;
        the session makes them again if used after."""
        with self._lock:
            engine = self._engine if self.owns_engine else None
            pipeline, self._pipeline = self._pipeline, None
            if self.owns_engine:
                self._engine = None
        # The engine first: a job that waits for its zygote to start stops at once.
        if engine is not None:
            engine.close()
        if pipeline is not None:
            pipeline.close()

    # -- the command line's and the MCP server's use cases ----------------------------------

    def check(self, paths: Sequence[str], modes: ChosenModes | None = None,
              timeout: float | None = None, use_cache: bool = True,
              progress: Progress | None = None, shard: tuple[int, int] | None = None,
              baseline_file: baselines.BaselineFile | None = None,
              loop_of_calls: bool = True) -> CheckRun:
        """The results and report of the files under ``paths`` (``shard``: index and count,
        only that shard's part); ``baseline_file``'s problems taken out of the report
        (``CheckRun.baseline`` says what it held). Without ``loop_of_calls``, compile mode's
        single call alone (an editor's single-call stage)."""
        jobs, projects = check_jobs(paths, timeout, modes.modes if modes else None,
                                    self.read_config)
        if not loop_of_calls:
            jobs = [dataclasses.replace(job, loop_of_calls=False) for job in jobs]
        selected = None
        if shard is not None:
            jobs, selected = select(jobs, *shard)
        if self.keeps_workspace and use_cache:
            pipeline = self.pipeline
            pipeline.call_sites.rescan_before_next_use()
            run = run_jobs(jobs, projects, pipeline, progress)
        else:
            pipeline = Pipeline(self.engine, ResultCache() if use_cache else None)
            try:
                run = run_jobs(jobs, projects, pipeline, progress)
            except BaseException:
                # Stopped (Ctrl+C, an error): the session's own engine closed before the
                # pipeline, so that a job that still waits for its zygote stops at once.
                self.close()
                raise
            finally:
                pipeline.close()
        run.shard = selected
        if baseline_file is not None:
            run.baseline = self.apply_baseline(run, baseline_file)
        return run

    @staticmethod
    def baseline(paths: Sequence[str], named: str | None = None,
                 writes: bool = False) -> baselines.BaselineFile:
        """The baseline of a run over ``paths``, checked before the run (which can take
        minutes): ``baselines.BaselineProblem`` when it cannot be read, or cannot be written
        where ``writes`` would write it."""
        where = baselines.locate(list(paths), named)
        if writes:
            baselines.entries_kept(where)
        else:
            baselines.read(where)
        return where

    @staticmethod
    def apply_baseline(run: CheckRun, where: baselines.BaselineFile,
                       writes: bool = False) -> baselines.BaselineOutcome:
        """``run``'s report without the problems the baseline holds, written first from the
        report with ``writes``."""
        written = baselines.write(run.report, run.results, where) if writes else None
        fixed = baselines.subtract(run.report, run.results, where)
        return baselines.BaselineOutcome(where, written, fixed)

    def graph(self, path: str, class_name: str | None, modes: ChosenModes | None = None,
              timeout: float | None = None, use_cache: bool = True,
              progress: Progress | None = None) -> ModuleResult:
        """The class ``class_name`` of the file ``path`` with its graph (``graph.find_class``:
        ``GraphTargetError`` when it has none); ``modes``: one mode at most."""
        if modes is not None and len(modes.modes) > 1:
            raise ModeError("the graph is drawn for one mode")
        run = self.check([path], modes, timeout, use_cache, progress)
        return find_class(run.results, class_name)

    def fix(self, path: str, code: str | None, line: int | None,
            unsafe: bool = False) -> FixOutcome:
        """The plan fixing the problems of ``path`` with ``code``, at ``line``, or both
        (``fixes.select_problems``); nothing is written."""
        run = self.check([path])
        problems = [problem for problem in run.report.problems if problem.path == path]
        chosen = fixes.select_problems(problems, code, line)
        return FixOutcome(chosen, fixes.plan_fixes(chosen, unsafe), problems)

    def diff(self, folder: str, base: str, head: str | None,
             modes: ChosenModes | None = None, timeout: float | None = None,
             progress: Progress | None = None) -> RevisionDiff:
        """The changes of the graphs between two git revisions of ``folder``'s repository,
        on the session's engine alone: the revisions are checked in folders of their own,
        whose call-site indexes a kept pipeline would keep after they are gone."""
        return diff_revisions(folder, base, head, modes.modes if modes else None, timeout,
                              self.engine, progress)

    @staticmethod
    def explain(code: str) -> CodeDoc | None:
        return explain(code)

    # -- the language server's staged traces ------------------------------------------------

    @staticmethod
    def document_job(path: str, root_of: Callable[[str], str],
                     config_of: Callable[[str], EngineConfig],
                     overlays: dict[str, str]) -> TraceJob | None:
        """The job of one document, traced with the open buffers' texts; None when its
        workspace's configuration excludes it."""
        jobs = trace_jobs([path], root_of, config_of, overlays)
        return jobs[0] if jobs else None

    @staticmethod
    def workspace_jobs(folders: list[str], root_of: Callable[[str], str],
                       config_of: Callable[[str], EngineConfig], overlays: dict[str, str],
                       notebooks: bool) -> list[TraceJob]:
        """A job for each Python file (and notebook, with ``notebooks``) of ``folders``."""
        return jobs_below(folders, root_of, config_of, overlays, notebooks)

    def submit(self, jobs: list[TraceJob], rescan: bool = False,
               ready: Callable[[int], None] | None = None) -> list[CheckHandle]:
        """Start ``jobs`` on the session's pipeline; ``rescan``: the call-site index first
        looks, once for them all, for files changed on disk of which no file event told it.
        ``ready(index)``: the job ``jobs[index]`` has new verdicts, before it ends (on a thread
        of the engine's: ``CheckHandle.partial`` gives them)."""
        pipeline = self.pipeline
        if rescan:
            pipeline.call_sites.rescan_before_next_use()
        return [pipeline.submit(job, None if ready is None else functools.partial(ready, index))
                for index, job in enumerate(jobs)]

    def files_changed(self, paths: list[str]) -> dict[str, set[str]]:
        """Files changed on disk: the call-site index brought up to date; each workspace root
        -> the classes whose constructor calls changed. Nothing before the first trace."""
        with self._lock:
            pipeline = self._pipeline
        return {} if pipeline is None else pipeline.call_sites.changed(paths)
