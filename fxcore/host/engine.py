"""Runs trace jobs in worker processes so that user code never runs in the caller.

A zygote process (``fxcore.host.zygote``) imports torch once; each job is a child forked from
it, which costs tens of milliseconds instead of the seconds a fresh interpreter needs to
import torch. A child may hang, crash, print without end, call ``os._exit`` or allocate
without bound: its output goes to a pipe the engine drains (keeping only the tail), its
address space is capped, and it is killed when a class takes longer than the time-out. The
classes it did not get to are traced in a new child, so one bad class costs only its own
result.

What the zygote and the children print (torch's warnings on import, a library's deprecation
warnings, the workspace's own prints and warnings) never reaches the caller's terminal: it is
logged to ``WORKER_LOG``, the zygote's lines at INFO (the server writes them to its log) and
each file's output at DEBUG (the CLI's ``--verbose`` shows both; the server logs a file's
output only when its worker timed out or crashed, as part of the reason).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

from fxcore.host.cache import ResultCache
from fxcore.host.child_run import ChildAttempt, run_child
from fxcore.host.idle_cores import IdleCores
from fxcore.host.installed_packages import preloadable
from fxcore.host.trace_handle import TraceHandle, WorkspaceKnowledge
from fxcore.host.unfinished_children import (
    end_class,
    ended_derived,
    file_failure,
    last_output,
    output_tail,
)
from fxcore.host.worker_environment import passed_variables
from fxcore.host.zygote_host import (
    WORKER_LOG,
    ZygoteProcess,
)
from fxcore.model.job_spec import MAX_OTHER_CALL_SITES, TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.builders import builder_functions
from fxcore.workspace.call_sites import CallSiteIndexes
from fxcore.workspace.discovery import ParsedFile, has_module_level_class, parsed_file
from fxcore.workspace.notebook.cells import explain_dropped_names, is_notebook
from fxcore.workspace.paths import notebook_module

#: Idle cores (lately) from which jobs that may run side by side do.
SIDE_BY_SIDE_IDLE_CORES = 0.75


class Engine:
    """Runs ``TraceJob``s on up to ``workers`` children at a time."""

    def __init__(self, workers: int | None = None, cache: ResultCache | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        #: What a job submitted without its own ``WorkspaceKnowledge`` is looked up in:
        #: results of unchanged files are taken from its cache, without starting a child.
        self.knowledge = WorkspaceKnowledge(cache)
        self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="fx-lsp-job")
        self._handles: set[TraceHandle] = set()
        self._lock = threading.Lock()
        self._zygote: ZygoteProcess | None = None
        self._closed = False
        self._preloaded: set[str] = set()
        self._idle_cores = IdleCores()

    def _live_zygote(self) -> ZygoteProcess:
        with self._lock:
            if self._closed:
                raise CancelledError()
            if self._zygote is None or not self._zygote.alive:
                self._zygote = ZygoteProcess()
            return self._zygote

    @property
    def call_sites(self) -> CallSiteIndexes:
        """The default knowledge's call-site indexes, built once per workspace root; the
        server passes its file events on to them."""
        return self.knowledge.call_sites

    @property
    def side_by_side(self) -> bool:
        """Whether jobs that may run at once or one after the other (an editor trace's
        export and compile phases) should run at once: with more than one worker, when about
        one core more than a job takes stood idle lately (``fxcore.host.idle_cores``; the
        stage before, whose job frees its own core); else each would only slow the other,
        and each adds a child's start-up to the work. Each call is a look at the CPUs."""
        idle = self._idle_cores.look()
        return self.workers > 1 and (idle is None or idle >= SIDE_BY_SIDE_IDLE_CORES)

    def warm_up(self) -> None:
        """Start the zygote (and its torch import) now rather than on the first job."""
        self._live_zygote()

    def submit(self, job: TraceJob, knowledge: WorkspaceKnowledge | None = None) -> TraceHandle:
        if self._closed:
            raise RuntimeError("the engine is closed")
        # The child runs in another working folder: it must get absolute paths.
        job = dataclasses.replace(
            job, path=os.path.abspath(job.path),
            workspace_root=os.path.abspath(job.workspace_root),
            overlays={os.path.abspath(path): text for path, text in job.overlays.items()},
        )
        handle = TraceHandle(job, knowledge or self.knowledge)
        with self._lock:
            self._handles.add(handle)

        def forget(_future: Future[FileResult]) -> None:
            with self._lock:
                self._handles.discard(handle)

        handle.future.add_done_callback(forget)
        self._executor.submit(self._run, handle)
        return handle

    def check(self, job: TraceJob) -> FileResult:
        return self.submit(job).future.result()

    def close(self) -> None:
        """Kill every running child and stop the zygote."""
        with self._lock:
            self._closed = True
            handles = list(self._handles)
            zygote, self._zygote = self._zygote, None
        for handle in handles:
            handle.cancel()
        # The zygote first: on its socket's end it kills every child, and a job waiting for
        # it to start or to fork then stops waiting, so the threads below end at once.
        if zygote is not None:
            zygote.close()
        self._executor.shutdown(wait=True, cancel_futures=True)

    # -- running a job ---------------------------------------------------------------------

    def _run(self, handle: TraceHandle) -> None:
        if not handle.future.set_running_or_notify_cancel():
            return
        try:
            # The host reads and parses the file once per job, for all its uses here.
            parsed = parsed_file(handle.job.path, handle.job.overlays)
            cache = handle.knowledge.cache
            handle.job = _with_call_sites(handle.job, parsed, handle.knowledge.call_sites)
            handle.job = _with_builders(handle.job, parsed)
            result = cache.get(handle.job) if cache else None
            if result is None:
                # The key from the text before the run: the text that is imported.
                key = cache.key(handle.job) if cache else None
                # Importing runs the file: a script with no module-level class (train.py)
                # is never run.
                result = self._run_job(handle, parsed) if _may_define_a_module_class(parsed) \
                    else FileResult(path=os.path.abspath(handle.job.path))
                _explain_notebook_names(handle.job, result)
                _log_file_output(result)
                self._preload(result.third_party_packages)
                if cache:
                    cache.put(handle.job, result, key)
        except BaseException as error:  # the engine must always answer, cancelled or not
            handle.future.set_exception(error)
        else:
            handle.future.set_result(result)

    def _run_child(self, handle: TraceHandle, job: TraceJob) -> ChildAttempt:
        """One child for ``job``: the seam where a test scripts what children do."""
        return run_child(handle, job, self._live_zygote)

    def _preload(self, packages: list[str]) -> None:
        """Have the zygote import installed packages a job needed (timm, transformers,
        einops), so later children start with them instead of importing them again. The
        names come from a worker (or a cache entry): only those that installed distributions
        provide from site-packages are imported."""
        if os.environ.get("FX_LSP_NO_PRELOAD") == "1":
            return
        with self._lock:
            wanted = set(packages) - self._preloaded
        new = preloadable(wanted) if wanted else []
        with self._lock:
            # Asked for once each, allowed or not: the answer does not change in a process.
            self._preloaded.update(wanted)
            zygote = self._zygote
        if new and zygote is not None:
            zygote.preload(new)

    def _run_job(self, handle: TraceHandle, parsed: ParsedFile) -> FileResult:
        # Read when the job runs, and kept out of its cache key: values may be secrets.
        job: TraceJob = dataclasses.replace(
            handle.job, environment=passed_variables(handle.job.config.pass_env, os.environ))
        started = time.perf_counter()
        result = FileResult(path=os.path.abspath(job.path))
        #: Classes the children announced, and the (class, mode) pairs that got a verdict:
        #: each class gets one verdict per configured mode.
        announced: list[str] = []
        done: set[tuple[str, str]] = set()
        modes = job.config.modes
        only = list(job.only_classes)
        output = bytearray()
        output_cut = 0
        while True:
            attempt = self._run_child(handle, dataclasses.replace(job, only_classes=only))
            output += attempt.output
            output_cut += attempt.output_cut
            announced.extend(name for name in attempt.classes or [] if name not in announced)
            if attempt.rejected is not None:
                result.errors.append(file_failure(
                    job, "crash", f"The worker {attempt.exit_description}: nothing it "
                    f"reported for this file is used.{last_output(attempt.output)}"))
                break
            for module in attempt.modules:
                if (module.class_name, module.mode) not in done:
                    result.modules.append(module)
                    done.add((module.class_name, module.mode))
            result.derived_modules.extend(attempt.derived_modules)
            if attempt.file is not None:
                result.errors.extend(attempt.file.errors)
                result.imported_files = attempt.file.imported_files
                result.third_party_packages = attempt.file.third_party_packages
                result.imported_hashes = attempt.file.imported_hashes
                result.missing_modules = attempt.file.missing_modules
                result.failed_assignments = attempt.file.failed_assignments
            if attempt.fatal is not None:
                result.errors.append(file_failure(job, "error",
                                                        f"The worker failed: {attempt.fatal}"))
            if attempt.ended_by is None:
                break
            if attempt.classes is None:
                message = (f"The worker {attempt.exit_description} while importing this file."
                           f"{last_output(attempt.output)}")
                result.errors.append(file_failure(job, attempt.ended_by, message))
                break
            if attempt.current_class is not None:
                end_class(job, parsed, attempt.current_class, attempt, result, done)
            elif attempt.deriving is not None:
                # Only a submodule instance of a finished root ran out of time or crashed:
                # that is its verdict, and the file's remaining classes run in a new child.
                result.derived_modules.append(ended_derived(attempt, attempt.deriving))
            elif not attempt.modules:
                # Stopped between classes without a verdict: the next class is the one that
                # pays, so that each new child makes progress.
                stalled = next((name for name in announced
                                if any((name, mode) not in done for mode in modes)), None)
                if stalled is not None:
                    end_class(job, parsed, stalled, attempt, result, done)
            only = [name for name in announced
                    if any((name, mode) not in done for mode in modes)]
            if not only:
                break
        # A class that was announced always gets a verdict per mode, whatever its child did.
        for name in announced:
            end_class(job, parsed, name, attempt, result, done)
        result.output = output_tail(output, output_cut)
        result.seconds = time.perf_counter() - started
        return result

def _with_call_sites(job: TraceJob, parsed: ParsedFile,
                     call_sites: CallSiteIndexes) -> TraceJob:
    """The job with the workspace's literal constructor calls of its classes."""
    if not parsed.classes:
        return job
    found = call_sites.calls(job.workspace_root, parsed.classes, 1 + MAX_OTHER_CALL_SITES)
    if not found:
        return job
    return dataclasses.replace(
        job, call_sites={name: sites[0] for name, sites in found.items()},
        other_call_sites={name: sites[1:] for name, sites in found.items()
                          if len(sites) > 1})


def _with_builders(job: TraceJob, parsed: ParsedFile) -> TraceJob:
    """The job with the builder functions of its classes (``fxcore.workspace.builders``). They come
    from the file's own text, which the cache key already holds."""
    if parsed.tree is None or not parsed.classes:
        return job
    found = builder_functions(parsed.tree, parsed.classes)
    return dataclasses.replace(job, builders=found) if found else job


def _explain_notebook_names(job: TraceJob, result: FileResult) -> None:
    """In a notebook's result, say which left-out cell defines a name a class missed."""
    if not is_notebook(job.path):
        return
    module = notebook_module(job.path, job.overlays)
    if module is not None:
        explain_dropped_names(result, module)


def _may_define_a_module_class(parsed: ParsedFile) -> bool:
    """False only for a file that parses and has no module-level ``class``
    (``fxcore.workspace.discovery.has_module_level_class``)."""
    # An unreadable file or a syntax error: the worker says why, without importing.
    return parsed.tree is None or has_module_level_class(parsed.tree)


def _log_file_output(result: FileResult) -> None:
    """What the children of a job printed, as one record: the file's prints and warnings, each
    line behind a ``|`` (a CI log takes a line that starts with ``::`` as a command)."""
    text = result.output.rstrip()
    if text:
        lines = "\n".join(f"  | {line}" for line in text.splitlines())
        WORKER_LOG.debug("fx-lsp worker: %s printed:\n%s", result.path, lines)


