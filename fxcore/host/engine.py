"""Runs trace jobs in worker processes so that user code never runs in the caller.

The engine only supervises processes: it runs the jobs it is given as they are. Preparing a
job with what the workspace knows (call sites, builders), the results cache and what comes
after a result (parent verdicts, the report) are ``fxcore.checking``'s.

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
from concurrent.futures import CancelledError, ThreadPoolExecutor

from fxcore.host.child_run import ChildAttempt, run_child
from fxcore.host.idle_cores import IdleCores
from fxcore.host.installed_packages import preloadable
from fxcore.host.submissions import Submissions
from fxcore.host.trace_handle import TraceHandle, VerdictListener
from fxcore.host.unfinished_children import (
    end_class,
    ended_derived,
    file_failure,
    last_output,
    not_reached,
    output_tail,
)
from fxcore.host.worker_environment import passed_variables
from fxcore.host.zygote_host import (
    WORKER_LOG,
    ZygoteProcess,
)
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.discovery import ParsedFile, parsed_file

#: Idle cores (lately) from which jobs that may run side by side do.
SIDE_BY_SIDE_IDLE_CORES = 0.75


class Engine:
    """Runs ``TraceJob``s on up to ``workers`` children at a time."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="fx-lsp-job")
        self._submissions: Submissions[TraceHandle] = Submissions("engine")
        self._lock = threading.Lock()
        self._zygote: ZygoteProcess | None = None
        self._preloaded: set[str] = set()
        self._idle_cores = IdleCores()

    def _live_zygote(self) -> ZygoteProcess:
        with self._lock:
            if self._submissions.closed:
                raise CancelledError()
            if self._zygote is None or not self._zygote.alive:
                self._zygote = ZygoteProcess()
            return self._zygote

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

    def submit(self, job: TraceJob, parsed: ParsedFile | None = None,
               listener: VerdictListener | None = None) -> TraceHandle:
        """Run ``job`` as it is on children; ``parsed`` is its file as the caller read it
        (``fxcore.checking.preparation``), else the engine reads it when the job starts;
        ``listener`` hears of each verdict as a child sends it."""
        # The child runs in another working folder: it must get absolute paths.
        handle = TraceHandle(job.with_absolute_paths(), parsed, listener)
        self._submissions.add(handle)
        self._executor.submit(self._run, handle)
        return handle

    def interrupt(self) -> None:
        """Kill every running child, its job cancelled, and cancel every job submitted from
        now until ``resume``; the zygote stays warm."""
        self._submissions.interrupt()

    def resume(self) -> None:
        self._submissions.resume()

    def close(self) -> None:
        """Kill every running child and stop the zygote."""
        # Closed first, so that no new zygote starts once the running one is taken below.
        self._submissions.close()
        with self._lock:
            zygote, self._zygote = self._zygote, None
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
            # The host reads and parses a job's file once: where the caller did, its parse.
            parsed = handle.parsed if handle.parsed is not None \
                else parsed_file(handle.job.path, handle.job.overlays)
            # The caller may keep its handle for the whole run: the file's text and tree are
            # for this job's verdicts only, not held per file until the run ends.
            handle.parsed = None
            result = self._run_job(handle, parsed)
            _log_file_output(result)
            self._preload(result.third_party_packages)
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
        names come from a worker: only those that installed distributions provide from
        site-packages are imported."""
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
            if attempt.ended_by == "file-timeout":
                not_reached(job, parsed, announced, result, done)
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
            if handle.file_deadline is not None and time.monotonic() >= handle.file_deadline:
                not_reached(job, parsed, only, result, done)  # no new child past the budget
                break
        # A class that was announced always gets a verdict per mode, whatever its child did.
        for name in announced:
            end_class(job, parsed, name, attempt, result, done)
        result.output = output_tail(output, output_cut)
        result.seconds = time.perf_counter() - started
        result.loop_seconds = sum(module.loop_seconds
                                  for module in [*result.modules, *result.derived_modules])
        return result


def _log_file_output(result: FileResult) -> None:
    """What the children of a job printed, as one record: the file's prints and warnings, each
    line behind a ``|`` (a CI log takes a line that starts with ``::`` as a command)."""
    text = result.output.rstrip()
    if text:
        lines = "\n".join(f"  | {line}" for line in text.splitlines())
        WORKER_LOG.debug("fx-lsp worker: %s printed:\n%s", result.path, lines)
