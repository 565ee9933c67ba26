"""The one way from files to a report, which ``fx-lsp check`` and the language server both take:
paths (or a document with the open buffers as overlays) -> jobs -> each job prepared with what
the workspace knows (``fxcore.checking.preparation``) -> its result, from the cache or from
the engine's children -> parent verdicts (``fxcore.checking.parent_verdicts``) -> the report
(``fxcore.reporting.report.collect``).

The command line takes it whole (``Pipeline.check``). The server is incremental: it traces one
document at a time, in phases, and publishes each result as it comes, so it takes the steps
apart: ``jobs_below`` or ``trace_jobs``, ``Pipeline.submit``, ``ParentVerdicts.apply`` and
``collect``. Either way each step has one implementation.

A ``Pipeline`` runs on a caller's ``Engine``, which it neither starts nor closes: tests run the
command line in-process on their warm engine. What it knows of the workspace (the results
cache, the call-site index) is its own: the server keeps one for its engine's life, each
``fx-lsp check`` run has its own.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from fxcore.checking.kept_verdicts import with_kept
from fxcore.checking.parent_verdicts import with_parent_verdicts
from fxcore.checking.partial_verdicts import PartialVerdicts
from fxcore.checking.preparation import explain_notebook_names, linked_out, prepare
from fxcore.host.cache import ResultCache
from fxcore.host.class_cache import ClassCache, Reuse
from fxcore.host.engine import Engine
from fxcore.host.submissions import Submission, Submissions
from fxcore.host.trace_handle import TraceHandle
from fxcore.model.job_spec import AbsolutePaths, EngineConfig, TraceJob
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import FileResult, ModuleResult
from fxcore.reporting.report import Report, Selection, TextOf, collect
from fxcore.workspace.call_sites import CallSiteIndexes
from fxcore.workspace.discovery import ParsedFile
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.paths import python_files, trace_jobs


def jobs_below(paths: Iterable[str], root_of: Callable[[str], str],
               config_of: Callable[[str], EngineConfig], overlays: dict[str, str] | None = None,
               notebooks: bool = True) -> list[TraceJob]:
    """A job for each Python file (and notebook, with ``notebooks``) named or found below
    ``paths``, with its workspace root and that root's config, leaving out what the config
    excludes (``fxcore.workspace.paths.trace_jobs``)."""
    return trace_jobs(python_files(paths, notebooks=notebooks), root_of, config_of, overlays)


class CheckHandle(Submission[TraceHandle]):
    """A job submitted to the pipeline: cancelling it cancels its job on the engine, child
    included. ``job`` is the prepared job once its preparation is done.

    ``ready``: called, on a thread of the engine's, when its children sent verdicts that
    ``partial`` has not given yet (once until ``partial`` is called again)."""

    def __init__(self, job: TraceJob, ready: Callable[[], None] | None = None) -> None:
        super().__init__(job)
        self.ready = ready
        self._partial: PartialVerdicts | None = None

    def partial(self) -> PartialResult | None:
        """The verdicts the running job's children sent so far that its result keeps
        (``fxcore.checking.partial_verdicts``); None before its first child starts, without
        ``ready``, or for a notebook."""
        partial = self._partial
        return partial.snapshot() if partial is not None else None

    def _stop(self, running: TraceHandle) -> None:
        running.cancel()


@dataclass
class Checked:
    """A whole run's results, in path order with their parent verdicts, and its report."""

    results: list[FileResult]
    report: Report


class Pipeline:
    """Jobs prepared, looked up in the cache, run on ``engine`` and stored, on as many threads
    as the engine has workers (preparing a job may build a workspace's call-site index: off
    the caller's thread, which may be the server's event loop)."""

    def __init__(self, engine: Engine, cache: ResultCache | None = None) -> None:
        self.engine = engine
        #: Unchanged files' results are taken from it without starting a child (``None``: none).
        self.cache = cache
        #: Unchanged classes' verdicts, kept beside the cache's file entries.
        self.classes = ClassCache(cache) if cache is not None else None
        #: Each workspace root's constructor calls, built on first use; the server passes its
        #: file events on to them.
        self.call_sites = CallSiteIndexes()
        self._executor = ThreadPoolExecutor(max_workers=engine.workers,
                                            thread_name_prefix="fx-lsp-check")
        self._submissions: Submissions[CheckHandle] = Submissions("pipeline")

    def submit(self, job: TraceJob, ready: Callable[[], None] | None = None) -> CheckHandle:
        """Start ``job``: its result comes from the cache or the engine's children;
        ``ready``: told as they send verdicts (``CheckHandle.partial``)."""
        handle = CheckHandle(job.with_absolute_paths(), ready)
        self._submissions.add(handle)
        self._executor.submit(self._run, handle)
        return handle

    def result_of(self, job: TraceJob) -> FileResult:
        """``job``'s result, waited for (without parent verdicts: those need other files')."""
        return self.submit(job).future.result()

    def check(self, jobs: list[TraceJob], text_of: TextOf,
              selection_of: Callable[[str], Selection],
              advance: Callable[[], None] = lambda: None) -> Checked:
        """Every job's result (``advance`` called as each comes in), with parent verdicts,
        and the report of them all. A job still going when this stops (an error, Ctrl+C) is
        cancelled."""
        handles: list[CheckHandle] = []
        results: list[FileResult] = []
        if self.cache is None:
            # Nothing is kept for a later run: a verdict traced for a class of a file this run
            # does not report would be thrown away (a library's encoder under each model).
            # One set for all the jobs, which share it: never a copy per job.
            paths = AbsolutePaths(os.path.abspath(job.path) for job in jobs)
            jobs = [dataclasses.replace(job, derived_paths=paths) for job in jobs]
        try:
            handles = [self.submit(job) for job in jobs]
            for future in as_completed(handle.future for handle in handles):
                results.append(future.result())
                advance()
        finally:
            for handle in handles:
                if not handle.future.done():
                    handle.cancel()
        results = with_parent_verdicts(results)
        return Checked(results, collect(results, text_of, selection_of))

    def interrupt(self) -> None:
        """Cancel every job this pipeline runs (its child killed), and every job submitted
        from now until ``resume``: ``check`` then raises ``CancelledError``."""
        self._submissions.interrupt()

    def resume(self) -> None:
        self._submissions.resume()

    def close(self) -> None:
        """Stop every job this pipeline runs, and its threads; the engine is the caller's."""
        self._submissions.close()
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _run(self, handle: CheckHandle) -> None:
        if not handle.future.set_running_or_notify_cancel():
            return
        try:
            result = self._result(handle)
        except BaseException as error:  # a pipeline always answers, cancelled or not
            handle.future.set_exception(error)
        else:
            handle.future.set_result(result)

    def _result(self, handle: CheckHandle) -> FileResult:
        refused = linked_out(handle.job)
        if refused is not None:
            return refused
        prepared = prepare(handle.job, self.call_sites)
        job = handle.job = prepared.job
        # The key from the text before the run: the text that is imported.
        key = self.cache.key(job) if self.cache is not None else None
        cached = self.cache.get(job, key) if self.cache is not None else None
        if cached is not None:
            return cached
        result = self._traced(handle, job, prepared.parsed) if prepared.runs \
            else prepared.not_run()
        explain_notebook_names(job, result)
        if self.cache is not None:
            self.cache.put(job, result, key)
        return result

    def _traced(self, handle: CheckHandle, job: TraceJob, parsed: ParsedFile) -> FileResult:
        """The job's result from a child, which traces only the classes whose verdicts are
        not kept from an earlier trace of the same code (``fxcore.host.class_cache``)."""
        reuse = self.classes.reuse(job, parsed) if self.classes is not None else Reuse()
        if not reuse.kept:
            result = self._run_engine(handle, job, parsed)
        else:
            result = self._run_engine(
                handle, dataclasses.replace(job, reused_classes=sorted(reuse.kept)), parsed,
                reuse.kept)
            # A file-level error (the import failed, a child broke): the whole file is traced
            # again, so that what is reported is what a fresh trace reports.
            result = self._run_engine(handle, job, parsed) if result.errors \
                else with_kept(result, reuse.kept, parsed)
        if self.classes is not None:
            self.classes.put(job, parsed, reuse, result)
        return result

    def _run_engine(self, handle: CheckHandle, job: TraceJob, parsed: ParsedFile,
                    kept: dict[str, list[ModuleResult]] | None = None) -> FileResult:
        """The engine's result of ``job``, whose verdicts ``handle.partial`` gives as they
        come, with those ``kept`` for the classes it does not trace."""
        listener = None
        if handle.ready is not None and not is_notebook(job.path):
            listener = handle._partial = PartialVerdicts(job, kept or {}, handle.ready)
        running = self.engine.submit(job, parsed, listener=listener)
        if not handle._attach(running):
            running.cancel()
        return running.future.result()
